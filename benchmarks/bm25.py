"""BM25 at scale: our sparse index at 100,000 passages against rank-bm25 on 10,000.

    .venv/bin/python benchmarks/bm25.py [--passages N] [--queries N] [--oracle-passages N]

Passages are ~130 words drawn from a Zipfian vocabulary (seeded, so every run sees the same text);
each query is 2-8 words taken from a random passage, so common words with long posting lists
appear as often as they do in real questions. rank-bm25 runs on 10,000 passages from the same
generator in a child process (so its peak RSS is its own): at 100,000 passages it needs minutes
for the 300 queries and about 840 MB (issue 3), which is why we have a sparse index at all.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from goldeval.bm25 import BM25Index  # noqa: E402
from goldeval.text.analysis import Analyzer  # noqa: E402

SEED = 20240601
VOCABULARY = 50_000
ZIPF_EXPONENT = 1.07
K = 100
ANALYZER = Analyzer(stem=True, stopwords=True)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def synthetic_words(rng: np.random.Generator) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: set[str] = set()
    while len(words) < VOCABULARY:
        length = int(rng.integers(2, 11))
        words.add("".join(rng.choice(letters, size=length)))
    return sorted(words, key=lambda w: (len(w), w))  # short words are the frequent ones


def synthetic_corpus(size: int, queries: int) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(SEED)
    words = np.array(synthetic_words(rng), dtype=object)
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** ZIPF_EXPONENT
    weights /= weights.sum()
    lengths = np.clip(rng.normal(130, 20, size=size).round().astype(int), 40, 250)
    passages = []
    # Drawn in blocks so the generator's temporaries do not dominate the peak RSS we report.
    for first in range(0, size, 1000):
        block = lengths[first : first + 1000]
        drawn = words[rng.choice(VOCABULARY, size=int(block.sum()), p=weights)]
        passages.extend(" ".join(part) for part in np.split(drawn, np.cumsum(block)[:-1]))
    query_texts = []
    for _ in range(queries):
        source = passages[int(rng.integers(size))].split()
        picked = rng.choice(len(source), size=int(rng.integers(2, 9)), replace=False)
        query_texts.append(" ".join(source[i] for i in sorted(picked)))
    return passages, query_texts


def latency_ms(search, queries: list[str]) -> tuple[float, float]:
    timings = []
    for query in queries:
        start = time.perf_counter()
        search(query)
        timings.append((time.perf_counter() - start) * 1000)
    return float(np.percentile(timings, 50)), float(np.percentile(timings, 95))


def run_ours(size: int, queries: int) -> None:
    passages, query_texts = synthetic_corpus(size, queries)
    rss_corpus = peak_rss_mb()
    start = time.perf_counter()
    index = BM25Index.build(passages, analyzer=ANALYZER, k1=0.9, b=0.4)
    build_s = time.perf_counter() - start
    rss_built = peak_rss_mb()
    p50, p95 = latency_ms(lambda q: index.search(q, k=K), query_texts)
    allowed = np.random.default_rng(SEED).random(len(index)) < 0.5
    mp50, mp95 = latency_ms(lambda q: index.search(q, k=K, allowed=allowed), query_texts)
    start = time.perf_counter()
    stored = index.to_bytes()
    BM25Index.from_bytes(stored)
    round_trip_s = time.perf_counter() - start
    tokens = sum(len(ANALYZER.tokens(p)) for p in passages[:1000]) / 1000
    print(f"ours (goldeval.bm25), {size:,} passages, ~{tokens:.0f} tokens each after analysis")
    print(f"  build            {build_s:7.1f} s")
    print(
        f"  peak RSS         {rss_built:7.0f} MB  (of which {rss_corpus:.0f} MB before the build:"
    )
    print("                                the interpreter, libraries and the passage strings)")
    memory, stored_mb = index.nbytes / 2**20, len(stored) / 2**20
    print(f"  index size       {memory:7.0f} MB in memory, {stored_mb:.0f} MB stored")
    print(f"  query p50 / p95  {p50:7.1f} / {p95:.1f} ms   (top {K}, {queries} queries)")
    print(f"  with a 50% mask  {mp50:7.1f} / {mp95:.1f} ms")
    print(f"  to_bytes + from_bytes {round_trip_s:.1f} s")


def run_oracle(size: int, queries: int) -> None:
    from rank_bm25 import BM25Okapi

    passages, query_texts = synthetic_corpus(size, queries)
    rss_corpus = peak_rss_mb()
    start = time.perf_counter()
    okapi = BM25Okapi([ANALYZER.tokens(p) for p in passages], k1=0.9, b=0.4)
    build_s = time.perf_counter() - start
    rss_built = peak_rss_mb()

    def search(query: str) -> None:
        scores = okapi.get_scores(ANALYZER.tokens(query))
        np.argsort(scores)[::-1][:K]

    p50, p95 = latency_ms(search, query_texts)
    ours = BM25Index.build(passages, analyzer=ANALYZER, k1=0.9, b=0.4)
    ours_p50, ours_p95 = latency_ms(lambda q: ours.search(q, k=K), query_texts)
    print(
        json.dumps(
            {
                "build_s": build_s,
                "rss_corpus": rss_corpus,
                "rss_built": rss_built,
                "p50": p50,
                "p95": p95,
                "ours_p50": ours_p50,
                "ours_p95": ours_p95,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--oracle-passages", type=int, default=10_000)
    parser.add_argument("--oracle", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.oracle:
        run_oracle(args.oracle_passages, args.queries)
        return
    # The child starts first: Linux carries a parent's peak RSS over into its children, so the
    # parent must still be small when it forks.
    child = subprocess.run(
        [sys.executable, __file__, "--oracle", *sys.argv[1:]],
        capture_output=True,
        text=True,
        check=True,
    )
    run_ours(args.passages, args.queries)
    oracle = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"rank-bm25 0.2.2 (BM25Okapi), {args.oracle_passages:,} passages from the same generator")
    print(f"  build            {oracle['build_s']:7.1f} s")
    rss, before = oracle["rss_built"], oracle["rss_corpus"]
    print(f"  peak RSS         {rss:7.0f} MB  (of which {before:.0f} MB before the build)")
    print(f"  query p50 / p95  {oracle['p50']:7.1f} / {oracle['p95']:.1f} ms")
    ours = f"{oracle['ours_p50']:.2f} / {oracle['ours_p95']:.2f} ms"
    print(f"  ours on the same {args.oracle_passages:,}: p50 / p95 {ours}")
    print("rank-bm25 is not run at 100,000 passages: its get_scores walks every passage's term")
    print("dictionary in Python for each query term, so a query costs ~10x the figure above")
    print("(over a minute for 300 queries), and issue 3 measured ~840 MB for its index.")


if __name__ == "__main__":
    main()
