"""BM25 throughput against bm25s's numba backend, at 100,000 passages, in one process.

    PYTHONPATH=. .venv/bin/python benchmarks/bm25_peers.py [--passages N] [--queries N]
        [--rounds N] [--no-numpy]

The passages and queries are benchmarks/bm25.py's (seeded Zipfian text, 2-8-word queries taken
from passages). bm25s 0.3.16 indexes the very tokens our Analyzer produces (as token ids, with our
vocabulary), with the same k1 and b and its Lucene method, and runs with backend="numba", its
fastest; its functions are compiled before any timing. Both return the top 100.

Single: the queries one at a time, analysis included for both (ours: `search(text)`; bm25s:
`retrieve([Analyzer.tokens(text)], n_threads=1)`). Batch: all queries in one call, analysis
included (ours: `search_many(texts)`; bm25s: `retrieve(tokens of all, n_threads=os.cpu_count())`,
numba's parallel loop). Batch on one thread: the same calls with one thread each (ours:
`search_many` as on a one-core machine, one kernel call for the batch; bm25s: `n_threads=1`), the
figure to read when the machine's other core is busy (threads then add little to either side).
Rounds interleave the tools (the order alternates), and the figures are
medians over rounds of queries a second and of the per-round ratio, so a busy machine slows both
sides of a ratio alike. Ours without the compiled kernel (the numpy path an install without a C
compiler gets) runs in the same rounds unless --no-numpy.

Agreement: on a sample of queries, our compiled and numpy paths give exactly the same results
(checked), and the share of bm25s's top 100 that is in ours is printed (bm25s sums in float32, so
passages tied in float64 may be ordered apart).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bm25 import ANALYZER, K, synthetic_corpus  # noqa: E402

from goldeval import bm25 as bm25_module  # noqa: E402
from goldeval.bm25 import BM25Index  # noqa: E402

K1, B = 0.9, 0.4


def build_bm25s(passages: list[str], index: BM25Index):
    import bm25s
    from bm25s.tokenization import Tokenized

    vocabulary = dict(index._vocabulary)  # noqa: SLF001 - the same term ids on both sides
    ids = [[vocabulary[t] for t in ANALYZER.tokens(p)] for p in passages]
    retriever = bm25s.BM25(method="lucene", k1=K1, b=B, backend="numba")
    retriever.index(Tokenized(ids=ids, vocab=vocabulary), show_progress=False)
    return retriever


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def without_kernel(run):
    def numpy_run():
        kept, bm25_module.bm25kernel = bm25_module.bm25kernel, None
        try:
            run()
        finally:
            bm25_module.bm25kernel = kept

    return numpy_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sample", type=int, default=200, help="queries checked for agreement")
    parser.add_argument("--no-numpy", action="store_true", help="leave out our numpy path")
    args = parser.parse_args()
    if bm25_module.bm25kernel is None:
        sys.exit("goldeval._bm25kernel is not built: run `make install` first.")
    print(f"load average before: {os.getloadavg()}")
    passages, queries = synthetic_corpus(args.passages, args.queries)
    index = BM25Index.build(passages, analyzer=ANALYZER, k1=K1, b=B)
    retriever = build_bm25s(passages, index)
    threads = os.cpu_count() or 1

    def bm25s_single() -> None:
        for query in queries:
            retriever.retrieve([ANALYZER.tokens(query)], k=K, n_threads=1, show_progress=False)

    def bm25s_batch() -> None:
        tokens = [ANALYZER.tokens(query) for query in queries]
        retriever.retrieve(tokens, k=K, n_threads=threads, show_progress=False)

    def ours_single() -> None:
        for query in queries:
            index.search(query, k=K)

    def ours_batch() -> None:
        index.search_many(queries, k=K)

    def bm25s_batch_one_thread() -> None:
        tokens = [ANALYZER.tokens(query) for query in queries]
        retriever.retrieve(tokens, k=K, n_threads=1, show_progress=False)

    def ours_batch_one_thread() -> None:
        kept, bm25_module._THREADS = bm25_module._THREADS, 1  # noqa: SLF001 - a one-core machine
        try:
            index.search_many(queries, k=K)
        finally:
            bm25_module._THREADS = kept  # noqa: SLF001

    # Compile numba's serial and parallel functions, and warm every path, before timing.
    start = time.perf_counter()
    retriever.retrieve([ANALYZER.tokens(queries[0])], k=K, n_threads=1, show_progress=False)
    retriever.retrieve([ANALYZER.tokens(q) for q in queries[:50]], k=K, n_threads=threads)
    print(f"bm25s numba compile and first calls: {time.perf_counter() - start:.1f} s")
    index.search_many(queries[:50], k=K)
    without_kernel(lambda: index.search(queries[0], k=K))()

    sample = queries[: args.sample]
    compiled = [index.search(q, k=K) for q in sample]
    numpy_path = []
    without_kernel(lambda: numpy_path.extend(index.search(q, k=K) for q in sample))()
    assert compiled == numpy_path, "the compiled kernel and the numpy path differ"
    found = retriever.retrieve([ANALYZER.tokens(q) for q in sample], k=K, show_progress=False)
    overlap = [
        len({i for i, _ in ours} & set(theirs.tolist())) / max(len(ours), 1)
        for ours, theirs in zip(compiled, found.documents, strict=True)
    ]
    same_order = sum(
        [i for i, _ in ours] == theirs.tolist()
        for ours, theirs in zip(compiled, found.documents, strict=True)
    )
    print(
        f"agreement on {len(sample)} queries: compiled == numpy path exactly; "
        f"bm25s's top {K} in ours: mean {np.mean(overlap):.4f}, min {min(overlap):.2f}; "
        f"identical order {same_order}/{len(sample)}"
    )

    runs = {
        "ours single": ours_single,
        "bm25s single": bm25s_single,
        "ours batch": ours_batch,
        "bm25s batch": bm25s_batch,
        "ours batch 1 thread": ours_batch_one_thread,
        "bm25s batch 1 thread": bm25s_batch_one_thread,
    }
    if not args.no_numpy:
        runs["ours numpy single"] = without_kernel(ours_single)
    rates: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for round_number in range(args.rounds):
        order = names if round_number % 2 == 0 else names[::-1]
        for name in order:
            rates[name].append(len(queries) / timed(runs[name]))
        line = "  ".join(f"{name} {rates[name][-1]:,.0f}" for name in names)
        print(f"round {round_number + 1}: q/s {line}")

    def median(name: str) -> float:
        return statistics.median(rates[name])

    def ratio(ours: str, theirs: str) -> float:
        return statistics.median(a / b for a, b in zip(rates[ours], rates[theirs], strict=True))

    print(
        f"{args.passages:,} passages, {len(queries)} queries, top {K}, {args.rounds} rounds, "
        f"{threads} cores; medians:"
    )
    for name in names:
        low, high = min(rates[name]), max(rates[name])
        print(f"  {name:20} {median(name):8,.0f} q/s  (range {low:,.0f}-{high:,.0f})")
    print(f"  single: ours / bm25s numba = {ratio('ours single', 'bm25s single'):.2f}x")
    print(f"  batch:  ours / bm25s numba = {ratio('ours batch', 'bm25s batch'):.2f}x")
    one = ratio("ours batch 1 thread", "bm25s batch 1 thread")
    print(f"  batch on one thread: ours / bm25s numba = {one:.2f}x")
    if not args.no_numpy:
        print(
            f"  single: ours numpy path / bm25s = {ratio('ours numpy single', 'bm25s single'):.2f}x"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
