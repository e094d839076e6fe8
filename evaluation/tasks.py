"""Evaluation's tasks: a job's id in, one service run on its row (`corpus.jobs`)."""

from celery import shared_task

from corpus import jobs
from corpus.models import Project
from evaluation.services import (
    answer_scores,
    health_reports,
    index_evaluations,
    index_health,
    permission_replays,
    production_reports,
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


@shared_task(acks_late=True)
def evaluate_index_builds() -> int:
    """Celery beat, every minute: start the evaluation job of each index build not evaluated yet."""
    return len(index_evaluations.start_build_evaluations())


@shared_task(**jobs.TASK_OPTIONS)
def misses_report(job_id: int) -> None:
    """A production sample's misses report and the trend, as its viewer may see them."""
    jobs.run(job_id, production_reports.run_misses_report)
