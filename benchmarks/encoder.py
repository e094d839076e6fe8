"""The ONNX encoder against raw SentenceTransformer.encode, side by side in one process.

    .venv/bin/python benchmarks/encoder.py [--data ../shared/data/cranfield] [--rounds 6]
                                           [--threads 0] [--cache .scratch/onnx-cache]
                                           [--runtime openvino-bf16|onnx-int8]

Cranfield (1,398 non-empty documents as import_beir stores them: title + abstract, 225 queries)
is encoded by the packaged all-MiniLM-L6-v2 twice: raw ``SentenceTransformer.encode`` (batch
32, normalised) and ``corpus.onnx_encoder.OnnxEncoder`` (exported from the same torch weights;
OpenVINO in bf16 where the CPU has it, else onnxruntime int8; ``--runtime`` picks one). Speed
is measured in interleaved rounds (the documents cut into ``--rounds`` slices; each slice timed
on both, the order alternating), so a neighbour's load on this shared machine hits both sides
alike; the figures are the median of the rounds' ratios of passages/s, and the whole's. Then:
mean (and minimum) cosine of the encoder's vectors to fp32's, nDCG@10 (linear and exponential
gain) of exact cosine search over each, the relative difference, and the paired randomization
test of goldeval.scoring.compare (10,000 sign flips) on per-question nDCG@10. Targets (issue
37): >= 3x, mean cosine >= 0.99, nDCG@10 within 2% relative, not significant.
"""

from __future__ import annotations

import argparse
import json
import os
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


def kernels(model_file: Path) -> str:
    """Which kernels OpenVINO ran each kind of layer on (its runtime model after one batch):
    ``brgemm_avx512_amx_bf16`` is AMX's bf16 tiles, ``jit_avx512_*`` AVX-512 code."""
    from collections import Counter

    import openvino

    core = openvino.Core()
    compiled = core.compile_model(
        core.read_model(str(model_file)), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"}
    )
    ones = np.ones((4, 64), dtype=np.int64)
    feed = {port.get_any_name(): ones for port in compiled.inputs}
    compiled.create_infer_request().infer(feed)
    kinds: Counter = Counter()
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        layer = info["layerType"].astype(str)
        if layer in ("FullyConnected", "MatMul", "Subgraph", "MVN", "Eltwise", "Softmax"):
            kinds[f"{layer} {info['primitiveType'].astype(str)}"] += 1
    return ", ".join(f"{count} {kind}" for kind, count in kinds.most_common())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--runtime", choices=("openvino-bf16", "onnx-int8"), default=None)
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

    ours = OnnxEncoder(cache_dir=args.cache, threads=args.threads, runtime=args.runtime)
    started = time.perf_counter()
    print(
        f"model: {ours.info.version} ({time.perf_counter() - started:.1f} s to build or "
        f"load, {ours.model_file.stat().st_size / 2**20:.0f} MB); load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    if ours.runtime == "openvino-bf16":
        print(f"kernels: {kernels(ours.model_file)}")
    raw(texts[:32]), ours.encode(texts[:32])  # warm both up

    slices = np.array_split(np.arange(len(texts)), args.rounds)
    timing = {"raw": [], "ours": []}
    fp32_vectors = np.zeros((len(texts), 384), dtype=np.float32)
    our_vectors = np.zeros_like(fp32_vectors)
    for number, rows in enumerate(slices):
        batch = [texts[i] for i in rows]
        order = ("raw", "ours") if number % 2 == 0 else ("ours", "raw")
        for side in order:
            started = time.perf_counter()
            if side == "raw":
                fp32_vectors[rows] = raw(batch)
            else:
                our_vectors[rows] = ours.encode(batch)
            timing[side].append(time.perf_counter() - started)
    raw_time, our_time = sum(timing["raw"]), sum(timing["ours"])
    ratios = [a / b for a, b in zip(timing["raw"], timing["ours"], strict=True)]
    print(
        f"\n{len(texts)} passages, {args.rounds} interleaved rounds, load average now "
        f"{os.getloadavg()[0]:.1f}:"
    )
    print(
        f"  {'raw SentenceTransformer.encode':<30}  {len(texts) / raw_time:6.1f} passages/s "
        f"({raw_time:.0f} s)"
    )
    print(f"  {ours.runtime:<30}  {len(texts) / our_time:6.1f} passages/s ({our_time:.0f} s)")
    print(
        f"  speed ratio: median of rounds {np.median(ratios):.2f}x (rounds "
        + ", ".join(f"{r:.2f}" for r in ratios)
        + f"), whole {raw_time / our_time:.2f}x (target >= 3)"
    )
    cosines = np.sum(fp32_vectors * our_vectors, axis=1)
    print(f"  cosine to fp32: mean {cosines.mean():.5f}, min {cosines.min():.5f} (target >= 0.99)")

    query_texts = [q["text"] for q in queries]
    fp32_queries, our_queries = raw(query_texts), ours.encode(query_texts)
    doc_ids = [d["id"] for d in docs]
    fp32_linear, fp32_exp = ndcg(doc_ids, fp32_vectors, queries, fp32_queries, gold)
    our_linear, our_exp = ndcg(doc_ids, our_vectors, queries, our_queries, gold)
    print(f"\nnDCG@10 over {fp32_linear.answerable} queries:")
    for gain, a, b in (("linear", fp32_linear, our_linear), ("exp", fp32_exp, our_exp)):
        x, y = a.metrics["ndcg@10"], b.metrics["ndcg@10"]
        ids = list(a.per_question)
        differences = np.array(
            [[a.per_question[q]["ndcg@10"] - b.per_question[q]["ndcg@10"]] for q in ids]
        )
        p_value = float(paired_randomization_p_values(differences)[0])
        print(
            f"  {gain:<6} fp32 {x:.4f}  ours {y:.4f}  relative {(y - x) / x:+.2%} (target "
            f"within 2%)  paired randomization p = {p_value:.3f} (target >= 0.05)"
        )


if __name__ == "__main__":
    main()
