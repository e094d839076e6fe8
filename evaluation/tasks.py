"""Evaluation's tasks: a job's id in, one service run on its row (`corpus.jobs`)."""

from celery import shared_task

from corpus import jobs
from evaluation.services import (
    answer_scores,
    index_evaluations,
    permission_replays,
    reports,
)


@shared_task(**jobs.TASK_OPTIONS)
def evaluation_run(job_id: int) -> None:
    """A built-in or HTTP retriever's run over a gold set's questions."""
    jobs.run(job_id, reports.run_retriever_run)


@shared_task(**jobs.TASK_OPTIONS)
def uploaded_run(job_id: int) -> None:
    jobs.run(job_id, reports.run_uploaded_run)


@shared_task(**jobs.TASK_OPTIONS)
def finalise_gold_set(job_id: int) -> None:
    jobs.run(job_id, reports.run_finalise)


@shared_task(**jobs.TASK_OPTIONS)
def evaluation_report(job_id: int) -> None:
    jobs.run(job_id, reports.run_report)


@shared_task(**jobs.TASK_OPTIONS)
def permission_replay(job_id: int) -> None:
    jobs.run(job_id, permission_replays.run_permission_replay)


@shared_task(**jobs.TASK_OPTIONS)
def answer_report(job_id: int) -> None:
    """The Answers page's figures: every answer run of a gold set's question set."""
    jobs.run(job_id, answer_scores.run_answers_report)


@shared_task(**jobs.TASK_OPTIONS)
def index_evaluation(job_id: int) -> None:
    """A new index scored on the newest gold set."""
    jobs.run(job_id, index_evaluations.run_index_evaluation)


@shared_task(acks_late=True)
def evaluate_index_builds() -> int:
    """Celery beat, every minute: start the evaluation job of each index build not evaluated yet."""
    return len(index_evaluations.start_build_evaluations())
