from celery import shared_task

from corpus import services
from corpus.models import Job


@shared_task(acks_late=True, max_retries=3, default_retry_delay=10)
def run_job(job_id: int) -> None:
    job = Job.objects.filter(pk=job_id).first()
    if job is not None:
        services.run_job(job)
