"""``python -m goldeval power``: what difference a gold set can detect, and how many questions a
difference needs.

    python -m goldeval power --gold gold/ --runs a.jsonl b.jsonl [c.jsonl …] \\
        --measure ndcg@10 [--measure recall@5] [--delta 0.03] [--format json|markdown]
    python -m goldeval power --sigma 0.10 --delta 0.03 [--questions 60]

With runs, σ_d (the standard deviation of per-question differences) comes from the runs' own
scores on the gold set (`goldeval.scoring.power`), and the report gives per measure the smallest
detectable difference, the questions ``--delta`` needs, and the discriminative power (the share
of run pairs the paired randomization test separates, with each pair's ASL). With ``--sigma``
no gold set is read: the calculator alone. Paired two-sided t-test, α 0.05 and power 0.8 unless
told. Exit status: 0 ok, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from goldeval.cli.arguments import UsageError, finite_argument, positive_argument, run_arguments
from goldeval.formats.gold import load_gold
from goldeval.formats.runs import check_run_against_gold, load_run
from goldeval.scoring.compare import PERMUTATIONS
from goldeval.scoring.metrics import MetricOptions, evaluate_run
from goldeval.scoring.power import (
    ALPHA,
    NOT_DETECTABLE,
    POWER,
    PowerInputError,
    gold_set_power,
    minimum_detectable_difference,
    questions_needed,
)
from goldeval.scoring.report import markdown_cell, markdown_number, markdown_table

EXIT_OK = 0
FORMATS = ("json", "markdown")
DEFAULT_MEASURE = "ndcg@10"
_MEASURE = re.compile(r"^(recall|precision|ndcg|judged|mrr)@([1-9][0-9]{0,5})$")


def add_parser(commands) -> None:
    """Register the subcommand on ``python -m goldeval``'s parser."""
    parser = commands.add_parser(
        "power",
        help="the smallest difference a gold set detects, and the questions a difference needs",
        description="Exit status: 0 ok, 2 bad input.",
    )
    parser.add_argument("--gold", type=Path, help="a bundle folder or gold JSONL (with --runs)")
    parser.add_argument(
        "--runs",
        nargs="+",
        action="extend",
        default=[],
        metavar="[NAME=]PATH",
        help="two runs or more scored on the gold set (JSONL or TREC)",
    )
    parser.add_argument(
        "--run", dest="runs", action="append", metavar="[NAME=]PATH", help="one more run"
    )
    parser.add_argument(
        "--measure",
        dest="measures",
        action="append",
        default=[],
        help=f"e.g. ndcg@10, recall@5, mrr@10; repeatable (default {DEFAULT_MEASURE})",
    )
    parser.add_argument(
        "--delta", type=finite_argument, default=None, help="a difference to size (e.g. 0.03)"
    )
    parser.add_argument(
        "--sigma",
        type=finite_argument,
        default=None,
        help="σ_d to use instead of the runs' (no gold set read)",
    )
    parser.add_argument(
        "--questions",
        type=positive_argument,
        default=None,
        help="with --sigma: the smallest difference this many questions detect",
    )
    parser.add_argument("--alpha", type=finite_argument, default=ALPHA)
    parser.add_argument("--power", type=finite_argument, default=POWER)
    parser.add_argument("--no-baseline", action="store_true", help="skip the BM25 baseline")
    parser.add_argument("--seed", type=int, default=0, help="seed of the randomization test")
    parser.add_argument("--format", choices=FORMATS, default="json", dest="output_format")
    parser.set_defaults(handler=power_command)


def _options(measures: list[str]) -> MetricOptions:
    ks, cutoffs = [], []
    for measure in measures:
        found = _MEASURE.match(measure)
        if found is None:
            raise UsageError(
                f"--measure: {measure!r} is not a measure; use recall@K, precision@K, ndcg@K, "
                "judged@K or mrr@K"
            )
        (cutoffs if found.group(1) == "mrr" else ks).append(int(found.group(2)))
    if len(set(cutoffs)) > 1:
        raise UsageError("--measure: one MRR cut-off at a time")
    return MetricOptions(ks=tuple(sorted(set(ks))) or (10,), mrr_cutoff=(cutoffs or [10])[0])


def _calculator(arguments: argparse.Namespace) -> dict[str, Any]:
    sigma = arguments.sigma
    if arguments.delta is None and arguments.questions is None:
        raise UsageError("--sigma needs --delta (questions needed) or --questions")
    result: dict[str, Any] = {
        "alpha": arguments.alpha,
        "power": arguments.power,
        "sigma_d": sigma,
        "delta": arguments.delta,
        "questions_needed": None,
        "questions": arguments.questions,
        "minimum_detectable_difference": None,
    }
    if arguments.delta is not None:
        result["questions_needed"] = questions_needed(
            delta=arguments.delta, sigma=sigma, alpha=arguments.alpha, power=arguments.power
        )
    if arguments.questions is not None:
        if sigma <= 0:
            raise UsageError("--sigma must be a positive number")
        result["minimum_detectable_difference"] = minimum_detectable_difference(
            questions=arguments.questions, sigma=sigma, alpha=arguments.alpha, power=arguments.power
        )
    return result


def _from_runs(arguments: argparse.Namespace) -> dict[str, Any]:
    if arguments.gold is None:
        raise UsageError("give --gold with --runs (or --sigma for the calculator alone)")
    measures = list(dict.fromkeys(arguments.measures or [DEFAULT_MEASURE]))
    try:
        options = _options(measures)
    except ValueError as error:
        raise UsageError(str(error)) from None
    gold = load_gold(arguments.gold)
    for warning in gold.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    runs = []
    for name, path in run_arguments(arguments.runs):
        run = load_run(path, name=name)
        check_run_against_gold(run, gold, strict=False)
        for warning in run.warnings():
            print(f"warning: {warning}", file=sys.stderr)
        runs.append(run)
    if gold.corpus and not arguments.no_baseline:
        from goldeval.scoring.baseline import BASELINE_NAME, bm25_baseline_run

        if any(run.name == BASELINE_NAME for run in runs):
            raise UsageError(f"the run name {BASELINE_NAME!r} is taken by the baseline")
        runs.append(bm25_baseline_run(gold=gold, depth=options.depth))
    if len(runs) < 2:
        raise UsageError(
            "σ_d comes from the differences between runs: give at least two runs with --runs "
            "(or --sigma)"
        )
    evaluations = {run.name: evaluate_run(gold=gold, run=run, options=options) for run in runs}
    figures = gold_set_power(
        evaluations,
        metrics=measures,
        delta=arguments.delta,
        alpha=arguments.alpha,
        power=arguments.power,
        permutations=PERMUTATIONS,
        seed=arguments.seed,
    )
    return {
        "alpha": arguments.alpha,
        "power": arguments.power,
        "test": "paired two-sided t (Sakai's topic-set-size design, noncentral t)",
        "runs": list(evaluations),
        "measures": {metric: figure.as_dict() for metric, figure in figures.items()},
    }


def power_command(arguments: argparse.Namespace) -> int:
    try:
        if arguments.sigma is not None:
            if arguments.runs or arguments.gold is not None:
                raise UsageError("--sigma replaces --gold and --runs: give one or the other")
            report = _calculator(arguments)
        else:
            if arguments.questions is not None:
                raise UsageError("--questions goes with --sigma (with runs, the gold set's own)")
            report = _from_runs(arguments)
    except PowerInputError as error:
        raise UsageError(str(error)) from None
    if arguments.output_format == "json":
        sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(_markdown(report))
    return EXIT_OK


def _markdown(report: dict[str, Any]) -> str:
    lines = [
        "## Power of the gold set",
        "",
        f"Paired two-sided t-test, α {report['alpha']}, power {report['power']}.",
        "",
    ]
    if "measures" not in report:
        rows = [
            [label, markdown_number(report[key])]
            for label, key in (
                ("σ_d", "sigma_d"),
                ("difference", "delta"),
                ("questions needed", "questions_needed"),
                ("questions", "questions"),
                ("smallest detectable difference", "minimum_detectable_difference"),
            )
            if report[key] is not None
        ]
        return "\n".join([*lines, *markdown_table(["", "value"], rows), ""]) + "\n"
    header = [
        "measure",
        "questions",
        "runs",
        "σ_d",
        "smallest detectable difference",
        "questions needed",
        "discriminative power",
    ]
    rows = [
        [
            markdown_cell(metric),
            markdown_number(m["questions"]),
            markdown_number(m["runs"]),
            markdown_number(m["sigma_d"]),
            markdown_number(m["minimum_detectable_difference"]),
            markdown_number(m["questions_needed"]),
            markdown_number(m["discriminative_power"]),
        ]
        for metric, m in report["measures"].items()
    ]
    lines += markdown_table(header, rows)
    lines += [
        "",
        "### Run pairs (paired randomization test; ASL = achieved significance level)",
        "",
    ]
    pair_rows = []
    for metric, m in report["measures"].items():
        minimum = m["minimum_detectable_difference"]
        for pair in m["pairs"]:
            note = ""
            if minimum is not None and abs(pair["delta"]) < minimum:
                note = NOT_DETECTABLE
            pair_rows.append(
                [
                    markdown_cell(metric),
                    markdown_cell(pair["a"]),
                    markdown_cell(pair["b"]),
                    markdown_number(pair["delta"]),
                    markdown_number(pair["asl"]),
                    "yes" if pair["significant"] else "no",
                    note,
                ]
            )
    lines += markdown_table(
        ["measure", "a", "b", "delta", "ASL", "significant", ""], pair_rows, numeric_from=3
    )
    return "\n".join(lines) + "\n"
