"""Labelling's tasks: the pool job, and the per-retriever batches it fans out to."""

from celery import shared_task

from corpus import jobs
from corpus.models import Retriever
from labelling.models import Pool
from labelling.services import answers, pools, production, questions, traces


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
def import_answers(job_id: int) -> None:
    """An uploaded answer run (`labelling.services.answers.start_answer_import`)."""
    jobs.run(job_id, answers.run_answer_import)


@shared_task(**jobs.TASK_OPTIONS)
def draw_sample(job_id: int) -> None:
    """A lead's "Draw now" (`labelling.services.production.start_draw`)."""
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
