"""float16 against float32 stored vectors: top-10 agreement on real MiniLM vectors, and sizes.

    .venv/bin/python benchmarks/float16_vectors.py [--data ../shared/data/cranfield]

Encodes Cranfield (title + abstract, 1,400 documents, 225 queries) with the packaged
all-MiniLM-L6-v2 through our Encoder, builds a VectorIndex stored as float32 and one stored as
float16 (rounded on write, widened on load), and compares each query's top 10: the share of the
float32 top 10 the float16 one holds (the target is >= 99.9%), and how often the order is
identical. The documents themselves are also used as 1,400 queries (near neighbours are closer
together than a question's, so ties are likelier). Prints the stored artefact sizes, and what a
million 384-dimension vectors would take.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_DATA = REPO.parent / "shared" / "data" / "cranfield"
K = 10


def agreement(full, half, queries: np.ndarray) -> tuple[float, float]:
    a = full.search_many(queries, k=K)
    b = half.search_many(queries, k=K)
    share = np.mean(
        [len({i for i, _ in x} & {i for i, _ in y}) / K for x, y in zip(a, b, strict=True)]
    )
    same = np.mean([[i for i, _ in x] == [i for i, _ in y] for x, y in zip(a, b, strict=True)])
    return float(share), float(same)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    from corpus.embedding import Encoder, VectorIndex

    docs = [json.loads(line) for line in (args.data / "corpus.jsonl").read_text().splitlines()]
    queries = [json.loads(line) for line in (args.data / "queries.jsonl").read_text().splitlines()]
    encoder = Encoder()
    started = time.perf_counter()
    doc_vectors = encoder.encode([f"{d['title']}\n\n{d['text']}" for d in docs])
    query_vectors = encoder.encode([q["text"] for q in queries])
    print(
        f"encoded {len(docs)} documents + {len(queries)} queries in "
        f"{time.perf_counter() - started:.0f} s"
    )
    full = VectorIndex(doc_vectors, info=encoder.info)
    half = VectorIndex.from_bytes(
        VectorIndex(doc_vectors, info=encoder.info, stored="float16").to_bytes()
    )
    for name, vectors in (("225 queries", query_vectors), ("1,400 documents", doc_vectors)):
        share, same = agreement(full, half, vectors)
        print(f"  {name:<16} top-{K} agreement {share:.2%}, identical order {same:.1%}")
    full_mb = len(full.to_bytes()) / 2**20
    half_mb = len(VectorIndex(doc_vectors, info=encoder.info, stored="float16").to_bytes()) / 2**20
    print(f"  stored: float32 {full_mb:.2f} MB, float16 {half_mb:.2f} MB")
    print(
        f"  1,000,000 x 384 vectors: float32 {1e6 * 384 * 4 / 2**30:.2f} GiB, "
        f"float16 {1e6 * 384 * 2 / 2**30:.2f} GiB (both float32 in memory)"
    )


if __name__ == "__main__":
    main()
