import pytest
from django.db import transaction

from corpus import jobs


@pytest.fixture
def inline_jobs(monkeypatch):
    """Jobs run in this process when their transaction commits, whatever the broker (with
    REDIS_URL set, no worker would pick them up in a test that does not start one)."""
    monkeypatch.setattr(
        jobs, "queue", lambda job: transaction.on_commit(lambda: jobs.task_named(job.task)(job.pk))
    )
