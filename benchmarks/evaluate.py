"""Time evaluation against pytrec_eval on the same document-level data, side by side.

10,000 generated questions x 100 ranked documents (30 judged per question; a million run
lines). Two comparisons:

1. **Whole process** (issue 13's target, at most 1.5x): from the files on disk to the figures.
   pytrec_eval: ``parse_qrel`` + ``parse_run`` of the TREC files, ``RelevanceEvaluator`` and
   ``evaluate`` (recall_10, P_10, ndcg_cut_10, recip_rank). Ours: ``python -m goldeval
   evaluate --gold qrels.trec --run run.trec --compat trec_eval --k 10 --mrr-cutoff 100
   --no-baseline`` run in this process (the command's ``main``; its JSON report discarded),
   which reads both files with every check (ties, repeats, unknown questions) and computes the
   same four metrics plus judged@10.
2. **Metrics alone**: both sides given in-memory objects (pytrec_eval's dicts, our Gold/Run).

    .venv/bin/python benchmarks/evaluate.py [--questions 10000] [--depth 100] [--repeats 3]
                                            [--incomplete]

With ``--incomplete`` the whole-process comparison adds the measures for incomplete judgements
on both sides: ours ``--incomplete`` (ap, bpref, infap, condensed lists, unjudged@10, RBP);
pytrec_eval bpref, infAP and map, and a second evaluator with ``judged_docs_only_flag`` for the
condensed P_10, ndcg_cut_10, recip_rank and map (trec_eval -J).

Targets: whole process <= 1.5x pytrec_eval's; metrics alone <= 2x.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import sys
import tempfile
import time
from pathlib import Path

import pytrec_eval

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from goldeval.cli import main as evaluation_main  # noqa: E402
from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan, Passage  # noqa: E402
from goldeval.formats.runs import Ranking, Run, load_run  # noqa: E402
from goldeval.scoring.metrics import MetricOptions, evaluate_run  # noqa: E402

JUDGED_PER_QUESTION = 30
CORPUS_SIZE = 1_000_000


def generate(
    *, questions: int, depth: int, seed: int
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """qrels and run in pytrec_eval's shape; every score distinct, so both sides rank alike."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for number in range(questions):
        question_id = f"q{number}"
        judged = rng.sample(range(CORPUS_SIZE), JUDGED_PER_QUESTION)
        # About a third judged not relevant, the rest graded 1 or 2, and at least one relevant.
        grades = {f"d{doc}": rng.choice((0, 1, 1, 2)) for doc in judged}
        grades[f"d{judged[0]}"] = 2
        qrels[question_id] = grades
        # A ranking mixing some judged documents into unjudged ones.
        ranked = rng.sample(judged, 12) + rng.sample(range(CORPUS_SIZE), depth - 12)
        rng.shuffle(ranked)
        run[question_id] = {f"d{doc}": float(depth - rank) for rank, doc in enumerate(ranked)}
    return qrels, run


def write_trec_files(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], folder: Path
) -> tuple[Path, Path]:
    """The data as TREC files in ``folder``: (qrels.trec, run.trec)."""
    run_path, qrels_path = folder / "run.trec", folder / "qrels.trec"
    with run_path.open("w") as handle:
        for question_id, scores in run.items():
            for rank, (doc_id, score) in enumerate(scores.items(), start=1):
                handle.write(f"{question_id} Q0 {doc_id} {rank} {score} bench\n")
    with qrels_path.open("w") as handle:
        for question_id, grades in qrels.items():
            for doc_id, grade in grades.items():
                handle.write(f"{question_id} 0 {doc_id} {grade}\n")
    return qrels_path, run_path


def to_gold_and_run(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
) -> tuple[Gold, Run]:
    questions = {}
    for question_id, grades in qrels.items():
        spans = tuple(
            GoldSpan(doc_id=doc_id, start=None, end=None, grade=grade)
            for doc_id, grade in grades.items()
            if grade >= 1
        )
        questions[question_id] = GoldQuestion(
            question_id=question_id,
            question="",
            answerable=bool(spans),
            spans=spans,
            judged=tuple(Passage(doc_id) for doc_id in grades),
        )
    ours = Run(name="bench")
    for question_id, scores in run.items():
        ranked = sorted(scores, key=scores.__getitem__, reverse=True)
        ours.rankings[question_id] = Ranking(passages=[Passage(doc_id) for doc_id in ranked])
    return Gold(questions=questions), ours


def best_of(repeats: int, action, *, clock=time.perf_counter):
    best = float("inf")
    result = None
    for _ in range(repeats):
        started = clock()
        result = action()
        best = min(best, clock() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--incomplete", action="store_true")
    arguments = parser.parse_args()

    qrels, run = generate(questions=arguments.questions, depth=arguments.depth, seed=7)
    measures = {"recall_10", "ndcg_cut_10", "recip_rank"}

    def with_pytrec_eval():
        return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)

    # Only the metrics pytrec_eval computes here, and with the same settings: linear gain and no
    # reciprocal-rank cut-off inside the ranking depth.
    options = MetricOptions(ks=(10,), gain="linear", mrr_cutoff=arguments.depth)
    default_options = MetricOptions()
    gold, ours = to_gold_and_run(qrels, run)

    pytrec_time, reference = best_of(arguments.repeats, with_pytrec_eval)
    convert_time, _ = best_of(arguments.repeats, lambda: to_gold_and_run(qrels, run))
    ours_time, evaluation = best_of(
        arguments.repeats, lambda: evaluate_run(gold=gold, run=ours, options=options)
    )
    full_time, _ = best_of(
        arguments.repeats, lambda: evaluate_run(gold=gold, run=ours, options=default_options)
    )

    with tempfile.TemporaryDirectory() as folder:
        qrels_path, trec_path = write_trec_files(qrels, run, Path(folder))
        load_time, _ = best_of(1, lambda: load_run(trec_path))

        def whole_pytrec_eval():
            with qrels_path.open() as q_file, trec_path.open() as r_file:
                parsed_qrels = pytrec_eval.parse_qrel(q_file)
                parsed_run = pytrec_eval.parse_run(r_file)
            plain = {"recall.10", "P.10", "ndcg_cut.10", "recip_rank"}
            if arguments.incomplete:
                plain |= {"bpref", "infAP", "map"}
                condensed = {"P.10", "ndcg_cut.10", "recip_rank", "map"}
                pytrec_eval.RelevanceEvaluator(
                    parsed_qrels, condensed, judged_docs_only_flag=True
                ).evaluate(parsed_run)
            return pytrec_eval.RelevanceEvaluator(parsed_qrels, plain).evaluate(parsed_run)

        arguments_ours = [
            "evaluate",
            "--gold",
            str(qrels_path),
            "--run",
            str(trec_path),
            "--compat",
            "trec_eval",
            "--k",
            "10",
            "--mrr-cutoff",
            str(arguments.depth),
            "--no-baseline",
            *(["--incomplete"] if arguments.incomplete else []),
        ]

        def whole_ours():
            with contextlib.redirect_stdout(io.StringIO()) as out:
                status = evaluation_main(arguments_ours)
            assert status == 0
            return out.getvalue()

        # Interleaved, so both sides see the same machine load; CPU time of this process
        # (time.process_time) as well as wall time, since the machine is shared and noisy.
        whole_pytrec = whole_mine = cpu_pytrec = cpu_mine = float("inf")
        for _ in range(arguments.repeats):
            whole_pytrec = min(whole_pytrec, best_of(1, whole_pytrec_eval)[0])
            whole_mine = min(whole_mine, best_of(1, whole_ours)[0])
            cpu_pytrec = min(cpu_pytrec, best_of(1, whole_pytrec_eval, clock=time.process_time)[0])
            cpu_mine = min(cpu_mine, best_of(1, whole_ours, clock=time.process_time)[0])

    worst = 0.0
    for question_id, values in reference.items():
        mine = evaluation.per_question[question_id]
        worst = max(
            worst,
            abs(values["recall_10"] - mine["recall@10"]),
            abs(values["ndcg_cut_10"] - mine["ndcg@10"]),
            abs(values["recip_rank"] - mine[f"mrr@{arguments.depth}"]),
        )

    print(f"data: {arguments.questions} questions x {arguments.depth} results, document level")
    print(f"largest per-question difference from pytrec_eval: {worst:.2e}")
    print(f"pytrec_eval (evaluator + evaluate): {pytrec_time:.3f} s")
    print(f"ours, evaluate_run (same 3 metrics): {ours_time:.3f} s")
    print(f"ours, building Gold/Run from the dicts: {convert_time:.3f} s")
    print(f"ours, default options (17 metrics, depth 10): {full_time:.3f} s")
    print(f"ours, load_run of the same run as a TREC file: {load_time:.3f} s")
    print(f"whole process, pytrec_eval (parse files + evaluate): {whole_pytrec:.3f} s")
    print(f"whole process, python -m goldeval evaluate (in process): {whole_mine:.3f} s")
    print(f"ratio whole process ours / pytrec_eval, wall: {whole_mine / whole_pytrec:.2f}x")
    print(f"whole process CPU time: pytrec_eval {cpu_pytrec:.3f} s, ours {cpu_mine:.3f} s")
    cpu_ratio = cpu_mine / cpu_pytrec
    print(f"ratio whole process ours / pytrec_eval, CPU: {cpu_ratio:.2f}x (target <= 1.5x)")
    ratio = ours_time / pytrec_time
    print(f"ratio evaluate_run / pytrec_eval: {ratio:.2f}x (target <= 2x)")
    print(
        "ratio (build from dicts + evaluate_run) / pytrec_eval: "
        f"{(convert_time + ours_time) / pytrec_time:.2f}x"
    )


if __name__ == "__main__":
    main()
