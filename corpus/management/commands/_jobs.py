"""Commands that start a Job wait for it, so a CI script can rely on the exit code.

Without a broker the job has already run in-process when start returns; with one (Redis, or
the quickstart's local worker), a worker picks it up and this polls the Job row as the browser
does, drawing its progress (`_progress.ProgressBar`).
"""

import time

from django.core.management.base import OutputWrapper
from django.db import transaction

from corpus.management.commands._progress import ProgressBar
from corpus.models import Job

POLL_SECONDS = 0.5


def wait_for_job(job: Job, *, out: OutputWrapper, timeout: float, stream=None) -> Job:
    deadline = time.monotonic() + timeout
    job.refresh_from_db()
    if not job.finished and transaction.get_connection().in_atomic_block:
        # Jobs are queued on commit: waiting inside a transaction would wait forever.
        raise RuntimeError(f"Job {job.pk} was started inside a transaction; it runs on commit.")
    if job.finished:
        return job
    with ProgressBar(label=job.description or job.kind, stream=stream) as bar:
        while not job.finished:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"Job {job.pk} is still {job.state} after {timeout:.0f} s; is a worker "
                    "running (`make worker`)? It carries on in the background."
                )
            bar.update(job.done, job.total)
            time.sleep(POLL_SECONDS)
            job.refresh_from_db()
        bar.update(job.done, job.total)
    return job
