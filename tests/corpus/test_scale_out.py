"""Issue 19 item 6: two Celery workers build two indexes at once, on the shared database and
the shared artifact storage (needs the real services: REDIS_URL and PostgreSQL)."""

import os
import signal
import subprocess
import sys
import time

import pytest
from django.conf import settings

from corpus.models import Index, IndexState, JobState
from corpus.services import documents, retrieval
from goldset.cpu_priority import autogroup_nice
from tests.conftest import REPO, child_pids, wait_for_job
from tests.factories import add_documents

pytestmark = pytest.mark.skipif(not settings.REDIS_URL, reason="needs Redis and a real worker")


def start_worker(
    worker, log, *, name: str, queue: str | None = None, env: dict | None = None
) -> subprocess.Popen:
    """Another `celery worker` process (node ``name``, on ``queue`` if given, with ``env`` on
    top of the suite worker's environment) on the same broker and database as the suite's,
    once it answers a ping."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "goldset",
            "worker",
            "-n",
            f"{name}@%h",
            "--loglevel=INFO",
            "--concurrency=1",
            "--pool=prefork",
            "--without-gossip",
            "--without-mingle",
            *(["-Q", queue] if queue else []),
        ],
        cwd=REPO,
        env={**worker.env, **(env or {})},
        stdout=open(log, "w"),  # noqa: SIM115 - the child holds it
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    from goldset.celery import app

    # Generous: a worker at SCHED_IDLE starts only as fast as the rest of the machine lets it.
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        with app.connection_for_write() as connection:
            replies = app.control.ping(timeout=1, connection=connection)
        if any(f"{name}@" in node for reply in replies for node in reply):
            return process
    process.kill()
    pytest.fail(f"the worker {name} did not answer within 180 s")


def stop_worker(process: subprocess.Popen) -> None:
    """Stop it as a deployment would, but never fail the test over a slow shutdown: a worker at
    SCHED_IDLE gets almost no CPU while other processes keep both cores busy (a parallel suite)."""
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)


@pytest.fixture
def second_worker(worker, tmp_path):
    process = start_worker(worker, tmp_path / "second.log", name="second")
    yield process
    stop_worker(process)


@pytest.fixture
def build_queue():
    """Index builds routed to a queue of their own, as GOLDSET_BUILD_QUEUE does it in the
    settings (docker-compose: "builds"); a fresh name, so no earlier message waits in it."""
    from goldset.celery import app

    def route(routes) -> None:
        app.conf.task_routes = routes
        app.amqp.flush_routes()
        app.amqp.__dict__.pop("router", None)  # Celery caches the router built from them

    name = f"builds-{os.getpid()}-{time.monotonic_ns()}"
    before = app.conf.task_routes
    route({"corpus.tasks.build_index": {"queue": name}})
    yield name
    route(before)


def test_two_workers_build_two_indexes_at_once(second_worker, project):
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=200, overlap=0
    )
    paragraphs = [
        f"Policy {n}: requests of type {n} go to desk {n % 7} within {n % 30 + 1} days."
        for n in range(120)
    ]
    add_documents(project, *[(f"doc-{n}", "\n\n".join(paragraphs[n::12])) for n in range(12)])
    # Two embedding builds (seconds each, so they overlap) of two models' worth of work: the
    # int8 and the torch encoders never share cached vectors.
    first = retrieval.add_retriever(
        project=project, name="fast", kind="embedding", scheme=scheme, backend="onnx-int8"
    )
    second = retrieval.add_retriever(
        project=project, name="plain", kind="embedding", scheme=scheme, backend="torch"
    )
    jobs = [retrieval.start_index_build(retriever=r) for r in (first, second)]
    for job in jobs:
        wait_for_job(job, timeout=240)
        assert job.state == JobState.SUCCEEDED, job.message
    a, b = jobs
    assert a.started_at < b.finished_at and b.started_at < a.finished_at, "ran one after another"
    for retriever in (first, second):
        retriever.refresh_from_db()
        assert retriever.active_index.state == IndexState.READY
        (hits,) = retrieval.retrieve(retriever=retriever, questions=["desk 3 type 10"], k=3)
        assert len(hits) == 3
    assert Index.objects.filter(state=IndexState.READY).count() == 2
    assert os.environ["GOLDSET_ARTIFACT_DIR"]  # both workers wrote to the suite's storage


def test_index_builds_wait_for_a_builds_worker_and_never_hold_up_the_default_queue(
    worker, build_queue, project, tmp_path
):
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=200, overlap=0
    )
    add_documents(project, ("leave", "Annual leave is 25 days.\n\nCarry-over needs approval."))
    retriever = retrieval.add_retriever(project=project, name="kw", kind="bm25", scheme=scheme)
    build = retrieval.start_index_build(retriever=retriever)
    # The suite's worker serves the default queue only: other jobs run while the build waits.
    other = documents.add_chunking_scheme(
        project=project, name="whole", strategy="document", size=200, overlap=0
    )
    chunking = wait_for_job(documents.start_chunking(scheme=other), timeout=60)
    assert chunking.state == JobState.SUCCEEDED, chunking.message
    build.refresh_from_db()
    assert build.state == JobState.QUEUED
    assert retriever.indexes.count() == 0
    # As docker-compose starts it: at a low CPU priority, which its pool's process inherits.
    builds = start_worker(
        worker,
        tmp_path / "builds.log",
        name="builds",
        queue=build_queue,
        env={"GOLDSET_WORKER_PRIORITY": "low"},
    )
    try:
        assert {os.sched_getscheduler(pid) for pid in [builds.pid, *child_pids(builds.pid)]} == {
            os.SCHED_IDLE
        }
        assert autogroup_nice(builds.pid) == 19
        wait_for_job(build, timeout=300)
    finally:
        stop_worker(builds)
    assert build.state == JobState.SUCCEEDED, build.message
    retriever.refresh_from_db()
    (hits,) = retrieval.retrieve(retriever=retriever, questions=["carry-over approval"], k=1)
    assert hits[0].doc_id == "leave"
    log = (tmp_path / "builds.log").read_text()
    assert "corpus.tasks.build_index" in log
    assert "CPU priority lowered: SCHED_IDLE, autogroup nice 19" in log
