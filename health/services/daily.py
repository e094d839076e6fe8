"""The daily index health check of one project, run now from Index health as a job: the same
service the Celery beat task runs every day (`checks.record_health_checks`), so the history,
the banner and the alert emails cannot tell a "check now" from a scheduled one."""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse

from corpus import jobs
from corpus.models import Job, JobState, Project
from goldset.errors import ServiceError
from health.services.alerts import MAIL_ERRORS, mail_failure
from health.services.checks import record_health_checks

KIND = "daily_index_health_check"


def start_daily_check(*, project: Project, user) -> Job:
    """Queue the daily check of ``project`` now, or give the one already waiting or under way
    (a double click starts one job)."""
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # one start at a time
        running = Job.objects.unfinished().filter(project=project, kind=KIND).first()
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
