"""``python -m goldeval reusability``: would this gold set score a new retriever fairly?

    python -m goldeval reusability --gold gold/ --pool bm25=runs/bm25.trec \\
        --pool dense=runs/dense.jsonl --depth 20 --run new=runs/new.jsonl

``--pool`` names the runs of the retrievers whose top ``--depth`` built the pool (at least two);
``--run`` any run to check (a system the pool may not have seen). Prints the leave-one-retriever-
out table (`goldeval.scoring.reusability`), the relevant units one retriever alone found, and
each run's unjudged@10 with its condensed figures. Exit status: 0 ok, 1 a run above the unjudged
bar (with ``--fail-on-unjudged``), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from goldeval.cli.arguments import UsageError, positive_argument, run_arguments
from goldeval.formats.gold import bundle_file, load_gold
from goldeval.formats.pool import POOL_FILE, read_pool
from goldeval.formats.runs import check_run_against_gold, load_run
from goldeval.scoring.report import markdown_cell, markdown_number, markdown_table
from goldeval.scoring.reusability import (
    BIAS_MEASURES,
    CONDENSED_MEASURES,
    PLAIN_MEASURES,
    ReusabilityReport,
    leave_one_out,
    report_content,
)

EXIT_OK = 0
EXIT_UNJUDGED = 1
# Unique units listed per retriever in markdown (JSON lists them all).
LISTED = 20


def add_parser(commands) -> None:
    """Register the subcommand on ``python -m goldeval``'s parser."""
    parser = commands.add_parser(
        "reusability",
        help="pool bias: leave-one-retriever-out, units one retriever alone found, unjudged runs",
        description="Exit status: 0 ok, 1 a run above the unjudged bar (with "
        "--fail-on-unjudged), 2 bad input.",
    )
    parser.add_argument(
        "--gold", required=True, type=Path, help="a bundle folder, gold JSONL or qrels"
    )
    parser.add_argument(
        "--pool",
        action="append",
        default=[],
        metavar="[NAME=]PATH",
        help="the run of a retriever that built the pool; repeat for each (at least two). "
        f"Default: the bundle's {POOL_FILE}, written when the gold set was finalised",
    )
    parser.add_argument(
        "--depth",
        type=positive_argument,
        default=None,
        help="how many passages of each --pool run went into the pool (needed with --pool)",
    )
    parser.add_argument(
        "--run",
        dest="runs",
        action="append",
        default=[],
        metavar="[NAME=]PATH",
        help="a run to check against the gold set's coverage; repeatable",
    )
    parser.add_argument("--threshold", type=positive_argument, default=1)
    parser.add_argument("--min-overlap", type=positive_argument, default=1)
    parser.add_argument("--format", choices=("json", "markdown"), default="markdown")
    parser.add_argument(
        "--fail-on-unjudged",
        action="store_true",
        help="exit 1 when a --run has more than 10 %% unjudged passages in its top 10",
    )
    parser.set_defaults(handler=reusability_command)


def reusability_command(arguments: argparse.Namespace) -> int:
    pooled_files = run_arguments(arguments.pool)
    run_files = run_arguments(arguments.runs)
    if pooled_files and arguments.depth is None:
        raise UsageError("--depth: say how many passages of each --pool run were pooled")
    names = [name for name, _ in pooled_files + run_files]
    taken = sorted({name for name in names if names.count(name) > 1})
    if taken:
        raise UsageError(f"two runs are named {taken[0]!r}; name them with NAME=PATH")
    gold = load_gold(arguments.gold)
    for warning in gold.warnings:
        print(f"warning: {warning}", file=sys.stderr)

    def read(name: str, path: Path):
        run = load_run(path, name=name)
        check_run_against_gold(run, gold, strict=False)
        for warning in run.warnings():
            print(f"warning: {warning}", file=sys.stderr)
        return run

    depth = arguments.depth
    if pooled_files:
        pooled = {name: read(name, path) for name, path in pooled_files}
    else:
        pool_path = arguments.gold / POOL_FILE
        data = bundle_file(arguments.gold, POOL_FILE)
        if data is None:
            raise UsageError(
                f"--pool: the gold set has no {POOL_FILE} (a bundle whose pool came from "
                "Goldset's retrievers carries one); give the pooled runs with --pool and --depth"
            )
        from_bundle = read_pool(data, path=pool_path)
        pooled = from_bundle.runs
        depth = from_bundle.depth
        clashes = sorted(set(pooled) & {name for name, _ in run_files})
        if clashes:
            raise UsageError(f"--run: the name {clashes[0]!r} is a pooled retriever's")
    if len(pooled) < 2:
        raise UsageError("--pool: give the runs of at least two retrievers that built the pool")
    runs = [read(name, path) for name, path in run_files]
    try:
        report = leave_one_out(
            gold=gold,
            pooled=pooled,
            depth=depth,
            runs=runs,
            threshold=arguments.threshold,
            min_overlap=arguments.min_overlap,
        )
    except ValueError as error:
        raise UsageError(str(error)) from None
    if arguments.format == "json":
        sys.stdout.write(json.dumps(report_content(report), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_markdown(report))
    warned = [run for run in report.runs if run.warning]
    for run in warned:
        print(f"warning: {run.name}: {run.warning}", file=sys.stderr)
    return EXIT_UNJUDGED if warned and arguments.fail_on_unjudged else EXIT_OK


def render_markdown(report: ReusabilityReport) -> str:
    lines = [
        "## Leave one retriever out",
        "",
        f"Pool depth {report.depth}. Each pooled retriever scored against the whole gold set "
        "(with) and against it rebuilt without the judged passages only that retriever "
        "contributed (without); difference = without − with (Zobel 1998).",
        "",
    ]
    header = ["retriever", "unique judged", "unique relevant"]
    rows = []
    for bias in report.retrievers:
        row = [markdown_cell(bias.name), str(bias.unique_items), str(len(bias.unique_units))]
        for measure in BIAS_MEASURES:
            row += [
                markdown_number(bias.with_own[measure]),
                markdown_number(bias.without_own[measure]),
                markdown_number(bias.difference[measure]),
            ]
        rows.append(row)
    for measure in BIAS_MEASURES:
        header += [f"{measure} with", "without", "difference"]
    lines += markdown_table(header, rows) + [""]
    lines += ["## Relevant units only one retriever found", ""]
    for bias in report.retrievers:
        shown = bias.unique_units[:LISTED]
        lines.append(f"- {markdown_cell(bias.name)}: {len(bias.unique_units)}")
        for unit in shown:
            where = "" if unit.span.start is None else f" [{unit.span.start}, {unit.span.end})"
            lines.append(
                f"  - question {markdown_cell(unit.question_id)}: "
                f"{markdown_cell(unit.span.doc_id)}{where}, grade {unit.span.grade}"
            )
        if len(bias.unique_units) > LISTED:
            lines.append(f"  - and {len(bias.unique_units) - LISTED} more (see --format json)")
    lines.append("")
    if report.runs:
        lines += ["## Runs checked", ""]
        header = ["run", "unjudged@10", "bpref"]
        header += [f"{m}" for m in PLAIN_MEASURES] + [f"{m}" for m in CONDENSED_MEASURES]
        rows = [
            [
                markdown_cell(run.name),
                markdown_number(run.unjudged),
                markdown_number(run.bpref),
                *(markdown_number(run.plain[m]) for m in PLAIN_MEASURES),
                *(markdown_number(run.condensed[m]) for m in CONDENSED_MEASURES),
            ]
            for run in report.runs
        ]
        lines += markdown_table(header, rows) + [""]
        for run in report.runs:
            if run.warning:
                lines.append(f"**Warning, {markdown_cell(run.name)}**: {run.warning}.")
        lines.append("")
    return "\n".join(lines)
