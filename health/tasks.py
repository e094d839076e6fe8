"""Index health's tasks: manifest imports, stored health reports and the daily check."""

from celery import shared_task

from corpus import jobs
from corpus.models import Project
from health.services import checks as index_health
from health.services import manifests
from health.services import reports as health_reports


@shared_task(**jobs.TASK_OPTIONS)
def import_manifest(job_id: int) -> None:
    jobs.run(job_id, manifests.run_manifest_import)


@shared_task(**jobs.TASK_OPTIONS)
def index_health_report(job_id: int) -> None:
    """A large index's health figures, as the lead who asked may see them, stored."""
    jobs.run(job_id, health_reports.run_health_report)


@shared_task(acks_late=True)
def check_index_health() -> int:
    """Celery beat, daily: record each project's index health and email first crossings."""
    recorded = 0
    for project in Project.objects.filter(retrievers__isnull=False).distinct().order_by("pk"):
        recorded += len(index_health.record_health_checks(project=project))
    return recorded
