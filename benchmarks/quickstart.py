"""How long `make run` takes to a first page and to a usable demo, fresh and restarted.

Fresh: a new SQLite file and new data folders (broker, index artefacts, the encoder's cache, so
the int8 encoder is prepared once, as on a fresh clone). Restarted: the same folders again,
after the first run was stopped with SIGTERM. Each run is `manage.py quickstart` (what `make
run` runs once installed; it migrates itself):

- first page: the login page answers 200;
- usable demo: the demo's load job succeeded and no job of the demo project is unfinished.

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
import urllib.request
from pathlib import Path

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


def run_once(folder: Path, env: dict, timeout: float, name: str) -> dict:
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
    first_page = usable = None
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
    figures["restarted"] = run_once(folder, env, args.timeout, "restarted")
    print(f"restarted: {figures['restarted']}", flush=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
