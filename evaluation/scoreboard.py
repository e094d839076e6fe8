"""The evaluation page's read model: stored runs and the keyword baseline scored against a gold
set, per question and per span, and the geometry of the recall@k curve, so the view only renders.

Scoring goes through the Django-free ``evaluation`` modules on the gold set's own files, so the
page shows exactly what ``python -m evaluation`` prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from evaluation.baseline import BASELINE_NAME
from evaluation.gold import Gold, GoldQuestion, GoldSpan
from evaluation.metrics import MetricOptions, RunEvaluation, evaluate_run, first_reaching_ranks
from evaluation.models import EvaluationRun, GoldSet
from evaluation.runs import Run
from evaluation.services.evaluation_runs import (
    CURVE_MIN_K,
    MRR_CUTOFF,
    TABLE_KS,
    baseline_run,
    load_stored_run,
)
from evaluation.services.gold_sets import GoldSetError, load_gold_set

# Line colours of the recall curve (SVG presentation attributes: the CSP forbids inline styles).
PALETTE = ["#1f4e9c", "#b54708", "#067647", "#8a6d1e", "#7a2e98", "#c01048", "#0e7090", "#667085"]


@dataclass
class ScoredRun:
    name: str
    kind: str  # "retriever", "upload" or "baseline"
    run: Run
    evaluation: RunEvaluation
    record: EvaluationRun | None = None


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

    def metric_rows(self) -> list[MetricRow]:
        rows = [
            MetricRow(label, False, [str(getattr(r.evaluation, attribute)) for r in self.runs])
            for label, attribute in (
                ("questions", "questions"),
                ("answerable", "answerable"),
                ("missing from run", "missing"),
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


def format_figure(value: float | None) -> str:
    """Four decimals, as the CLI's markdown report; a dash for "no value"."""
    return "—" if value is None else f"{value:.4f}"


def evaluate_gold_set(
    *,
    gold_set: GoldSet,
    records: Sequence[EvaluationRun],
    baseline: bool = True,
    k_sent_to_model: int = 5,
) -> Scoreboard:
    """Score stored runs (and the CLI's keyword baseline) against the gold set's own files,
    with the CLI's default options, so every figure equals ``python -m evaluation``'s."""
    gold = load_gold_set(gold_set)
    table_ks = tuple(sorted({*TABLE_KS, k_sent_to_model}))
    curve_max = max(CURVE_MIN_K, k_sent_to_model, *table_ks)
    options = MetricOptions(ks=tuple(range(1, curve_max + 1)), mrr_cutoff=MRR_CUTOFF)
    scored: list[ScoredRun] = []
    for record in records:
        if record.gold_set_id != gold_set.pk:
            raise GoldSetError(f"The run {record.name} belongs to another gold set.")
        run = load_stored_run(record, gold=gold)
        scored.append(
            ScoredRun(
                name=record.name,
                kind=record.source,
                run=run,
                evaluation=evaluate_run(gold=gold, run=run, options=options),
                record=record,
            )
        )
    if baseline and gold.corpus:
        run = baseline_run(gold_set, depth=options.depth)
        scored.append(
            ScoredRun(
                name=BASELINE_NAME,
                kind="baseline",
                run=run,
                evaluation=evaluate_run(gold=gold, run=run, options=options),
            )
        )
    board = Scoreboard(
        gold_set=gold_set,
        gold=gold,
        options=options,
        table_ks=table_ks,
        k_sent_to_model=k_sent_to_model,
        runs=scored,
    )
    board.questions = _question_outcomes(board)
    return board


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
