"""Instructions per grading request, counted by callgrind: a figure the machine's noise cannot move.

    .venv/bin/python benchmarks/request_instructions.py
        [--kind grade|first|page|question-page|next|floor]
        [--requests 50] [--database sqlite|postgres] [--passages 10]

Milliseconds of CPU on a shared 2-core box drift by 1.5-2.5x within an hour, so a before/after
of a few percent cannot be read from them. Valgrind's callgrind counts the instructions the web
process executes instead, and gives the same count for the same code and data whatever else
the machine runs (repeat runs here agree to 0.1%). Compare two trees by running this script from
each (the same `.venv` is fine): the ratio of their counts is the change's effect on web CPU.

The request is the one `grading_requests.py` sends (same world, same production settings, DEBUG
off, urlencoded bodies): a grade of a changing passage (`grade`, 0/1/2 cycled), the grading page
(`page`; `question-page`: the same page in the question view, `?view=question`), a first grade
of a passage no one graded yet (`first`, what a labeller mostly sends: a new judgement and its
span, 0/1/1/2 cycled, on a fresh question every 10 grades), "next
question" to the same open question (`next`), or the floor every request of a
logged-in user pays (`floor`: a page that does not exist, so the middleware, the session and
the user, and a 404; a grade's count over it says how much of the grade is the grade's own).
The process starts under valgrind with instrumentation off (so the migrations and the world
cost minutes, not hours), warms up with 20 requests, and only then is callgrind switched on
for the measured ones. The PostgreSQL server's own work is not counted (another process), as in
the ms figures.

Needs valgrind (Debian: `apt-get install valgrind`, which brings `callgrind_control`). A run of 50
grades takes about a minute here. Printed: instructions per request (millions) and, for scale,
the CPU ms per request the process measured under valgrind (~50x the real figure; not a time).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

HERE = Path(__file__).resolve().parent
READY = "READY"


def child(kind: str, requests: int, database: str, passages: int, pg_name: str) -> None:
    """Under valgrind: build the world, warm up, say READY, wait for a line on stdin (callgrind
    is switched on meanwhile), run the measured requests, and leave at once."""
    sys.path.insert(0, str(HERE))
    import grading_requests as bench

    bench.configure(database, pg_name, debug=False)
    from django.test import Client
    from django.urls import reverse

    user, assignment, candidates, _ = bench.world(passages)
    client = Client()
    client.force_login(user)
    ids = {"pool_id": assignment.pool_id, "question_id": assignment.question_id}
    page = reverse("labelling:grade-question", kwargs={"slug": "bench", **ids})
    next_url = reverse("labelling:next-question", kwargs={"slug": "bench"})
    revisions = {c.pk: 0 for c in candidates}
    fresh = [  # each fresh question's page, reversed here: the measured requests only send
        (
            reverse(
                "labelling:grade-question",
                kwargs={"slug": "bench", "pool_id": a.pool_id, "question_id": a.question_id},
            ),
            first_candidates,
        )
        for a, first_candidates in bench.fresh_assignments(
            assignment, -(-(20 + requests) // len(candidates))
        )
    ]

    logging.getLogger("django.request").setLevel(logging.ERROR)  # the floor's "Not Found" lines

    def send(i: int) -> None:
        if kind == "floor":
            response = client.get(bench.FLOOR_URL, secure=True)
        elif kind == "page":
            response = client.get(page, secure=True)
        elif kind == "question-page":
            response = client.get(f"{page}?view=question", secure=True)
        elif kind == "next":
            after = {"pool": assignment.pool_id, "question": assignment.question_id}
            response = client.post(
                next_url, urlencode(after), content_type=bench.FORM_ENCODED, secure=True
            )
            # The page it leads to shows (and so drops) its message: without this, the
            # messages would pile up in the cookie and then in the session, unlike any browser.
            client.cookies.pop("messages", None)
        elif kind == "first":
            first_page, first_candidates = fresh[i // len(candidates)]
            candidate = first_candidates[i % len(candidates)]
            fields = {
                "grade": "0112"[i % 4],
                "revision": 0,
                "guideline": "0",
                "labeller": user.pk,
                "seconds": "3",
            }
            response = client.post(
                f"{first_page}candidates/{candidate.pk}/grade/",
                urlencode(fields),
                content_type=bench.FORM_ENCODED,
                secure=True,
                HTTP_HX_REQUEST="true",
            )
        else:
            candidate = candidates[i % len(candidates)]
            fields = {
                "grade": str(i // len(candidates) % 3),
                "revision": revisions[candidate.pk],
                "guideline": "0",
                "labeller": user.pk,
                "seconds": "3",
            }
            response = client.post(
                f"{page}candidates/{candidate.pk}/grade/",
                urlencode(fields),
                content_type=bench.FORM_ENCODED,
                secure=True,
                HTTP_HX_REQUEST="true",
            )
            revisions[candidate.pk] += 1
        if response.status_code not in ((404,) if kind == "floor" else (200, 302)):
            raise SystemExit(f"{kind}: HTTP {response.status_code}: {response.content[:200]!r}")

    for i in range(20):
        send(i)
    print(READY, flush=True)
    sys.stdin.readline()
    cpu = time.process_time()
    for i in range(20, 20 + requests):
        send(i)
    print(f"cpu {(time.process_time() - cpu) * 1000 / requests:.1f}", flush=True)
    os._exit(0)  # no teardown inside the count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--kind",
        choices=["grade", "first", "page", "question-page", "next", "floor"],
        default="grade",
    )
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="postgres")
    parser.add_argument("--passages", type=int, default=10)
    parser.add_argument("--pg-name", default="goldset_bench_instructions")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.kind, args.requests, args.database, args.passages, args.pg_name)
        return
    missing = [tool for tool in ("valgrind", "callgrind_control") if not shutil.which(tool)]
    if missing:
        needed = " and ".join(missing)
        raise SystemExit(f"This benchmark needs {needed} (apt-get install valgrind).")
    with tempfile.TemporaryDirectory() as scratch:
        out, log = Path(scratch) / "callgrind.out", Path(scratch) / "stderr.log"
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            "--kind",
            args.kind,
            "--requests",
            str(args.requests),
            "--database",
            args.database,
            "--passages",
            str(args.passages),
            "--pg-name",
            args.pg_name,
        ]
        # stderr to a file: valgrind and Django write there, and a full pipe would stall the run.
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
            text=True,
            cwd=HERE.parent,
        )
        line = process.stdout.readline()
        while line and not line.startswith(READY):
            line = process.stdout.readline()
        if not line:
            process.wait()
            raise SystemExit(f"The measured process stopped early:\n{log.read_text()[-2000:]}")
        subprocess.run(
            ["callgrind_control", "-i", "on", str(process.pid)], check=True, capture_output=True
        )
        process.stdin.write("go\n")
        process.stdin.flush()
        cpu = process.stdout.read()
        process.wait()
        match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
        if process.returncode or not match:
            raise SystemExit(f"The measured run failed:\n{log.read_text()[-2000:]}")
    instructions = int(match.group(1)) / args.requests
    print(
        f"{args.kind}, {args.requests} requests, {args.database}, {args.passages} passages, "
        f"production settings, callgrind"
    )
    print(f"instructions per request: {instructions / 1e6:.2f} M")
    print(f"CPU per request under valgrind: {cpu.split()[-1]} ms (for scale only, not a time)")


if __name__ == "__main__":
    main()
