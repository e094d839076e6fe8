"""How long `make run` takes to a first page and to a usable demo, fresh and restarted.

Fresh: a new SQLite file and new data folders (broker, index artefacts, the encoder's cache, so
the int8 encoder is prepared once, as on a fresh clone). Restarted: the same folders again,
after the first run was stopped with SIGTERM. Each run is `manage.py quickstart` (what `make
run` runs once installed; it migrates itself):

- first page: the login page answers 200;
- usable demo: the demo's load job succeeded and no job of the demo project is unfinished;
- restarted only, then: four tiny files uploaded to the demo, until their job succeeded.

Also reports whether the console said "Preparing the encoder (once)", and any console line
that looks like library noise (warnings, tracebacks, the quantizer's lines). The last line is
JSON.

    PYTHONPATH=. .venv/bin/python benchmarks/quickstart.py [--keep DIR] [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from quickstart_job_page import Browser

REPO = Path(__file__).resolve().parents[1]
NOISE = re.compile(r"Warning|Traceback|Quantization parameters|Ignore MatMul|pre-processing")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - our own server
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def demo_jobs(database: Path) -> tuple[str | None, int, int]:
    """(the newest demo load's state, unfinished jobs of the demo, demo loads) from the file."""
    if not database.exists():
        return None, 0, 0
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as db:
        try:
            rows = db.execute(
                "SELECT j.kind, j.state FROM corpus_job j JOIN corpus_project p "
                "ON p.id = j.project_id WHERE p.slug = 'demo' ORDER BY j.id"
            ).fetchall()
        except sqlite3.OperationalError:  # not migrated yet, or locked for a moment
            return None, 0, 0
    loads = [state for kind, state in rows if kind == "load_demo"]
    unfinished = sum(1 for _, state in rows if state in ("queued", "running"))
    return (loads[-1] if loads else None), unfinished, len(loads)


def upload_four_tiny_files(base: str) -> float:
    """Seconds from posting four tiny files to the demo (as its lead) to their job's success,
    the job page polled as htmx polls it."""
    browser = Browser(base)
    browser.post(
        "/accounts/login/",
        {"username": "lead", "password": "goldset-lead", "next": "/"},
        referer="/accounts/login/",
    )
    form = "/p/demo/documents/upload/"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', browser.get(form)).group(1)
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n'
        f"{token}\r\n"
    ]
    for number in range(4):
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; '
            f'filename="tiny-{number}.md"\r\nContent-Type: text/markdown\r\n\r\n'
            f"# Tiny {number}\n\nA tiny policy, number {number}.\r\n"
        )
    parts.append(f"--{boundary}--\r\n")
    request = urllib.request.Request(  # noqa: S310 - our own server
        base + form,
        data="".join(parts).encode(),
        headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Referer": base + form,
        },
    )
    started = time.monotonic()
    with browser.opener.open(request, timeout=120) as response:  # noqa: S310
        job = urllib.parse.urlparse(response.geturl()).path
    while True:
        state = re.search(r'class="job-state">([^<]+)<', browser.get(job, htmx=True)).group(1)
        if state in ("Succeeded", "Failed"):
            return round(time.monotonic() - started, 1)
        time.sleep(0.2)


def run_once(folder: Path, env: dict, timeout: float, name: str, *, upload=False) -> dict:
    port = free_port()
    log = folder / f"quickstart-{name}.log"
    database = folder / "goldset.sqlite3"
    started = time.monotonic()
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "quickstart", "--addr", f"127.0.0.1:{port}"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    first_page = usable = uploaded = None
    try:
        while time.monotonic() - started < timeout:
            if process.poll() is not None:
                sys.exit(f"quickstart stopped:\n{log.read_text()}")
            now = time.monotonic() - started
            if first_page is None and answers(f"http://127.0.0.1:{port}/accounts/login/"):
                first_page = now
            state, unfinished, _ = demo_jobs(database)
            if first_page is not None and state == "succeeded" and not unfinished:
                usable = now
                if upload:  # last: it changes the demo's corpus
                    uploaded = upload_four_tiny_files(f"http://127.0.0.1:{port}")
                break
            if state == "failed":
                break
            time.sleep(0.5)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    text = log.read_text()
    state, unfinished, loads = demo_jobs(database)
    return {
        "first_page_s": round(first_page, 1) if first_page is not None else None,
        "usable_demo_s": round(usable, 1) if usable is not None else None,
        "four_tiny_files_s": uploaded,
        "demo_load_state": state,
        "demo_loads_so_far": loads,
        "said_preparing_the_encoder": "Preparing the encoder (once)" in text,
        "noise_lines": [line for line in text.splitlines() if NOISE.search(line)][:10],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="use (and keep) this folder; empty for fresh")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run at most")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="goldset-quickstart-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE", "GOLDSET_REQUIRE_SERVICES")
    }
    env.update(
        DATABASE_URL=f"sqlite:///{folder / 'goldset.sqlite3'}",
        GOLDSET_LOCAL_BROKER_DIR=str(folder / "broker"),
        GOLDSET_ARTIFACT_DIR=str(folder / "artifacts"),
        GOLDSET_MODEL_CACHE_DIR=str(folder / "model-cache"),
        DEBUG="1",
    )
    load = os.getloadavg()
    figures = {
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, load {load[0]:.1f}",
        "fresh": run_once(folder, env, args.timeout, "fresh"),
    }
    print(f"fresh: {figures['fresh']}", flush=True)
    figures["restarted"] = run_once(folder, env, args.timeout, "restarted", upload=True)
    print(f"restarted: {figures['restarted']}", flush=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
