"""One task per corpus job kind: the job's id in, one service run on its row (`corpus.jobs`)."""

from celery import shared_task

from corpus import jobs
from corpus.services import documents, retrieval


@shared_task(**jobs.TASK_OPTIONS)
def import_uploads(job_id: int) -> None:
    jobs.run(job_id, documents.run_upload_import)


@shared_task(**jobs.TASK_OPTIONS)
def chunk_corpus(job_id: int) -> None:
    jobs.run(job_id, documents.run_chunking)


@shared_task(**jobs.TASK_OPTIONS)
def build_index(job_id: int) -> None:
    jobs.run(job_id, retrieval.run_index_build)


@shared_task(acks_late=True)
def reconcile_jobs() -> list[int]:
    return jobs.reconcile()
