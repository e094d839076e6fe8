"""Job rows: long work a worker does while the browser polls its progress.

A job names the Celery task that does its work (``Job.task``, the task's dotted name). Starting
a job queues that task once the surrounding transaction commits; the task claims the row under a
lock and runs one service (`run`); the reconciler re-queues a lost job by the name on its row.
There is no registry of kinds: each app's ``tasks.py`` holds one task per job kind it owns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from celery import Task
from django.db import DatabaseError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from corpus.models import Job, JobState, Project
from corpus.sources import SourceError
from goldset.errors import ServiceError

logger = logging.getLogger(__name__)

Progress = Callable[[int], None]

# A running job whose worker has shown no sign of life for this long is presumed dead.
STALE_AFTER = timedelta(minutes=10)
MAX_ATTEMPTS = 3


def start(
    *,
    project: Project,
    task: str,
    kind: str,
    description: str,
    params: dict | None = None,
    user=None,
    total: int = 0,
) -> Job:
    """Create a Job that ``task`` (a task's dotted name) does, queued once the surrounding
    transaction commits."""
    job = Job.objects.create(
        project=project,
        kind=kind,
        task=task,
        description=description[:300],
        params=params or {},
        created_by=user,
        total=total,
    )
    queue(job)
    return job


def task_named(name: str) -> Task:
    """The Celery task a job row names; a ServiceError when there is none by that name."""
    try:
        task = import_string(name)
    except ImportError:
        task = None
    if not isinstance(task, Task):
        raise ServiceError(f"There is no task named {name!r} to do this job.")
    return task


def queue(job: Job) -> None:
    task = task_named(job.task)
    transaction.on_commit(lambda: task.delay(job.pk))


def run(job_id: int, work: Callable[[Job], None]) -> Job | None:
    """Do a job's work; safe to call again for a job whose worker died (work is idempotent).

    The job is claimed under a row lock, so a redelivered message and a reconciler's re-queue
    cannot run it twice at once. ``work`` finishes the job itself (`finish`).
    """
    now = timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            return None
        alive = job.heartbeat_at is not None and job.heartbeat_at > now - STALE_AFTER
        if job.finished or (job.state == JobState.RUNNING and alive):
            return job
        job.state, job.started_at, job.heartbeat_at = JobState.RUNNING, now, now
        job.attempts += 1
        job.done = 0
        job.save(update_fields=["state", "started_at", "heartbeat_at", "attempts", "done"])
    try:
        work(job)
    except (ServiceError, SourceError) as exc:
        finish(job, JobState.FAILED, str(exc))
    except DatabaseError:
        # The database went away mid-job: leave it unfinished for the retry or the reconciler.
        raise
    except Exception:
        logger.exception("job %s failed", job.pk)
        finish(job, JobState.FAILED, "An unexpected error stopped this job; it has been logged.")
    return job


def reconcile(*, stale_after: timedelta = STALE_AFTER) -> list[int]:
    """Re-queue unfinished jobs whose message was lost (e.g. Redis restarted empty) or whose
    worker died, each by the task named on its row; give up, with the reason, after
    MAX_ATTEMPTS."""
    now = timezone.now()
    cutoff = now - stale_after
    requeued = []
    stale = Job.objects.unfinished().filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=cutoff)
    )
    for job in stale:
        if job.attempts >= MAX_ATTEMPTS:
            finish(
                job,
                JobState.FAILED,
                f"Gave up after {job.attempts} attempts: the worker stopped each time.",
            )
            continue
        if not job.task:
            finish(job, JobState.FAILED, "The command doing this job stopped; run it again.")
            continue
        try:
            task = task_named(job.task)
        except ServiceError as exc:
            finish(job, JobState.FAILED, str(exc))
            continue
        Job.objects.filter(pk=job.pk).update(state=JobState.QUEUED, heartbeat_at=now)
        transaction.on_commit(lambda task=task, pk=job.pk: task.delay(pk))
        requeued.append(job.pk)
    return requeued


def finish(job: Job, state: str, message: str) -> None:
    job.state, job.message, job.finished_at = state, message, timezone.now()
    job.save(update_fields=["state", "message", "finished_at", "errors", "result", "done", "total"])


def progress(job: Job) -> Progress:
    """A callback that adds to the job's done count and shows the worker is alive."""

    def advance(count: int) -> None:
        job.done += count
        Job.objects.filter(pk=job.pk).update(
            done=job.done, total=max(job.total, job.done), heartbeat_at=timezone.now()
        )

    return advance
