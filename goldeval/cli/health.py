"""``python -m goldeval health``: check the team's index against a gold set's corpus in CI.

Exit status: 0 when all is well, 1 when a threshold is crossed, 2 for bad input (with the file
and line). The JSON report is the contract; markdown is drawn from it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

from goldeval.cli.arguments import (
    non_negative_argument,
    positive_argument,
    run_arguments,
    share_argument,
)
from goldeval.formats.bounds import time_problem
from goldeval.formats.gold import EvaluationInputError, load_gold
from goldeval.formats.manifests import parse_time, read_manifest
from goldeval.formats.runs import load_run
from goldeval.formats.textfiles import NotUTF8Error
from goldeval.scoring.health import DEFAULT_K, Thresholds, check_index, documents_of
from goldeval.scoring.report import markdown_cell

EXIT_OK, EXIT_CROSSED, EXIT_BAD_INPUT = 0, 1, 2


class ManifestError(EvaluationInputError):
    """The index manifest cannot be used."""


def add_parser(commands) -> None:
    """Register the subcommand on ``python -m goldeval``'s parser."""

    parser = commands.add_parser(
        "health",
        help="check an index manifest against a gold set's corpus (stale, missing, mixed "
        "models, crowding, extraction, short lists)",
        description="Exit status: 0 ok, 1 a threshold was crossed, 2 bad input.",
    )
    parser.add_argument("--gold", required=True, type=Path, help="an exported bundle folder")
    parser.add_argument(
        "--manifest", required=True, type=Path, help="the index manifest (CSV or JSONL)"
    )
    parser.add_argument("--run", dest="runs", action="append", default=[], metavar="[NAME=]PATH")
    parser.add_argument(
        "--run-as",
        dest="test_users",
        action="append",
        default=[],
        metavar="USER=PATH",
        help="a permission replay's run as test user USER (short lists per user)",
    )
    parser.add_argument(
        "--k", type=positive_argument, default=DEFAULT_K, help="results sent to the model"
    )
    parser.add_argument(
        "--max-stale", type=share_argument, default=None, help="e.g. 0.01 (a share)"
    )
    parser.add_argument("--max-lag-days", type=non_negative_argument, default=None)
    parser.add_argument(
        "--max-crowding", type=share_argument, default=None, help="a share, e.g. 0.2"
    )
    parser.add_argument("--fail-on-model-mix", action="store_true")
    parser.add_argument("--now", default=None, help="the time lags are measured to (ISO 8601)")
    parser.add_argument("--format", choices=("json", "markdown"), default="markdown")
    parser.set_defaults(handler=health_command)


def health_command(arguments: argparse.Namespace) -> int:
    gold = load_gold(arguments.gold)
    if gold.corpus is None and gold.documents is None:
        raise EvaluationInputError(
            "the gold set carries no corpus: give an exported bundle folder", path=arguments.gold
        )
    path: Path = arguments.manifest
    if not path.is_file():
        raise ManifestError("no such file", path=path)
    try:
        manifest = read_manifest(path.read_bytes())
    except NotUTF8Error as error:
        raise ManifestError(str(error), path=path) from None
    if manifest.problems:
        for problem in manifest.problems[1:]:
            print(f"error: {path}:{problem.line}: {problem.message}", file=sys.stderr)
        first = manifest.problems[0]
        raise ManifestError(first.message, path=path, line=first.line)

    runs = [load_run(p, name=n) for n, p in run_arguments(arguments.runs)]
    users = []
    for value in arguments.test_users:
        name, separator, rest = value.partition("=")
        if not separator or not name:
            raise EvaluationInputError(f"--run-as expects USER=PATH, got {value!r}")
        users.append(load_run(Path(rest), name=name))
    now = datetime.datetime.now(datetime.UTC)
    if arguments.now:
        parsed = parse_time(arguments.now)
        if parsed is None:
            raise EvaluationInputError(f"--now {arguments.now!r} is not an ISO 8601 time")
        if problem := time_problem(parsed):
            raise EvaluationInputError(f"--now {arguments.now!r} {problem}")
        now = parsed
    report = check_index(
        documents=documents_of(gold),
        rows=manifest.rows,
        now=now,
        runs=runs,
        test_users=users,
        gold=gold,
        k=arguments.k,
        thresholds=Thresholds(
            max_stale=arguments.max_stale,
            max_lag_days=arguments.max_lag_days,
            fail_on_model_mix=arguments.fail_on_model_mix,
            max_crowding=arguments.max_crowding,
        ),
    )
    if arguments.format == "json":
        sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_markdown(report))
    for crossed in report["crossed"]:
        print(f"threshold crossed: {crossed['message']}", file=sys.stderr)
    return EXIT_CROSSED if report["crossed"] else EXIT_OK


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _days(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} d"


def render_markdown(report: dict[str, Any]) -> str:
    index, stale = report["index"], report["stale"]
    lag = stale["lag_days"]
    lines = [
        "# Index health",
        "",
        f"Checked at {report['checked_at']}; k = {report['k']}.",
        "",
        "| check | figure | documents |",
        "| --- | --- | --- |",
        f"| indexed | {index['rows']} rows | {index['documents']} |",
        f"| stale | {_share(stale['share'])} of {stale['of']} searchable | {stale['documents']} |",
        f"| lag p50 / p95 / oldest | {_days(lag['p50'])} / {_days(lag['p95'])} / "
        f"{_days(lag['oldest'])} | {stale['documents'] - lag['unknown']} |",
        f"| missing from the index | {_share(report['missing']['share'])} | "
        f"{report['missing']['documents']} |",
        f"| indexed, not searchable | {_share(report['not_searchable_indexed']['share'])} | "
        f"{report['not_searchable_indexed']['documents']} |",
        f"| indexed, unknown to the corpus | {_share(report['unknown']['share'])} | "
        f"{report['unknown']['documents']} |",
        f"| models in the index | {len(index['models'])}{' (mixed)' if index['mixed'] else ''} | |",
        "",
    ]
    if index["models"]:
        lines += ["## Models", "", "| model | rows | documents |", "| --- | --- | --- |"]
        lines += [f"| {m['label']} | {m['rows']} | {m['documents']} |" for m in index["models"]]
        lines.append("")
    if stale["rows"]:
        lines += [
            "## Stale documents",
            "",
            "| doc_id | by | newest | lag |",
            "| --- | --- | --- | --- |",
        ]
        lines += [
            f"| {r['doc_id']} | {r['basis']} | v{r['newest_version']} | {_days(r['lag_days'])} |"
            for r in stale["rows"][:20]
        ]
        lines.append("")
    for title, key in (("Missing", "missing"), ("Unknown to the corpus", "unknown")):
        if report[key]["doc_ids"]:
            lines += [f"## {title}", "", ", ".join(report[key]["doc_ids"][:50]), ""]
    if report["runs"]:
        lines += [
            "## Runs",
            "",
            "| run | mixed-model questions | crowding (mean) | short lists | "
            "returned unwanted documents |",
            "| --- | --- | --- | --- | --- |",
        ]
        for name, checks in report["runs"].items():
            lines.append(
                f"| {name} | {checks['model_mix']['questions']} | "
                f"{_share(checks['crowding']['mean'])} | "
                f"{_share(checks['short_lists']['share'])} | "
                f"{_share(checks['unwanted_returned']['share_of_questions'])} |"
            )
        lines.append("")
        for name, checks in report["runs"].items():
            extraction = checks.get("extraction")
            if not extraction:
                continue
            metric = extraction["metric"]
            lines += [
                f"### {name}: {metric} by extraction",
                "",
                f"| documents | questions | {metric} |",
                "| --- | --- | --- |",
            ]
            for group, values in extraction["groups"].items():
                value = values[metric]
                shown = "–" if value is None else f"{value:.4f}"
                lines.append(f"| {group.replace('_', ' ')} | {values['questions']} | {shown} |")
            lines.append("")
    if report["test_users"]:
        lines += [
            "## Short lists per test user",
            "",
            "| user | short | share |",
            "| --- | --- | --- |",
        ]
        for name, short in report["test_users"].items():
            lines.append(
                f"| {name} | {short['short']} of {short['questions']} | {_share(short['share'])} |"
            )
        lines.append("")
    spans = report.get("gold_spans")
    if spans and spans["on_older_versions"]:
        lines += [
            "## Gold spans on changed documents",
            "",
            f"{spans['on_older_versions']} span(s) point at an older version: "
            f"{spans['reanchored']} re-anchored onto the newest "
            f"({spans.get('facts_changed', 0)} of them with the facts changed), "
            f"{spans['not_reanchored']} not (they still count, and no passage can reach them).",
            "",
        ]
        if spans["rows"]:
            lines += [
                "| question | doc_id | version | span | quote |",
                "| --- | --- | --- | --- | --- |",
            ]
            lines += [
                f"| {r['question_id']} | {r['doc_id']} | v{r['version']} → v{r['newest_version']} "
                f"| [{r['start']}, {r['end']}) | {markdown_cell(r['quote'][:80])} |"
                for r in spans["rows"][:50]
            ]
            lines.append("")
        if spans.get("facts_changed_rows"):
            lines += [
                "### The facts changed",
                "",
                "Re-anchored, but the words differ: [-old-] {+new+}.",
                "",
            ]
            lines += [
                f"- {r['question_id']}, {r['doc_id']} v{r['version']} → v{r['newest_version']}: "
                f"{r['diff']}"
                for r in spans["facts_changed_rows"][:50]
            ]
            lines.append("")
    if report["crossed"]:
        lines += ["## Thresholds crossed", ""] + [f"- {c['message']}" for c in report["crossed"]]
        lines.append("")
    return "\n".join(lines)
