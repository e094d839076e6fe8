"""Ingestion throughput: 10,000 generated documents (~5 MB) with one chunking scheme.

    .venv/bin/python benchmarks/ingest.py [--docs 10000] [--backend sqlite|postgres|both]

Each backend runs in a fresh process on a fresh database (a temporary SQLite file; a scratch
PostgreSQL database `goldset_bench` on 127.0.0.1) and prints documents/s and peak RSS. The timed
part is `manage.py import_documents` on one JSONL file: parse, normalise, quality report, MinHash,
near-duplicate check, versions, chunks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORDS = [
    "leave",
    "policy",
    "request",
    "form",
    "manager",
    "approval",
    "employee",
    "days",
    "annual",
    "travel",
    "expense",
    "claim",
    "receipt",
    "laptop",
    "return",
    "procedure",
    "security",
    "password",
    "token",
    "access",
    "group",
    "warehouse",
    "shipment",
    "pallet",
    "scanner",
    "customer",
    "refund",
    "escalation",
    "incident",
    "report",
    "data",
    "retention",
    "contract",
    "supplier",
    "invoice",
    "budget",
    "training",
    "review",
    "rating",
    "salary",
    "band",
    "overtime",
    "hours",
    "remote",
    "office",
    "badge",
    "visitor",
    "safety",
]
PG_URL = "postgres://postgres@127.0.0.1:5432/goldset_bench"


def generate(path: Path, count: int) -> int:
    rng = random.Random(14)
    size = 0
    with path.open("w") as out:
        for i in range(count):
            paragraphs = []
            for _ in range(3):
                words = [rng.choice(WORDS) for _ in range(rng.randint(22, 30))]
                words.insert(rng.randrange(len(words)), f"HR-POL-{rng.randrange(1000):03d}")
                paragraphs.append(" ".join(words).capitalize() + ".")
            text = "\n\n".join(paragraphs)
            size += len(text)
            out.write(
                json.dumps(
                    {
                        "doc_id": f"doc-{i:05d}",
                        "title": f"Document {i}",
                        "text": text,
                        "access_groups": ["hr"] if i % 50 == 0 else [],
                    }
                )
                + "\n"
            )
    return size


def run_backend(database_url: str, docs: int) -> dict:
    os.environ.update(
        {"DATABASE_URL": database_url, "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "goldset.settings"}
    )
    os.environ.pop("REDIS_URL", None)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    from corpus.services import documents, projects

    call_command("migrate", verbosity=0)
    project = projects.create_project(slug="bench", name="Bench")
    documents.add_chunking_scheme(
        project=project, name="w100", strategy="fixed", unit="words", size=100, overlap=20
    )
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "docs.jsonl"
        chars = generate(data, docs)
        start = time.perf_counter()
        result = documents.import_path(project=project, path=data)
        elapsed = time.perf_counter() - start
    from corpus.models import Chunk

    return {
        "documents": result.created,
        "chars": chars,
        "seconds": round(elapsed, 2),
        "docs_per_s": round(result.created / elapsed, 1),
        "chunks": Chunk.objects.count(),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def fresh_postgres() -> None:
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS goldset_bench")
        conn.execute("CREATE DATABASE goldset_bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_backend(args.child, args.docs)))
        return
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    print(
        f"{'backend':<10} {'docs':>6} {'MB text':>8} {'seconds':>8} {'docs/s':>8} "
        f"{'chunks':>7} {'peak RSS MB':>12}"
    )
    for backend in backends:
        with tempfile.TemporaryDirectory() as tmp:
            if backend == "postgres":
                fresh_postgres()
                url = PG_URL
            else:
                url = f"sqlite:///{tmp}/bench.sqlite3"
            out = subprocess.run(
                [sys.executable, __file__, "--docs", str(args.docs), "--child", url],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{backend:<10} {r['documents']:>6} {r['chars'] / 1e6:>8.2f} {r['seconds']:>8} "
            f"{r['docs_per_s']:>8} {r['chunks']:>7} {r['peak_rss_mb']:>12}"
        )
    print("target: at least 500 documents/s on PostgreSQL")


if __name__ == "__main__":
    main()
