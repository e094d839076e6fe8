"""One task per corpus job kind: the job's id in, one service run on its row (`corpus.jobs`)."""

from celery import shared_task

from corpus import jobs
from corpus.services import documents, manifests, retrieval

# A database that went away mid-job is retried; the job's own errors finish it (jobs.run).
RETRY = {
    "acks_late": True,
    "autoretry_for": jobs.DATABASE_GONE,
    "max_retries": 3,
    "retry_backoff": 5,
}


@shared_task(**RETRY)
def import_uploads(job_id: int) -> None:
    jobs.run(job_id, documents.run_upload_import)


@shared_task(**RETRY)
def chunk_corpus(job_id: int) -> None:
    jobs.run(job_id, documents.run_chunking)


@shared_task(**RETRY)
def build_index(job_id: int) -> None:
    jobs.run(job_id, retrieval.run_index_build)


@shared_task(**RETRY)
def import_manifest(job_id: int) -> None:
    jobs.run(job_id, manifests.run_manifest_import)


@shared_task(acks_late=True)
def reconcile_jobs() -> list[int]:
    return jobs.reconcile()
