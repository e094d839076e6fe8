"""The int8 ONNX encoder against raw SentenceTransformer.encode, side by side in one process.

    .venv/bin/python benchmarks/encoder.py [--data ../shared/data/cranfield] [--rounds 4]
                                           [--threads 0] [--cache .scratch/onnx-cache]

Cranfield (1,398 non-empty documents as import_beir stores them: title + abstract, 225 queries)
is encoded by the packaged all-MiniLM-L6-v2 twice: raw ``SentenceTransformer.encode`` (batch
32, normalised) and ``corpus.onnx_encoder.OnnxEncoder`` (exported from the same torch weights,
int8 per-channel, MatMul only). Speed is measured in interleaved rounds (the documents cut
into ``--rounds`` slices; each slice timed on both, the order alternating), so a neighbour's
load on this shared machine hits both sides alike; the figure is the ratio of passages/s.
Then: mean (and minimum) cosine of the int8 vectors to fp32's, nDCG@10 (linear and
exponential gain) of exact cosine search over each, the relative difference, and the paired
randomization test of goldeval.scoring.compare (10,000 sign flips) on per-question nDCG@10.
Targets (issue 19): >= 1.7x, mean cosine >= 0.99, nDCG@10 within 2% relative, not significant.
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


def stored_text(doc: dict) -> str:
    """The text import_beir stores: a title the abstract already starts with is not repeated."""
    title, body = doc.get("title") or "", doc.get("text") or ""
    return f"{title}\n\n{body}" if title and not body.startswith(title) else body


def ndcg(doc_ids, doc_vectors, queries, query_vectors, gold):
    from corpus.embedding import ModelInfo, VectorIndex
    from goldeval.formats.gold import Passage
    from goldeval.formats.runs import Ranking, Run
    from goldeval.scoring.metrics import MetricOptions, evaluate_run

    info = ModelInfo(name="x", version="x", dimension=doc_vectors.shape[1])
    found = VectorIndex(doc_vectors, info=info).search_many(query_vectors, k=100)
    run = Run(
        name="run",
        rankings={
            q["id"]: Ranking(passages=[Passage(doc_ids[i]) for i, _ in hits])
            for q, hits in zip(queries, found, strict=True)
        },
    )
    linear = evaluate_run(gold=gold, run=run, options=MetricOptions(ks=(10,), gain="linear"))
    exp = evaluate_run(gold=gold, run=run, options=MetricOptions(ks=(10,), gain="exp"))
    return linear, exp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime threads (0: all)")
    parser.add_argument("--cache", type=Path, default=REPO / ".scratch" / "onnx-cache")
    args = parser.parse_args()
    from corpus.embedding import Encoder
    from corpus.onnx_encoder import OnnxEncoder
    from goldeval.formats.gold import Gold, load_qrels
    from goldeval.scoring.compare import paired_randomization_p_values

    lines = (args.data / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    docs = [d for d in map(json.loads, lines) if (d.get("text") or "").strip()]
    lines = (args.data / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line) for line in lines]
    gold = Gold(questions=load_qrels(args.data / "qrels.tsv"))
    texts = [stored_text(d) for d in docs]

    fp32 = Encoder()
    model = fp32.model

    def raw(batch):
        return model.encode(
            batch,
            batch_size=32,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    int8 = OnnxEncoder(cache_dir=args.cache, threads=args.threads)
    started = time.perf_counter()
    print(
        f"int8 model: {int8.info.version} ({time.perf_counter() - started:.1f} s to build or "
        f"load, {int8.model_file.stat().st_size / 2**20:.0f} MB)"
    )
    raw(texts[:32]), int8.encode(texts[:32])  # warm both up

    slices = np.array_split(np.arange(len(texts)), args.rounds)
    timing = {"raw": 0.0, "int8": 0.0}
    fp32_vectors = np.zeros((len(texts), 384), dtype=np.float32)
    int8_vectors = np.zeros_like(fp32_vectors)
    for number, rows in enumerate(slices):
        batch = [texts[i] for i in rows]
        order = ("raw", "int8") if number % 2 == 0 else ("int8", "raw")
        for side in order:
            started = time.perf_counter()
            if side == "raw":
                fp32_vectors[rows] = raw(batch)
            else:
                int8_vectors[rows] = int8.encode(batch)
            timing[side] += time.perf_counter() - started
    raw_rate, int8_rate = len(texts) / timing["raw"], len(texts) / timing["int8"]
    print(f"\n{len(texts)} passages, {args.rounds} interleaved rounds (2 cores, shared, noisy):")
    print(f"  raw SentenceTransformer.encode  {raw_rate:6.1f} passages/s ({timing['raw']:.0f} s)")
    print(f"  int8 ONNX (OnnxEncoder)         {int8_rate:6.1f} passages/s ({timing['int8']:.0f} s)")
    print(f"  speed ratio {int8_rate / raw_rate:.2f}x (target >= 1.7)")
    cosines = np.sum(fp32_vectors * int8_vectors, axis=1)
    print(f"  cosine to fp32: mean {cosines.mean():.4f}, min {cosines.min():.4f} (target >= 0.99)")

    query_texts = [q["text"] for q in queries]
    fp32_queries, int8_queries = raw(query_texts), int8.encode(query_texts)
    doc_ids = [d["id"] for d in docs]
    fp32_linear, fp32_exp = ndcg(doc_ids, fp32_vectors, queries, fp32_queries, gold)
    int8_linear, int8_exp = ndcg(doc_ids, int8_vectors, queries, int8_queries, gold)
    print(f"\nnDCG@10 over {fp32_linear.answerable} queries:")
    for gain, a, b in (("linear", fp32_linear, int8_linear), ("exp", fp32_exp, int8_exp)):
        x, y = a.metrics["ndcg@10"], b.metrics["ndcg@10"]
        ids = list(a.per_question)
        differences = np.array(
            [[a.per_question[q]["ndcg@10"] - b.per_question[q]["ndcg@10"]] for q in ids]
        )
        p_value = float(paired_randomization_p_values(differences)[0])
        print(
            f"  {gain:<6} fp32 {x:.4f}  int8 {y:.4f}  relative {(y - x) / x:+.2%} (target "
            f"within 2%)  paired randomization p = {p_value:.3f} (target >= 0.05)"
        )


if __name__ == "__main__":
    main()
