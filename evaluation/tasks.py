"""Evaluation's tasks: a retriever's run over a gold set's questions, and a permission replay."""

from celery import shared_task
from django.db import DatabaseError

from corpus import jobs
from evaluation.services import evaluation_runs, permission_replays


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), max_retries=3, retry_backoff=5)
def evaluation_run(job_id: int) -> None:
    jobs.run(job_id, evaluation_runs.run_retriever_run)


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), max_retries=3, retry_backoff=5)
def permission_replay(job_id: int) -> None:
    jobs.run(job_id, permission_replays.run_permission_replay)
