"""Shared fixtures. With REDIS_URL set (CI), tasks go through Redis to a real Celery worker that
this file starts on the test database; without it, tasks run in-process (the quickstart default).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import transaction

from corpus import jobs
from tests.factories import MembershipFactory, ProjectFactory, UserFactory

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
SHARED_DATA_NEEDED = ("trec_eval_test", "cranfield")
# The apps with models, views and templates of their own (demo has none), floors lowest first.
GOLDSET_APPS = (
    "corpus",
    "labelling",
    "answers",
    "judges",
    "evaluation",
    "health",
    "production",
)


def pytest_sessionstart(session):
    if os.environ.get("GOLDSET_REQUIRE_SERVICES") != "1":
        return
    # CI must exercise the real services: fail, never skip, when one is missing.
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        pytest.exit("GOLDSET_REQUIRE_SERVICES=1 but DATABASE_URL is not PostgreSQL", returncode=3)
    if not settings.REDIS_URL:
        pytest.exit("GOLDSET_REQUIRE_SERVICES=1 but REDIS_URL is not set", returncode=3)
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        pytest.exit(f"Redis at {settings.REDIS_URL} is unreachable: {exc}", returncode=3)
    # The reference data the trec_eval and Cranfield tests compare against: those tests skip
    # without it on a developer's machine, so CI refuses to run without it instead.
    for name in SHARED_DATA_NEEDED:
        if not (SHARED_DATA / name).is_dir():
            pytest.exit(f"GOLDSET_REQUIRE_SERVICES=1 but {SHARED_DATA / name} is missing", 3)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # PBKDF2's deliberate slowness costs seconds per test user; tests do not need it.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


class WorkerProcess:
    """The suite's real `celery worker` on the test database. Fault tests kill it with SIGKILL
    (its whole process group, as an OOM killer or a lost container would) and start it again."""

    def __init__(self, env: dict, log_path: Path):
        self.env, self.log_path = env, log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        log = open(self.log_path, "a")  # noqa: SIM115 - the child holds it; closed on our side
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "goldset",
                "worker",
                "--loglevel=INFO",
                "--concurrency=1",
                "--pool=prefork",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so kill() reaches the pool child
        )
        log.close()
        try:
            self._wait_until_it_answers()
        except BaseException:
            self.kill()  # never leave a stray worker consuming the next session's messages
            raise

    def _wait_until_it_answers(self) -> None:
        from goldset.celery import app

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"The Celery worker exited at start; see {self.log_path}")
            # A fresh connection each time: a pooled one may be dead after a Redis restart.
            with app.connection_for_write() as connection:
                if app.control.ping(timeout=1, connection=connection):
                    return
        pytest.fail(f"The Celery worker did not answer within 60 s; see {self.log_path}")

    def kill(self) -> None:
        """kill -9 of the worker and its pool: no shutdown, no ack, no cleanup."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=20)
        self.process = None

    def wait_until_idle(self, timeout: float = 120.0) -> None:
        """Return once the worker runs nothing and nothing waits in its queues. A job may start
        another (a draw starts a pool): a worker still writing when the test's tables are
        truncated deadlocks with the TRUNCATE, and the test database keeps that test's rows.
        A worker that stays busy past ``timeout`` is killed and its queues purged instead."""
        from goldset.celery import app

        if self.process is None or self.process.poll() is not None:
            return
        queue = app.conf.task_default_queue  # the only one this worker (no -Q) consumes
        deadline, idle_seen = time.monotonic() + timeout, 0
        while time.monotonic() < deadline:
            with app.connection_for_write() as connection:
                waiting = connection.default_channel.client.llen(queue)
                inspect = app.control.inspect(timeout=2, limit=1, connection=connection)
                running = inspect.active() or {}
                held = inspect.reserved() or {}
            # No answer at all is not idleness: the worker may be too busy to reply.
            busy = waiting or not running or any(running.values()) or any(held.values())
            # Twice in a row: a message moves from the queue to the worker in between reads.
            idle_seen = 0 if busy else idle_seen + 1
            if idle_seen == 2:
                return
            time.sleep(0.1)
        self.kill()
        app.control.purge()

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()
        self.process = None


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker, tmp_path_factory):
    """A real `celery worker` on the test database, for tests that go through the queue."""
    if not settings.REDIS_URL:
        yield None
        return
    from django.db import connection

    from goldset.celery import app

    db = connection.settings_dict
    url = (
        f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
        if db["ENGINE"].endswith("postgresql")
        else None
    )
    if url is None:
        pytest.fail("A real worker needs PostgreSQL: set DATABASE_URL as well as REDIS_URL.")
    app.control.purge()
    worker = WorkerProcess(
        # The HTTP retriever's tests search a server this suite starts on 127.0.0.1.
        env={
            **os.environ,
            "DATABASE_URL": url,
            "DB_CONN_MAX_AGE": "0",
            "GOLDSET_HTTP_ALLOWED_HOSTS": "127.0.0.1",
        },
        log_path=tmp_path_factory.mktemp("celery") / "worker.log",
    )
    worker.start()
    yield worker
    worker.stop()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report kept on the test item (``item.report_call``), so a fixture's
    teardown can tell whether the test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def worker(celery_worker_process, transactional_db, request):
    """For tests whose jobs must really travel through the queue (committed rows, real worker)."""
    if celery_worker_process is not None and celery_worker_process.process is None:
        celery_worker_process.start()  # a fault test that failed midway left it stopped
    yield celery_worker_process
    if celery_worker_process is not None:
        failed = getattr(request.node, "report_call", None)
        if failed is not None and failed.failed:
            print(jobs_and_worker_log(celery_worker_process))  # shown with the failure
        celery_worker_process.wait_until_idle()  # before pytest-django truncates the tables


def jobs_and_worker_log(process: WorkerProcess, *, tail: int = 8000) -> str:
    """What a failed test that went through the queue leaves to explain it: every job row (a
    job that failed says why) and the end of the worker's log."""
    from corpus.models import Job

    fields = ("pk", "kind", "state", "message", "attempts", "created_at", "finished_at")
    rows = "\n".join(str(row) for row in Job.objects.order_by("pk").values(*fields))
    try:
        log = process.log_path.read_text(errors="replace")[-tail:]
    except OSError as error:
        log = f"(no worker log: {error})"
    return (
        f"--- jobs ---\n{rows or '(none)'}\n--- the worker's log, last {tail} characters ---\n{log}"
    )


def child_pids(pid: int) -> list[int]:
    """The processes ``pid`` started that are still running (Linux)."""
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def wait_for_job(job, timeout: float = 60.0):
    """Poll a Job row until it finishes, as the browser does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.finished:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job.pk} still {job.state} after {timeout} s: {job.message}")


@pytest.fixture
def project(db):
    return ProjectFactory()


@pytest.fixture
def member(project):
    """Make a user with a role in `project`: member("lead")."""

    def make(role: str = "labeller", **user_fields):
        user = UserFactory(**user_fields)
        MembershipFactory(project=project, user=user, role=role)
        return user

    return make


@pytest.fixture
def inline_jobs(monkeypatch):
    """Jobs run in this process when their transaction commits, whatever the broker (with
    REDIS_URL set, no worker would pick them up in a test that does not start one)."""
    monkeypatch.setattr(
        jobs, "queue", lambda job: transaction.on_commit(lambda: jobs.task_named(job.task)(job.pk))
    )
