"""Every lead page at a real project's size (issue 37 item 4): p50/p95 per page.

    .venv/bin/python benchmarks/lead_pages.py [--questions 300] [--passages 200]
        [--labellers 20] [--double 10] [--resolutions 500] [--requests 20]
        [--db-name goldset_lead_pages] [--only Gold,Adjudication] [--analyze] [--reuse]

The script (re)creates a scratch PostgreSQL database (`--db-name`, on 127.0.0.1 as postgres),
migrates it and builds the world with bulk_create: 2,000 documents of policy-like text (one in
ten restricted to an access group everyone belongs to, one in twenty to a group of the
labellers the lead is not in, so every read path filters by the lead's visibility),
`--questions` questions with `--passages` candidates each in one ready pool (300 × 200 =
60,000 candidates), `--labellers` labellers with every question assigned and finished, each
candidate graded by its labeller (0, 1 or 2, a span with 1 and 2), the first `--double`
questions double-labelled (10 × 200 = 2,000 items, about a third of them disagreeing)
and `--resolutions` of those disagreements resolved by the lead, and five
questions excluded from the set. The set is also a production sample's: one logged trace per
question (its production ranking: ten of the question's candidates and two other paragraphs,
as the misses report reads them), drawn uniformly from a population of 20 times as many, so
the Misses page reads the whole set's gold; it adds no candidate, judgement or resolution.

With ``--analyze``, the database is analyzed once the world is built (and the stored decisions
filled), as autovacuum would have done on a real project: without it PostgreSQL plans with
its default guesses for tables it has no statistics of.

Then a lead, logged in through Django's test client, opens each lead page once (warm-up,
untimed; a page that is not 200 is reported and skipped) and `--requests` times more, after
what a web worker does before its first request (`goldset.worker_start.settle`; not with
``--no-settle``); printed
per page: p50 and p95 of the wall time and of this process's CPU time, the SQL queries of the
last request, the full garbage collections that ran in the timed requests (and the longest),
and one JSON line last. ``--reuse`` measures the world an earlier run left in
``--db-name`` (for interleaving trees on the same data). Where the
stored gold decisions exist (`labelling.services.gold_state`), "Gold after a grade" and
"Agreement after a grade" mark one random question stale before each request, as a labeller's
grade does, so each request also recomputes that question (and Agreement, whose kept figures
that changes, its whole report).
The pages: Gold, Adjudication, Agreement, Assignments, Evaluation, Answers (the set's answer
runs), Index health, Misses (the sample's stored report: its job, which computes the figures,
runs in the warm-up request, in process) and Permissions (the replays list).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WORDS = str.split(
    "employee leave policy manager approval request days annual parental sick notice contract "
    "supplier invoice budget training review rating salary band overtime hours remote office "
    "badge visitor safety must within working calendar year written exception payroll"
)
DOCUMENTS = 2000


def configure(db_name: str, *, reuse: bool = False, debug: bool = False) -> None:
    import psycopg

    if not db_name.replace("_", "").isalnum():
        raise SystemExit(f"--db-name is letters, digits and _, not {db_name!r}")
    if not reuse:
        with psycopg.connect(
            "host=127.0.0.1 port=5432 user=postgres dbname=postgres", autocommit=True
        ) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {db_name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {db_name}")
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{db_name}"
    if debug:
        os.environ["DEBUG"] = "1"
    else:
        # As deployed: DEBUG off (no query log, no template debug data), over plain HTTP here.
        os.environ["DEBUG"] = "0"
        os.environ["SECRET_KEY"] = "lead-pages-benchmark-only"  # noqa: S105 - a scratch database
        os.environ["ALLOWED_HOSTS"] = "testserver"
        os.environ["SECURE_SSL_REDIRECT"] = "0"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def paragraph(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(35, 60))]
    return " ".join(words).capitalize() + "."


def world(args) -> dict:  # noqa: PLR0915 - one straight build
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from corpus.models import AccessGroup, Document, DocumentVersion, Membership, Project
    from corpus.services.documents import content_hash
    from labelling.models import (
        Assignment,
        Candidate,
        Guideline,
        Judgement,
        Pool,
        Question,
        QuestionSet,
        Resolution,
        Span,
    )

    rng = random.Random(7)
    now = timezone.now()
    project = Project.objects.create(slug="bench", name="Lead pages")
    User = get_user_model()
    lead = User.objects.create_user("lead")
    Membership.objects.create(project=project, user=lead, role="lead")
    labellers = User.objects.bulk_create(
        [User(username=f"labeller-{i:02d}") for i in range(args.labellers)]
    )
    Membership.objects.bulk_create(
        [Membership(project=project, user=u, role="labeller") for u in labellers]
    )
    guideline = Guideline.objects.create(project=project, version=1, text="2 fully, 1 partly.")
    shared = AccessGroup.objects.create(project=project, name="hr")
    shared.members.add(lead, *labellers)
    secret = AccessGroup.objects.create(project=project, name="board")
    secret.members.add(*labellers)
    docs = Document.objects.bulk_create(
        [
            Document(project=project, doc_id=f"pol-{i:04d}", title=f"Policy {i}")
            for i in range(DOCUMENTS)
        ]
    )
    shared.documents.add(*docs[::10])
    secret.documents.add(*docs[5::20])
    texts = ["\n\n".join(paragraph(rng) for _ in range(rng.randint(8, 14))) for _ in docs]
    versions = DocumentVersion.objects.bulk_create(
        [
            DocumentVersion(document=d, version=1, text=t, content_hash=content_hash(t))
            for d, t in zip(docs, texts, strict=True)
        ]
    )
    for d, v in zip(docs, versions, strict=True):
        d.latest_version = v
    Document.objects.bulk_update(docs, ["latest_version"], batch_size=5000)
    paragraphs = []
    for v, text in zip(versions, texts, strict=True):
        offset = 0
        for part in text.split("\n\n"):
            paragraphs.append((v.pk, offset, offset + len(part)))
            offset += len(part) + 2
    question_set = QuestionSet.objects.create(project=project, name="policies")
    questions = Question.objects.bulk_create(
        [
            Question(question_set=question_set, external_id=f"q{i:05d}", text=paragraph(rng)[:90])
            for i in range(args.questions)
        ]
    )
    pool = Pool.objects.create(question_set=question_set, name="pool", state="ready")
    Candidate.objects.bulk_create(
        [
            Candidate(
                pool=pool,
                question=q,
                version_id=version_id,
                start=start,
                end=end,
                shuffle_rank=rank,
            )
            for q in questions
            for rank, (version_id, start, end) in enumerate(rng.sample(paragraphs, args.passages))
        ],
        batch_size=5000,
    )
    assignments = []
    for n, q in enumerate(questions):
        assignments.append(
            Assignment(
                pool=pool,
                question=q,
                slot=1,
                labeller=labellers[n % len(labellers)],
                assigned_at=now,
                completed_at=now,
            )
        )
        if n < args.double:
            assignments.append(
                Assignment(
                    pool=pool,
                    question=q,
                    slot=2,
                    labeller=labellers[(n + 1) % len(labellers)],
                    assigned_at=now,
                    completed_at=now,
                )
            )
    Assignment.objects.bulk_create(assignments, batch_size=5000)
    by_question: dict[int, list] = {}
    for a in assignments:
        by_question.setdefault(a.question_id, []).append(a)
    judgements, spans_of = [], []
    disputed = []
    for candidate in Candidate.objects.filter(pool=pool).order_by("pk").iterator(chunk_size=5000):
        held = by_question[candidate.question_id]
        grades = []
        for a in held:
            grade = rng.choice((0, 0, 1, 2)) if not grades or rng.random() < 0.5 else grades[0]
            grades.append(grade)
            judgements.append(
                Judgement(
                    assignment=a,
                    candidate=candidate,
                    grade=grade,
                    guideline=guideline,
                    seconds_spent=5,
                )
            )
            spans_of.append(
                (candidate.version_id, candidate.start, min(candidate.end, candidate.start + 60))
                if grade
                else None
            )
        if len(set(grades)) > 1:
            disputed.append(candidate)
    Judgement.objects.bulk_create(judgements, batch_size=5000)
    text_of = {v.pk: v.text for v in versions}
    Span.objects.bulk_create(
        [
            Span(judgement=j, version_id=v, start=s, end=e, quote=text_of[v][s:e])
            for j, span in zip(judgements, spans_of, strict=True)
            if span is not None
            for v, s, e in [span]
        ],
        batch_size=5000,
    )
    Resolution.objects.bulk_create(
        [
            Resolution(pool=pool, question_id=c.question_id, candidate=c, grade=1, resolved_by=lead)
            for c in disputed[: args.resolutions]
        ]
    )
    Question.objects.filter(pk__in=[q.pk for q in questions[-5:]]).update(
        excluded_at=now, excluded_by=lead, exclusion_reason="off topic"
    )
    sample = production_sample(
        rng, project=project, question_set=question_set, lead=lead, paragraphs=paragraphs
    )
    return {
        "project": project,
        "question_set": question_set,
        "sample": sample,
        "lead": lead,
        "candidates": len(questions) * args.passages,
        "judgements": len(judgements),
        "disputed": len(disputed),
        "resolutions": min(len(disputed), args.resolutions),
    }


def production_sample(rng, *, project, question_set, lead, paragraphs):
    """The set as a production sample: one trace per question, drawn uniformly."""
    from datetime import timedelta

    from django.utils import timezone

    from corpus.models import DocumentVersion
    from labelling.models import Candidate
    from production.models import Sample, SampledTrace, SamplingRule, Trace

    now = timezone.now()
    doc_of = dict(DocumentVersion.objects.values_list("pk", "document__doc_id"))
    by_question: dict[int, list] = {}
    for question_id, version_id, start, end in (
        Candidate.objects.filter(pool__question_set=question_set)
        .order_by("question_id", "shuffle_rank")
        .values_list("question_id", "version_id", "start", "end")
    ):
        by_question.setdefault(question_id, []).append((version_id, start, end))
    questions = list(question_set.questions.order_by("pk"))
    traces = Trace.objects.bulk_create(
        [
            Trace(
                project=project,
                trace_id=f"t{n:05d}",
                occurred_at=now - timedelta(hours=n),
                question=q.text,
                retrieved=[
                    {"doc_id": doc_of[v], "start": s, "end": e, "rank": rank + 1}
                    for rank, (v, s, e) in enumerate(
                        by_question[q.pk][:10] + rng.sample(paragraphs, 2)
                    )
                ],
                answer="An answer.",
            )
            for n, q in enumerate(questions)
        ]
    )
    rule = SamplingRule.objects.create(project=project, name="weekly", size=len(questions))
    sample = Sample.objects.create(
        project=project,
        rule=rule,
        window_start=now - timedelta(days=7),
        window_end=now,
        population=20 * len(questions),
        question_set=question_set,
        drawn_by=lead,
    )
    SampledTrace.objects.bulk_create(
        [
            SampledTrace(sample=sample, trace=t, question=q, inclusion_probability=1 / 20)
            for t, q in zip(traces, questions, strict=True)
        ]
    )
    return sample


def built_before() -> dict:
    """The world an earlier run built (`--reuse`), as `world` describes it."""
    from django.contrib.auth import get_user_model

    from corpus.models import Project
    from labelling.models import Candidate, Judgement, QuestionSet, Resolution
    from production.models import Sample

    project = Project.objects.get(slug="bench")
    question_set = QuestionSet.objects.get(project=project)
    return {
        "project": project,
        "question_set": question_set,
        "lead": get_user_model().objects.get(username="lead"),
        "candidates": Candidate.objects.filter(pool__question_set=question_set).count(),
        "judgements": Judgement.objects.filter(candidate__pool__question_set=question_set).count(),
        "disputed": 0,  # not stored: the build counts it
        "resolutions": Resolution.objects.filter(pool__question_set=question_set).count(),
        "sample": Sample.objects.get(project=project),
    }


def pages(built: dict) -> dict[str, str]:
    from django.urls import reverse

    slug, set_id = built["project"].slug, built["question_set"].pk
    return {
        "Gold": reverse("labelling:show-gold", args=[slug, set_id]),
        "Adjudication": reverse("labelling:list-adjudication", args=[slug, set_id]),
        "Agreement": reverse("labelling:show-agreement", args=[slug, set_id]),
        "Assignments": reverse("labelling:list-assignments", args=[slug]),
        "Evaluation": reverse("evaluation:show-evaluation", args=[slug]),
        "Answers": reverse("answers:list-answer-runs", args=[slug, set_id]),
        "Index health": reverse("health:show-index-health", args=[slug]),
        "Misses": reverse("production:show-misses", args=[slug, built["sample"].pk]),
        "Permissions": reverse("evaluation:list-permission-replays", args=[slug]),
    }


def timed_full_collections(into: list[float], timing: list[bool]):
    """A `gc.callbacks` hook appending the duration in ms of each full (generation 2)
    collection that starts while ``timing[0]`` is true (inside a timed request)."""
    began = [0.0]

    def hook(phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            began[0] = time.perf_counter() if timing[0] else 0.0
        elif began[0]:
            into.append((time.perf_counter() - began[0]) * 1000)

    return hook


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--passages", type=int, default=200)
    parser.add_argument("--labellers", type=int, default=20)
    parser.add_argument("--double", type=int, default=10)
    parser.add_argument("--resolutions", type=int, default=500)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--db-name", default="goldset_lead_pages")
    parser.add_argument("--only", default="", help="comma-separated page names")
    parser.add_argument(
        "--analyze",
        action="store_true",
        help="ANALYZE the database after the world is built and the stored decisions are filled "
        "(as autovacuum does on a real project's tables), so PostgreSQL plans with real row "
        "counts (and compiles a query it prices high: JIT)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="run the pages with DEBUG on (figures before 2026-12-07 were); by default as "
        "deployed, DEBUG off",
    )
    parser.add_argument(
        "--no-settle",
        action="store_true",
        help="skip what a web worker does before its first request (goldset.worker_start: "
        "import every view, freeze the collector's long-lived objects); figures before "
        "2026-12-07 03:00 were measured without it",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="measure the world an earlier run left in --db-name instead of building it again",
    )
    args = parser.parse_args()
    configure(args.db_name, reuse=args.reuse, debug=args.debug)
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    started = time.perf_counter()
    built = built_before() if args.reuse else world(args)
    print(
        f"world: {built['candidates']:,} candidates, {built['judgements']:,} judgements, "
        f"{built['disputed']:,} disputed items, {built['resolutions']:,} resolutions "
        f"({time.perf_counter() - started:.0f} s)",
        flush=True,
    )
    client = Client()
    client.force_login(built["lead"])
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    results = {}
    urls = pages(built)
    try:
        from labelling.services import gold_state
    except ImportError:  # before the stored decisions existed: nothing is ever stale
        gold_state = None
    if gold_state is not None:
        urls["Gold after a grade"] = urls["Gold"]
        urls["Agreement after a grade"] = urls["Agreement"]
    keys = list(
        built["question_set"].pools.values_list("pk", "assignments__question_id").distinct()
    )
    rng = random.Random(11)
    full_collections: list[float] = []  # ms each, in the timed requests of the page measured
    timing = [False]
    gc.callbacks.append(timed_full_collections(full_collections, timing))
    if args.analyze:
        if gold_state is not None:  # the stored decisions, as the first lead page fills them
            gold_state.refresh(question_set=built["question_set"])
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    if not args.no_settle:  # as `goldset.wsgi` does once the app has loaded
        from goldset.worker_start import settle

        settle()
    for name, url in urls.items():
        if only and name.removesuffix(" after a grade") not in only:
            continue
        # "after a grade": one question marked stale before each request, as a labeller's
        # grade marks it, so the request also recomputes that question.
        before = (
            (
                lambda: gold_state.mark_stale(
                    pool_id=(key := rng.choice(keys))[0], question_id=key[1]
                )
            )
            if name.endswith("after a grade")
            else (lambda: None)
        )
        response = client.get(url, follow=True)  # Misses: its job, then the stored report
        if response.status_code != 200:
            print(f"{name:<14} {url}: {response.status_code}, skipped", flush=True)
            results[name] = {"status": response.status_code}
            continue
        times, cpu = [], []
        full_collections.clear()
        for _ in range(args.requests):
            before()
            with CaptureQueriesContext(connection) as queries:
                began, used = time.perf_counter(), time.process_time()
                timing[0] = True
                response = client.get(url)
                timing[0] = False
                times.append((time.perf_counter() - began) * 1000)
                cpu.append((time.process_time() - used) * 1000)
            assert response.status_code == 200, (name, response.status_code)
        results[name] = {
            "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(percentile(times, 0.95), 1),
            # This process's CPU (the web side; PostgreSQL's is not in it), less moved by load.
            "cpu_p50_ms": round(statistics.median(cpu), 1),
            "cpu_p95_ms": round(percentile(cpu, 0.95), 1),
            "queries": len(queries),
            # Full garbage collections during the timed requests and the longest of them.
            "full_gcs": len(full_collections),
            "full_gc_max_ms": round(max(full_collections, default=0), 1),
        }
        print(
            f"{name:<14} p50 {results[name]['p50_ms']:8.1f} ms  p95 {results[name]['p95_ms']:8.1f}"
            f" ms  CPU p50 {results[name]['cpu_p50_ms']:7.1f} ms  p95"
            f" {results[name]['cpu_p95_ms']:7.1f} ms  {len(queries)} queries  full GCs"
            f" {len(full_collections)} (longest {results[name]['full_gc_max_ms']} ms)",
            flush=True,
        )
    print(
        json.dumps(
            {
                "candidates": built["candidates"],
                "judgements": built["judgements"],
                "resolutions": built["resolutions"],
                "requests": args.requests,
                "analyzed": args.analyze,
                "debug": args.debug,
                "pages": results,
            }
        )
    )


if __name__ == "__main__":
    main()
