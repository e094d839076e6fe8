"""Answers' tasks: a job's id in, one service run on its row (`corpus.jobs`)."""

from celery import shared_task

from answers.services import runs as answers
from corpus import jobs


@shared_task(**jobs.TASK_OPTIONS)
def import_answers(job_id: int) -> None:
    """An uploaded answer run (`answers.services.runs.start_answer_import`)."""
    jobs.run(job_id, answers.run_answer_import)
