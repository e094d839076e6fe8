"""The grading page's requests, timed in one process (no network, no other clients):

    .venv/bin/python benchmarks/grading_requests.py [--passages 10] [--rounds 30]
        [--database sqlite|postgres] [--pg-name goldset_bench_grading] [--strategy depth]

What a labeller's browser asks for, through Django's test client with a logged-in session: the
grading page (GET), a grade (htmx POST, a changing grade every time), a first grade (`first`:
a passage of a question not graded yet, as a labeller mostly sends), a span that narrows the
evidence, a note, a verdict, an undo, the whole document of a passage, and "next question"
(the queue's POST). Printed per kind: p50 and p95 in ms, the CPU time of this process per
request (`time.process_time`, p50 and mean: what a web worker spends, whatever else the
machine runs; SQLite's work is in it, PostgreSQL's server is not) and the number of SQL
queries; the first grade is what the labelling load benchmark (`labelling_load.py`) mostly
sends under concurrency (each of its labellers grades each passage once). Use it to compare
two trees on the same machine in the same minute (a ratio), since absolute times on a shared
box vary.

Django runs with production settings (DEBUG off) unless ``--debug``: DEBUG's WhiteNoise
autorefresh and query log cost a web worker CPU that no deployment spends. Queries are counted by
a light execute wrapper, not Django's debug cursor, for the same reason.

`--strategy` makes the pool's judging order another than depth-k's (`goldeval.pooling`), each
passage ranked by one retriever in the order it was pooled: the page and every write then
order the passages, and in a `cal` pool a grade of 1 or 2 answers with the new order.

The database is a temporary SQLite file, or a scratch PostgreSQL database on 127.0.0.1 that is
dropped and created again (`--pg-name`, so parallel runs do not collide).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
FORM_ENCODED = "application/x-www-form-urlencoded"
# What every request of a logged-in user pays: the middleware, the session and the user, a 404.
FLOOR_URL = "/no-such-page/"


def configure(database: str, pg_name: str, *, debug: bool) -> None:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
    # Production settings unless --debug: DEBUG adds WhiteNoise's per-request file checks and
    # Django's query log, about a quarter of a grade's CPU, which no deployment pays.
    os.environ["DEBUG"] = "1" if debug else "0"
    if not debug:
        os.environ.update(
            SECRET_KEY="bench",  # noqa: S106 - a throwaway database
            ALLOWED_HOSTS="testserver",
            SECURE_SSL_REDIRECT="0",
        )
    os.environ.pop("REDIS_URL", None)
    if database == "postgres":
        import psycopg

        with psycopg.connect(
            "host=127.0.0.1 port=5432 user=postgres dbname=postgres", autocommit=True
        ) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {pg_name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {pg_name}")
        os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{pg_name}"
    else:
        path = Path(tempfile.mkdtemp()) / "grading.sqlite3"
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def world(passages: int, strategy: str = "depth"):
    from django.contrib.auth import get_user_model

    from corpus.extraction import assess_quality
    from corpus.models import Document, Membership, Project
    from corpus.services import documents
    from corpus.sources import DocumentRecord, SourceBatch
    from labelling.models import Assignment, Candidate, Pool, Question, QuestionSet

    project = Project.objects.create(slug="bench", name="Bench")
    user = get_user_model().objects.create(username="labeller")
    Membership.objects.create(project=project, user=user, role="labeller")
    sentence = (
        "Employees may carry over at most five days of unused annual leave into the next "
        "calendar year if the request reaches the HR service desk by 31 January. "
    )
    text = "".join(f"Section {n}. {sentence}\n\n" for n in range(200))
    report = assess_quality(text)
    records = [
        DocumentRecord(doc_id=f"doc-{i}", title=f"Policy {i}", text=text, report=report)
        for i in range(passages)
    ]
    documents.ingest_batch(
        project=project,
        batch=SourceBatch(source="bench", records=records),
        importer=documents.Importer.command_line(),
    )
    question_set = QuestionSet.objects.create(project=project, name="bench")
    question = Question.objects.create(
        question_set=question_set, external_id="q1", text="how many leave days can i carry over?"
    )
    pool = Pool.objects.create(
        question_set=question_set, name="p", state="ready", strategy=strategy
    )
    candidates = []
    for rank, document in enumerate(Document.objects.filter(project=project).order_by("pk")):
        start = text.index("Section 100.")
        candidates.append(
            Candidate.objects.create(
                pool=pool,
                question=question,
                version=document.latest_version,
                start=start,
                end=start + 160,
                shuffle_rank=rank,
            )
        )
    assignment = Assignment.objects.create(pool=pool, question=question, labeller=user)
    ranked_by_one_retriever(candidates)
    return user, assignment, candidates, text


def ranked_by_one_retriever(candidates) -> None:
    """Provenance for an adaptive pool: one retriever ranked the candidates in this order."""
    from corpus.models import Retriever
    from labelling.models import Pool, Provenance

    pool = Pool.objects.select_related("question_set").get(pk=candidates[0].pool_id)
    if pool.strategy == "depth":
        return
    retriever, _ = Retriever.objects.get_or_create(
        project_id=pool.question_set.project_id, name="bm25", defaults={"kind": "bm25"}
    )
    Provenance.objects.bulk_create(
        Provenance(candidate=c, retriever=retriever, rank=rank, start=c.start, end=c.end)
        for rank, c in enumerate(candidates, start=1)
    )


def fresh_assignments(assignment, count: int) -> list:
    """`count` more questions in the assignment's pool, each with passages laid out as the
    first one's and assigned to the same labeller: (assignment, its candidates) each, for
    first grades (what a labeller mostly sends: a passage no one graded yet)."""
    from labelling.models import Assignment, Candidate, Question

    template = list(
        Candidate.objects.filter(
            pool_id=assignment.pool_id, question_id=assignment.question_id
        ).order_by("pk")
    )
    made = []
    for n in range(count):
        question = Question.objects.create(
            question_set_id=assignment.question.question_set_id,
            external_id=f"fresh-{n}",
            text=f"how many leave days can i carry over ({n})?",
        )
        candidates = Candidate.objects.bulk_create(
            Candidate(
                pool_id=c.pool_id,
                question=question,
                version_id=c.version_id,
                start=c.start,
                end=c.end,
                shuffle_rank=c.shuffle_rank,
            )
            for c in template
        )
        fresh = Assignment.objects.create(
            pool_id=assignment.pool_id, question=question, labeller_id=assignment.labeller_id
        )
        ranked_by_one_retriever(candidates)
        made.append((fresh, candidates))
    return made


# Where a grade's CPU goes (--split): the steps of a grade request, each a function replaced by
# a timed wrapper while the benchmark runs. Indented steps are parts of the one above them.
STEPS = [
    ("session and user", "django.contrib.auth.middleware", "get_user"),
    ("  the session", "django.contrib.sessions.backends.cached_db", "SessionStore.load"),
    ("  the user", "django.contrib.auth.backends", "ModelBackend.get_user"),
    ("the assignment and access", "labelling.views.grading", "held_assignment"),
    ("the write (record_grade)", "labelling.services.judgements", "record_grade"),
    ("  lock the assignment", "labelling.services.judgements", "_locked"),
    ("  read the passages", "labelling.services.judgements", "_passages"),
    ("  read the judgement", "labelling.services.judgements", "_judgement"),
    ("  write judgement, spans, history", "labelling.services.judgements", "_write_judgement"),
    ("the answer", "labelling.views.grading", "_answer"),
    ("  the card", "labelling.views.grading", "_cards"),
    ("  the template", "labelling.views.grading", "render"),
]
TIMING = {"kind": None, "steps": {}}  # the request being timed, and CPU seconds per step


def time_steps() -> None:
    """Wrap each step of STEPS so that its CPU is added up while a grade request runs."""
    import importlib
    from functools import wraps

    for label, module_name, dotted in STEPS:
        owner = importlib.import_module(module_name)
        *path, name = dotted.split(".")
        for part in path:
            owner = getattr(owner, part)
        function = getattr(owner, name)

        def timed_step(*args, _function=function, _label=label, **kwargs):
            if TIMING["kind"] != "grade":
                return _function(*args, **kwargs)
            start = time.thread_time()
            try:
                return _function(*args, **kwargs)
            finally:
                steps = TIMING["steps"]
                steps[_label] = steps.get(_label, 0.0) + time.thread_time() - start

        setattr(owner, name, wraps(function)(timed_step))


def print_steps(results: dict) -> None:
    grades = results["grade"]
    total = sum(cpu for _, _, cpu in grades) / len(grades)
    steps = {label: seconds * 1000 / len(grades) for label, seconds in TIMING["steps"].items()}
    print(f"\nwhere a grade's CPU goes (mean ms of {len(grades)} grades; indented: part of above)")
    for label, *_ in STEPS:
        print(f"  {label:<38}{steps.get(label, 0.0):>7.2f}{steps.get(label, 0.0) / total:>7.0%}")
    rest = total - sum(ms for label, ms in steps.items() if not label.startswith(" "))
    print(f"  {'the rest (middleware, forms, client)':<38}{rest:>7.2f}{rest / total:>7.0%}")
    print(f"  {'a grade in all':<38}{total:>7.2f}")


def timed(kind, results, send, url, data=None, *, ok=(200, 302), **headers):
    from django.db import connection

    queries = []

    def count(execute, sql, params, many, context):
        # A counter, not CaptureQueriesContext: that forces Django's debug cursor, whose
        # per-query bookkeeping would be measured as the request's own CPU.
        queries.append(1)
        return execute(sql, params, many, context)

    data = data or {}
    if send.__name__ == "post":
        # As the page's htmx and plain forms send it: urlencoded, not the test client's default
        # multipart, whose parser would be measured as CPU no labeller's request costs.
        data, headers["content_type"] = urlencode(data), FORM_ENCODED
    with connection.execute_wrapper(count):
        TIMING["kind"] = kind
        start, cpu = time.perf_counter(), time.process_time()
        response = send(url, data, secure=True, **headers)
        elapsed = (time.perf_counter() - start) * 1000
        cpu = (time.process_time() - cpu) * 1000
        TIMING["kind"] = None
    if response.status_code not in ok:
        raise SystemExit(f"{kind}: HTTP {response.status_code}: {response.content[:200]!r}")
    results.setdefault(kind, []).append((elapsed, len(queries), cpu))
    return response


def run(passages: int, rounds: int, strategy: str = "depth") -> dict:
    from django.test import Client
    from django.urls import reverse

    # No setup_test_environment(): it makes every template render send a signal that the test
    # client answers by copying the render's context, CPU a real request never spends.
    user, assignment, candidates, text = world(passages, strategy)
    client = Client()
    client.force_login(user)
    ids = {"pool_id": assignment.pool_id, "question_id": assignment.question_id}
    page = reverse("labelling:grade-question", kwargs={"slug": "bench", **ids})
    next_url = reverse("labelling:next-question", kwargs={"slug": "bench"})
    htmx = {"HTTP_HX_REQUEST": "true"}
    results: dict = {}
    revisions = {c.pk: 0 for c in candidates}
    verdict_revision = 0
    fresh = fresh_assignments(assignment, rounds)
    for round_ in range(rounds):
        timed("page", results, client.get, page)
        first, first_candidates = fresh[round_]
        first_ids = {"pool_id": first.pool_id, "question_id": first.question_id}
        first_page = reverse("labelling:grade-question", kwargs={"slug": "bench", **first_ids})
        for n, candidate in enumerate(first_candidates):
            fields = {
                "grade": "0112"[n % 4],
                "revision": 0,
                "guideline": "0",
                "labeller": user.pk,
                "seconds": "3",
            }
            url = f"{first_page}candidates/{candidate.pk}/grade/"
            timed("first", results, client.post, url, fields, **htmx)
        for candidate in candidates:
            base = f"{page}candidates/{candidate.pk}/"
            grade = "2" if (round_ + candidate.pk) % 2 else "1"
            fields = {
                "grade": grade,
                "revision": revisions[candidate.pk],
                "guideline": "0",
                "labeller": user.pk,
                "seconds": "3",
            }
            timed("grade", results, client.post, base + "grade/", fields, **htmx)
            revisions[candidate.pk] += 1
        candidate = candidates[round_ % len(candidates)]
        base = f"{page}candidates/{candidate.pk}/"
        start = candidate.start + (round_ % 20)
        span = {
            "version": candidate.version_id,
            "start": start,
            "end": start + 30,
            "quote": text[start : start + 30],
            "revision": revisions[candidate.pk],
            "guideline": "0",
            "labeller": user.pk,
        }
        timed("span", results, client.post, base + "spans/", span, **htmx)
        revisions[candidate.pk] += 1
        note = {"note": f"note {round_}", "revision": revisions[candidate.pk], "guideline": "0"}
        timed("note", results, client.post, base + "note/", note, **htmx)
        revisions[candidate.pk] += 1
        outcome = "answerable" if round_ % 2 else "cant_tell"
        verdict = {"outcome": outcome, "reason": "unclear", "revision": verdict_revision}
        timed("verdict", results, client.post, page + "verdict/", verdict, **htmx)
        verdict_revision += 1
        timed("undo", results, client.post, page + "undo/", {}, **htmx)
        verdict_revision += 1
        timed("document", results, client.get, base + "document/", **htmx)
        after = {"pool": assignment.pool_id, "question": assignment.question_id}
        timed("next", results, client.post, next_url, after)
        timed("floor", results, client.get, FLOOR_URL, ok=(404,))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-name", default="goldset_bench_grading")
    parser.add_argument(
        "--debug", action="store_true", help="DEBUG=1, as figures before 2026-12-01"
    )
    parser.add_argument("--split", action="store_true", help="where a grade's CPU goes, by step")
    parser.add_argument("--strategy", choices=["depth", "mtf", "bandit", "cal"], default="depth")
    args = parser.parse_args()
    configure(args.database, args.pg_name, debug=args.debug)
    logging.getLogger("django.request").setLevel(logging.ERROR)  # the floor's "Not Found" lines
    if args.split:
        time_steps()
    results = run(args.passages, args.rounds, args.strategy)
    settings = "DEBUG=1" if args.debug else "production settings"
    print(
        f"{args.passages} passages, {args.rounds} rounds, {args.database}, {settings}, "
        f"{args.strategy} order, one process"
    )
    print(
        f"{'request':<10}{'count':>7}{'p50 ms':>9}{'p95 ms':>9}{'CPU p50':>9}{'CPU mean':>9}"
        f"{'queries':>9}"
    )
    for kind, rows in results.items():
        times = sorted(t for t, _, _ in rows)
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        queries = statistics.median(q for _, q, _ in rows)
        cpu = [c for _, _, c in rows]
        print(
            f"{kind:<10}{len(rows):>7}{statistics.median(times):>9.1f}{p95:>9.1f}"
            f"{statistics.median(cpu):>9.2f}{statistics.mean(cpu):>9.2f}{queries:>9.0f}"
        )
    if args.split:
        print_steps(results)


if __name__ == "__main__":
    main()
