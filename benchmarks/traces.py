"""Production traces at scale: 1,000,000 through `manage.py import_traces`, a stream of batches
through `POST /api/p/<project>/traces` (traces per minute), the same file again (idempotent), and
drawing 300 of the 1,000,000 with each sampling strategy.

Runs on a fresh SQLite file unless DATABASE_URL names a database (for PostgreSQL, an empty one:
it is migrated and written to). The endpoint is called through Django's test client, in this
process: the figure is the app's own cost per request (parsing, checking, storing), without a
network or a web server in front.

    python benchmarks/traces.py [--traces 1000000] [--endpoint-traces 20000] [--batch 100]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
END = datetime(2026, 12, 1, tzinfo=UTC)
WORDS = ["leave", "carry", "over", "days", "annual", "form", "manager", "approval", "salary"]


def trace(n: int, rng: random.Random, prefix: str = "t") -> dict:
    return {
        "trace_id": f"{prefix}-{n}",
        "occurred_at": (END - timedelta(seconds=rng.randrange(28 * 86400))).isoformat(),
        "user": {"id": f"user-{rng.randrange(5000)}", "groups": [rng.choice(["hr", "sales"])]},
        "question": " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) + "?",
        "retrieved": [
            {"doc_id": f"doc-{rng.randrange(200)}", "rank": r, "score": round(rng.random(), 4)}
            for r in range(1, 6)
        ],
        "answer": "See the policy.",
        "refused": rng.random() < 0.05,
        "feedback": {"thumb": rng.choice(["up", "up", "up", "down"])}
        if rng.random() < 0.3
        else None,
        "system_version": rng.choice(["rag-2.3", "rag-2.4"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--endpoint-traces", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--sample", type=int, default=300)
    args = parser.parse_args()
    if "DATABASE_URL" not in os.environ:
        os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/traces.sqlite3"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DEBUG", "1")
    os.environ["DJANGO_SETTINGS_MODULE"] = "goldset.settings"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from corpus.services import projects
    from production.models import Trace
    from production.services import sampling, traces

    settings.ALLOWED_HOSTS = ["*"]
    call_command("migrate", verbosity=0)
    slug = f"bench-{int(time.time())}"
    project = projects.create_project(slug=slug)
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    rng = random.Random(7)
    folder = Path(tempfile.mkdtemp(dir=REPO / ".scratch" if (REPO / ".scratch").is_dir() else None))
    path = folder / "traces.jsonl"
    with path.open("w") as out:
        for n in range(args.traces):
            out.write(json.dumps(trace(n, rng)) + "\n")
    size = path.stat().st_size / 2**20
    print(f"{engine}: {args.traces:,} traces, {size:.0f} MB of JSONL")

    quiet = open(os.devnull, "w")  # noqa: SIM115 - the progress bar; open for the whole run
    for attempt in ("import_traces", "same file again"):
        started = time.perf_counter()
        call_command(
            "import_traces",
            str(path),
            project=slug,
            stdout=sys.stdout,
            stderr=quiet,
        )
        seconds = time.perf_counter() - started
        print(
            f"  {attempt}: {seconds:.1f} s, {args.traces / seconds * 60:,.0f} traces/min "
            f"({Trace.objects.filter(project=project).count():,} stored)"
        )
    path.unlink()

    _, token = traces.create_api_token(project=project, user=None, name="bench")
    client = Client()
    url = f"/api/p/{slug}/traces"
    batches = [
        json.dumps({"traces": [trace(n, rng, "api") for n in range(first, first + args.batch)]})
        for first in range(0, args.endpoint_traces, args.batch)
    ]
    settings.GOLDSET_TRACE_REQUESTS_PER_MINUTE = 10**9  # measure the app, not the limiter
    started = time.perf_counter()
    for body in batches:
        response = client.post(
            url, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert response.status_code == 200, response.content[:300]
    seconds = time.perf_counter() - started
    print(
        f"  endpoint: {args.endpoint_traces:,} traces in {len(batches)} batches of {args.batch} "
        f"in {seconds:.1f} s: {args.endpoint_traces / seconds * 60:,.0f} traces/min "
        f"({seconds / len(batches) * 1000:.0f} ms a request)"
    )

    specs = {
        "uniform": {},
        "stratified": {"stratify_by": "system_version"},
        "negative_first": {},
    }
    for strategy, extra in specs.items():
        spec = sampling.check_rule(
            filters={"window_days": 60}, strategy=strategy, size=args.sample, seed=1, **extra
        )
        rule = sampling.save_sampling_rule(project=project, user=None, name=strategy, spec=spec)
        started = time.perf_counter()
        sample = sampling.draw_sample(rule=rule, end=END + timedelta(days=1))
        seconds = time.perf_counter() - started
        print(
            f"  sampling {strategy}: {sample.traces.count()} of {sample.population:,} "
            f"in {seconds:.2f} s"
        )


if __name__ == "__main__":
    main()
