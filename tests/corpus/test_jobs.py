"""Jobs survive lost messages and dead workers: claimed once, re-queued by the reconciler."""

from datetime import timedelta

from django.utils import timezone

from corpus import jobs
from corpus.models import ChunkingScheme, Job, JobState
from tests.conftest import wait_for_job
from tests.factories import POLICY_TEXT, add_documents


def lost_job(project, **fields) -> Job:
    scheme = ChunkingScheme.objects.create(
        project=project, name="w20", strategy="fixed", size=20, overlap=0
    )
    job = Job.objects.create(
        project=project,
        kind="chunk_corpus",
        task="corpus.tasks.chunk_corpus",
        params={"scheme_id": scheme.pk},
        **fields,
    )
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(hours=1))
    return job


def test_a_queued_job_whose_message_was_lost_is_requeued_and_completes(worker, project):
    add_documents(project, ("leave", POLICY_TEXT))
    job = lost_job(project)
    assert jobs.reconcile() == [job.pk]
    wait_for_job(job)
    assert job.state == JobState.SUCCEEDED and job.attempts == 1
    assert job.result["chunks"] > 0
    assert jobs.reconcile() == []  # finished jobs are left alone


def test_a_running_job_with_a_live_worker_is_not_run_twice(project):
    job = lost_job(project, state=JobState.RUNNING, heartbeat_at=timezone.now(), attempts=1)
    jobs.task_named(job.task)(job.pk)
    job.refresh_from_db()
    assert job.state == JobState.RUNNING and job.attempts == 1
    assert jobs.reconcile() == []


def test_a_job_whose_worker_died_is_run_again(worker, project):
    add_documents(project, ("leave", POLICY_TEXT))
    stale = timezone.now() - timedelta(hours=1)
    job = lost_job(project, state=JobState.RUNNING, heartbeat_at=stale, attempts=1)
    assert jobs.reconcile() == [job.pk]
    wait_for_job(job)
    assert job.state == JobState.SUCCEEDED and job.attempts == 2


def test_the_reconciler_gives_up_with_a_reason(project):
    stale = timezone.now() - timedelta(hours=1)
    job = lost_job(project, state=JobState.RUNNING, heartbeat_at=stale, attempts=jobs.MAX_ATTEMPTS)
    assert jobs.reconcile() == []
    job.refresh_from_db()
    assert job.state == JobState.FAILED and "Gave up after 3 attempts" in job.message
