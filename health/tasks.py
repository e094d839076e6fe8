"""Index health's tasks: manifest imports, stored health reports and the daily check."""

import logging

from celery import shared_task
from django.db import transaction

from corpus import jobs
from corpus.models import Project
from health.services import checks as index_health
from health.services import daily, manifests
from health.services import reports as health_reports

logger = logging.getLogger(__name__)


@shared_task(**jobs.TASK_OPTIONS)
def import_manifest(job_id: int) -> None:
    jobs.run(job_id, manifests.run_manifest_import)


@shared_task(**jobs.TASK_OPTIONS)
def index_health_report(job_id: int) -> None:
    """A large index's health figures, as the lead who asked may see them, stored."""
    jobs.run(job_id, health_reports.run_health_report)


@shared_task(**jobs.TASK_OPTIONS)
def daily_index_health_check(job_id: int) -> None:
    """One project's daily check, run now from Index health (the same service as below)."""
    jobs.run(job_id, daily.run_daily_check)


@shared_task(acks_late=True)
def check_index_health() -> int:
    """Celery beat, daily: record each project's index health and email first crossings. Each
    project is checked on its own: one that fails (its error logged) never costs the others
    their check."""
    recorded = 0
    for project in Project.objects.filter(retrievers__isnull=False).distinct().order_by("pk"):
        try:
            with transaction.atomic():
                recorded += len(index_health.record_health_checks(project=project))
        except jobs.DATABASE_GONE:
            raise  # not this project's fault: the whole task fails (and beat runs it again)
        except Exception:  # noqa: BLE001 - logged; the other projects are still checked
            logger.exception("the daily index health check of project %s failed", project.pk)
    return recorded
