"""How BM25 and the vector index grow from 10,000 to 1,000,000 passages (a small table).

    .venv/bin/python benchmarks/scale.py [--sizes 10000,100000,1000000] [--queries 300]
        [--no-vectors] [--profile FILE] [--compare-with CHECKOUT]

Each measurement runs in a child process of its own, so its peak RSS is its own:

- BM25 over generated passages (benchmarks/bm25.py's Zipf generator, ~130 words each; Snowball
  stemming and stopwords, k1 0.9, b 0.4, Lucene IDF): build time, peak RSS, the artifact as
  stored (corpus/indexfile.py's file, written to a temporary file as a build writes it), and
  query p50/p95 for top 100 through ``retrieve()`` as a user who may see half the documents.
  For that the child migrates a fresh SQLite database (or DATABASE_URL's, which should be an
  empty one) and writes one document row per 100 passages with a version each, half of them in
  an access group the user is not in, a BM25 retriever and its Index row, whose artifact is the
  index just built, saved through the artifact storage. The documents' text is not written:
  retrieve() reads passages from the artifact and asks the database only which documents and
  versions it must hide and the doc ids of what it returns, and ingesting 1,000,000 passages of
  text takes longer than this machine gives a benchmark. "index p95" is the loaded index's own
  search with a 50% passage mask, for comparison. "search" and "overhead" split each
  retrieve() call: right after it, the loaded index's own search for the same question with
  the same mask (the user's, worked out here from the rows written), and retrieve()'s time
  less that search's (its reads, the mask, the results); p50 and p95 of each, the calls
  interleaved. ``--profile FILE`` writes cProfile's table of those retrieve() calls to FILE.
  ``--compare-with CHECKOUT`` also times the retrieve() of another checkout's
  ``corpus/services/retrieval.py`` and ``search_mask.py`` (e.g. main's, from ``git archive``),
  loaded beside this one in the same process (the rest of the app is this checkout's; its own
  mask cache), over the same index and database, each question asked of both in turn:
  "before", its p50/p95, and its overhead (its time less the same question's search).
- The vector index with synthetic unit vectors (384 dimensions; encoding 1,000,000 passages
  would take hours here): the artifact size, loading it (indexfile.unpack from the file), peak
  RSS, and one 300-question batch of top 100 (search_many, as a pool asks).
- "pool 300" = BM25's 300 queries + the vector batch: the searching a 300-question pool over both
  does (writing candidates is not included).

Timings on the 2-core shared development machine are noisy; read them as upper bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
K = 100
DIMENSION = 384
PASSAGES_PER_DOCUMENT = 100


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fake_passages(size: int) -> list[tuple[int, int, int, int, str, str]]:
    return [(i, i, 0, 100, "", "") for i in range(size)]


def measure_bm25(
    size: int, queries: int, profile: str | None = None, baseline: str | None = None
) -> dict:
    from bm25 import ANALYZER, SEED, latency_ms, synthetic_corpus

    from corpus import indexfile
    from goldeval.bm25 import BM25Index

    passages, query_texts = synthetic_corpus(size, queries)
    before = peak_rss_mb()
    started = time.perf_counter()
    index = BM25Index.build(passages, analyzer=ANALYZER, k1=0.9, b=0.4, idf="lucene")
    build_s = time.perf_counter() - started
    rss = peak_rss_mb()
    del passages
    allowed = np.random.default_rng(SEED).random(len(index)) < 0.5
    _, index_p95 = latency_ms(lambda q: index.search(q, k=K, allowed=allowed), query_texts)
    with tempfile.TemporaryFile() as handle:
        indexfile.pack(handle, index, fake_passages(len(index)))
        artifact_mb = handle.tell() / 2**20
    through = through_retrieve(index, query_texts, profile, baseline)
    return {
        "build_s": build_s,
        "rss_mb": rss,
        "rss_corpus_mb": before,
        "artifact_mb": artifact_mb,
        "index_p95_ms": index_p95,
        **through,
    }


def through_retrieve(
    index, query_texts: list[str], profile: str | None = None, baseline: str | None = None
) -> dict:
    """Query latency of retrieve() over ``index``, as a user hidden from half the documents,
    split into the search alone and the rest (see the module's docstring)."""

    (REPO / "benchmarks" / "out").mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=REPO / "benchmarks" / "out"))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{folder}/scale.sqlite3")
    os.environ["GOLDSET_ARTIFACT_DIR"] = str(folder / "artifacts")
    os.environ.pop("REDIS_URL", None)
    # Production settings: DEBUG's query log is CPU no deployment spends on a search.
    os.environ.update(DEBUG="0", SECRET_KEY="bench", ALLOWED_HOSTS="localhost")  # noqa: S106
    os.environ["DJANGO_SETTINGS_MODULE"] = "goldset.settings"
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from corpus import indexfile
    from corpus.models import (
        AccessGroup,
        ChunkingScheme,
        Document,
        DocumentVersion,
        Index,
        IndexState,
        Membership,
        Project,
        Retriever,
    )
    from corpus.services import artifacts
    from corpus.services.retrieval import retrieve

    call_command("migrate", verbosity=0)
    project = Project.objects.create(slug=f"scale-{int(time.time())}", name="scale")
    user = User.objects.create(username=f"scale-{project.pk}")
    Membership.objects.create(project=project, user=user)
    hidden_group = AccessGroup.objects.create(project=project, name="others")
    count = max(1, len(index) // PASSAGES_PER_DOCUMENT)
    documents = Document.objects.bulk_create(
        [Document(project=project, doc_id=f"doc-{i}") for i in range(count)], batch_size=5000
    )
    versions = DocumentVersion.objects.bulk_create(
        [DocumentVersion(document=d, version=1, text="", content_hash="0" * 64) for d in documents],
        batch_size=5000,
    )
    for document, version in zip(documents, versions, strict=True):
        document.latest_version = version
    Document.objects.bulk_update(documents, ["latest_version"], batch_size=5000)
    Document.access_groups.through.objects.bulk_create(
        [
            Document.access_groups.through(document_id=d.pk, accessgroup_id=hidden_group.pk)
            for d in documents[1::2]
        ],
        batch_size=5000,
    )
    scheme = ChunkingScheme.objects.create(project=project, name="fixed", strategy="fixed")
    retriever = Retriever.objects.create(
        project=project,
        name="bm25",
        kind="bm25",
        scheme=scheme,
        params={"stem": True, "stopwords": True, "idf": "lucene"},
    )
    row = Index.objects.create(retriever=retriever, state=IndexState.BUILDING)
    owner = [documents[i // PASSAGES_PER_DOCUMENT % count] for i in range(len(index))]
    passages = [(d.latest_version_id, d.pk, 0, 100, "", "") for d in owner]
    stored = artifacts.save_artifact(
        name=f"indexes/scale-{row.pk}.npz",
        write=lambda handle, passages=passages: indexfile.pack(handle, index, passages),
    )
    del passages, owner
    Index.objects.filter(pk=row.pk).update(
        state=IndexState.READY,
        artifact_name=stored.name,
        artifact_size=stored.size,
        artifact_sha256=stored.sha256,
        passages=len(index),
        built_at=timezone.now(),
    )
    Retriever.objects.filter(pk=retriever.pk).update(active_index=row)
    if connection.vendor == "postgresql":
        # Statistics for the rows just written, as autovacuum keeps them on a settled database:
        # without them the planner scans every version for the "newer than the index" lookup.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    started = time.perf_counter()
    retrieve(retriever=retriever, questions=query_texts[:1], k=K, user=user)
    load_s = time.perf_counter() - started

    hidden = {d.pk for d in documents[1::2]}
    loaded_ids = np.array([d.pk for d in documents], dtype=np.int64)
    mask = ~np.isin(
        loaded_ids[np.arange(len(index)) // PASSAGES_PER_DOCUMENT % count],
        np.fromiter(hidden, dtype=np.int64),
    )

    def ask(query: str, retrieve=retrieve) -> list:
        (hits,) = retrieve(retriever=retriever, questions=[query], k=K, user=user)
        assert all(int(hit.doc_id.split("-")[1]) % 2 == 0 for hit in hits)
        return hits

    before = []
    if baseline:
        import importlib.util

        import corpus.services

        def load(name: str):
            spec = importlib.util.spec_from_file_location(
                f"baseline_{name}", Path(baseline) / "corpus" / "services" / f"{name}.py"
            )
            module = sys.modules[f"baseline_{name}"] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module

        # The checkout's search mask too, if it has one: its retrieve() then reads the state
        # (and keeps its masks) as that checkout does, not as this one's.
        ours = corpus.services.search_mask
        if (Path(baseline) / "corpus" / "services" / "search_mask.py").exists():
            corpus.services.search_mask = load("search_mask")
        try:
            old = load("retrieval")
        finally:
            corpus.services.search_mask = ours
        old.retrieve(retriever=retriever, questions=query_texts[:1], k=K, user=user)

    def ask_before(query: str) -> list:
        started = time.perf_counter()
        hits = ask(query, old.retrieve)
        before.append((time.perf_counter() - started) * 1000)
        return [(h.rank, h.score, h.version_id, h.doc_id, h.start, h.end) for h in hits]

    whole, alone = [], []
    for number, query in enumerate(query_texts):
        # Which of the two asks first alternates, so neither always finds the caches warm.
        expected = ask_before(query) if baseline and number % 2 else None
        started = time.perf_counter()
        hits = ask(query)
        middle = time.perf_counter()
        index.search(query, k=K, allowed=mask)
        whole.append((middle - started) * 1000)
        alone.append((time.perf_counter() - middle) * 1000)
        if baseline:
            expected = expected or ask_before(query)
            assert [(h.rank, h.score, h.version_id, h.doc_id, h.start, h.end) for h in hits] == (
                expected
            )
    overhead = np.subtract(whole, alone)
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(lambda: [ask(query) for query in query_texts])
        with open(profile, "w") as out:
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
    started = time.perf_counter()
    retrieve(retriever=retriever, questions=query_texts, k=K, user=user)
    queries_s = time.perf_counter() - started
    shutil.rmtree(folder, ignore_errors=True)  # the artifact is 690 MB at 1,000,000 passages

    def percentiles(timings) -> tuple[float, float]:
        return float(np.percentile(timings, 50)), float(np.percentile(timings, 95))

    p50, p95 = percentiles(whole)
    search_p50, search_p95 = percentiles(alone)
    overhead_p50, overhead_p95 = percentiles(overhead)
    before_p50, before_p95 = percentiles(before) if before else (None, None)
    before_overhead = percentiles(np.subtract(before, alone)) if before else (None, None)
    return {
        "before_p50_ms": before_p50,
        "before_p95_ms": before_p95,
        "before_overhead_p50_ms": before_overhead[0],
        "before_overhead_p95_ms": before_overhead[1],
        "load_s": load_s,
        "p50_ms": p50,
        "p95_ms": p95,
        "search_p50_ms": search_p50,
        "search_p95_ms": search_p95,
        "overhead_p50_ms": overhead_p50,
        "overhead_p95_ms": overhead_p95,
        "queries_s": queries_s,
    }


def measure_vectors(size: int, queries: int) -> dict:
    from corpus import indexfile
    from corpus.embedding import ModelInfo, VectorIndex

    rng = np.random.default_rng(7)
    vectors = np.empty((size, DIMENSION), dtype=np.float32)
    for first in range(0, size, 50_000):  # in blocks: the float64 draws stay small
        block = rng.standard_normal((min(50_000, size - first), DIMENSION)).astype(np.float32)
        vectors[first : first + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    info = ModelInfo(name="synthetic", version="synthetic", dimension=DIMENSION)
    folder = REPO / "benchmarks" / "out"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=folder) as handle:
        indexfile.pack(handle, VectorIndex(vectors, info=info), fake_passages(size))
        artifact_mb = handle.tell() / 2**20
        del vectors
        rss_before_load = peak_rss_mb()
        handle.seek(0)
        started = time.perf_counter()
        loaded = indexfile.unpack(0, None, handle, rebuild="")
        load_s = time.perf_counter() - started
    questions = rng.standard_normal((queries, DIMENSION)).astype(np.float32)
    questions /= np.linalg.norm(questions, axis=1, keepdims=True)
    allowed = rng.random(size) < 0.5
    started = time.perf_counter()
    loaded.searcher.search_many(questions, k=K, allowed=allowed)
    batch_s = time.perf_counter() - started
    return {
        "artifact_mb": artifact_mb,
        "load_s": load_s,
        "rss_mb": peak_rss_mb(),
        "rss_before_load_mb": rss_before_load,
        "batch_s": batch_s,
    }


def child(
    kind: str, size: int, queries: int, profile: str | None = None, baseline: str | None = None
) -> dict:
    extra = ["--profile", profile] if profile else []
    extra += ["--compare-with", baseline] if baseline else []
    result = subprocess.run(
        [sys.executable, __file__, f"--{kind}", str(size), "--queries", str(queries), *extra],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    if result.returncode != 0:
        raise SystemExit(f"{kind} at {size:,} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--no-vectors", action="store_true", help="measure BM25 only (no vector index)"
    )
    parser.add_argument(
        "--profile", metavar="FILE", help="write cProfile's table of the retrieve() calls here"
    )
    parser.add_argument(
        "--compare-with",
        metavar="CHECKOUT",
        help="also time this checkout's retrieve() (corpus/services/retrieval.py), interleaved",
    )
    parser.add_argument("--bm25", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--vectors", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bm25:
        print(json.dumps(measure_bm25(args.bm25, args.queries, args.profile, args.compare_with)))
        return
    if args.vectors:
        print(json.dumps(measure_vectors(args.vectors, args.queries)))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{args.queries} queries, top {K}, half the documents hidden; 2 cores", flush=True)
    print("BM25 p50/p95: through retrieve(); search: the index's search in it, with the same mask;")
    print("overhead: retrieve() less its search; index p95: the loaded index's search alone")
    header = (
        f"{'passages':>10} | {'BM25 build':>10} {'RSS':>8} {'artifact':>9} {'p50':>7} {'p95':>7}"
        f" {'search p50/p95':>15} {'overhead p50/p95':>17} {'index p95':>9}"
        f" | {'vec artifact':>12} {'load':>6} {'RSS':>8} {'300 batch':>9} | {'pool 300':>8}"
    )
    print(header)
    print("-" * len(header))
    for size in sizes:
        bm25 = child("bm25", size, args.queries, args.profile, args.compare_with)
        if bm25["before_p50_ms"] is not None:
            print(
                f"before ({args.compare_with}), interleaved: p50 {bm25['before_p50_ms']:.1f} ms,"
                f" p95 {bm25['before_p95_ms']:.1f} ms; overhead p50"
                f" {bm25['before_overhead_p50_ms']:.2f} ms,"
                f" p95 {bm25['before_overhead_p95_ms']:.2f} ms",
                flush=True,
            )
        line = (
            f"{size:>10,} | {bm25['build_s']:>8.1f} s {bm25['rss_mb']:>5.0f} MB "
            f"{bm25['artifact_mb']:>6.0f} MB {bm25['p50_ms']:>4.1f} ms {bm25['p95_ms']:>4.1f} ms"
            f" {bm25['search_p50_ms']:>6.2f} / {bm25['search_p95_ms']:>5.2f} ms"
            f" {bm25['overhead_p50_ms']:>7.2f} / {bm25['overhead_p95_ms']:>5.2f} ms"
            f" {bm25['index_p95_ms']:>6.1f} ms"
        )
        if args.no_vectors:
            print(line, flush=True)
            continue
        vectors = child("vectors", size, args.queries)
        pool = bm25["queries_s"] + vectors["batch_s"]
        print(
            f"{line} | {vectors['artifact_mb']:>9.0f} MB {vectors['load_s']:>4.1f} s "
            f"{vectors['rss_mb']:>5.0f} MB {vectors['batch_s']:>7.1f} s | {pool:>6.1f} s",
            flush=True,
        )
    print("targets at 1,000,000: BM25 build <= 3 min, <= 4 GB peak RSS, query p95 <= 20 ms;")
    print("pooling 300 questions from both <= 60 s")


if __name__ == "__main__":
    main()
