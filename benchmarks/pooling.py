"""Retrieval and pooling through the app's own services, at the scale issue 3 asks for.

    .venv/bin/python benchmarks/pooling.py [--passages 100000] [--embed-passages 1000]
                                           [--questions 300] [--depth 10]

A fresh SQLite database in a temporary folder gets generated documents of ~100 words (~130
MiniLM tokens) drawn from the demo corpus's vocabulary, one whole-document passage each: all of
them under the BM25 retriever's scheme, the first --embed-passages under the embedding
retriever's. The rows are bulk-inserted (ingestion has its own benchmark, benchmarks/ingest.py).
Then, with the app's services: BM25 and MiniLM index builds (time, RSS), per-query latency
through `corpus.services.retrieve` (one question per call, access filter included) and of the
bare index search, the pooling of --questions questions from both retrievers through the pool
job (tasks in-process, as without REDIS_URL), and the embedding encode rate of our index build
against raw `SentenceTransformer.encode` on the same texts in the same run.

Issue 3 asks for 10,000 embedded passages; all-MiniLM-L6-v2 encodes some 20-50 passages/s on
these two shared cores, so the default embeds 1,000 and prints the extrapolation to 10,000.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SEED = 20260301
WORDS_PER_PASSAGE = 100
TARGET_P95_MS = 50
TARGET_POOLING_S = 60
TARGET_ENCODE_RATIO = 0.9
ENCODE_BLOCK = 250


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident set size in MB, from /proc (Linux)."""
    status = Path("/proc/self/status").read_text()
    now = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024
    peak = int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024
    return now, peak


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def vocabulary() -> tuple[list[str], np.ndarray]:
    """Words of the demo corpus with their frequencies: realistic English for the tokenizer."""
    counts: Counter[str] = Counter()
    for file in (REPO / "demo" / "data" / "documents").iterdir():
        counts.update(re.findall(r"[a-z]+(?:-[a-z0-9]+)*", file.read_text().lower()))
    words = [w for w, _ in counts.most_common()]
    weights = np.array([counts[w] for w in words], dtype=np.float64)
    return words, weights / weights.sum()


def generate(count: int, rng: np.random.Generator) -> list[str]:
    words, p = vocabulary()
    picks = rng.choice(len(words), size=(count, WORDS_PER_PASSAGE), p=p)
    codes = rng.integers(0, 1000, size=count)
    passages = []
    for row, code in zip(picks, codes, strict=True):
        text = " ".join(words[i] for i in row)
        passages.append(f"Policy HR-POL-{code:03d}. {text.capitalize()}.")
    return passages


def setup_django(folder: Path) -> None:
    os.environ.update(
        {
            "DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}",
            # DEBUG off: with it on, Django keeps every query with its parameters, such as a
            # 50 MB index artefact, and the RSS figures would measure that log.
            "DEBUG": "0",
            "SECRET_KEY": "benchmark-only-not-a-secret",
            "DJANGO_SETTINGS_MODULE": "goldset.settings",
        }
    )
    os.environ.pop("REDIS_URL", None)
    sys.path.insert(0, str(REPO))
    import logging

    import django

    django.setup()
    logging.getLogger("celery").setLevel(logging.WARNING)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load_rows(passages: list[str], embedded: int, questions: list[str]):
    """Project, documents, versions, chunks under two schemes, a question set; bulk-inserted."""
    from django.db.models import OuterRef, Subquery

    from corpus.models import Chunk, ChunkingScheme, Document, DocumentVersion, Project
    from labelling.models import Question, QuestionSet

    project = Project.objects.create(slug="bench", name="Benchmark")
    Document.objects.bulk_create(
        [Document(project=project, doc_id=f"doc-{i:06d}") for i in range(len(passages))],
        batch_size=5000,
    )
    ids = dict(Document.objects.filter(project=project).values_list("doc_id", "pk"))
    DocumentVersion.objects.bulk_create(
        [
            DocumentVersion(
                document_id=ids[f"doc-{i:06d}"],
                version=1,
                text=text,
                content_hash=hashlib.sha256(text.encode()).hexdigest(),
            )
            for i, text in enumerate(passages)
        ],
        batch_size=5000,
    )
    Document.objects.filter(project=project).update(
        latest_version=Subquery(
            DocumentVersion.objects.filter(document=OuterRef("pk")).values("pk")[:1]
        )
    )
    versions = dict(
        DocumentVersion.objects.filter(document__project=project).values_list(
            "document__doc_id", "pk"
        )
    )
    schemes = {
        name: ChunkingScheme.objects.create(project=project, name=name, strategy="document")
        for name in ("whole-bm25", "whole-embedding")
    }
    rows = []
    for i, text in enumerate(passages):
        digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        version = versions[f"doc-{i:06d}"]
        for name in ("whole-bm25", "whole-embedding") if i < embedded else ("whole-bm25",):
            rows.append(
                Chunk(
                    scheme=schemes[name],
                    version_id=version,
                    ordinal=0,
                    start=0,
                    end=len(text),
                    text_hash=digest,
                )
            )
    Chunk.objects.bulk_create(rows, batch_size=5000)
    question_set = QuestionSet.objects.create(project=project, name="bench")
    Question.objects.bulk_create(
        [
            Question(question_set=question_set, external_id=f"q{i:03d}", text=text)
            for i, text in enumerate(questions)
        ]
    )
    return project, schemes, question_set


def latency(retriever, questions: list[str], depth: int) -> tuple[list[float], list[float]]:
    """Per-question milliseconds through the service, and of the bare index search."""
    from corpus.embedding import Encoder
    from corpus.services import retrieval

    through_service, bare = [], []
    for question in questions:
        started = time.perf_counter()
        retrieval.retrieve(retriever=retriever, questions=[question], k=depth)
        through_service.append(1000 * (time.perf_counter() - started))
    loaded = retrieval.load_index(retriever)
    encoder = Encoder(None) if retriever.kind == "embedding" else None
    for question in questions:
        started = time.perf_counter()
        if encoder is None:
            loaded.searcher.search(question, k=depth)
        else:
            loaded.searcher.search(encoder.encode([question])[0], k=depth)
        bare.append(1000 * (time.perf_counter() - started))
    return through_service, bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--embed-passages", type=int, default=1_000)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--depth", type=int, default=10)
    args = parser.parse_args()
    embedded = min(args.embed_passages, args.passages)

    with tempfile.TemporaryDirectory(prefix="goldset-pooling-") as tmp:
        setup_django(Path(tmp))
        from corpus.embedding import Encoder
        from corpus.services import retrieval
        from labelling.models import Candidate
        from labelling.services.pools import start_pool

        rng = np.random.default_rng(SEED)
        started = time.perf_counter()
        passages = generate(args.passages, rng)
        questions = []
        for i in rng.integers(0, embedded, size=args.questions):
            words = passages[i].split()
            first = int(rng.integers(2, len(words) - 10))
            questions.append(" ".join(words[first : first + int(rng.integers(4, 10))]))
        project, schemes, question_set = load_rows(passages, embedded, questions)
        print(
            f"setup: {args.passages:,} passages ({embedded:,} for embedding), "
            f"{args.questions} questions, rows written in {time.perf_counter() - started:.1f} s"
        )
        base_now, base_peak = rss_mb()
        print(f"RSS before any index: {base_now:.0f} MB (peak so far {base_peak:.0f} MB)")

        # BM25 -------------------------------------------------------------------------------
        bm25 = retrieval.add_retriever(
            project=project,
            name="bm25",
            kind="bm25",
            scheme=schemes["whole-bm25"],
            stem=True,
            stopwords=True,
        )
        started = time.perf_counter()
        index = retrieval.build_index(retriever=bm25)
        build_s = time.perf_counter() - started
        now, peak = rss_mb()
        print(
            f"\nBM25 index build: {build_s:.1f} s for {index.passages:,} passages; artefact "
            f"{index.artifact_size / 2**20:.0f} MB; RSS {now:.0f} MB, peak {peak:.0f} MB "
            f"(+{peak - base_peak:.0f} MB over the pre-build peak)"
        )
        bm25.refresh_from_db()
        service_ms, bare_ms = latency(bm25, questions, args.depth)
        bm25_p95 = percentile(service_ms, 95)
        print(
            f"BM25 query latency, top {args.depth}: through retrieve() p50 "
            f"{percentile(service_ms, 50):.1f} ms, p95 {bm25_p95:.1f} ms; bare index search "
            f"p50 {percentile(bare_ms, 50):.1f} ms, p95 {percentile(bare_ms, 95):.1f} ms "
            f"(target p95 <= {TARGET_P95_MS} ms: "
            f"{'met' if bm25_p95 <= TARGET_P95_MS else 'MISSED'})"
        )

        # Embedding --------------------------------------------------------------------------
        encoder = Encoder(None)
        texts = passages[:embedded]
        encoder.encode(texts[:64])  # load the model and warm the CPU kernels up, for both sides
        # Our Encoder against the library on the same texts, block by block and alternating who
        # goes first, so the load of a shared machine falls on both sides alike.
        raw_s = ours_s = 0.0
        for number, first in enumerate(range(0, embedded, ENCODE_BLOCK)):
            block = texts[first : first + ENCODE_BLOCK]
            sides = ["raw", "ours"] if number % 2 == 0 else ["ours", "raw"]
            for side in sides:
                started = time.perf_counter()
                if side == "raw":
                    encoder.model.encode(
                        block,
                        batch_size=32,
                        convert_to_numpy=True,
                        normalize_embeddings=True,
                        show_progress_bar=False,
                    )
                    raw_s += time.perf_counter() - started
                else:
                    encoder.encode(block)
                    ours_s += time.perf_counter() - started
        raw_rate, encode_rate = embedded / raw_s, embedded / ours_s
        ratio = raw_s / ours_s
        print(
            f"\nEncode rate on the same {embedded:,} texts: raw SentenceTransformer.encode "
            f"{raw_rate:.1f} passages/s, our Encoder.encode {encode_rate:.1f} passages/s; "
            f"ours / raw = {ratio:.2f} (target >= {TARGET_ENCODE_RATIO}: "
            f"{'met' if ratio >= TARGET_ENCODE_RATIO else 'MISSED'})"
        )
        minilm = retrieval.add_retriever(
            project=project, name="minilm", kind="embedding", scheme=schemes["whole-embedding"]
        )
        before_peak = rss_mb()[1]
        started = time.perf_counter()
        index = retrieval.build_index(retriever=minilm)
        build_s = time.perf_counter() - started
        build_rate = embedded / build_s
        now, peak = rss_mb()
        print(
            f"MiniLM index build (nothing cached): {build_s:.1f} s for {index.passages:,} "
            f"passages, {build_rate:.1f} passages/s, {build_rate / raw_rate:.2f} of the raw rate "
            f"(cache lookups, encoding, cache rows, artefact); RSS {now:.0f} MB, peak "
            f"{peak:.0f} MB (+{peak - before_peak:.0f} MB)"
        )
        print(
            f"extrapolated to 10,000 passages: {10_000 / build_rate / 60:.1f} min to build "
            f"(raw encode {10_000 / raw_rate / 60:.1f} min)"
        )
        started = time.perf_counter()
        rebuilt = retrieval.build_index(retriever=minilm)
        print(
            f"rebuild with every vector cached: {time.perf_counter() - started:.1f} s "
            f"for {rebuilt.passages:,} passages"
        )
        minilm.refresh_from_db()
        service_ms, bare_ms = latency(minilm, questions, args.depth)
        print(
            f"MiniLM query latency, top {args.depth} (query encoding included): through "
            f"retrieve() p50 {percentile(service_ms, 50):.1f} ms, p95 "
            f"{percentile(service_ms, 95):.1f} ms; bare p50 {percentile(bare_ms, 50):.1f} ms, "
            f"p95 {percentile(bare_ms, 95):.1f} ms"
        )

        # Pooling ----------------------------------------------------------------------------
        started = time.perf_counter()
        pool = start_pool(
            question_set=question_set, name="bench", retrievers=[bm25, minilm], depth=args.depth
        )
        pooling_s = time.perf_counter() - started
        pool.refresh_from_db()
        pool.job.refresh_from_db()
        candidates = Candidate.objects.filter(pool=pool).count()
        print(
            f"\nPooling {args.questions} questions from bm25 + minilm at depth {args.depth}: "
            f"{pooling_s:.1f} s ({pool.job.total} tasks, state {pool.state}); {candidates:,} "
            f"candidates, {candidates / args.questions:.1f} per question (target <= "
            f"{TARGET_POOLING_S} s: {'met' if pooling_s <= TARGET_POOLING_S else 'MISSED'})"
        )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS of the whole run: {peak:.0f} MB")
        print(f"median words per question {statistics.median(len(q.split()) for q in questions)}")


if __name__ == "__main__":
    main()
