"""Labelling's tasks: the pool job, and the per-retriever batches it fans out to; the
release of lapsed leases (Celery beat)."""

from celery import shared_task

from corpus import jobs
from corpus.models import Retriever
from labelling.models import Pool
from labelling.services import canary_planting, leases, pools, questions


@shared_task(**jobs.TASK_OPTIONS)
def build_pool(job_id: int) -> None:
    jobs.run(job_id, pools.run_pool_build)


@shared_task(acks_late=True, max_retries=3, default_retry_delay=10)
def pool_batch(pool_id: int, retriever_id: int, question_ids: list[int]) -> None:
    pool = Pool.objects.select_related("question_set").filter(pk=pool_id).first()
    retriever = Retriever.objects.filter(pk=retriever_id).first()
    if pool is not None and retriever is not None:
        pools.record_pool_hits(pool=pool, retriever=retriever, question_ids=question_ids)


@shared_task(**jobs.TASK_OPTIONS)
def import_questions(job_id: int) -> None:
    jobs.run(job_id, questions.run_question_import)


@shared_task(**jobs.TASK_OPTIONS)
def plant_canaries(job_id: int) -> None:
    jobs.run(job_id, canary_planting.run_planting)


@shared_task
def release_lapsed_leases() -> int:
    """Every minute (Celery beat): claimed questions whose lease ran out with nothing graded
    go back to the pool. Idempotent; claims also release them first, so a missed beat only
    delays what the Assignments page shows."""
    return leases.release_lapsed_leases()
