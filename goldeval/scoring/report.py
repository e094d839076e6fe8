"""Render evaluation results as JSON, markdown or CSV.

The JSON structure is the contract other tools read (issue 6); markdown and CSV are drawn from it,
so the three formats never disagree.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from goldeval.formats.bundle import spreadsheet_safe
from goldeval.formats.runs import Run
from goldeval.scoring.compare import Comparison
from goldeval.scoring.metrics import CONVENTIONS, RunEvaluation
from goldeval.scoring.power import NOT_DETECTABLE, MeasurePower

FORMATS = ("json", "markdown", "csv")
# A spreadsheet runs a cell that starts with one of these as a formula.


def build_report(
    evaluations: dict[str, RunEvaluation],
    comparisons: list[Comparison],
    *,
    per_question: bool = False,
    read: dict[str, Run] | None = None,
    limits: dict[str, MeasurePower] | None = None,
) -> dict[str, Any]:
    """The report's JSON; ``read`` (the runs as read, by name) adds how each was ordered, the
    repeats dropped and the questions skipped; ``limits`` (`goldeval.scoring.power`) what the
    gold set can detect per metric, and whether each comparison's delta is that large."""
    runs: dict[str, Any] = {}
    for name, evaluation in evaluations.items():
        entry: dict[str, Any] = {
            "questions": evaluation.questions,
            "answerable": evaluation.answerable,
            "missing": evaluation.missing,
            "missing_questions": list(evaluation.missing_questions),
            "recall_undefined": evaluation.recall_undefined,
            "metrics": dict(evaluation.metrics),
            "unanswerable": {
                "questions": evaluation.unanswerable.questions,
                "refusal_accuracy": evaluation.unanswerable.refusal_accuracy,
                "wrongly_refused": evaluation.unanswerable.wrongly_refused,
            },
        }
        run = (read or {}).get(name)
        if run is not None:
            entry["ties"] = run.ties_rule
            entry["repeats_dropped"] = run.repeats
            entry["skipped_questions"] = list(run.skipped)
        if per_question:
            entry["per_question"] = _per_question(evaluation)
        runs[name] = entry
    first = next(iter(evaluations.values()), None)
    found = {
        "convention": first.convention if first is not None else CONVENTIONS["goldset"],
        "runs": runs,
        "comparisons": [comparison_entry(c, limits or {}) for c in comparisons],
    }
    if limits:
        found["power"] = {metric: limit.as_dict(pairs=False) for metric, limit in limits.items()}
    return found


def comparison_entry(c: Comparison, limits: dict[str, MeasurePower]) -> dict[str, Any]:
    """One comparison of a report; with the metric's detection limit, whether its delta is at
    least the smallest difference the gold set detects."""
    entry: dict[str, Any] = {
        "a": c.a,
        "b": c.b,
        "metric": c.metric,
        "delta": c.delta,
        "p_value": c.p_value,
    }
    limit = limits.get(c.metric)
    if limit is not None:
        entry["minimum_detectable_difference"] = limit.minimum_detectable
        entry["detectable"] = limit.detectable(c.delta)
    return entry


def _per_question(evaluation: RunEvaluation) -> dict[str, dict[str, Any]]:
    missing = set(evaluation.missing_questions)
    unanswerable = set(evaluation.unanswerable_questions)
    rows: dict[str, dict[str, Any]] = {}
    for question_id, values in evaluation.per_question.items():
        rows[question_id] = {
            "answerable": question_id not in unanswerable,
            "missing": question_id in missing,
            "refused": evaluation.refused.get(question_id),
            **values,
        }
    if evaluation.compat != "goldset":
        return rows  # trec_eval's query set, exactly
    for question_id in evaluation.unanswerable_questions:
        rows[question_id] = {
            "answerable": False,
            "missing": question_id in missing,
            "refused": evaluation.refused.get(question_id),
        }
    return rows


def render(report: dict[str, Any], *, output_format: str) -> str:
    if output_format == "json":
        return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    if output_format == "markdown":
        return render_markdown(report)
    if output_format == "csv":
        return render_csv(report)
    raise ValueError(f"unknown format {output_format!r}; choose one of {', '.join(FORMATS)}")


# --- markdown -----------------------------------------------------------------------------------


def markdown_number(value: Any) -> str:
    """A figure as every markdown report of `python -m goldeval` prints it."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def markdown_cell(text: str) -> str:
    """Text made safe for one markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


# How many missing questions a markdown report lists by id (the JSON lists them all).
MISSING_LISTED = 20


def markdown_missing(name: str, question_ids: list[str]) -> list[str]:
    """A run's missing questions, by id, in one line (nothing when none is missing)."""
    if not question_ids:
        return []
    listed = ", ".join(
        f"`{markdown_cell(q).replace('`', '')}`" for q in question_ids[:MISSING_LISTED]
    )
    more = len(question_ids) - MISSING_LISTED
    tail = f" and {more} more" if more > 0 else ""
    return [f"Missing from {markdown_cell(name)} ({len(question_ids)}): {listed}{tail}."]


def markdown_table(header: list[str], rows: list[list[str]], *, numeric_from: int = 1) -> list[str]:
    """A markdown table, columns from ``numeric_from`` on right-aligned."""
    align = ["---" if i < numeric_from else "---:" for i in range(len(header))]
    lines = [
        "| " + " | ".join(markdown_cell(h) for h in header) + " |",
        "| " + " | ".join(align) + " |",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def markdown_comparisons(comparisons: list[dict[str, Any]], *, measure: str) -> list[str]:
    """The run-against-run section of a markdown report (nothing without comparisons);
    ``measure`` names the compared column ("metric", "score")."""
    if not comparisons:
        return []
    rows = [
        [
            markdown_cell(c["a"]),
            markdown_cell(c["b"]),
            c["metric"],
            markdown_number(c["delta"]),
            markdown_number(c["p_value"]),
        ]
        + ([NOT_DETECTABLE if c["detectable"] is False else ""] if "detectable" in c else [])
        for c in comparisons
    ]
    header = ["a", "b", measure, "delta", "p-value"]
    if any("detectable" in c for c in comparisons):
        header.append("")
        rows = [row if len(row) == len(header) else [*row, ""] for row in rows]
    return [
        "## Comparisons (paired randomization test, delta = a − b)",
        "",
        *markdown_table(header, rows, numeric_from=3),
        "",
    ]


def markdown_power(power: dict[str, Any]) -> list[str]:
    """What the gold set can detect per metric (nothing with fewer than two runs)."""
    if not power:
        return []
    first = next(iter(power.values()))
    rows = [
        [
            metric,
            markdown_number(p["questions"]),
            markdown_number(p["sigma_d"]),
            markdown_number(p["minimum_detectable_difference"]),
            markdown_number(p["discriminative_power"]),
        ]
        for metric, p in power.items()
    ]
    return [
        f"## Power (paired t, α {first['alpha']}, power {first['power']}; σ_d from these runs)",
        "",
        *markdown_table(
            [
                "metric",
                "questions",
                "σ_d",
                "smallest detectable difference",
                "discriminative power",
            ],
            rows,
        ),
        "",
    ]


def render_markdown(report: dict[str, Any]) -> str:
    runs: dict[str, Any] = report["runs"]
    names = list(runs)
    metric_names = list(next(iter(runs.values()))["metrics"]) if runs else []
    rows = [
        [label] + [markdown_number(runs[name][key]) for name in names]
        for label, key in (("questions", "questions"), ("answerable", "answerable"))
    ]
    rows.append(["missing from run"] + [markdown_number(runs[name]["missing"]) for name in names])
    rows.append(
        ["recall undefined (no units at the threshold)"]
        + [markdown_number(runs[name].get("recall_undefined", 0)) for name in names]
    )
    rows += [
        [metric] + [markdown_number(runs[n]["metrics"][metric]) for n in names]
        for metric in metric_names
    ]
    for label, key in (
        ("unanswerable questions", "questions"),
        ("refusal accuracy (unanswerable)", "refusal_accuracy"),
        ("wrongly refused (answerable)", "wrongly_refused"),
    ):
        rows.append([label] + [markdown_number(runs[name]["unanswerable"][key]) for name in names])
    lines = ["## Runs", "", f"Convention: {report.get('convention', CONVENTIONS['goldset'])}."]
    for name in names:
        if "ties" in runs[name]:
            run = runs[name]
            extra = ""
            if run.get("repeats_dropped"):
                extra += f"; {run['repeats_dropped']} repeated passage(s) dropped"
            if run.get("skipped_questions"):
                skipped = len(run["skipped_questions"])
                extra += f"; {skipped} question(s) not in the gold set skipped"
            lines.append(f"Order of {markdown_cell(name)}: {run['ties']}{extra}.")
        lines += markdown_missing(name, runs[name].get("missing_questions", []))
    lines += ["", *markdown_table(["", *names], rows), ""]

    lines += markdown_comparisons(report["comparisons"], measure="metric")
    lines += markdown_power(report.get("power", {}))
    lines += markdown_hole_filling(report)

    for name in names:
        per_question = runs[name].get("per_question")
        if per_question is None:
            continue
        columns = ["answerable", "missing", "refused", *metric_names]
        lines += markdown_per_question(name, per_question, columns)
    return "\n".join(lines)


def markdown_hole_filling(report: dict[str, Any]) -> list[str]:
    """The judge's figures (``--ai-judgements``), a section of their own: per run, the human
    figure beside the judge-filled one and the prediction-powered estimate with its interval."""
    about = report.get("ai_judgements")
    if about is None:
        return []
    versions = ", ".join(f"v{v}" for v in about["prompt_versions"]) or "not given"
    models = ", ".join(about["models"]) or "not given"
    lines = [
        f"## Holes filled by the AI judge {markdown_cell(about['judge'])} (not gold)",
        "",
        f"Model {markdown_cell(models)}, prompt {versions}; {about['judgements']} judgement(s). "
        "The figures above are human only; these are apart.",
        "",
    ]
    for name, run in report["runs"].items():
        filling = run.get("ai_judgements")
        if filling is None:
            continue
        rows = []
        for metric, filled in filling["judge_filled"].items():
            ppi = filling["ppi"][metric]
            interval = "—"
            if ppi["low"] is not None:
                interval = f"{markdown_number(ppi['low'])} – {markdown_number(ppi['high'])}"
            rows.append(
                [
                    metric,
                    markdown_number(run["metrics"].get(metric)),
                    markdown_number(filled),
                    markdown_number(ppi["estimate"]),
                    interval,
                ]
            )
        lines += [
            f"### {markdown_cell(name)}",
            "",
            f"Note: {markdown_cell(filling['note'])}.",
            "",
            *markdown_table(
                ["metric", "human only", "judge-filled", "prediction-powered", "95 % interval"],
                rows,
            ),
            "",
        ]
    return lines


def markdown_per_question(name: str, per_question: dict, columns: list[str]) -> list[str]:
    """A run's "Per question" section: one row per question, one column per value."""
    rows = [
        [markdown_cell(question_id)] + [markdown_number(values.get(c)) for c in columns]
        for question_id, values in per_question.items()
    ]
    return [
        f"## Per question: {markdown_cell(name)}",
        "",
        *markdown_table(["question", *columns], rows),
        "",
    ]


# --- csv ----------------------------------------------------------------------------------------

CSV_HEADER = ["kind", "run", "against", "question_id", "metric", "value", "p_value"]


def csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def csv_question_rows(writer, run_cell: str, per_question: dict) -> None:
    """A run's per-question values, one CSV_HEADER row each."""
    for question_id, values in per_question.items():
        for metric, value in values.items():
            writer.writerow(
                [
                    "question",
                    run_cell,
                    "",
                    spreadsheet_safe(question_id),
                    metric,
                    csv_value(value),
                    "",
                ]
            )


def csv_comparison_rows(writer, comparisons: list[dict]) -> None:
    """The run-against-run comparisons, one CSV_HEADER row each."""
    for c in comparisons:
        writer.writerow(
            [
                "comparison",
                spreadsheet_safe(c["a"]),
                spreadsheet_safe(c["b"]),
                "",
                c["metric"],
                csv_value(c["delta"]),
                c["p_value"],
            ]
        )


def csv_missing_rows(writer, run_cell: str, question_ids: list[str]) -> None:
    """A run's missing questions, one ``missing`` row each."""
    for question_id in question_ids:
        writer.writerow(["missing", run_cell, "", spreadsheet_safe(question_id), "", "", ""])


def csv_power_rows(writer, power: dict[str, Any]) -> None:
    """What the gold set detects per metric, one ``power`` row per figure."""
    for metric, figures in power.items():
        for key in (
            "questions",
            "sigma_d",
            "minimum_detectable_difference",
            "discriminative_power",
        ):
            writer.writerow(["power", "", "", "", f"{metric}.{key}", csv_value(figures[key]), ""])


def render_csv(report: dict[str, Any]) -> str:
    """One long table: run summaries, per-question values, then comparisons."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for name, run in report["runs"].items():
        run_cell = spreadsheet_safe(name)
        for key in ("questions", "answerable", "missing", "recall_undefined"):
            writer.writerow(["summary", run_cell, "", "", key, run.get(key, 0), ""])
        for metric, value in run["metrics"].items():
            writer.writerow(["summary", run_cell, "", "", metric, csv_value(value), ""])
        for key, value in run["unanswerable"].items():
            writer.writerow(
                ["summary", run_cell, "", "", f"unanswerable.{key}", csv_value(value), ""]
            )
        csv_missing_rows(writer, run_cell, run.get("missing_questions", []))
        csv_question_rows(writer, run_cell, run.get("per_question", {}))
    csv_comparison_rows(writer, report["comparisons"])
    csv_power_rows(writer, report.get("power", {}))
    csv_hole_filling_rows(writer, report)
    return buffer.getvalue()


def csv_hole_filling_rows(writer, report: dict[str, Any]) -> None:
    """The judge's figures, rows of their own kinds: ``ai_holes`` (the counts),
    ``ai_judge_filled`` and ``ai_ppi`` (metric.estimate, .low, .high); ``against`` names the
    judge."""
    about = report.get("ai_judgements")
    if about is None:
        return
    judge = spreadsheet_safe(about["judge"])
    for name, run in report["runs"].items():
        filling = run.get("ai_judgements")
        if filling is None:
            continue
        run_cell = spreadsheet_safe(name)
        for key in ("depth", "holes", "holes_filled", "questions", "human_labelled_questions"):
            writer.writerow(["ai_holes", run_cell, judge, "", key, filling[key], ""])
        for metric, value in filling["judge_filled"].items():
            writer.writerow(["ai_judge_filled", run_cell, judge, "", metric, csv_value(value), ""])
        for metric, ppi in filling["ppi"].items():
            for key in ("estimate", "low", "high"):
                writer.writerow(
                    ["ai_ppi", run_cell, judge, "", f"{metric}.{key}", csv_value(ppi[key]), ""]
                )
