"""The quickstart's job progress, measured: `manage.py quickstart` (what `make run` runs) on a
fresh SQLite file with the demo, then a lead rebuilds the MiniLM index from the retriever page
with its vector cache emptied (so every passage is embedded again, as on a first build).

Prints how long the "Rebuild" request took, how long the job ran, and what the job page (polled
as htmx polls it, every second) showed meanwhile: each distinct "done of total" and when.
Before issue 14/18 the request itself ran the build (28 s, no progress) and the page showed a
job that had already succeeded.

    python benchmarks/quickstart_job_page.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Browser:
    """Just enough of a browser: cookies, CSRF tokens, forms."""

    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def get(self, path: str, htmx: bool = False) -> str:
        request = urllib.request.Request(self.base + path)  # noqa: S310 - our own server
        if htmx:
            request.add_header("HX-Request", "true")
        with self.opener.open(request, timeout=60) as response:  # noqa: S310 - our own server
            return response.read().decode()

    def post(self, path: str, data: dict, referer: str) -> tuple[str, float]:
        page = self.get(referer)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(self.base + path, data=body)  # noqa: S310
        request.add_header("Referer", self.base + referer)
        started = time.perf_counter()
        with self.opener.open(request, timeout=120) as response:  # noqa: S310
            response.read()
            return response.geturl(), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="use (and keep) this folder")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="goldset-quickstart-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(
        DATABASE_URL=f"sqlite:///{folder / 'goldset.sqlite3'}",
        GOLDSET_LOCAL_BROKER_DIR=str(folder / "broker"),
        DEBUG="1",
    )
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
    port = free_port()
    log = folder / "quickstart.log"
    started = time.monotonic()
    with log.open("w") as out:
        quickstart = subprocess.Popen(
            [sys.executable, "manage.py", "quickstart", "--addr", f"127.0.0.1:{port}"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        # The site answers at once; the demo loads as a job after (its last line says so).
        while "Demo: The demo is ready" not in log.read_text():
            if quickstart.poll() is not None:
                sys.exit(f"quickstart stopped:\n{log.read_text()}")
            time.sleep(1)
        print(f"quickstart with the demo up in {time.monotonic() - started:.0f} s")
        # Every passage embedded again, as on a first build.
        subprocess.run(
            [
                sys.executable,
                "manage.py",
                "shell",
                "-c",
                "from corpus.models import EmbeddingCache; EmbeddingCache.objects.all().delete()",
            ],
            cwd=REPO,
            env=env,
            check=True,
        )
        browser = Browser(f"http://127.0.0.1:{port}")
        browser.post(
            "/accounts/login/",
            {"username": "lead", "password": "goldset-lead", "next": "/"},
            referer="/accounts/login/",
        )
        retrievers = browser.get("/p/demo/retrievers/")
        minilm = re.search(r'href="(/p/demo/retrievers/\d+/)">minilm<', retrievers).group(1)
        job_url, seconds = browser.post(minilm + "build/", {}, referer=minilm)
        print(f"'Rebuild the index' answered in {seconds * 1000:.0f} ms, at {job_url}")
        path = urllib.parse.urlparse(job_url).path
        seen: list[tuple[float, str]] = []
        began = time.monotonic()
        while True:
            partial = browser.get(path, htmx=True)
            state = re.search(r'class="job-state">([^<]+)<', partial).group(1)
            counts = re.search(r"— (\d+) of (\d+)", partial)
            shown = f"{state} {counts.group(1)}/{counts.group(2)}" if counts else state
            if not seen or seen[-1][1] != shown:
                seen.append((time.monotonic() - began, shown))
            if state in ("Succeeded", "Failed"):
                break
            time.sleep(1.0)
        for at, shown in seen:
            print(f"  {at:6.1f} s  {shown}")
        moving = [s for _, s in seen if s.startswith("Running")]
        print(
            f"job ran {seen[-1][0]:.1f} s; the page showed {len(seen)} distinct states, "
            f"{len(moving)} of them with the build under way"
        )
    finally:
        quickstart.send_signal(signal.SIGTERM)
        quickstart.wait(timeout=60)


if __name__ == "__main__":
    main()
