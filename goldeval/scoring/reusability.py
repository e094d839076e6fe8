"""Pool bias of a gold set: would it score a retriever it never pooled fairly?

Leave-one-retriever-out (Zobel 1998): for each retriever that built the pool, the gold set is
rebuilt without what only that retriever contributed (the judged candidates and spans that no
other pooled retriever's top ``depth`` reaches), and the retriever is scored against both. The
difference (without minus with) is how much a new system like it would lose for being new; a
gold set whose differences are small is reusable. Also: the relevant units one retriever alone
found, and for any evaluated run its unjudged@10 (warned above 10 %, `incomplete`) with its
condensed figures beside the plain ones.

An item (span or judged candidate) is reached by a pooled passage under the metrics' rule: same
document, an overlap of at least ``min_overlap`` characters, no offsets covering the document.
Items no pooled retriever reaches (added by hand, or pooled by a retriever not given) stay in
every rebuilt gold set. Each question keeps its answerability (the gold's verdict), so every
figure averages over the same questions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan, Passage
from goldeval.formats.runs import Run
from goldeval.scoring.incomplete import (
    UNJUDGED_WARNING_K,
    unjudged_warning,
    with_incomplete_measures,
)
from goldeval.scoring.metrics import MetricOptions, RunEvaluation, evaluate_run

# What the report shows of each retriever and run, at k = 10 (the warning's k).
K = UNJUDGED_WARNING_K
BIAS_MEASURES = (f"ndcg@{K}", f"precision@{K}", f"recall@{K}", "ap", "bpref")
PLAIN_MEASURES = (f"ndcg@{K}", f"precision@{K}", f"mrr@{K}", "ap")
CONDENSED_MEASURES = (f"condensed_ndcg@{K}", f"condensed_precision@{K}", f"condensed_mrr@{K}")


@dataclass(frozen=True, slots=True)
class UniqueUnit:
    """A relevant unit (a span of grade >= the threshold) only one pooled retriever reached."""

    question_id: str
    span: GoldSpan


@dataclass(slots=True)
class RetrieverBias:
    name: str
    # Judged items (spans and candidates) only this retriever's top `depth` reached.
    unique_items: int
    unique_units: list[UniqueUnit]
    with_own: dict[str, float | None]  # against the whole gold set
    without_own: dict[str, float | None]  # against the gold set rebuilt without its items

    @property
    def difference(self) -> dict[str, float | None]:
        """Without minus with: what the retriever loses when it did not help build the pool."""
        return {
            name: None
            if value is None or self.without_own[name] is None
            else self.without_own[name] - value
            for name, value in self.with_own.items()
        }


@dataclass(slots=True)
class RunCoverage:
    name: str
    unjudged: float | None  # mean unjudged@10
    warning: str | None
    plain: dict[str, float | None]
    condensed: dict[str, float | None]
    bpref: float | None


@dataclass(slots=True)
class ReusabilityReport:
    depth: int
    threshold: int
    retrievers: list[RetrieverBias] = field(default_factory=list)
    runs: list[RunCoverage] = field(default_factory=list)


def _reaches(item: Passage | GoldSpan, passages: Sequence[Passage], min_overlap: int) -> bool:
    doc_id, start, end = item[0], item[1], item[2]
    for passage_doc, passage_start, passage_end in passages:
        if passage_doc != doc_id:
            continue
        if start is None or passage_start is None:
            low, high = (passage_start, passage_end) if start is None else (start, end)
            if low is None or high - low >= min_overlap:
                return True
            continue
        if min(end, passage_end) - max(start, passage_start) >= min_overlap:
            return True
    return False


def _contributors(
    question: GoldQuestion, pooled: Mapping[str, Sequence[Passage]], min_overlap: int
) -> tuple[list[set[str]], list[set[str]]]:
    """For each span and each judged candidate: the pooled retrievers whose passages reach it."""
    by_document = {name: {passage[0] for passage in passages} for name, passages in pooled.items()}

    def who(item) -> set[str]:
        return {
            name
            for name, passages in pooled.items()
            if item[0] in by_document[name] and _reaches(item, passages, min_overlap)
        }

    return [who(span) for span in question.spans], [who(item) for item in question.judged]


def leave_one_out(
    *,
    gold: Gold,
    pooled: Mapping[str, Run],
    depth: int,
    runs: Sequence[Run] = (),
    threshold: int = 1,
    min_overlap: int = 1,
) -> ReusabilityReport:
    """The pool-bias report of ``gold`` for the retrievers whose top ``depth`` built its pool,
    and the coverage of each of ``runs`` (systems it may not have pooled)."""
    if depth < 1:
        raise ValueError("the pool depth must be at least 1")
    if len(pooled) < 2:
        raise ValueError("leave-one-out needs at least two pooled retrievers")
    options = MetricOptions(ks=(K,), mrr_cutoff=K, threshold=threshold, min_overlap=min_overlap)
    without: dict[str, dict[str, GoldQuestion]] = {name: {} for name in pooled}
    unique: dict[str, tuple[int, list[UniqueUnit]]] = {name: (0, []) for name in pooled}
    for question_id, question in gold.questions.items():
        tops = {
            name: list(run.rankings[question_id].passages[:depth])
            if question_id in run.rankings
            else []
            for name, run in pooled.items()
        }
        span_by, judged_by = _contributors(question, tops, min_overlap)
        for name in pooled:
            alone = {name}
            spans = tuple(s for s, who in zip(question.spans, span_by, strict=True) if who != alone)
            judged = tuple(
                j for j, who in zip(question.judged, judged_by, strict=True) if who != alone
            )
            without[name][question_id] = replace(question, spans=spans, judged=judged)
            count, units = unique[name]
            count += (len(question.spans) - len(spans)) + (len(question.judged) - len(judged))
            units += [
                UniqueUnit(question_id, s)
                for s, who in zip(question.spans, span_by, strict=True)
                if who == alone and s.grade >= threshold
            ]
            unique[name] = (count, units)

    report = ReusabilityReport(depth=depth, threshold=threshold)
    for name, run in pooled.items():
        reduced = Gold(questions=without[name], unanchored=gold.unanchored)
        count, units = unique[name]
        report.retrievers.append(
            RetrieverBias(
                name=name,
                unique_items=count,
                unique_units=units,
                with_own=_figures(_scored(gold, run, options), BIAS_MEASURES),
                without_own=_figures(_scored(reduced, run, options), BIAS_MEASURES),
            )
        )
    for run in runs:
        evaluation = _scored(gold, run, options)
        report.runs.append(
            RunCoverage(
                name=run.name,
                unjudged=evaluation.metrics[f"unjudged@{K}"],
                warning=unjudged_warning(evaluation),
                plain=_figures(evaluation, PLAIN_MEASURES),
                condensed=_figures(evaluation, CONDENSED_MEASURES),
                bpref=evaluation.metrics["bpref"],
            )
        )
    return report


def _scored(gold: Gold, run: Run, options: MetricOptions) -> RunEvaluation:
    evaluation = evaluate_run(gold=gold, run=run, options=options)
    return with_incomplete_measures(evaluation, gold=gold, run=run, options=options)


def _figures(evaluation: RunEvaluation, names: Sequence[str]) -> dict[str, float | None]:
    return {name: evaluation.metrics[name] for name in names}


def report_content(report: ReusabilityReport) -> dict[str, Any]:
    """The report as plain JSON values: the command's ``--format json`` and the bundle's
    reusability.json."""
    return {
        "depth": report.depth,
        "threshold": report.threshold,
        "retrievers": [
            {
                "name": bias.name,
                "unique_items": bias.unique_items,
                "unique_relevant_units": [
                    {
                        "question_id": unit.question_id,
                        "doc_id": unit.span.doc_id,
                        "start": unit.span.start,
                        "end": unit.span.end,
                        "grade": unit.span.grade,
                    }
                    for unit in bias.unique_units
                ],
                "with_own": bias.with_own,
                "without_own": bias.without_own,
                "difference": bias.difference,
            }
            for bias in report.retrievers
        ],
        "runs": [
            {
                "name": run.name,
                "unjudged@10": run.unjudged,
                "warning": run.warning,
                "plain": run.plain,
                "condensed": run.condensed,
                "bpref": run.bpref,
            }
            for run in report.runs
        ],
    }
