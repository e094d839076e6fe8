"""`quickstart` loads the demo as a job on the worker (`load_demo --background`): the accounts
at once, then each step on the job's page, the jobs it starts (index builds, pooling,
finalising, scoring) each with a page of its own, done on a worker of one slot; a start with the
demo loaded and its indexes current loads nothing, one after a change loads it again, and a
load a stopped quickstart left unfinished goes again rather than twice; a restart on the same
port starts."""

from __future__ import annotations

import io
import socket
from collections import Counter

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import OutputWrapper
from django.urls import reverse

from corpus.models import Job, JobState, Project
from corpus.services import documents, projects
from corpus.sources import read_source
from demo.management.commands.load_demo import (
    DEMO_STEPS,
    LOAD_KIND,
    demo_is_loaded,
    queue_demo_load,
)
from demo.management.commands.quickstart import DemoProgress, _port_is_free
from tests.conftest import wait_for_job

DEMO_ACCOUNTS = {"admin", "lead", "labeller1", "labeller2"}


def background() -> str:
    out = io.StringIO()
    call_command("load_demo", "--background", stdout=out)
    return out.getvalue()


def test_the_demo_loads_as_jobs_once_and_a_second_start_loads_nothing(worker, client):
    said = background()
    users = get_user_model().objects.filter(username__in=DEMO_ACCOUNTS)
    assert users.count() == 4  # the logins work before the load is done
    (load,) = Job.objects.filter(project__slug="demo", kind=LOAD_KIND)
    assert f"job {load.pk}" in said
    load = wait_for_job(load, timeout=900)
    assert (load.state, load.message) == (JobState.SUCCEEDED, "The demo is ready."), load.message
    assert load.done == load.total == len(DEMO_STEPS)
    started = Counter(
        Job.objects.filter(project__slug="demo").exclude(pk=load.pk).values_list("kind", "state")
    )
    assert started[("build_index", JobState.SUCCEEDED)] == 2
    assert started[("build_pool", JobState.SUCCEEDED)] >= 1
    assert started[("finalise_gold_set", JobState.SUCCEEDED)] >= 1
    assert not Job.objects.unfinished().exists()
    assert demo_is_loaded()

    # The lead sees the load and the jobs it started on the project's pages.
    client.force_login(users.get(username="lead"))
    page = client.get(reverse("corpus:list-jobs", args=["demo"])).content.decode()
    assert "Load the demo" in page
    assert "The demo is ready." in page
    assert "Build the minilm index" in page

    # A restart: nothing is loaded again, no job is made.
    jobs_before = Job.objects.count()
    assert "loaded already" in background()
    assert Job.objects.count() == jobs_before

    # A document changed since the indexes were built: the next start refreshes the demo.
    project = Project.objects.get(slug="demo")
    documents.ingest_batch(
        project=project,
        batch=read_source(name="new-policy.md", data=b"# New policy\n\nA new rule.\n"),
        importer=documents.Importer.command_line(),
    )
    assert not demo_is_loaded()


def test_a_load_a_stopped_quickstart_left_unfinished_goes_again_not_twice(db):
    project = projects.create_project(slug="demo", name="Northwind demo")
    admin = get_user_model().objects.create(username="admin")
    left = Job.objects.create(
        project=project,
        kind=LOAD_KIND,
        task="demo.tasks.load_demo",
        state=JobState.RUNNING,
        total=len(DEMO_STEPS),
        done=3,
    )
    again = queue_demo_load(project, admin)
    assert again.pk == left.pk
    left.refresh_from_db()
    assert left.state == JobState.QUEUED  # for the worker about to start
    assert Job.objects.filter(kind=LOAD_KIND).count() == 1
    assert not demo_is_loaded()


def test_the_console_follows_the_load_and_the_job_under_way(db):
    project = projects.create_project(slug="demo", name="Northwind demo")
    out = io.StringIO()
    follow = DemoProgress(OutputWrapper(out), slug="demo", kind=LOAD_KIND)
    assert follow.show() is False  # no load yet
    load = Job.objects.create(
        project=project, kind=LOAD_KIND, state=JobState.QUEUED, total=len(DEMO_STEPS)
    )
    follow.show()
    assert "waiting for the worker" in out.getvalue()
    Job.objects.filter(pk=load.pk).update(
        state=JobState.RUNNING, done=3, message="Building the bm25 and minilm indexes…"
    )
    Job.objects.create(
        project=project,
        kind="build_index",
        state=JobState.RUNNING,
        description="Build the minilm index",
        total=167,
        message="Preparing the encoder (once): exporting the model to ONNX.",
    )
    follow.show()
    follow.show()  # unchanged: not printed twice
    lines = out.getvalue().splitlines()
    assert lines[-1] == (
        f"Demo, step 4 of {len(DEMO_STEPS)}: Building the bm25 and minilm indexes… Build the "
        "minilm index: 0 of 167. Preparing the encoder (once): exporting the model to ONNX."
    )
    assert len(lines) == 2
    Job.objects.filter(project=project).update(state=JobState.SUCCEEDED)
    Job.objects.filter(pk=load.pk).update(message="The demo is ready.")
    assert follow.show() is True
    assert out.getvalue().splitlines()[-1] == "Demo: The demo is ready."


def test_a_restart_on_the_same_port_is_no_conflict_but_a_listener_is():
    """Connections of the server just stopped linger (TIME_WAIT): `make run` again at once must
    start, while a port something listens on is refused."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as runserver's does
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert not _port_is_free("127.0.0.1", port)
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = server.accept()
            accepted.close()  # the server's side closes first: it lingers in TIME_WAIT
            client.recv(1)
    assert _port_is_free("127.0.0.1", port)
