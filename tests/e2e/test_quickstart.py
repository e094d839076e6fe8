"""The quickstart (`make run` = `manage.py quickstart`) does jobs in a real background worker,
with no service to install: in Chromium, an upload's job page shows the job waiting or running,
then follows it to the end by itself (htmx), as it does in production. Its log is quiet: no
broker warning, "Watching for file changes" once, and the logins come last."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import REPO, child_pids

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def quickstart(tmp_path):
    """A fresh SQLite quickstart (no demo: its MiniLM build takes minutes) with one lead."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "GOLDSET_REQUIRE_SERVICES", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'quickstart.sqlite3'}",
        GOLDSET_LOCAL_BROKER_DIR=str(tmp_path / "broker"),
        DEBUG="1",
    )

    def manage(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    manage("migrate", "-v0")
    manage("create_project", "qs", "--name", "Quickstart")
    created = manage("add_member", "lena", "--project", "qs", "--role", "lead", "--create")
    password = re.search(r"password (\S+)", created).group(1)
    port = free_port()
    log = tmp_path / "quickstart.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "quickstart", "--no-demo", "--addr", f"127.0.0.1:{port}"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 120
    while "Goldset is running" not in log.read_text():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.5)
    yield {"url": f"http://127.0.0.1:{port}", "password": password, "log": log, "pid": process.pid}
    process.send_signal(signal.SIGTERM)  # the command stops its worker and server itself
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise


def test_the_quickstart_runs_jobs_in_a_worker_and_the_job_page_follows_them(
    quickstart, browser, tmp_path
):
    page = browser.new_context().new_page()
    page.set_default_timeout(30_000)
    url = quickstart["url"]
    page.goto(f"{url}/accounts/login/")
    page.get_by_label("Username").fill("lena")
    page.get_by_label("Password").fill(quickstart["password"])
    page.get_by_role("button", name="Log in").click()
    # The printed password is one-time: its owner chooses their own first.
    page.wait_for_url(f"{url}/accounts/password/")
    page.get_by_label("Old password").fill(quickstart["password"])
    page.get_by_label("New password", exact=True).fill("a quickstart pass phrase")
    page.get_by_label("New password confirmation").fill("a quickstart pass phrase")
    page.get_by_role("button", name="Change my password").click()
    page.goto(f"{url}/")
    files = []
    for number in range(30):
        path = tmp_path / f"policy-{number:02d}.md"
        path.write_text(f"# Policy {number}\n\nStaff may carry over {number} days of leave.\n")
        files.append(str(path))
    page.goto(f"{url}/p/qs/documents/upload/")
    page.locator("input[type=file]").set_input_files(files)
    page.get_by_role("button", name=re.compile("Upload|Import")).click()
    page.wait_for_url(re.compile(r"/p/qs/jobs/\d+/$"))
    # The request only queued the job: the page shows it waiting or under way...
    state = page.locator(".job-state").inner_text()
    assert state in ("Queued", "Running"), state
    page.evaluate("window.stillTheSamePage = true")
    # ...and follows the worker to the end without a reload.
    expect(page.locator(".job-state")).to_have_text("Succeeded", timeout=90_000)
    expect(page.locator("#job-progress")).to_contain_text("30 of 30")
    expect(page.locator("#job-progress")).to_contain_text("30 new")
    assert page.evaluate("window.stillTheSamePage") is True
    page.close()

    # Its jobs give way to the web server's requests; the server keeps the normal policy.
    policies = dict(children_of(quickstart["pid"]))
    assert policies["celery"] == os.SCHED_IDLE, policies
    assert policies["runserver"] == os.SCHED_OTHER, policies

    log = quickstart["log"].read_text()
    assert "No hostname was supplied" not in log
    assert log.count("Watching for file changes") == 1
    assert "superuser privileges" not in log
    assert "Traceback" not in log


def children_of(pid: int) -> list[tuple[str, int]]:
    """(celery or runserver, scheduling policy) of each process the quickstart started."""
    found = []
    for child in child_pids(pid):
        command = Path(f"/proc/{child}/cmdline").read_text().split("\0")
        kind = "celery" if "celery" in command else "runserver" if "runserver" in command else ""
        found.append((kind, os.sched_getscheduler(child)))
    return found


def start(env: dict, log: Path, port: int) -> subprocess.Popen:
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "quickstart", "--addr", f"127.0.0.1:{port}"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 300
    while "Goldset is running" not in log.read_text():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.5)
    return process


def wait_for_line(log: Path, line: str) -> None:
    deadline = time.monotonic() + 60
    while line not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.5)


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise


def test_the_site_answers_before_the_demo_is_loaded_and_a_restart_loads_nothing(browser, tmp_path):
    """Fresh: the logins work at once and the pages follow the demo's load (its steps, the jobs
    it starts); restarted with the demo loaded: nothing is loaded again."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "GOLDSET_REQUIRE_SERVICES", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'quickstart.sqlite3'}",
        GOLDSET_LOCAL_BROKER_DIR=str(tmp_path / "broker"),
        GOLDSET_ARTIFACT_DIR=str(tmp_path / "artifacts"),
        DEBUG="1",
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = start(env, tmp_path / "fresh.log", port)
    try:
        page = browser.new_context().new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{url}/accounts/login/")
        page.get_by_label("Username").fill("lead")
        page.get_by_label("Password").fill("goldset-lead")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{url}/")
        page.goto(f"{url}/p/demo/jobs/")
        page.get_by_role("link", name="Load the demo").click()
        # The job's page follows the load to its end by itself, step by step.
        expect(page.locator(".job-state")).to_have_text("Succeeded", timeout=900_000)
        expect(page.locator("#job-progress")).to_contain_text("The demo is ready.")
        page.goto(f"{url}/p/demo/jobs/")
        jobs_page = page.locator("main").inner_text()
        for started in ("Build the bm25 index", "Build the minilm index", "Pool demo-pool"):
            assert started in jobs_page
        assert jobs_page.count("Load the demo") == 1
        page.close()
        # The console says so too, at its next look (once a second).
        wait_for_line(tmp_path / "fresh.log", "Demo: The demo is ready.")
    finally:
        stop(process)
    fresh = (tmp_path / "fresh.log").read_text()
    assert "The demo is loading in the background" in fresh
    assert "Demo: The demo is ready." in fresh
    for noise in ("Traceback", "Quantization parameters", "pre-processing", "TracerWarning"):
        assert noise not in fresh

    process = start(env, tmp_path / "restarted.log", port)
    try:
        page = browser.new_context().new_page()
        page.goto(f"{url}/accounts/login/")
        page.get_by_label("Username").fill("lead")
        page.get_by_label("Password").fill("goldset-lead")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{url}/")
        page.goto(f"{url}/p/demo/jobs/")
        assert page.locator("main").inner_text().count("Load the demo") == 1
        page.close()
    finally:
        stop(process)
    restarted = (tmp_path / "restarted.log").read_text()
    assert "Log in as:" in restarted
    assert "The demo is loading" not in restarted
    assert "Demo," not in restarted
