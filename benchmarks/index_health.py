"""Time the index health checks (`goldeval.formats.manifests` + `goldeval.scoring.health`) at scale.

A generated corpus of 20,000 documents and a manifest of 200,000 chunk rows (10 per document,
1% stale, a 2% slice on a second model revision, near-duplicate groups of 3 for 5% of the
documents), and a run of 300 questions x 10 results: reading the manifest (CSV), then the
checks without and with the run.

    PYTHONPATH=. .venv/bin/python benchmarks/index_health.py [--documents 20000] [--chunks 10]
"""

from __future__ import annotations

import argparse
import datetime
import io
import random
import resource
import time

from goldeval.formats.gold import DocumentState
from goldeval.formats.manifests import COLUMNS, read_manifest
from goldeval.formats.runfiles import Passage
from goldeval.formats.runs import Ranking, Run
from goldeval.scoring.health import Thresholds, check_index

NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def generate(documents: int, chunks: int, seed: int = 7):
    rng = random.Random(seed)
    states, lines = {}, io.StringIO()
    lines.write(",".join(COLUMNS) + "\n")
    for number in range(documents):
        doc_id = f"doc-{number:06d}"
        digest = f"{number:064x}"
        group = f"g{number // 3}" if number < documents // 20 else None
        modified = NOW - datetime.timedelta(days=rng.uniform(1, 400))
        states[doc_id] = DocumentState(doc_id, 2, digest, modified, True, group)
        stale = rng.random() < 0.01
        revision = "r2" if rng.random() < 0.02 else "r1"
        for chunk in range(chunks):
            lines.write(
                f"{doc_id},2,{'0' * 64 if stale else digest},{chunk * 500},{chunk * 500 + 500},"
                f"2026-11-01T00:00:00Z,minilm,{revision},384\n"
            )
    run = Run(
        name="team",
        rankings={
            f"q{q}": Ranking(
                [Passage(f"doc-{rng.randrange(documents):06d}", 0, 400) for _ in range(10)]
            )
            for q in range(300)
        },
    )
    return states, lines.getvalue().encode(), run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--chunks", type=int, default=10)
    arguments = parser.parse_args()
    states, data, run = generate(arguments.documents, arguments.chunks)
    print(f"manifest: {len(data) / 2**20:.1f} MB, {arguments.documents * arguments.chunks:,} rows")
    started = time.perf_counter()
    manifest = read_manifest(data)
    read_s = time.perf_counter() - started
    assert not manifest.problems, manifest.problems[:3]
    started = time.perf_counter()
    report = check_index(
        documents=states,
        rows=manifest.rows,
        now=NOW,
        thresholds=Thresholds(max_stale=0.01, fail_on_model_mix=True),
    )
    check_s = time.perf_counter() - started
    started = time.perf_counter()
    check_index(documents=states, rows=manifest.rows, now=NOW, runs=[run], k=10)
    run_s = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"read the manifest: {read_s:.2f} s")
    stale, models = report["stale"]["documents"], len(report["index"]["models"])
    print(
        f"checks: {check_s:.2f} s (stale {stale}, models {models}, "
        f"crossed {len(report['crossed'])})"
    )
    print(f"checks with a run of 300 questions x 10: {run_s:.2f} s")
    print(f"peak RSS: {peak / 2**20:.0f} MB")


if __name__ == "__main__":
    main()
