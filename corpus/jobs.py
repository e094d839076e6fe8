"""Job rows: long work a worker does while the browser polls its progress.

A job names the Celery task that does its work (``Job.task``, the task's dotted name). Starting
a job queues that task once the surrounding transaction commits; the task claims the row under a
lock and runs one service (`run`); the reconciler re-queues a lost job by the name on its row.
There is no registry of kinds: each app's ``tasks.py`` holds one task per job kind it owns.
"""

from __future__ import annotations

import hashlib
import logging
import string
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

from celery import Task
from django.apps import apps
from django.db import DatabaseError, InterfaceError, OperationalError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from corpus import visibility
from corpus.models import Job, JobState, Project, Upload
from corpus.sources import SourceError
from goldset.errors import ServiceError

logger = logging.getLogger(__name__)

Progress = Callable[[int], None]
# A share figure meaning: the job's message is not for those outside this document's groups.
WITHHOLD = "withhold"

# A running job whose worker has shown no sign of life for this long is presumed dead.
STALE_AFTER = timedelta(minutes=10)
MAX_ATTEMPTS = 3
# Errors that mean the database went away (a restart, a failover, a killed connection): the
# work may succeed when tried again. Every other DatabaseError is the job's own failure.
DATABASE_GONE = (OperationalError, InterfaceError)

# The options of every job kind's task: a database that went away mid-job is retried; the job's
# own errors finish it (`run`).
TASK_OPTIONS = {
    "acks_late": True,
    "autoretry_for": DATABASE_GONE,
    "max_retries": 3,
    "retry_backoff": 5,
}


def start(
    *,
    project: Project,
    task: str,
    kind: str,
    description: str,
    params: dict | None = None,
    user=None,
    total: int = 0,
    shares: dict[int, dict[str, int]] | None = None,
) -> Job:
    """Create a Job that ``task`` (a task's dotted name) does, queued once the surrounding
    transaction commits. ``shares``: what restricted documents add to ``total`` and the
    figures (`add_shares`)."""
    job = Job(
        project=project,
        kind=kind,
        task=task,
        description=description[:300],
        params=params or {},
        created_by=user,
        total=total,
    )
    if shares:
        add_shares(job, shares)
    job.save()
    queue(job)
    return job


def newest(*, project_id: int, kind: str, **params) -> Job | None:
    """The newest job of ``kind`` in a project whose params hold each of ``params``: the job
    computing a page's figures, or the last one that tried (the page says why it failed)."""
    matching = {f"params__{name}": value for name, value in params.items()}
    return Job.objects.filter(project_id=project_id, kind=kind, **matching).order_by("-pk").first()


def unfinished(job: Job | None) -> Job | None:
    return job if job is not None and not job.finished else None


Figures = TypeVar("Figures")


def stored_or_job(
    read: Callable[[], Figures | None], job_of: Callable[[], Job | None]
) -> tuple[Figures | None, Job | None]:
    """A page's stored figures (``read``), or, without them, the job computing them
    (``job_of``: the one running, or the last that tried) and None.

    A job stores its figures, then finishes. When no job is running after the first read, the
    figures are read once more: a job that finished between the two reads is found with its
    figures, never with neither (a page then offered to compute them again, or started a
    second job for them)."""
    figures = read()
    if figures is not None:
        return figures, None
    job = job_of()
    if unfinished(job) is None:
        figures = read()
    return figures, job


def keep_upload(*, job: Job, name: str, data: bytes) -> Upload:
    """Store an uploaded original with the job that reads it, in the database, so whichever
    worker runs the job finds it. Only the file name of ``name`` is kept (a client may send a
    path), cut to the column's length."""
    return Upload.objects.create(
        job=job,
        name=Path(name).name[:255],
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        content=data,
    )


def task_named(name: str) -> Task:
    """The Celery task a job row names; a ServiceError when there is none by that name.

    Only a ``tasks`` module of one of the project's apps is looked in: the name comes from a
    database row, and importing whatever module a row names is not something to do on trust.
    """
    module, _, attribute = (name or "").rpartition(".")
    task = None
    if attribute and module.endswith(".tasks") and apps.get_containing_app_config(module):
        try:
            task = import_string(name)
        except ImportError:
            task = None
    if not isinstance(task, Task):
        raise ServiceError(f"There is no task named {name[:200]!r} to do this job.")
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
    except DATABASE_GONE:
        # The database went away mid-job: leave it unfinished for the retry or the reconciler.
        raise
    except DatabaseError as exc:
        # The database refused what the job wrote (a value no check foresaw, a constraint):
        # doing it again would fail again, so it is this job's failure, never a retry.
        logger.exception("job %s: the database refused a write", job.pk)
        _finish_after_error(job, f"The database refused part of this job's work ({exc}).")
    except Exception:
        logger.exception("job %s failed", job.pk)
        _finish_after_error(job, "An unexpected error stopped this job; it has been logged.")
    return job


def _finish_after_error(job: Job, message: str) -> None:
    """Record the failure even when what the work left on the row (its errors or result) is
    what the database refused."""
    try:
        finish(job, JobState.FAILED, message[:2000])
    except DATABASE_GONE:
        raise
    except DatabaseError:
        logger.exception("job %s: its errors or result cannot be stored", job.pk)
        job.errors, job.result = [], {}
        finish(job, JobState.FAILED, message[:2000])


def reconcile(*, stale_after: timedelta = STALE_AFTER) -> list[int]:
    """Re-queue unfinished jobs whose message was lost (e.g. Redis restarted empty) or whose
    worker died, each by the task named on its row; give up, with the reason, after
    MAX_ATTEMPTS. Whatever one row holds, the others are still looked at."""
    now = timezone.now()
    cutoff = now - stale_after
    requeued = []
    stale = Job.objects.unfinished().filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=cutoff)
    )
    for pk in list(stale.order_by("pk").values_list("pk", flat=True)):
        try:
            if _reconcile_one(pk, now):
                requeued.append(pk)
        except DATABASE_GONE:
            raise
        except Exception:
            logger.exception("reconcile: job %s could not be looked at", pk)
            _give_up(pk, "The reconciler could not re-queue this job; it has been logged.")
    return requeued


def _reconcile_one(pk: int, now) -> bool:
    job = Job.objects.filter(pk=pk).first()
    if job is None or job.finished:
        return False
    if job.attempts >= MAX_ATTEMPTS:
        finish(
            job,
            JobState.FAILED,
            f"Gave up after {job.attempts} attempts: the worker stopped each time.",
        )
        return False
    if not job.task:
        finish(job, JobState.FAILED, "The command doing this job stopped; run it again.")
        return False
    try:
        task = task_named(job.task)
    except ServiceError as exc:
        finish(job, JobState.FAILED, str(exc))
        return False
    Job.objects.filter(pk=job.pk).update(state=JobState.QUEUED, heartbeat_at=now)
    transaction.on_commit(lambda: _send(task, job.pk))
    return True


def _send(task: Task, pk: int) -> None:
    """Queue a re-queued job's task. Without a broker the task runs right here: a failure of
    the job itself is on its row, and nothing it raises stops the reconciler."""
    try:
        task.delay(pk)
    except Exception:
        logger.exception("reconcile: job %s could not be sent to its task", pk)


def _give_up(pk: int, message: str) -> None:
    try:
        Job.objects.filter(pk=pk).update(
            state=JobState.FAILED, message=message, finished_at=timezone.now()
        )
    except DATABASE_GONE:
        raise
    except DatabaseError:
        logger.exception("reconcile: job %s cannot even be marked failed", pk)


# A message template: text with ``{figure}`` fields, or a list of parts. A part is a text; a
# ``[text, figure]`` pair, left out when that figure is 0 ("access groups changed on 2"); or
# ``{"join": ", ", "items": [pairs], "empty": "none"}``, the items whose figure is not 0 joined.
# ``{figure:plural:result/results}`` writes "1 result", "2 results".
Template = str | list


class _Figures(string.Formatter):
    def format_field(self, value, format_spec: str):
        if format_spec.startswith("plural:"):
            one, _, many = format_spec.removeprefix("plural:").partition("/")
            return f"{value} {one if value == 1 else many}"
        return super().format_field(value, format_spec)


def render_message(template: Template, figures: dict) -> str:
    """A message template filled with ``figures`` (`finish`)."""
    formatter = _Figures()

    def kept(pairs) -> list[str]:
        return [formatter.format(text, **figures) for text, figure in pairs if figures.get(figure)]

    shown = []
    for part in [template] if isinstance(template, str) else template:
        if isinstance(part, dict):
            items = kept(part["items"])
            shown.append(part["join"].join(items) if items else part.get("empty", ""))
        elif isinstance(part, list | tuple):
            shown.extend(kept([part]))
        else:
            shown.append(formatter.format(str(part), **figures))
    return "".join(shown)


def finish(job: Job, state: str, message: Template, *, figures: dict | None = None) -> None:
    """Close the job with its message. A message quoting figures a restricted document adds
    to is a template (`render_message`) with its ``figures``: each viewer reads it with the
    shares of the documents hidden from them taken out (`add_shares`, `corpus.job_display`);
    ``job.message`` holds it as someone who sees everything reads it."""
    if figures is not None:
        job.result = {**(job.result or {}), "message": message, "figures": figures}
        message = render_message(message, figures)
    job.state, job.message, job.finished_at = state, message, timezone.now()
    job.save(update_fields=["state", "message", "finished_at", "errors", "result", "done", "total"])


def add_shares(job: Job, shares: dict[int, dict[str, int]]) -> None:
    """Record what restricted documents add to the job's figures and to its ``done`` and
    ``total`` (``{document pk: {figure: amount}}``), so a viewer outside a document's access
    groups reads every figure without it (`corpus.job_display`). Only documents restricted to
    an access group are kept: the others are visible to every member. Saved by `finish` or by
    the caller."""
    restricted = visibility.groups_of_documents(shares)
    kept = dict((job.result or {}).get("shares", {}))
    for pk, amounts in shares.items():
        if pk not in restricted:
            continue
        mine = dict(kept.get(str(pk), {}))
        for name, amount in amounts.items():
            if amount:
                mine[name] = mine.get(name, 0) + int(amount)
        if mine:
            kept[str(pk)] = mine
    job.result = {**(job.result or {}), "shares": kept}


def next_url(job: Job) -> str | None:
    """Where a page following ``job`` goes once it succeeded, if it made something to open
    (its result's ``link``, with ``redirect``). A job done by the time the request that
    started it answers (no broker: it ran in-process) sends the browser straight there."""
    job.refresh_from_db(fields=["state", "result", "message"])
    result = job.result if isinstance(job.result, dict) else {}
    link = result.get("link")
    if job.state != JobState.SUCCEEDED or not result.get("redirect") or not isinstance(link, dict):
        return None
    url = str(link.get("url", ""))
    return url if url.startswith("/") and not url.startswith("//") else None


def say(job: Job, text: str) -> None:
    """Show what an unfinished job is doing now (its message until `finish` replaces it), as a
    sign of life too: a step that shows no count ("preparing the encoder (once)")."""
    job.message = text[:2000]
    Job.objects.filter(pk=job.pk).update(message=job.message, heartbeat_at=timezone.now())


def progress(job: Job) -> Progress:
    """A callback that adds to the job's done count and shows the worker is alive."""

    def advance(count: int) -> None:
        job.done += count
        Job.objects.filter(pk=job.pk).update(
            done=job.done, total=max(job.total, job.done), heartbeat_at=timezone.now()
        )

    return advance
