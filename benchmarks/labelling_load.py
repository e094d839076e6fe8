"""Labelling under load: concurrent labellers grading against a real server.

    .venv/bin/python benchmarks/labelling_load.py [--labellers 20] [--duration 60]
        [--think-ms 1000] [--workers 4] [--worker-class sync|gthread] [--threads 1]
        [--questions 0] [--passages 10] [--documents 400] [--index-build]
        [--build-priority low|normal] [--build-nice 0] [--build-threads 0]
        [--db-name goldset_load]
        [--redis-url redis://127.0.0.1:6379/9]

Everything runs on loopback. The script (re)creates a scratch PostgreSQL database
(`--db-name`, default `goldset_load`: give each parallel run its own) on 127.0.0.1 (as
postgres), migrates it and loads a synthetic project: documents
of policy-like text, a ready pool with `--passages` candidates per question, and one labeller
account per simulated labeller, with assignments planned by the app's own `plan_assignments`
(20% double-labelled). It then starts gunicorn (DEBUG off, SECRET_KEY and ALLOWED_HOSTS set,
SECURE_SSL_REDIRECT=0 because there is no TLS on loopback). Static files are not requested, so
no collectstatic is needed.

Each simulated labeller is a thread with its own connection and session. It logs in and loads
one page (untimed warm-up), then until the time is up: "Next question" (POST, timed as
`next`), the grading page (GET, timed as `page`), a grade for every passage through the same
htmx endpoint the keyboard uses (POST, timed as `grade`; 5% are sent twice, as a double click
would), and a verdict (timed as `verdict`). Between actions it pauses `--think-ms` on average
(uniformly 0.5x to 1.5x); 1000 ms is a very fast human, 0 measures the server's saturation.

With `--index-build`, the heaviest job Goldset has runs alongside: an embedding (MiniLM) index of
the whole corpus, queued through Redis (`--redis-url`, default db 9 at 127.0.0.1:6379, flushed)
to a real Celery worker started by this script, as a lead would start it from the retriever
page. The worker runs in a session of its own, as a container or a service would, with
GOLDSET_WORKER_PRIORITY=low as docker-compose runs it (`--build-priority normal`: without);
`--build-nice N` also starts it under `nice -n N`, `--build-threads N` caps its
encoder's threads (issue 19 compares the two). The window
opens once the worker has claimed the job; the report says how far the build got.

Printed: requests, p50/p95/p99/max per kind, the web CPU per kind (p50 and mean of what each
response's Server-Timing header reports: the serving thread's CPU through Django, which the
server is started with GOLDSET_SERVER_TIMING=1 to send), errors, CPU used (web per request
from the workers' /proc totals, which also count gunicorn's own I/O; cores used by the
web workers, PostgreSQL, this client and every other process on the machine, which matters on
a shared box), and the integrity check: judgement rows in the database == distinct passages
whose grade the server acknowledged, compared as sets of (labeller, passage) (none lost, none
doubled, none unacknowledged). Exit status 1 on any error or mismatch. Issue 7 runs it with
`--labellers 50 --duration 120 --index-build`.

A shared box runs the same code 1.5-2x faster in one hour than in another, so the report also
gives a machine reference: the CPU of a fixed pure-Python workload (JSON, strings, dicts, as
a request's own work), best of five, measured in this process just before the load and just
after it. A grade's web CPU in those units compares runs of different hours.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from goldset.cpu_priority import autogroup_nice  # noqa: E402

# --db-name and --redis-url replace these (parallel runs on one machine must not share them).
DB_NAME = "goldset_load"
PG_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
BUILD_REDIS_URL = "redis://127.0.0.1:6379/9"
PASSWORD = "load-test-password-7"  # noqa: S105 - a throwaway account in a scratch database
SLUG = "load"
WORDS = (  # noqa: SIM905 - one readable block of vocabulary
    "leave policy request form manager approval employee days annual travel expense claim "
    "receipt laptop return procedure security password token access group warehouse shipment "
    "pallet scanner customer refund escalation incident report data retention contract "
    "supplier invoice budget training review rating salary band overtime hours remote office "
    "badge visitor safety must within working calendar year written exception payroll"
).split()


# Database and data -----------------------------------------------------------------------------


def configure(*, db_name: str, redis_url: str) -> None:
    global DB_NAME, PG_URL, BUILD_REDIS_URL
    if not db_name.replace("_", "").isalnum():
        raise SystemExit(f"--db-name is letters, digits and _, not {db_name!r}")
    DB_NAME, BUILD_REDIS_URL = db_name, redis_url
    PG_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"


def recreate_database() -> None:
    import psycopg

    with psycopg.connect(
        "host=127.0.0.1 port=5432 user=postgres dbname=postgres", autocommit=True
    ) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")


def manage(*args: str, env: dict) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, check=True)


def paragraph(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(35, 60))]
    words.insert(rng.randrange(len(words)), f"HR-POL-{rng.randrange(1000):03d}")
    return " ".join(words).capitalize() + "."


def load_data(
    *, labellers: int, questions: int, passages: int, documents: int, index_build: bool
) -> dict:
    """The synthetic project, written with the ORM in this process (DEBUG on for setup only).
    With `index_build`, this process queues jobs to Redis and a paragraph scheme with an
    embedding retriever is ready to build."""
    os.environ.update({"DATABASE_URL": PG_URL, "DEBUG": "1"})
    os.environ.pop("REDIS_URL", None)
    if index_build:
        os.environ["REDIS_URL"] = BUILD_REDIS_URL
    sys.path.insert(0, str(REPO))
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from corpus.models import Document, DocumentVersion, Membership, Project
    from corpus.services.documents import content_hash
    from labelling.models import Candidate, Guideline, Pool, Question, QuestionSet
    from labelling.services.assignments import plan_assignments

    rng = random.Random(7)
    project = Project.objects.create(slug=SLUG, name="Load test")
    Guideline.objects.create(project=project, version=1, text="# Grades\n\n2 fully, 1 partly.")
    User = get_user_model()
    hashed = make_password(PASSWORD)  # hashing once: PBKDF2 per user would dominate setup
    users = User.objects.bulk_create(
        [User(username=f"labeller-{i:02d}", password=hashed) for i in range(labellers)]
    )
    Membership.objects.bulk_create(
        [Membership(project=project, user=u, role="labeller") for u in users]
    )
    docs = Document.objects.bulk_create(
        [
            Document(project=project, doc_id=f"pol-{i:04d}", title=f"Policy {i}")
            for i in range(documents)
        ]
    )
    texts = ["\n\n".join(paragraph(rng) for _ in range(rng.randint(8, 14))) for _ in docs]
    versions = DocumentVersion.objects.bulk_create(
        [
            DocumentVersion(document=d, version=1, text=t, content_hash=content_hash(t))
            for d, t in zip(docs, texts, strict=True)
        ]
    )
    for d, v in zip(docs, versions, strict=True):
        d.latest_version = v
    Document.objects.bulk_update(docs, ["latest_version"])
    paragraphs = []
    for v, text in zip(versions, texts, strict=True):
        offset = 0
        for part in text.split("\n\n"):
            paragraphs.append((v.pk, offset, offset + len(part)))
            offset += len(part) + 2
    question_set = QuestionSet.objects.create(project=project, name="load-questions")
    Question.objects.bulk_create(
        [
            Question(question_set=question_set, external_id=f"lq{i:05d}", text=paragraph(rng)[:90])
            for i in range(questions)
        ]
    )
    pool = Pool.objects.create(question_set=question_set, name="load-pool", state="ready")
    candidates = []
    for question in question_set.questions.all():
        for rank, (version_id, start, end) in enumerate(rng.sample(paragraphs, passages)):
            candidates.append(
                Candidate(
                    pool=pool,
                    question=question,
                    version_id=version_id,
                    start=start,
                    end=end,
                    shuffle_rank=rank,
                )
            )
    Candidate.objects.bulk_create(candidates, batch_size=5000)
    plan = plan_assignments(pool=pool, labellers=users, double_share=0.2, seed=1)
    retriever = None
    if index_build:
        from corpus.services import documents, retrieval

        scheme = documents.add_chunking_scheme(project=project, name="para", strategy="paragraph")
        documents.chunk_corpus(scheme=scheme)
        retriever = retrieval.add_retriever(
            project=project, name="minilm", kind="embedding", scheme=scheme
        ).pk
    return {
        "pool": pool.pk,
        "assignments": plan.assignments,
        "double": plan.double_labelled,
        "retriever": retriever,
    }


def saved_judgements() -> list[tuple[str, str]]:
    """(labeller, passage) of every judgement row, one entry per row."""
    from labelling.models import Judgement

    rows = Judgement.objects.filter(assignment__pool__question_set__project__slug=SLUG)
    return [
        (name, str(candidate))
        for name, candidate in rows.values_list("assignment__labeller__username", "candidate_id")
    ]


# The concurrent index build ------------------------------------------------------------------


def start_build_worker(
    env: dict, *, priority: str = "low", nice: int = 0, threads: int = 0
) -> subprocess.Popen:
    """The Celery worker of the build, in a session of its own as a container or a service
    would be. ``priority`` is its GOLDSET_WORKER_PRIORITY (``low``: it lowers its own CPU
    priority, `goldset.cpu_priority`), ``nice`` starts it under `nice -n N` as well (which on
    its own ranks it only inside its session), ``threads`` caps the encoder's threads
    (GOLDSET_ENCODER_THREADS)."""
    import redis

    redis.Redis.from_url(BUILD_REDIS_URL).flushdb()
    worker_env = {**env, "REDIS_URL": BUILD_REDIS_URL, "GOLDSET_WORKER_PRIORITY": priority}
    if threads:
        worker_env["GOLDSET_ENCODER_THREADS"] = str(threads)
    worker = subprocess.Popen(
        (["nice", "-n", str(nice)] if nice else [])
        + [sys.executable, "-m", "celery", "-A", "goldset", "worker", "--concurrency=1"]
        + ["--pool=prefork", "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
        cwd=REPO,
        env=worker_env,
        stdout=subprocess.DEVNULL,  # the banner; warnings and errors still reach stderr
        start_new_session=True,
    )
    from goldset.celery import app

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise SystemExit("the Celery worker exited at start")
        if app.control.ping(timeout=1):
            return worker
    os.killpg(worker.pid, signal.SIGKILL)
    raise SystemExit("the Celery worker did not answer within 60 s")


def start_index_build(retriever_id: int):
    """Queue the build as the retriever page does and wait until the worker has claimed it."""
    from corpus.models import Retriever
    from corpus.services import retrieval

    job = retrieval.start_index_build(retriever=Retriever.objects.get(pk=retriever_id))
    deadline = time.monotonic() + 60
    while job.state == "queued" and time.monotonic() < deadline:
        time.sleep(0.2)
        job.refresh_from_db()
    if job.state != "running":
        raise SystemExit(f"the index build did not start: {job.state} {job.message}")
    return job


# The server -------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    *, port: int, workers: int, threads: int, worker_class: str, env: dict
) -> subprocess.Popen:
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "goldset.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--worker-class",
            worker_class,
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--keep-alive",
            "30",
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("gunicorn exited at start")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/accounts/login/")
            if conn.getresponse().status == 200:
                return server
        except OSError:
            time.sleep(0.3)
    server.terminate()
    raise SystemExit("gunicorn did not answer within 60 s")


# A simulated labeller ----------------------------------------------------------------------------


class Labeller(threading.Thread):
    CARD = re.compile(
        r'data-candidate="(\d+)" data-revision="(\d+)"\s+data-grade-url="([^"]+)"', re.S
    )

    def __init__(self, *, name: str, port: int, stop_at: list, think: float, seed: int):
        super().__init__(daemon=True)
        self.name, self.port, self.stop_at, self.think = name, port, stop_at, think
        self.rng = random.Random(seed)
        self.cookies: dict[str, str] = {}
        self.csrf = ""
        self.timings: dict[str, list[float]] = defaultdict(list)
        self.cpu: dict[str, list[float]] = defaultdict(list)  # ms, from Server-Timing
        self.errors: list[str] = []
        self.acknowledged: set[tuple[str, str]] = set()
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.logged_in = threading.Event()
        self.last_cpu: float | None = None

    # HTTP with a hand-kept cookie jar: the server marks cookies Secure (DEBUG off), which a
    # standard jar would refuse to send over plain HTTP on loopback.
    def request(self, method: str, path: str, fields: dict | None = None, htmx: bool = False):
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if fields is not None:
            body = urllib.parse.urlencode(fields)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["X-CSRFToken"] = self.csrf
        if htmx:
            headers["HX-Request"] = "true"
        for attempt in range(2):
            try:
                start = time.perf_counter()
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                content = response.read().decode()
                elapsed = time.perf_counter() - start
                break
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt:
                    raise
        for header, value in response.getheaders():
            if header.lower() == "set-cookie":
                name, _, rest = value.partition("=")
                self.cookies[name] = rest.split(";", 1)[0]
        self.last_cpu = server_cpu_ms(response.getheader("Server-Timing") or "")
        return response.status, response.getheader("Location") or "", content, elapsed

    def log_in(self) -> None:
        status, _, page, _ = self.request("GET", "/accounts/login/")
        self.csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        fields = {"username": self.name, "password": PASSWORD, "csrfmiddlewaretoken": self.csrf}
        status, location, _, _ = self.request("POST", "/accounts/login/", fields)
        if status != 302:
            raise RuntimeError(f"{self.name} could not log in ({status})")
        # Logging in rotates the CSRF token: take the new one from a page, as the browser does.
        _, _, page, _ = self.request("GET", f"/p/{SLUG}/queue/")
        self.csrf = self.page_token(page)
        self.logged_in.set()

    def page_token(self, page: str) -> str:
        match = re.search(r"hx-headers='([^']+)'", page)
        return json.loads(match.group(1))["X-CSRFToken"] if match else self.csrf

    def pause(self) -> None:
        if self.think:
            time.sleep(self.rng.uniform(0.5, 1.5) * self.think)

    def timed(self, kind: str, method: str, path: str, fields=None, htmx=False, ok=(200,)):
        status, location, content, elapsed = self.request(method, path, fields, htmx)
        self.timings[kind].append(elapsed)
        if self.last_cpu is not None:
            self.cpu[kind].append(self.last_cpu)
        if status not in ok:
            self.errors.append(f"{kind} {status} {path}: {content[:120]!r}")
        return status, location, content

    def run(self) -> None:
        try:
            if not self.logged_in.is_set():
                self.log_in()
            # People do not all press a key in the same millisecond: start within one pause.
            time.sleep(self.rng.uniform(0, 2) * self.think)
            while time.monotonic() < self.stop_at[0]:
                self.grade_one_question()
        except Exception as exc:  # noqa: BLE001 - counted as an error in the report
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def grade_one_question(self) -> None:
        fields = {"csrfmiddlewaretoken": self.csrf}
        status, location, _ = self.timed(
            "next", "POST", f"/p/{SLUG}/queue/next/", fields, ok=(302,)
        )
        if "/grade/" not in location:
            self.stop_at[0] = 0  # out of work: stop everyone rather than measure idling
            return
        path = urllib.parse.urlsplit(location).path
        status, _, page = self.timed("page", "GET", path)
        self.csrf = self.page_token(page)
        for candidate, revision, url in self.CARD.findall(page):
            if time.monotonic() >= self.stop_at[0]:
                return
            self.pause()
            grade = {"grade": str(self.rng.choice("0112")), "revision": revision, "seconds": "4"}
            status, _, _ = self.timed("grade", "POST", url, grade, htmx=True)
            if status == 200:
                self.acknowledged.add((path, candidate))
            if self.rng.random() < 0.05:  # a double click: the same request again
                status, _, _ = self.timed("grade", "POST", url, grade, htmx=True)
        self.pause()
        verdict = {"outcome": "answerable", "reason": "", "revision": "0"}
        self.timed("verdict", "POST", path + "verdict/", verdict, htmx=True)


def warm_up(labellers: list[Labeller]) -> None:
    """One untimed page per labeller, so every worker has compiled its templates and opened
    its database connection, as on a server that has been up for a while."""
    for labeller in labellers:
        fields = {"csrfmiddlewaretoken": labeller.csrf}
        _, location, _, _ = labeller.request("POST", f"/p/{SLUG}/queue/next/", fields)
        if "/grade/" in location:
            labeller.request("GET", urllib.parse.urlsplit(location).path)


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has been busy since boot, all cores (Linux)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(master_pid: int) -> tuple[float, float]:
    """CPU time used so far by the gunicorn workers and by all PostgreSQL processes (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    web = db = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "comm").read_text().strip()
        except OSError:
            continue
        used = (int(fields[11]) + int(fields[12])) / tick
        if int(fields[1]) == master_pid:
            web += used
        elif command.startswith("postgres"):
            # A backend that exits hands its CPU to the postmaster's reaped-children total;
            # without it, connections closing in the window could make PostgreSQL's share < 0.
            db += used + (int(fields[13]) + int(fields[14])) / tick
    return web, db


def scheduling(pid: int) -> str:
    """How the kernel schedules a process and those it started (Linux): policy, nice, autogroup."""
    names = {getattr(os, name): name for name in ("SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE")}
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    seen = set()
    for process in [pid, *map(int, children)]:
        try:
            # Without the reset-on-fork flag a service manager may set on its children.
            policy = os.sched_getscheduler(process) & ~getattr(os, "SCHED_RESET_ON_FORK", 0)
            nice = os.getpriority(os.PRIO_PROCESS, process)
            group = autogroup_nice(process)
        except OSError:  # gone meanwhile
            continue
        weight = "root group" if group is None else f"autogroup nice {group}"
        seen.add(f"{names.get(policy, f'policy {policy}')}, nice {nice}, {weight}")
    return " / ".join(sorted(seen)) or "(gone)"


# Report ------------------------------------------------------------------------------------------


def server_cpu_ms(header: str) -> float | None:
    """The web CPU a response reports (`Server-Timing: cpu;dur=<ms>`), or None."""
    match = re.search(r"(?:^|,)\s*cpu;dur=([\d.]+)", header)
    return float(match.group(1)) if match else None


def machine_reference_ms() -> float:
    """CPU ms of a fixed pure-Python workload, best of five (see the module's docstring)."""
    payload = {"grade": 2, "spans": [[7, 120, 280]] * 20, "note": "naïve “quotes” " * 20}
    best = float("inf")
    for _ in range(5):
        start = time.thread_time()
        for _ in range(1000):
            json.loads(json.dumps(payload))
            "-".join(str(n) for n in range(40))
            {str(k): k for k in range(40)}
        best = min(best, time.thread_time() - start)
    return best * 1000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labellers", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of grading")
    parser.add_argument(
        "--think-ms", type=float, default=1000.0, help="mean pause between actions (0 = none)"
    )
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=1, help="threads per gunicorn worker")
    parser.add_argument("--worker-class", default="sync", choices=["sync", "gthread"])
    parser.add_argument("--questions", type=int, default=0, help="0 = enough for the run")
    parser.add_argument("--passages", type=int, default=10, help="candidates per question")
    parser.add_argument("--documents", type=int, default=400)
    parser.add_argument(
        "--index-build",
        action="store_true",
        help="build an embedding index of the corpus in a real Celery worker meanwhile",
    )
    parser.add_argument("--build-nice", type=int, default=0, help="nice value of the build")
    parser.add_argument(
        "--build-priority",
        choices=["low", "normal"],
        default="low",
        help="GOLDSET_WORKER_PRIORITY of the build's worker (low, as docker-compose runs it)",
    )
    parser.add_argument(
        "--build-threads", type=int, default=0, help="encoder threads of the build (0: all)"
    )
    parser.add_argument("--db-name", default=DB_NAME, help="scratch PostgreSQL database")
    parser.add_argument("--redis-url", default=BUILD_REDIS_URL, help="broker of the build")
    args = parser.parse_args()
    configure(db_name=args.db_name, redis_url=args.redis_url)
    questions = args.questions or max(200, int(args.labellers * args.duration * 2))

    print(f"Preparing {DB_NAME}: {args.labellers} labellers, {questions} questions ...", flush=True)
    recreate_database()
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DEBUG"}}
    env.update({"DATABASE_URL": PG_URL, "DEBUG": "1"})
    manage("migrate", "--noinput", "-v", "0", env=env)
    data = load_data(
        labellers=args.labellers,
        questions=questions,
        passages=args.passages,
        documents=args.documents,
        index_build=args.index_build,
    )
    print(f"  {data['assignments']} assignments, {data['double']} double-labelled", flush=True)

    port = free_port()
    server_env = {
        **env,
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_HSTS_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
        # Each response says its web CPU (Server-Timing), so the report can give it per kind.
        "GOLDSET_SERVER_TIMING": "1",
        # No static files are served here, so the missing STATIC_ROOT is expected.
        "PYTHONWARNINGS": "ignore:No directory at",
    }
    server = start_server(
        port=port,
        workers=args.workers,
        threads=args.threads,
        worker_class=args.worker_class,
        env=server_env,
    )
    build_worker = build = None
    try:
        stop_at = [float("inf")]
        labellers = [
            Labeller(
                name=f"labeller-{i:02d}",
                port=port,
                stop_at=stop_at,
                think=args.think_ms / 1000,
                seed=i,
            )
            for i in range(args.labellers)
        ]
        for labeller in labellers:  # logins (PBKDF2) are not part of the measurement
            labeller.log_in()
        warm_up(labellers)
        if args.index_build:
            build_worker = start_build_worker(
                env,
                priority=args.build_priority,
                nice=args.build_nice,
                threads=args.build_threads,
            )
            build = start_index_build(data["retriever"])
            build_started, build_done_before = time.monotonic(), build.done
            build_scheduling = scheduling(build_worker.pid)
        reference_before = machine_reference_ms()
        cpu_before = cpu_seconds(server.pid)
        machine_before, me_before = machine_busy_seconds(), sum(os.times()[:2])
        stop_at[0] = time.monotonic() + args.duration
        started = time.monotonic()
        for labeller in labellers:
            labeller.start()
        for labeller in labellers:
            labeller.join(args.duration + 120)
        elapsed = time.monotonic() - started
        cpu_after = cpu_seconds(server.pid)
        machine = machine_busy_seconds() - machine_before
        client = sum(os.times()[:2]) - me_before
        reference_after = machine_reference_ms()
        if build is not None:
            build.refresh_from_db()
            build_minutes = (time.monotonic() - build_started) / 60
    finally:
        server.terminate()
        server.wait(timeout=30)
        if build_worker is not None:
            # The build may still be running; it is scratch data, so no graceful wait.
            os.killpg(build_worker.pid, signal.SIGKILL)
            build_worker.wait(timeout=30)

    timings: dict[str, list[float]] = defaultdict(list)
    cpu: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    acknowledged: set = set()
    for labeller in labellers:
        for kind, values in labeller.timings.items():
            timings[kind].extend(values)
        for kind, values in labeller.cpu.items():
            cpu[kind].extend(values)
        errors.extend(labeller.errors)
        acknowledged |= {(labeller.name, *key) for key in labeller.acknowledged}
    saved = saved_judgements()

    print(
        f"\n{args.labellers} labellers, {elapsed:.0f} s, think {args.think_ms:.0f} ms, "
        f"gunicorn {args.workers}x{args.threads} {args.worker_class}, PostgreSQL, DEBUG off"
    )
    if build is not None:
        rate = (build.done - build_done_before) / build_minutes
        print(
            f"index build alongside (MiniLM, Celery worker, priority {args.build_priority}, "
            f"nice {args.build_nice}, encoder "
            f"threads {args.build_threads or 'all'}): {build.state}, {build.done} of "
            f"{build.total} passages embedded when the window closed (~{rate:.0f} per minute; "
            f"the job reports progress per batch, so this is coarse); its processes ran "
            f"{build_scheduling}"
        )
    print(
        f"{'request':<9}{'count':>8}{'per s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
        f"{'max ms':>9}{'CPU p50':>9}{'CPU mean':>9}"
    )
    for kind in ("grade", "page", "next", "verdict"):
        values = timings.get(kind, [])
        if values:
            used = cpu.get(kind) or [float("nan")]
            print(
                f"{kind:<9}{len(values):>8}{len(values) / elapsed:>8.1f}"
                f"{percentile(values, 50) * 1000:>9.1f}{percentile(values, 95) * 1000:>9.1f}"
                f"{percentile(values, 99) * 1000:>9.1f}{max(values) * 1000:>9.1f}"
                f"{percentile(used, 50):>9.2f}{sum(used) / len(used):>9.2f}"
            )
    requests = max(1, sum(len(v) for v in timings.values()))
    web, db = (after - before for after, before in zip(cpu_after, cpu_before, strict=True))
    others = max(0.0, machine - web - db - client)
    print(
        f"CPU: web {web / requests * 1000:.1f} ms per request; cores busy on average: "
        f"web {web / elapsed:.2f}, PostgreSQL {db / elapsed:.2f}, load client "
        f"{client / elapsed:.2f}, other processes {others / elapsed:.2f} "
        f"(of {os.cpu_count()})"
    )
    reference = min(reference_before, reference_after)
    grade_cpu = percentile(cpu["grade"], 50) if cpu["grade"] else float("nan")
    print(
        f"machine reference (a fixed Python workload, best of 5): {reference_before:.1f} ms "
        f"before the load, {reference_after:.1f} ms after; web CPU per grade p50 = "
        f"{grade_cpu / reference:.3f} references"
    )
    print(f"errors: {len(errors)}")
    for error in errors[:10]:
        print(f"  {error}")
    acknowledged_pairs = {(name, candidate) for name, _, candidate in acknowledged}
    intact = len(saved) == len(set(saved)) and set(saved) == acknowledged_pairs
    print(
        f"judgement rows {len(saved)} (distinct {len(set(saved))}) == acknowledged grades "
        f"{len(acknowledged_pairs)}, same (labeller, passage) pairs: "
        f"{'OK' if intact else 'MISMATCH'}"
    )
    grade_p95 = percentile(timings["grade"], 95) * 1000 if timings["grade"] else float("nan")
    page_p95 = percentile(timings["page"], 95) * 1000 if timings["page"] else float("nan")
    print(
        f"targets: grade p95 {grade_p95:.0f} ms (<= 100) "
        f"{'met' if grade_p95 <= 100 else 'MISSED'}; page p95 {page_p95:.0f} ms (<= 150) "
        f"{'met' if page_p95 <= 150 else 'MISSED'}; web CPU per grade p50 {grade_cpu:.2f} ms "
        "(reported; no longer a target: docs/benchmarks.md counts instructions instead)"
    )
    if errors or not intact:
        sys.exit(1)


if __name__ == "__main__":
    main()
