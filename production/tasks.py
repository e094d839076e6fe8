"""The production loop's tasks: drawing samples (by hand and weekly), the misses report, and
the daily purge of expired traces."""

from celery import shared_task

from corpus import jobs
from production.services import draws as production
from production.services import reports as production_reports
from production.services import traces


@shared_task(**jobs.TASK_OPTIONS)
def draw_sample(job_id: int) -> None:
    """A lead's "Draw now" (`production.services.draws.start_draw`)."""
    jobs.run(job_id, production.run_draw)


@shared_task(acks_late=True, autoretry_for=jobs.DATABASE_GONE, max_retries=3, retry_backoff=60)
def draw_weekly_samples() -> list[int]:
    """Celery beat, weekly: each active sampling rule's sample, question set and pool. Safe to
    run twice: a rule already drawn this week is skipped."""
    outcome = production.draw_weekly_samples()
    return [made.sample.pk for made in outcome.opened]


@shared_task(acks_late=True, autoretry_for=jobs.DATABASE_GONE, max_retries=3, retry_backoff=60)
def purge_expired_traces() -> int:
    """Celery beat, daily: traces past GOLDSET_TRACE_RETENTION_DAYS that no sample holds."""
    return traces.purge_expired_traces()


@shared_task(**jobs.TASK_OPTIONS)
def misses_report(job_id: int) -> None:
    """A production sample's misses report and the trend, as its viewer may see them."""
    jobs.run(job_id, production_reports.run_misses_report)
