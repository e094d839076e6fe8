"""One task per judges job kind: the job's id in, one service run on its row (`corpus.jobs`)."""

from celery import shared_task

from corpus import jobs
from judges.services import canaries, judging


@shared_task(**jobs.TASK_OPTIONS)
def judge_candidates(job_id: int) -> None:
    jobs.run(job_id, judging.run_judging)


@shared_task(**jobs.TASK_OPTIONS)
def judge_canaries(job_id: int) -> None:
    jobs.run(job_id, canaries.run_canaries)
