"""The daily index health check of one project, run now from Index health as a job: the same
service the Celery beat task runs every day (`checks.record_health_checks`), so the history,
the banner and the alert emails cannot tell a "check now" from a scheduled one."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from corpus import jobs
from corpus.models import Job, JobState, Project
from goldset.errors import ServiceError
from health.services.alerts import MAIL_ERRORS, mail_failure
from health.services.checks import record_health_checks

KIND = "daily_index_health_check"
# A second "check now" this soon after the first is the same click twice: it follows that job.
SAME_CLICK_SECONDS = 30


def start_daily_check(*, project: Project, user) -> Job:
    """Queue the daily check of ``project`` now, or give the one waiting, under way or started
    a moment ago (a double click starts one job, however fast the worker is)."""
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # one start at a time
        recent = timezone.now() - timedelta(seconds=SAME_CLICK_SECONDS)
        running = (
            Job.objects.filter(project=project, kind=KIND)
            .filter(Q(state__in=[JobState.QUEUED, JobState.RUNNING]) | Q(created_at__gte=recent))
            .order_by("-pk")
            .first()
        )
        if running is not None:
            return running
        then = {
            "url": reverse("health:show-index-health", args=[project.slug]),
            "text": "Open Index health",
        }
        return jobs.start(
            project=project,
            task="health.tasks.daily_index_health_check",
            kind=KIND,
            user=user,
            params={"then": then},
            total=project.retrievers.count(),
            description=f"Run the daily index health check of {project.name} now",
        )


def run_daily_check(job: Job) -> None:
    """The job of `start_daily_check`: record every retriever's check, as the beat task does."""
    try:
        with transaction.atomic():
            checks = record_health_checks(project=job.project)
    except MAIL_ERRORS as exc:
        raise ServiceError(
            "Nothing was recorded: a retriever first crossed a threshold, and the alert email "
            f"to the admins could not be sent: {mail_failure(exc)}"
        ) from exc
    job.done = job.total = len(checks)
    crossed = [c for c in checks if c.crossed]
    emailed = sum(1 for c in checks if c.notified)
    message = f"Daily check recorded for {len(checks)} retriever{'s' if len(checks) != 1 else ''}"
    if crossed:
        message += f"; {len(crossed)} crossed a threshold"
        if emailed:
            message += f" ({emailed} for the first time: the admins were emailed)"
    message += "." if checks else " (none has an index to check)."
    job.result = {"link": job.params["then"], "redirect": True}
    jobs.finish(job, JobState.SUCCEEDED, message)
