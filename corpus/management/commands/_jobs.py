"""Commands that start a Job wait for it, so a CI script can rely on the exit code.

Without REDIS_URL the job has already run in-process when start returns; with it, a worker
(`make worker`) picks it up and this polls the Job row as the browser does.
"""

import time

from django.core.management.base import OutputWrapper
from django.db import transaction

from corpus.models import Job

POLL_SECONDS = 1.0


def wait_for_job(job: Job, *, out: OutputWrapper, timeout: float) -> Job:
    deadline = time.monotonic() + timeout
    shown = None
    job.refresh_from_db()
    if not job.finished and transaction.get_connection().in_atomic_block:
        # Jobs are queued on commit: waiting inside a transaction would wait forever.
        raise RuntimeError(f"Job {job.pk} was started inside a transaction; it runs on commit.")
    while not job.finished:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"Job {job.pk} is still {job.state} after {timeout:.0f} s; is a worker running "
                "(`make worker`)? It carries on in the background."
            )
        progress = (job.state, job.done)
        if progress != shown:
            out.write(f"  {job.get_state_display()}: {job.done} of {job.total}")
            shown = progress
        time.sleep(POLL_SECONDS)
        job.refresh_from_db()
    return job
