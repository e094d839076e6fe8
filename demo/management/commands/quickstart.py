"""`make run`: the demo project, a Celery worker and the development server, with no service
to install.

Jobs (uploads, chunking, index builds, pooling, finalising, scoring) go through kombu's
file-system transport (a folder beside the SQLite file, `GOLDSET_LOCAL_BROKER_DIR`) to a real
worker started here, so job pages show progress as they do in production. The worker runs the
reconciler too (embedded beat).

The site answers as soon as the database is migrated: the demo's accounts are made at once,
and the rest of the demo loads as a job on the worker (`load_demo --background`), whose
progress the project and job pages show and this console prints. A restart with the demo
loaded and its indexes current loads nothing.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from corpus.models import JobState, Project

REPO = Path(__file__).resolve().parents[3]
STARTUP_SECONDS = 90
ROOT_WARNING = "You're running the worker with superuser privileges"


class Command(BaseCommand):
    help = (
        "Migrate, then run a Celery worker (embedded file-system broker) and the development "
        "server together until Ctrl-C, loading the demo as a job on the worker unless it is "
        "loaded already."
    )

    # Checked in `handle` while the children start: before, they would wait for it.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--addr", default="127.0.0.1:8000", help="where the server listens")
        parser.add_argument("--no-demo", action="store_true", help="do not load the demo")

    def handle(self, *args, addr, no_demo, **options):
        if settings.REDIS_URL:
            raise CommandError(
                "REDIS_URL is set: run the web server and `celery -A goldset worker` as in "
                "production instead (docker-compose.yml)."
            )
        host, _, port = addr.rpartition(":")
        if not _port_is_free(host or "127.0.0.1", int(port or 8000)):
            raise CommandError(
                f"Something already listens on {addr} (another `make run`?): stop it, or "
                "choose another address with `manage.py quickstart --addr 127.0.0.1:8001`."
            )
        # Stopped by a signal (a closed terminal, `timeout`, systemd): still stop the children.
        for number in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, _exit_on_signal)
        call_command("migrate", interactive=False, verbosity=0)
        broker = Path(settings.LOCAL_BROKER_DIR)
        broker.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "GOLDSET_LOCAL_WORKER": "1", "GOLDSET_LOCAL_BROKER_DIR": str(broker)}
        children = []
        try:
            worker = self._start(
                # (as root, e.g. in a container, celery warns once about it: noise here)
                [
                    sys.executable,
                    "-W",
                    f"ignore:{ROOT_WARNING}",
                    "-m",
                    "celery",
                    "-A",
                    "goldset",
                    "--quiet",
                    "worker",
                    "--loglevel=WARNING",
                    # Two: an upload does not wait behind the demo's load or an index build.
                    "--concurrency=2",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                    "--beat",
                    "--schedule",
                    str(broker / "beat-schedule"),
                ],
                # Labellers first on this one machine too: the jobs give way to the web server's
                # requests (goldset.cpu_priority), unless the environment says otherwise.
                {**env, "GOLDSET_WORKER_PRIORITY": env.get("GOLDSET_WORKER_PRIORITY", "low")},
            )
            children.append(worker)
            # The checks run here, once, while the server starts (not before, not twice).
            server = self._start(
                [sys.executable, "manage.py", "runserver", "--skip-checks", addr], env
            )
            children.append(server)
            # Imported only now, while they start: the demo's module brings in every app's
            # services (a second and more of imports), which they need not wait for.
            from demo.management.commands import load_demo

            load = not no_demo and not load_demo.demo_is_loaded()
            demo = None
            if load:
                # The demo's project and accounts now, the rest queued for the worker: the
                # logins work as soon as the site answers, and the pages show the load.
                demo = subprocess.Popen(  # noqa: S603 - our own command
                    [sys.executable, "manage.py", "load_demo", "--background"],
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.DEVNULL,
                )
            self.check(display_num_errors=False)
            if demo is not None and demo.wait() != 0:
                raise CommandError("Starting the demo's load failed; see its messages above.")
            self._wait_until_it_answers(f"http://{addr}/accounts/login/", children)
            self.stdout.write("")
            self.stdout.write(
                self.style.SUCCESS(f"Goldset is running at http://{addr}/")
                + " (jobs run in the background worker; Ctrl-C stops both)."
            )
            if not no_demo:
                self.stdout.write("Log in as:")
                for line in load_demo.login_lines():
                    self.stdout.write(line)
            if load:
                self.stdout.write(
                    f"The demo is loading in the background: its progress is on "
                    f"http://{addr}/p/{load_demo.DEMO_SLUG}/jobs/ and below."
                )
            follow = (
                DemoProgress(self.stdout, slug=load_demo.DEMO_SLUG, kind=load_demo.LOAD_KIND)
                if load
                else None
            )
            while all(child.poll() is None for child in children):
                if follow is not None and follow.show():
                    follow = None
                time.sleep(1)
            stopped = next(child for child in children if child.poll() is not None)
            raise CommandError(
                f"The {'worker' if stopped is worker else 'web server'} stopped "
                f"(exit {stopped.returncode}); see its messages above."
            )
        except KeyboardInterrupt:
            self.stdout.write("\nStopping the worker and the server…")
        finally:
            for child in children:
                self._stop(child, group=child is not worker)

    def _start(self, command: list[str], env: dict) -> subprocess.Popen:
        # Its own process group, so stopping it reaches the pool children and the runserver's
        # reloaded child too, which a signal to the one process would leave running. Not a
        # session of its own: the worker gives way (SCHED_IDLE) to the server of its session
        # only, and the session as a whole competes fairly with the rest of a busy machine.
        # Alone in a session it also lowered that session's weight to the minimum, and on a
        # busy machine four tiny files took 12.7 s to import (0.3 s of work).
        return subprocess.Popen(  # noqa: S603 - our own commands
            command, cwd=REPO, env=env, process_group=0
        )

    def _wait_until_it_answers(self, url: str, children: list[subprocess.Popen]) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if any(child.poll() is not None for child in children):
                raise CommandError("The worker or the web server stopped while starting.")
            try:
                with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - our own address
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        raise CommandError(f"The server did not answer at {url} within {STARTUP_SECONDS} s.")

    def _stop(self, child: subprocess.Popen, *, group: bool) -> None:
        """SIGTERM: the worker's main process shuts its pool down itself (a warm shutdown);
        the server's whole group, since the runserver's reloaded child serves the requests."""
        try:
            if group:
                os.killpg(child.pid, signal.SIGTERM)
            else:
                child.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=5)


class DemoProgress:
    """Prints the demo's load as its job pages show it: each step, and what the job under way
    says (an index build "preparing the encoder (once)"), when it changes."""

    def __init__(self, out, *, slug: str, kind: str) -> None:
        self.out, self.slug, self.kind = out, slug, kind
        self.last = ""

    def show(self) -> bool:
        """Print what changed; True once the load has finished."""
        project = Project.objects.filter(slug=self.slug).first()
        load = project and project.jobs.filter(kind=self.kind).order_by("-pk").first()
        if not load:
            return False
        if load.finished:
            if load.state == JobState.SUCCEEDED:
                self.out.write("Demo: " + load.message)
            else:
                self.out.write(f"Demo: loading stopped: {load.message}")
            return True
        if load.state == JobState.QUEUED:
            line = "Demo: waiting for the worker to start…"
        else:
            line = f"Demo, step {min(load.done + 1, load.total)} of {load.total}: {load.message}"
        under_way = project.jobs.unfinished().exclude(pk=load.pk).order_by("-pk").first()
        if under_way is not None:
            line += f" {under_way.description}"
            if under_way.total:
                line += f": {under_way.done} of {under_way.total}"
            if under_way.message:
                line += f". {under_way.message}"
        if line != self.last:
            self.out.write(line)
            self.last = line
        return False


def _exit_on_signal(number, frame) -> None:
    raise SystemExit(128 + number)


def _port_is_free(host: str, port: int) -> bool:
    """Whether nothing listens there. Connections of a server just stopped (TIME_WAIT) do not
    count: the development server binds past them (SO_REUSEADDR), so a restart on the same
    port is no conflict."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError:
            return False
    return True
