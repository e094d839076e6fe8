"""The evaluation page's read model: stored runs and the keyword baseline scored against a gold
set, per question and per span, and the geometry of the recall@k curve, so the view only renders.

Scoring goes through the Django-free ``evaluation`` modules on the gold set's own files, so the
page shows exactly what ``python -m goldeval`` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.models import EvaluationRun, GoldSet
from evaluation.services.evaluation_runs import (
    CURVE_MIN_K,
    MRR_CUTOFF,
    TABLE_KS,
    baseline_run,
    load_stored_run,
)
from evaluation.services.gold_sets import GoldSetError, load_gold_set
from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan
from goldeval.formats.runs import Run
from goldeval.scoring.baseline import BASELINE_NAME
from goldeval.scoring.baseline import K1 as BM25_K1
from goldeval.scoring.baseline import B as BM25_B
from goldeval.scoring.compare import PERMUTATIONS, compare_runs
from goldeval.scoring.incomplete import (
    UNJUDGED_WARNING,
    UNJUDGED_WARNING_K,
    incomplete_metric_names,
    unjudged_warning,
    with_incomplete_measures,
)
from goldeval.scoring.metrics import (
    CONVENTIONS,
    MetricOptions,
    RunEvaluation,
    evaluate_run,
    first_reaching_ranks,
)
from goldeval.scoring.power import MeasurePower, measure_power

# Line colours of the recall curve (SVG presentation attributes: the CSP forbids inline styles).
PALETTE = ["#1f4e9c", "#b54708", "#067647", "#8a6d1e", "#7a2e98", "#c01048", "#0e7090", "#667085"]


@dataclass
class ScoredRun:
    name: str
    kind: str  # "retriever", "upload" or "baseline"
    run: Run
    evaluation: RunEvaluation
    record: EvaluationRun | None = None


@dataclass(frozen=True)
class UnreadableRun:
    """A stored run that no longer reads (stored before its values were checked): shown with
    the reason instead of its figures, so a lead can delete it."""

    name: str
    pk: int
    error: str


@dataclass
class MetricRow:
    name: str
    highlighted: bool
    values: list[str]


@dataclass
class SpanOutcome:
    span: GoldSpan
    unanchored: bool
    # Per run: (1-based rank of the first passage reaching the span or None, missed at k).
    cells: list[tuple[int | None, bool]]


@dataclass
class QuestionOutcome:
    question: GoldQuestion
    relevant: bool  # has a span of grade >= 1 (else it is scored as unanswerable)
    cells: list[tuple[str, str, int, bool]]  # per run: recall@k, ndcg@k, spans missed, missing
    spans: list[SpanOutcome]


@dataclass
class Scoreboard:
    gold_set: GoldSet
    gold: Gold
    options: MetricOptions
    table_ks: tuple[int, ...]
    k_sent_to_model: int
    runs: list[ScoredRun]
    questions: list[QuestionOutcome] = field(default_factory=list)
    unreadable: list[UnreadableRun] = field(default_factory=list)

    @property
    def shallow_runs(self) -> list[ScoredRun]:
        """Built-in runs that retrieved fewer passages than the page looks at (k was raised)."""
        return [
            r
            for r in self.runs
            if r.record is not None
            and r.record.depth is not None
            and r.record.depth < self.options.depth
        ]

    @property
    def table_metrics(self) -> list[str]:
        return MetricOptions(ks=self.table_ks, mrr_cutoff=self.options.mrr_cutoff).metric_names()

    @property
    def incomplete_options(self) -> MetricOptions:
        return incomplete_options(table_ks=self.table_ks, mrr_cutoff=self.options.mrr_cutoff)

    def incomplete_rows(self) -> list[MetricRow]:
        """AP, bpref, infAP, condensed lists, unjudged@k and RBP, per run; the row at the k sent
        to the model highlighted."""
        k_suffix = f"@{self.k_sent_to_model}"
        return [
            MetricRow(
                name,
                name.endswith(k_suffix) and "mrr" not in name,
                [format_figure(r.evaluation.metrics.get(name)) for r in self.runs],
            )
            for name in incomplete_metric_names(self.incomplete_options)
        ]

    def metric_rows(self) -> list[MetricRow]:
        rows = [
            MetricRow(label, False, [str(getattr(r.evaluation, attribute)) for r in self.runs])
            for label, attribute in (
                ("questions", "questions"),
                ("answerable", "answerable"),
                ("missing from run", "missing"),
                ("recall undefined (no evidence at the threshold)", "recall_undefined"),
            )
        ]
        k_suffix = f"@{self.k_sent_to_model}"
        rows += [
            MetricRow(
                name,
                name.endswith(k_suffix) and not name.startswith("mrr"),
                [format_figure(r.evaluation.metrics[name]) for r in self.runs],
            )
            for name in self.table_metrics
        ]
        rows.append(
            MetricRow(
                "unanswerable questions",
                False,
                [str(r.evaluation.unanswerable.questions) for r in self.runs],
            )
        )
        rows.append(
            MetricRow(
                "refusal accuracy (unanswerable)",
                False,
                [format_figure(r.evaluation.unanswerable.refusal_accuracy) for r in self.runs],
            )
        )
        rows.append(
            MetricRow(
                "answerable wrongly refused",
                False,
                [format_figure(r.evaluation.unanswerable.wrongly_refused) for r in self.runs],
            )
        )
        return rows

    def recall_curve(self) -> list[tuple[str, list[tuple[int, float | None]]]]:
        return [
            (r.name, [(k, r.evaluation.metrics[f"recall@{k}"]) for k in self.options.ks])
            for r in self.runs
        ]


def incomplete_options(*, table_ks: tuple[int, ...], mrr_cutoff: int) -> MetricOptions:
    """The options of the measures for incomplete judgements on the page: the table's
    cut-offs and the k of the unjudged warning."""
    ks = tuple(sorted({*table_ks, UNJUDGED_WARNING_K}))
    return MetricOptions(ks=ks, mrr_cutoff=mrr_cutoff)


def format_figure(value: float | None) -> str:
    """Four decimals, as the CLI's markdown report; a dash for "no value"."""
    return "—" if value is None else f"{value:.4f}"


def evaluate_gold_set(
    *,
    gold_set: GoldSet,
    records: Sequence[EvaluationRun],
    baseline: bool = True,
    k_sent_to_model: int = 5,
    progress: Callable[[int], None] | None = None,
) -> Scoreboard:
    """Score stored runs (and the CLI's keyword baseline) against the gold set's own files,
    with the CLI's default options, so every figure equals ``python -m goldeval``'s.

    ``progress(1)`` follows each step: reading the gold set, each run, the baseline. Long work
    (spans re-anchored onto edited versions, a large run): a job calls this, never a request
    (`evaluation.services.reports`)."""
    advance = progress or (lambda count: None)
    gold = load_gold_set(gold_set)
    advance(1)
    table_ks = tuple(sorted({*TABLE_KS, k_sent_to_model}))
    curve_max = max(CURVE_MIN_K, k_sent_to_model, *table_ks)
    options = MetricOptions(ks=tuple(range(1, curve_max + 1)), mrr_cutoff=MRR_CUTOFF)
    incomplete = incomplete_options(table_ks=table_ks, mrr_cutoff=MRR_CUTOFF)
    scored: list[ScoredRun] = []
    unreadable: list[UnreadableRun] = []
    for record in records:
        if record.gold_set_id != gold_set.pk:
            raise GoldSetError(f"The run {record.name} belongs to another gold set.")
        try:
            run = load_stored_run(record, gold=gold)
        except GoldSetError as error:
            # A run stored before its values were checked (a NaN score, say) is flagged and
            # left out, so one bad row never fails every evaluation of the gold set.
            unreadable.append(UnreadableRun(name=record.name, pk=record.pk, error=str(error)))
            advance(1)
            continue
        scored.append(
            ScoredRun(
                name=record.name,
                kind=record.source,
                run=run,
                evaluation=_evaluate(gold, run, options, incomplete=incomplete),
                record=record,
            )
        )
        advance(1)
    if baseline and gold.corpus:
        run = baseline_run(gold_set, depth=options.depth)
        scored.append(
            ScoredRun(
                name=BASELINE_NAME,
                kind="baseline",
                run=run,
                evaluation=_evaluate(gold, run, options, incomplete=incomplete),
            )
        )
    if baseline:
        advance(1)
    board = Scoreboard(
        gold_set=gold_set,
        gold=gold,
        options=options,
        table_ks=table_ks,
        k_sent_to_model=k_sent_to_model,
        runs=scored,
        unreadable=unreadable,
    )
    board.questions = _question_outcomes(board)
    return board


def _evaluate(
    gold: Gold, run: Run, options: MetricOptions, *, incomplete: MetricOptions
) -> RunEvaluation:
    """The CLI's figures, and those of ``--incomplete`` at the table's cut-offs."""
    evaluation = evaluate_run(gold=gold, run=run, options=options)
    return with_incomplete_measures(evaluation, gold=gold, run=run, options=incomplete)


def _question_outcomes(board: Scoreboard) -> list[QuestionOutcome]:
    """Per question: each run's figures at k, and for each gold span where each run first
    reached it — the drill-down that shows which evidence a run missed."""
    k, threshold = board.k_sent_to_model, board.options.threshold
    unanchored = {(item.question_id, item.span) for item in board.gold.unanchored}
    outcomes = []
    for question_id, question in board.gold.questions.items():
        relevant = [i for i, span in enumerate(question.spans) if span.grade >= threshold]
        relevant_spans = [question.spans[i] for i in relevant]
        first_ranks = []
        for scored in board.runs:
            ranking = scored.run.rankings.get(question_id)
            ranks = first_reaching_ranks(
                question,
                ranking.passages if ranking is not None else [],
                depth=board.options.depth,
                min_overlap=board.options.min_overlap,
            )
            first_ranks.append([ranks[i] for i in relevant])
        spans = [
            SpanOutcome(
                span=span,
                unanchored=(question_id, span) in unanchored,
                cells=[(ranks[i], ranks[i] is None or ranks[i] > k) for ranks in first_ranks],
            )
            for i, span in enumerate(relevant_spans)
        ]
        cells = []
        for index, scored in enumerate(board.runs):
            values = scored.evaluation.per_question.get(question_id)
            cells.append(
                (
                    format_figure(values[f"recall@{k}"]) if values else "—",
                    format_figure(values[f"ndcg@{k}"]) if values else "—",
                    sum(1 for span in spans if span.cells[index][1]),
                    question_id not in scored.run.rankings,
                )
            )
        outcomes.append(
            QuestionOutcome(
                question=question, relevant=bool(relevant_spans), cells=cells, spans=spans
            )
        )
    return outcomes


# --- the recall@k curve -------------------------------------------------------------------------


@dataclass
class CurveLine:
    name: str
    colour: str
    points: str  # the polyline's "x,y x,y …"
    dots: list[tuple[float, float, int, str]]  # x, y, k, value (for the tooltip <title>)


@dataclass
class Curve:
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    lines: list[CurveLine]
    x_ticks: list[tuple[float, int]]
    y_ticks: list[tuple[float, str]]
    k_sent_x: float

    @property
    def label_y(self) -> int:
        return self.top - 8

    @property
    def x_label_y(self) -> int:
        return self.bottom + 16


def run_colours(board: Scoreboard) -> list[tuple[ScoredRun, str]]:
    """Each run with the colour of its line, as the legend and the table show it."""
    return list(zip(board.runs, PALETTE * 4, strict=False))


def recall_curve_svg(board: Scoreboard) -> Curve:
    """Geometry of the recall@k plot, drawn by the template as SVG with presentation
    attributes only."""
    width, height, left, right, top, bottom = 640, 290, 48, 624, 24, 254
    ks = board.options.ks
    last = max(ks[-1], 2)

    def x(k: int) -> float:
        return round(left + (k - 1) * (right - left) / (last - 1), 1)

    def y(value: float) -> float:
        return round(bottom - value * (bottom - top), 1)

    lines = []
    for (name, points), colour in zip(board.recall_curve(), PALETTE * 4, strict=False):
        known = [(k, v) for k, v in points if v is not None]
        lines.append(
            CurveLine(
                name=name,
                colour=colour,
                points=" ".join(f"{x(k)},{y(v)}" for k, v in known),
                dots=[(x(k), y(v), k, format_figure(v)) for k, v in known],
            )
        )
    step = 1 if last <= 20 else 5
    x_ticks = [(x(k), k) for k in ks if k == 1 or k % step == 0]
    y_ticks = [(y(v), f"{v:.2f}") for v in (0.0, 0.25, 0.5, 0.75, 1.0)]
    return Curve(
        width=width,
        height=height,
        left=left,
        right=right,
        top=top,
        bottom=bottom,
        lines=lines,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        k_sent_x=x(board.k_sent_to_model),
    )


# --- plain language: run-versus-run deltas and why two BM25s differ ----------------------------

# A difference is called significant below this p-value (two-sided paired randomization test).
SIGNIFICANCE = 0.05


@dataclass(frozen=True)
class DeltaCell:
    metric: str
    delta: float | None  # the run's mean minus the reference's
    p_value: float
    # At least the smallest difference the gold set detects (None: fewer than two runs).
    detectable: bool | None = None

    @property
    def significant(self) -> bool:
        return self.delta is not None and self.p_value < SIGNIFICANCE


@dataclass(frozen=True)
class RunDelta:
    name: str
    cells: list[DeltaCell]


@dataclass(frozen=True)
class Deltas:
    reference: str
    metrics: list[str]
    rows: list[RunDelta]
    permutations: int


def delta_metrics(board: Scoreboard) -> list[str]:
    """The figures a lead compares runs on: at the k sent to the model, and MRR."""
    k = board.k_sent_to_model
    return [f"recall@{k}", f"ndcg@{k}", f"precision@{k}", f"mrr@{board.options.mrr_cutoff}"]


def gold_set_power(
    board: Scoreboard, *, permutations: int = PERMUTATIONS
) -> dict[str, MeasurePower]:
    """What the gold set can detect on the compared figures, from the chosen runs' own
    per-question differences (`goldeval.scoring.power`): nothing with fewer than two runs."""
    if len(board.runs) < 2:
        return {}
    evaluations = {r.name: r.evaluation for r in board.runs}
    return {
        metric: measure_power(evaluations, metric=metric, permutations=permutations)
        for metric in delta_metrics(board)
    }


def run_deltas(
    board: Scoreboard,
    *,
    reference: str | None = None,
    permutations: int = PERMUTATIONS,
    power: dict[str, MeasurePower] | None = None,
) -> Deltas | None:
    """Every run against one reference run (the first, unless named), per question, with the
    CLI's seeded paired randomization test, so a difference can be told from noise."""
    if len(board.runs) < 2:
        return None
    names = [r.name for r in board.runs]
    reference = reference if reference in names else names[0]
    base = next(r for r in board.runs if r.name == reference)
    metrics = delta_metrics(board)
    rows = []
    for scored in board.runs:
        if scored.name == reference:
            continue
        comparisons = compare_runs(
            {scored.name: scored.evaluation, reference: base.evaluation},
            metric_names=metrics,
            permutations=permutations,
        )
        rows.append(
            RunDelta(
                name=scored.name,
                cells=[
                    DeltaCell(
                        c.metric,
                        c.delta,
                        c.p_value,
                        power[c.metric].detectable(c.delta) if c.metric in (power or {}) else None,
                    )
                    for c in comparisons
                ],
            )
        )
    return Deltas(reference=reference, metrics=metrics, rows=rows, permutations=permutations)


@dataclass(frozen=True)
class Bm25Difference:
    retriever: str
    differences: list[str]  # how the retriever's BM25 differs from the baseline's


def _describe_bm25(params: dict) -> dict[str, str]:
    return {
        "stemming": "on" if params.get("stem") else "off",
        "English stopwords": "removed" if params.get("stopwords") else "kept",
        "k1": f"{params.get('k1', BM25_K1)}",
        "b": f"{params.get('b', BM25_B)}",
        "IDF": str(params.get("idf", "okapi")),
    }


def bm25_differences(board: Scoreboard) -> list[Bm25Difference]:
    """Why a built-in BM25 retriever's figures differ from ``bm25-baseline``'s when both are
    shown: the baseline ranks whole documents (title and text) of the bundle's corpus with
    its own fixed analyzer, the retriever ranks passages of its chunking scheme with its
    settings."""
    if not any(r.kind == "baseline" for r in board.runs):
        return []
    baseline = _describe_bm25(
        {"stem": True, "stopwords": True, "k1": BM25_K1, "b": BM25_B, "idf": "okapi"}
    )
    found = []
    for scored in board.runs:
        retriever = scored.record.retriever if scored.record is not None else None
        if retriever is None or retriever.kind != "bm25":
            continue
        scheme = retriever.scheme.describe() if retriever.scheme else "its passages"
        differences = [
            f"it ranks passages ({scheme}) where the baseline ranks whole documents, title included"
        ]
        mine = _describe_bm25(retriever.params or {})
        differences += [
            f"{aspect} {mine[aspect]} (baseline: {baseline[aspect]})"
            for aspect in baseline
            if mine[aspect] != baseline[aspect]
        ]
        if (
            scored.record.index_built_at
            and board.gold_set.created_at > scored.record.index_built_at
        ):
            differences.append(
                "its index was built before this gold set was finalised, so it may miss "
                "documents the baseline's corpus has"
            )
        found.append(Bm25Difference(retriever=scored.name, differences=differences))
    return found


# --- what the page shows, stored --------------------------------------------------------------


def report_of(board: Scoreboard) -> dict[str, Any]:
    """Everything the evaluation page shows of a scoreboard, as plain JSON values, so a job can
    store it and the page render it without scoring anything (`EvaluationReport.content`)."""
    curve = recall_curve_svg(board)
    power = gold_set_power(board)
    return {
        "questions": len(board.gold.questions),
        "unanchored": len(board.gold.unanchored),
        "depth": board.options.depth,
        "mrr_cutoff": board.options.mrr_cutoff,
        "k_sent_to_model": board.k_sent_to_model,
        # The convention the means follow and each run's ordering rule, as every report names
        # them (JSON, markdown, this page).
        "convention": CONVENTIONS[board.options.compat],
        "runs": [
            {
                "name": r.name,
                "kind": r.kind,
                "ties": r.run.ties_rule,
                # The unjudged warning sits beside the run it concerns.
                "unjudged_warning": unjudged_warning(r.evaluation),
            }
            for r in board.runs
        ],
        "unjudged_warning_share": f"{UNJUDGED_WARNING:.0%}",
        "unjudged_warning_k": UNJUDGED_WARNING_K,
        "shallow_runs": [{"name": r.name, "depth": r.record.depth} for r in board.shallow_runs],
        "unreadable_runs": [
            {"name": r.name, "pk": r.pk, "error": r.error} for r in board.unreadable
        ],
        "metric_rows": [
            {"name": row.name, "highlighted": row.highlighted, "values": row.values}
            for row in board.metric_rows()
        ],
        "incomplete_rows": [
            {"name": row.name, "highlighted": row.highlighted, "values": row.values}
            for row in board.incomplete_rows()
        ],
        "curve": {
            **{
                name: getattr(curve, name)
                for name in ("width", "height", "left", "right", "top", "bottom", "k_sent_x")
            },
            "label_y": curve.label_y,
            "x_label_y": curve.x_label_y,
            "x_ticks": [list(tick) for tick in curve.x_ticks],
            "y_ticks": [list(tick) for tick in curve.y_ticks],
            "lines": [
                {
                    "name": line.name,
                    "colour": line.colour,
                    "points": line.points,
                    "dots": [list(dot) for dot in line.dots],
                }
                for line in curve.lines
            ],
        },
        # Run against run, with each run in turn as the reference (a lead picks one on the page),
        # and why a built-in BM25 differs from the baseline: both need the scored runs, so they
        # are stored with the figures.
        # A list, not a mapping keyed by run: PostgreSQL's jsonb does not keep key order, and
        # the first run is the default reference.
        "deltas": [
            _deltas_content(run_deltas(board, reference=scored.name, power=power))
            for scored in board.runs
        ]
        if len(board.runs) > 1
        else [],
        # What the gold set can detect, per compared figure (the page's power calculator
        # starts from these σ_d).
        "power": [figure.as_dict() for figure in power.values()],
        "bm25_notes": [
            {"retriever": note.retriever, "differences": note.differences}
            for note in bm25_differences(board)
        ],
        "per_question": [
            {
                "question_id": outcome.question.question_id,
                "question": outcome.question.question,
                "relevant": outcome.relevant,
                "cells": [list(cell) for cell in outcome.cells],
                "spans": [
                    {
                        "grade": span.span.grade,
                        "doc_id": span.span.doc_id,
                        "version": span.span.version,
                        "start": span.span.start,
                        "end": span.span.end,
                        "quote": span.span.quote,
                        "unanchored": span.unanchored,
                        "cells": [list(cell) for cell in span.cells],
                    }
                    for span in outcome.spans
                ],
            }
            for outcome in board.questions
        ],
    }


def _deltas_content(deltas: Deltas | None) -> dict[str, Any] | None:
    if deltas is None:
        return None
    return {
        "reference": deltas.reference,
        "metrics": deltas.metrics,
        "permutations": deltas.permutations,
        "rows": [
            {
                "name": row.name,
                "cells": [
                    {
                        "metric": c.metric,
                        "delta": c.delta,
                        "p_value": c.p_value,
                        "significant": c.significant,
                        "detectable": c.detectable,
                    }
                    for c in row.cells
                ],
            }
            for row in deltas.rows
        ],
    }
