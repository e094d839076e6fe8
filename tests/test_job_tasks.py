"""Every job kind has its own task, named on its Job row, and nothing else finds it: the
reconciler re-queues a lost job of each kind by that name alone."""

import ast
import importlib
from datetime import timedelta
from pathlib import Path

import pytest
from celery import Task
from django.apps import apps
from django.utils import timezone

from corpus import jobs
from corpus.models import Job, JobState
from corpus.services import projects
from labelling.services.completion import refresh_completion
from tests.conftest import GOLDSET_APPS

REPO = Path(__file__).resolve().parents[1]


def started_tasks() -> dict[str, str]:
    """Every ``jobs.start(task=..., kind=...)`` in the apps' code: kind -> task name."""
    found = {}
    for app in GOLDSET_APPS:
        for path in (REPO / app).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "start"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "jobs"
                ):
                    continue
                words = {k.arg: k.value for k in node.keywords}
                assert isinstance(words.get("task"), ast.Constant), f"{path}: task by name"
                kind = words["kind"]
                if isinstance(kind, ast.Name):  # a module constant: its value, as imported
                    module = ".".join(path.relative_to(REPO).with_suffix("").parts)
                    found[getattr(importlib.import_module(module), kind.id)] = words["task"].value
                else:
                    found[kind.value] = words["task"].value
    return found


def test_every_job_kind_is_started_with_a_task_of_the_app_that_owns_it():
    tasks = started_tasks()
    assert set(tasks) == {
        "import_uploads",
        "chunk_corpus",
        "build_index",
        "build_pool",
        "evaluation_run",
        "permission_replay",
        "evaluation_upload",
        "evaluation_report",
        "answer_report",
        "finalise_gold_set",
        "import_questions",
        "import_answers",
        "import_manifest",
        "index_evaluation",
        "index_health_report",
        "misses_report",
        "draw_sample",
        "judge",
        "judge_canaries",
        "daily_index_health_check",
        "plant_canaries",
    }
    for kind, name in tasks.items():
        task = jobs.task_named(name)
        assert isinstance(task, Task) and task.name == name, kind
        app = name.split(".")[0]
        assert name.startswith(f"{app}.tasks."), f"{kind}: one task per kind in {app}/tasks.py"


@pytest.mark.parametrize("kind", sorted(started_tasks()))
def test_the_reconciler_requeues_a_lost_job_of_each_kind_by_the_name_on_its_row(
    kind, project, monkeypatch, django_capture_on_commit_callbacks
):
    name = started_tasks()[kind]
    sent = []
    monkeypatch.setattr(jobs.task_named(name), "delay", lambda job_id: sent.append(job_id))
    job = Job.objects.create(project=project, kind=kind, task=name)
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.reconcile() == [job.pk]
    assert sent == [job.pk]
    job.refresh_from_db()
    assert job.state == JobState.QUEUED


def test_a_job_naming_no_task_is_failed_with_a_reason_not_requeued(project):
    stale = timezone.now() - timedelta(hours=1)
    unknown = Job.objects.create(project=project, kind="x", task="corpus.tasks.no_such_task")
    inline = Job.objects.create(
        project=project, kind="import_documents", state=JobState.RUNNING, heartbeat_at=stale
    )
    Job.objects.filter(pk=unknown.pk).update(created_at=stale)
    assert jobs.reconcile() == []
    unknown.refresh_from_db()
    inline.refresh_from_db()
    assert unknown.state == JobState.FAILED and "no task named" in unknown.message
    assert inline.state == JobState.FAILED and "run it again" in inline.message


def test_labelling_hands_its_access_listener_to_the_corpus_when_it_is_ready():
    assert apps.is_installed("labelling")
    assert projects.access_listener() is refresh_completion
