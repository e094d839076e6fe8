"""Faults caused for real, not mocked: the Celery worker killed with SIGKILL in the middle of an
index build, Redis restarted with an empty memory, a PostgreSQL backend terminated while a grade
is being written. (A grade submitted twice makes one row: tests/labelling/test_grading_views.py
and, with two threads racing, tests/labelling/test_assignments.py.)

The first two need the real services (CI sets DATABASE_URL and REDIS_URL); the third needs
PostgreSQL. Without them these tests skip and say why: the quickstart runs tasks in-process and
on SQLite, where there is no worker to kill and no backend to terminate.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.test import Client
from django.urls import reverse

from corpus import jobs
from corpus.models import Chunk, EmbeddingCache, Index, IndexState, Job, JobState
from corpus.services import documents, retrieval
from labelling.models import Assignment, Change, Judgement, Span
from labelling.services import judgements as judgement_services
from tests.conftest import wait_for_job
from tests.factories import MembershipFactory, UserFactory, add_documents, grading_pool

ON_POSTGRES = settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
needs_queue = pytest.mark.skipif(
    not (settings.REDIS_URL and ON_POSTGRES),
    reason="needs the real worker: set DATABASE_URL (PostgreSQL) and REDIS_URL, as .ci/run does",
)
needs_postgres = pytest.mark.skipif(
    not ON_POSTGRES, reason="terminates a PostgreSQL backend: set DATABASE_URL, as .ci/run does"
)


def passage_text(document: int, words: int) -> str:
    # Distinct words in every passage: the embedding cache keys passages by their text.
    return " ".join(f"clause{document}x{w} applies to staff" for w in range(words // 4))


def wait_until(condition, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting {timeout} s for {what}")


# The worker killed mid index build ------------------------------------------------------------


@needs_queue
def test_a_worker_killed_mid_index_build_finishes_the_job_once_after_a_restart(worker, project):
    # 300 passages of 150 words: the first batch of 256 takes the encoder several seconds, so
    # the kill lands after some vectors are cached and before the index exists.
    add_documents(project, *[(f"policy-{d}", passage_text(d, 1500)) for d in range(30)])
    scheme = documents.add_chunking_scheme(
        project=project, name="w150", strategy="fixed", size=150, overlap=0
    )
    documents.chunk_corpus(scheme=scheme)
    chunks = sorted(Chunk.objects.filter(scheme=scheme).values_list("version", "start", "end"))
    assert len(chunks) == 300
    retriever = retrieval.add_retriever(
        project=project, name="minilm", kind="embedding", scheme=scheme
    )
    job = retrieval.start_index_build(retriever=retriever)

    def first_batch_cached():
        job.refresh_from_db()
        return job.state == JobState.RUNNING and job.done >= retrieval.ENCODE_BATCH

    wait_until(first_batch_cached, timeout=180, what="the first batch of vectors")
    worker.kill()
    job.refresh_from_db()
    assert job.state == JobState.RUNNING and not job.finished
    assert Index.objects.filter(retriever=retriever, state=IndexState.BUILDING).count() == 1
    assert retriever.indexes.filter(state=IndexState.READY).count() == 0

    worker.start()
    # The broker holds the dead worker's message unacknowledged until its visibility timeout
    # (an hour); the reconciler does not wait that long once the heartbeat has stopped.
    assert jobs.reconcile(stale_after=timedelta(0)) == [job.pk]
    wait_for_job(job, timeout=180)
    assert job.state == JobState.SUCCEEDED, job.message
    assert job.attempts == 2

    # One finished index over every passage, nothing half-built left behind, no chunk written
    # twice, and only the vectors the first attempt had not cached were encoded again.
    (index,) = Index.objects.filter(retriever=retriever)
    assert index.state == IndexState.READY and index.passages == 300
    retriever.refresh_from_db()
    assert retriever.active_index_id == index.pk
    assert sorted(Chunk.objects.filter(scheme=scheme).values_list("version", "start", "end")) == (
        chunks
    )
    assert EmbeddingCache.objects.filter(model_version=index.model_version).count() == 300

    # The old message, should the broker redeliver it, finds the job finished and does nothing.
    jobs.task_named(job.task)(job.pk)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.attempts == 2
    hits = retrieval.retrieve(retriever=retriever, questions=["clause3x7 applies to staff"], k=1)
    assert len(hits[0]) == 1


# Redis restarted with an empty memory ---------------------------------------------------------


def restart_redis_empty(url: str) -> None:
    """Shut the server down without saving and start it again as DESIGN.md starts it."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 6379
    if host not in ("127.0.0.1", "localhost") or shutil.which("redis-server") is None:
        pytest.fail(f"Restarting Redis needs a local redis-server; REDIS_URL is {url}")
    client = redis.Redis(host=host, port=port, socket_connect_timeout=2)
    with contextlib.suppress(redis.ConnectionError):  # it closes the connection as it exits
        client.shutdown(nosave=True)
    wait_until(lambda: not _answers(client), timeout=30, what="Redis to stop")
    subprocess.run(
        ["redis-server", "--daemonize", "yes", "--bind", host, "--port", str(port)]
        + ["--save", "", "--appendonly", "no"],
        check=True,
        capture_output=True,
    )
    wait_until(lambda: _answers(client), timeout=30, what="Redis to start")


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


@needs_queue
@pytest.mark.serial  # every test process's broker, cache and worker go down with it
def test_redis_restarted_empty_loses_queued_jobs_and_the_reconciler_requeues_every_one(
    worker, project
):
    add_documents(project, *[(f"policy-{d}", passage_text(d, 200)) for d in range(5)])
    schemes = [
        documents.add_chunking_scheme(
            project=project, name=f"w{size}", strategy="fixed", size=size, overlap=0
        )
        for size in (20, 40, 80)
    ]
    worker.stop()  # so the messages wait in Redis, as they do when every worker is busy
    started = [documents.start_chunking(scheme=scheme) for scheme in schemes]
    queue = redis.Redis.from_url(settings.REDIS_URL)
    assert queue.llen("celery") == len(started)

    restart_redis_empty(settings.REDIS_URL)
    assert queue.llen("celery") == 0  # every message is gone; the rows still say "queued"
    assert all(state == JobState.QUEUED for state in Job.objects.values_list("state", flat=True))

    # What celery beat runs every few minutes; the jobs are old enough to be presumed lost.
    # Publishing reconnects to the new server by itself (kombu's retry policy).
    assert sorted(jobs.reconcile(stale_after=timedelta(0))) == sorted(j.pk for j in started)
    assert queue.llen("celery") == len(started)
    worker.start()
    for job, scheme in zip(started, schemes, strict=True):
        wait_for_job(job)
        assert job.state == JobState.SUCCEEDED and job.attempts == 1, job.message
        assert job.result["chunks"] == Chunk.objects.filter(scheme=scheme).count() > 0


# PostgreSQL connection killed during a grade --------------------------------------------------


@pytest.fixture
def grading(transactional_db, project):
    labeller = UserFactory(password=None, username="lina")
    MembershipFactory(project=project, user=labeller, role="labeller")
    pool = grading_pool(project, questions=1, passages=2)
    question = pool.question_set.questions.get()
    Assignment.objects.create(pool=pool, question=question, labeller=labeller)
    candidate = pool.candidates.order_by("shuffle_rank", "pk").first()
    client = Client()
    client.force_login(labeller)
    url = reverse(
        "labelling:grade-candidate",
        kwargs={
            "slug": project.slug,
            "pool_id": pool.pk,
            "question_id": question.pk,
            "candidate_id": candidate.pk,
        },
    )
    return client, url


@needs_postgres
def test_a_backend_killed_mid_grade_writes_nothing_and_the_client_is_told_to_retry(
    grading, monkeypatch
):
    client, url = grading
    real_completion = judgement_services.update_completion
    killed = []

    def completion_after_the_backend_dies(*args, **kwargs):
        # The judgement, its default span and the history row are written (uncommitted) by
        # now; an operator, a failover or an OOM kill ends the backend before the commit.
        if not killed:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                (pid,) = cursor.fetchone()
            import psycopg

            db = connection.settings_dict
            with psycopg.connect(
                host=db["HOST"] or "127.0.0.1",
                port=db["PORT"] or 5432,
                user=db["USER"],
                dbname=db["NAME"],
                autocommit=True,
            ) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])
            killed.append(pid)
        return real_completion(*args, **kwargs)

    monkeypatch.setattr(judgement_services, "update_completion", completion_after_the_backend_dies)
    headers = {"HTTP_HX_REQUEST": "true"}
    response = client.post(url, {"grade": "2", "revision": "0"}, **headers)

    assert killed, "the grade never reached the write"
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert "nothing was saved. Please try again." in response.content.decode()
    assert Judgement.objects.count() == Span.objects.count() == Change.objects.count() == 0
    assert Assignment.objects.get().completed_at is None

    # The browser sends the same action again (same revision) and it lands, once.
    retry = client.post(url, {"grade": "2", "revision": "0"}, **headers)
    assert retry.status_code == 200
    assert Judgement.objects.get().grade == 2
    assert Change.objects.count() == 1 and Span.objects.count() == 1
