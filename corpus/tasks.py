from celery import shared_task
from django.db import DatabaseError

from corpus import services
from corpus.models import Job


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), max_retries=3, retry_backoff=5)
def run_job(job_id: int) -> None:
    job = Job.objects.filter(pk=job_id).first()
    if job is not None:
        services.run_job(job)


@shared_task(acks_late=True)
def reconcile_jobs() -> list[int]:
    return services.reconcile_jobs()
