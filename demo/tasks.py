"""The demo's job: loading it on the worker while the site already answers (`quickstart`)."""

from celery import shared_task

from corpus import jobs
from demo.management.commands.load_demo import run_demo_load


@shared_task(**jobs.TASK_OPTIONS)
def load_demo(job_id: int) -> None:
    jobs.run(job_id, run_demo_load)
