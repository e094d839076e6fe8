"""Evaluation's tasks: a job's id in, one service run on its row (`corpus.jobs`)."""

from celery import shared_task

from corpus import jobs
from evaluation.services import answer_scores, permission_replays, reports

# A database that went away mid-job is retried; the job's own errors finish it (jobs.run).
RETRY = {
    "acks_late": True,
    "autoretry_for": jobs.DATABASE_GONE,
    "max_retries": 3,
    "retry_backoff": 5,
}


@shared_task(**RETRY)
def evaluation_run(job_id: int) -> None:
    """A built-in or HTTP retriever's run over a gold set's questions."""
    jobs.run(job_id, reports.run_retriever_run)


@shared_task(**RETRY)
def uploaded_run(job_id: int) -> None:
    jobs.run(job_id, reports.run_uploaded_run)


@shared_task(**RETRY)
def finalise_gold_set(job_id: int) -> None:
    jobs.run(job_id, reports.run_finalise)


@shared_task(**RETRY)
def evaluation_report(job_id: int) -> None:
    jobs.run(job_id, reports.run_report)


@shared_task(**RETRY)
def permission_replay(job_id: int) -> None:
    jobs.run(job_id, permission_replays.run_permission_replay)


@shared_task(**RETRY)
def answer_report(job_id: int) -> None:
    """The Answers page's figures: every answer run of a gold set's question set."""
    jobs.run(job_id, answer_scores.run_answers_report)
