"""Answer scores as a report: JSON (the contract), markdown and CSV drawn from it.

The CLI (`goldeval.cli.answers`) prints it and the app's Answers page shows the same
structure, so the two never disagree.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from goldeval.formats.bundle import spreadsheet_safe
from goldeval.scoring.answers import (
    AUTOMATIC_SCORES,
    COMPARED_SCORES,
    HUMAN_SCORES,
    MISSING_RULE,
    AnswerEvaluation,
)
from goldeval.scoring.compare import Comparison
from goldeval.scoring.power import MeasurePower, detection_limits
from goldeval.scoring.report import (
    CSV_HEADER,
    comparison_entry,
    csv_comparison_rows,
    csv_missing_rows,
    csv_power_rows,
    csv_question_rows,
    csv_value,
    markdown_cell,
    markdown_comparisons,
    markdown_missing,
    markdown_number,
    markdown_per_question,
    markdown_power,
    markdown_table,
)

FORMATS = ("json", "markdown", "csv")
# What each score is called on a page and in markdown.
LABELS = {
    "faithfulness": "faithfulness (Ragas: claims fully supported by the context)",
    "faithfulness_graded": "faithfulness, graded (a partly supported claim counts ½)",
    "citation_precision": "citation precision (ALCE, human grades)",
    "citation_recall": "citation recall (ALCE, human grades)",
    "correctness": "correctness, All (TREC 2024 RAG nuggets; partly present ½)",
    "correctness_vital": "correctness, Vital (vital facts only)",
    "correctness_strict": "correctness, Strict All (present facts only)",
    "correctness_strict_vital": "correctness, Strict Vital (present vital facts only)",
    "gold_citation_precision": "gold citation precision (citations on gold spans)",
    "refusal_recall": "refusal recall (unanswerable refused)",
    "over_refusal": "over-refusal (answerable refused)",
    "refusal_precision": "refusal precision",
    "over_refusal_evidence_in_context": "over-refusal, evidence was in the context",
    "over_refusal_evidence_not_in_context": "over-refusal, evidence was not in the context",
    "evidence_in_context": "evidence in the context sent",
    "evidence_mean_rank": "evidence position: mean rank",
    "evidence_first_third": "evidence position: first third",
    "evidence_last_third": "evidence position: last third",
}


# The scores grouped as the definitions group them, each group named by what it measures and
# explained in one line (the Answers page shows them so; every score of LABELS is in one group).
SCORE_GROUPS = (
    (
        "Faithfulness",
        "Share of an answer's claims the context sent supports, as reviewers graded them "
        "(Ragas); the graded variant counts a partly supported claim as ½. Answers to "
        "answerable questions that were not refused.",
        ("faithfulness", "faithfulness_graded"),
    ),
    (
        "Citations",
        "Precision: share of citations that support their claim and are not redundant; "
        "recall: share of claims their citations together support (ALCE, from reviewers' "
        "grades). Gold citation precision: share of citations reaching a gold span, no reviewer.",
        ("citation_precision", "citation_recall", "gold_citation_precision"),
    ),
    (
        "Correctness",
        "Share of the reference answer's facts the answer states (TREC 2024 RAG nuggets): All "
        "counts a partly present fact ½, Strict only present ones; Vital counts vital facts "
        "only. A refused answerable question scores 0.",
        ("correctness", "correctness_vital", "correctness_strict", "correctness_strict_vital"),
    ),
    (
        "Refusal",
        "Refusal recall: unanswerable questions refused; over-refusal: answerable questions "
        "refused, split by whether gold evidence was in the context (a generation problem) or "
        "not (a retrieval miss); precision: refusals that were right.",
        (
            "refusal_recall",
            "over_refusal",
            "refusal_precision",
            "over_refusal_evidence_in_context",
            "over_refusal_evidence_not_in_context",
        ),
    ),
    (
        "Evidence position",
        "Where the first passage reaching gold sat in the context sent (Liu et al. 2023, lost "
        "in the middle): the share with evidence in the context, its mean rank, and the share "
        "in the first and in the last third.",
        (
            "evidence_in_context",
            "evidence_mean_rank",
            "evidence_first_third",
            "evidence_last_third",
        ),
    ),
)


def build_answer_report(
    evaluations: Mapping[str, AnswerEvaluation],
    comparisons: list[Comparison],
    *,
    per_question: bool = False,
    limits: Mapping[str, MeasurePower] | None = None,
) -> dict[str, Any]:
    """The report's JSON, with what the gold set can detect per compared score and whether
    each comparison's delta is that large (`goldeval.scoring.power`; ``limits`` when the caller
    has them already, else computed here from two runs or more)."""
    if limits is None and len(evaluations) > 1:
        limits = detection_limits(evaluations, metrics=COMPARED_SCORES, comparisons=comparisons)
    runs: dict[str, Any] = {}
    for name, evaluation in evaluations.items():
        entry: dict[str, Any] = {
            "counts": dict(evaluation.counts),
            "human_graded": evaluation.human_graded,
            "coverage": evaluation.coverage,
            "missing_questions": list(evaluation.missing_questions),
            "scores": dict(evaluation.scores),
        }
        if per_question:
            entry["per_question"] = {q: dict(v) for q, v in evaluation.per_question.items()}
        runs[name] = entry
    found = {
        "missing_rule": MISSING_RULE,
        "runs": runs,
        "comparisons": [comparison_entry(c, dict(limits or {})) for c in comparisons],
    }
    if limits:
        found["power"] = {score: limit.as_dict(pairs=False) for score, limit in limits.items()}
    return found


def render_answer_report(report: dict[str, Any], *, output_format: str) -> str:
    if output_format == "json":
        return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    if output_format == "markdown":
        return _markdown(report)
    if output_format == "csv":
        return _csv(report)
    raise ValueError(f"unknown format {output_format!r}; choose one of {', '.join(FORMATS)}")


def _markdown(report: dict[str, Any]) -> str:
    runs: dict[str, Any] = report["runs"]
    names = list(runs)
    header = ["", *(markdown_cell(name) for name in names)]
    lines: list[str] = []
    count_rows = [
        [key.replace("_", " ")] + [markdown_number(runs[n]["counts"][key]) for n in names]
        for key in ("questions", "answerable", "unanswerable", "answers", "missing", "refused")
    ]
    count_rows.append(
        ["human grades cover"] + [markdown_number(runs[n]["coverage"]) for n in names]
    )
    lines += ["## Answer runs", "", *markdown_table(header, count_rows), ""]
    lines += [f"Missing questions: {report.get('missing_rule', MISSING_RULE)}."]
    for name in names:
        lines += markdown_missing(name, runs[name].get("missing_questions", []))
    lines += [""]
    for title, group in (
        ("Human-graded scores", HUMAN_SCORES),
        ("Automatic scores (from the gold set alone)", AUTOMATIC_SCORES),
    ):
        rows = [[LABELS[s]] + [markdown_number(runs[n]["scores"][s]) for n in names] for s in group]
        lines += [f"## {title}", "", *markdown_table(header, rows), ""]
    lines += markdown_comparisons(report["comparisons"], measure="score")
    lines += markdown_power(report.get("power", {}))
    for name in names:
        per_question = runs[name].get("per_question")
        if not per_question:
            continue
        columns = sorted({key for values in per_question.values() for key in values})
        lines += markdown_per_question(name, per_question, columns)
    return "\n".join(lines)


def _csv(report: dict[str, Any]) -> str:
    """One long table, like the retrieval report's: summaries, per-question values,
    comparisons."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for name, run in report["runs"].items():
        cell = spreadsheet_safe(name)
        for key, value in run["counts"].items():
            writer.writerow(["count", cell, "", "", key, value, ""])
        writer.writerow(["count", cell, "", "", "coverage", csv_value(run["coverage"]), ""])
        for score, value in run["scores"].items():
            writer.writerow(["summary", cell, "", "", score, csv_value(value), ""])
        csv_missing_rows(writer, cell, run.get("missing_questions", []))
        csv_question_rows(writer, cell, run.get("per_question", {}))
    csv_comparison_rows(writer, report["comparisons"])
    csv_power_rows(writer, report.get("power", {}))
    return buffer.getvalue()
