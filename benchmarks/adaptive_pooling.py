"""Adaptive pooling simulated on a judged collection: how many judgements each strategy needs.

    .venv/bin/python benchmarks/adaptive_pooling.py [--data ../shared/data/cranfield]
        [--depth 50] [--target 0.9] [--no-embedding]

Django-free (goldeval only, plus the packaged MiniLM model). The collection's own qrels stand in
for the labeller: a candidate is relevant when its grade is 1 or more. Five built-in retrievers
(BM25 with Lucene's and with Okapi's IDF, each over title + text and over the text alone, and
all-MiniLM-L6-v2 over title + text; `--no-embedding` leaves MiniLM out) rank 100 documents per
query. Depth-50 pooling judges every document any of them ranks within 50.

Each strategy of `goldeval.pooling` (the code the app's pools call) judges the same depth-50
candidates question after question, carrying each retriever's record to the next question,
and stops a question by the stopping rule "m judgements in a row not relevant". For each
strategy the smallest m that finds `--target` (90 %) of the relevant documents the depth-50
pool holds is found by bisection; at that budget it reports the judgements made, the share of
depth-50's relevant found, and Kendall's tau between the retrievers ranked by nDCG@10 on the
full qrels and on the strategy's judgements (unjudged documents not relevant). Two ways of
asking: `per page` orders a question once when it opens (the grading page's order is fixed
while it is open: what a labeller sees), `per judgement` asks again after every judgement (a
reload after each grade; the literature's setting). The `cal` strategy (continuous active
learning) learns from the candidates' texts, the title and text of each pooled document, as a
labeller reads them; asked per page it is the fused ranks' order, as nothing is judged yet.
It is also asked `after a relevant one`: again only after a judgement found relevant (a page
that re-orders what is left when a passage is graded relevant).

Printed: a Markdown table, then one JSON line:
{"strategies": {NAME: {"judgements": n, "relevant_found": share, "tau": tau, ...}, ...},
 "depth50": {"judgements": n, "relevant": n}}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from scipy.stats import kendalltau

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from reusability import bm25_run, minilm_run, read_jsonl  # noqa: E402

from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan, load_gold  # noqa: E402
from goldeval.pooling import (  # noqa: E402
    RunRecord,
    StoppingRule,
    Strategy,
    simulate_question,
    updated_records,
)
from goldeval.scoring.metrics import MetricOptions, evaluate_run  # noqa: E402
from goldeval.text.analysis import Analyzer  # noqa: E402

DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "cranfield"
MAX_MISSES = 200
# When the order is asked again, and the suffix of a strategy's name in the JSON line.
ASKED = {
    "per page": "",
    "per judgement": "-per-judgement",
    "after a relevant one": "-after-relevant",
}


def retrievers(data: Path, *, embedding: bool):
    corpus = read_jsonl(data / "corpus.jsonl")
    queries = read_jsonl(data / "queries.jsonl")
    ids = [document["id"] for document in corpus]
    with_title = [f"{document['title']}\n{document['text']}" for document in corpus]
    text_only = [document["text"] for document in corpus]
    stemmed = Analyzer(stem=True, stopwords=True)
    runs = [
        bm25_run("bm25-lucene-title", with_title, ids, queries, analyzer=stemmed),
        bm25_run("bm25-lucene", text_only, ids, queries, analyzer=stemmed),
        bm25_run(
            "bm25-okapi-title",
            with_title,
            ids,
            queries,
            analyzer=stemmed,
            k1=1.2,
            b=0.75,
            idf="okapi",
        ),
        bm25_run(
            "bm25-okapi", text_only, ids, queries, analyzer=stemmed, k1=1.2, b=0.75, idf="okapi"
        ),
    ]
    if embedding:
        runs.append(minilm_run(with_title, ids, queries))
    return queries, runs


def qrels_of(data: Path) -> dict[str, dict[str, int]]:
    path = data / "qrels.tsv"
    if not path.exists():
        path = data / "qrels" / "test.tsv"
    gold = load_gold(path)
    return {
        question_id: {span.doc_id: span.grade for span in question.spans}
        for question_id, question in gold.questions.items()
    }


def ndcg_by_run(runs, grades: dict[str, dict[str, int]], question_ids) -> list[float]:
    questions = {}
    for question_id in question_ids:
        judged = grades.get(question_id, {})
        spans = tuple(GoldSpan(d, None, None, g) for d, g in judged.items() if g >= 1)
        questions[question_id] = GoldQuestion(question_id, "", True, spans)
    gold = Gold(questions=questions)
    options = MetricOptions(ks=(10,), gain="linear", mrr_cutoff=10)
    return [evaluate_run(gold=gold, run=run, options=options).metrics["ndcg@10"] for run in runs]


def simulate(strategy, misses, cut, relevant, *, per_judgement, texts, after_relevant=False):
    """Every question judged in turn by ``strategy`` with the stopping rule; the judgements."""
    records = [RunRecord() for _ in next(iter(cut.values()))]
    made = {}
    rule = StoppingRule(misses=misses)
    for question_id, rankings in cut.items():
        judged = simulate_question(
            rankings,
            relevant[question_id],
            strategy,
            rule=rule,
            prior=records,
            per_judgement=per_judgement,
            after_relevant=after_relevant,
            texts=texts[question_id],
        )
        records = updated_records(records, rankings, judged)
        made[question_id] = judged
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--no-embedding", action="store_true")
    arguments = parser.parse_args()
    started = time.perf_counter()
    queries, runs = retrievers(arguments.data, embedding=not arguments.no_embedding)
    documents = {
        d["id"]: f"{d['title']}\n{d['text']}" for d in read_jsonl(arguments.data / "corpus.jsonl")
    }
    grades = qrels_of(arguments.data)
    question_ids = [
        q["id"] for q in queries if any(g >= 1 for g in grades.get(q["id"], {}).values())
    ]
    cut = {
        question_id: [
            [doc for doc, _, _ in run.rankings[question_id].passages[: arguments.depth]]
            for run in runs
        ]
        for question_id in question_ids
    }
    relevant = {q: {d for d, g in grades[q].items() if g >= 1} for q in question_ids}
    pooled = {q: set().union(*map(set, rankings)) for q, rankings in cut.items()}
    # What a labeller reads of each candidate (title and text): what the `cal` order learns from.
    texts = {q: {d: documents[d] for d in sorted(pooled[q])} for q in question_ids}
    depth_judgements = sum(map(len, pooled.values()))
    depth_relevant = sum(len(pooled[q] & relevant[q]) for q in question_ids)
    reference = ndcg_by_run(runs, grades, question_ids)
    print(
        f"# Adaptive pooling on {arguments.data.name}: {len(question_ids)} questions, "
        f"{len(runs)} retrievers ({', '.join(run.name for run in runs)})\n"
    )
    print(
        f"Depth-{arguments.depth} pool: {depth_judgements:,} judgements, {depth_relevant:,} "
        f"relevant found. Target: {arguments.target:.0%} of them.\n"
    )

    def figures(made) -> tuple[int, float, float]:
        judgements = sum(map(len, made.values()))
        found = sum(sum(r for _, r in judged) for judged in made.values())
        known = {q: {d: grades[q].get(d, 0) for d, _ in judged} for q, judged in made.items()}
        tau = kendalltau(reference, ndcg_by_run(runs, known, question_ids)).statistic
        return judgements, found / depth_relevant, float(tau)

    results = {}
    print(
        "| strategy | asked | stop after m misses | judgements | share of depth-50's | "
        "relevant found | Kendall's tau |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for strategy in Strategy:
        for asked in ASKED:
            if strategy is Strategy.DEPTH and asked != "per page":
                continue  # its order never changes
            if strategy is not Strategy.CAL and asked == "after a relevant one":
                continue  # only what cal learns from text changes much on a relevant one
            found_at: dict[int, tuple[float, dict]] = {}

            def share(misses, strategy=strategy, asked=asked, found_at=found_at):
                if misses not in found_at:
                    made = simulate(
                        strategy,
                        misses,
                        cut,
                        relevant,
                        per_judgement=asked == "per judgement",
                        after_relevant=asked == "after a relevant one",
                        texts=texts,
                    )
                    found = sum(sum(r for _, r in judged) for judged in made.values())
                    found_at[misses] = (found / depth_relevant, made)
                return found_at[misses][0]

            low, high = 1, MAX_MISSES
            if share(high) < arguments.target:
                misses = high
            else:
                while low < high:
                    middle = (low + high) // 2
                    if share(middle) >= arguments.target:
                        high = middle
                    else:
                        low = middle + 1
                misses = low
            share(misses)
            judgements, found, tau = figures(found_at[misses][1])
            name = strategy.value + ASKED[asked]
            results[name] = {
                "judgements": judgements,
                "relevant_found": round(found, 4),
                "tau": round(tau, 4),
                "misses": misses,
                "share_of_depth50_judgements": round(judgements / depth_judgements, 4),
            }
            print(
                f"| {strategy.value} | {asked} | {misses} | {judgements:,} | "
                f"{judgements / depth_judgements:.1%} | {found:.1%} | {tau:.3f} |"
            )
    print(f"\n{time.perf_counter() - started:.0f} s")
    print(
        json.dumps(
            {
                "strategies": results,
                "depth50": {"judgements": depth_judgements, "relevant": depth_relevant},
            }
        )
    )


if __name__ == "__main__":
    main()
