"""Issue 19 item 6: two Celery workers build two indexes at once, on the shared database and
the shared artifact storage (needs the real services: REDIS_URL and PostgreSQL)."""

import os
import subprocess
import sys
import time

import pytest
from django.conf import settings

from corpus.models import Index, IndexState, JobState
from corpus.services import documents, retrieval
from tests.conftest import REPO, wait_for_job
from tests.factories import add_documents

pytestmark = pytest.mark.skipif(not settings.REDIS_URL, reason="needs Redis and a real worker")


@pytest.fixture
def second_worker(worker, tmp_path):
    """Another `celery worker` process (its own node name) on the same broker and database."""
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "goldset", "worker", "-n", "second@%h",
         "--loglevel=INFO", "--concurrency=1", "--pool=prefork", "--without-gossip",
         "--without-mingle"],
        cwd=REPO,
        env={**worker.env},
        stdout=open(tmp_path / "second.log", "w"),  # noqa: SIM115 - the child holds it
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    from goldset.celery import app

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with app.connection_for_write() as connection:
            replies = app.control.ping(timeout=1, connection=connection)
        if any("second@" in name for reply in replies for name in reply):
            break
    else:
        process.kill()
        pytest.fail("the second worker did not answer within 60 s")
    yield process
    process.terminate()
    process.wait(timeout=30)


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
