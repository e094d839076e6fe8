"""Filling holes with an AI judge's grades, beside the human figures, never mixed into them.

A *hole* is a passage of a run's top ``depth`` (`MetricOptions.depth`: the largest k or the MRR
cut-off) that nobody judged: it reaches no span or passage a person judged (the rule of
`goldeval.scoring.incomplete`). The plain metrics count a hole as not relevant. Given one
judge's grades (`goldeval.formats.ai_judgements`), three figures per metric and run are made,
each over the same questions as the plain ones (their convention):

- **human only**: the plain figure (the report's ``metrics``, unchanged);
- **judge-filled** (naive): the gold with each passage the judge graded and no person judged
  added as a span of the judge's grade; a hole reaching one takes its grade. Biased exactly as
  far as the judge is: a lenient judge raises it;
- **prediction-powered** (Angelopoulos et al. 2023, "Prediction-powered inference"): the
  judge's error, measured on the questions people judged completely, corrects the judge's
  figure. For each question i of the N averaged ones, let f_i be the metric with the *judge's*
  grade wherever the judge gave one (its passages replace the human spans they overlap; a
  person's grade stands where the judge gave none), and, on the n *human-labelled* questions
  (no hole in the run's top ``depth``, so the human figure is the true one), Y_i the human
  figure and Δ_i = Y_i − f_i. Then

      estimate = mean over all N of f_i  +  mean over the n of Δ_i

  and its 95 % interval is estimate ± 1.96 · sqrt(s_f² / N + s_Δ² / n + 2 · c_fΔ / N), with
  s_f² the sample variance of f over the N, s_Δ² that of Δ over the n, and c_fΔ the sample
  covariance of f and Δ over the n (divisors N − 1 and n − 1). The first two terms are PPI's
  central-limit variance; the third is there because the n labelled questions are among the N
  (Angelopoulos et al. keep the two sets apart, so they have no such term). A metric undefined
  for a question (recall without relevant units) leaves that question out of that metric's
  sums. With no labelled question there is no estimate; with fewer than two, no interval.

  The interval holds when whether a question was judged completely has nothing to do with its
  score (people judged a random share of the questions deeply): if the hard questions are the
  ones with holes, no correction measured on the easy ones can be trusted.

Per run the report says how many holes the top ``depth`` held and how many the judge's grades
filled. Only the plain metrics are filled (not judged@k, not the --incomplete measures).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from goldeval.formats.ai_judgements import AIJudgement
from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan
from goldeval.formats.runs import Run

# The plain metrics' own walk, so the reach and judged rules have one home.
from goldeval.scoring.metrics import MetricOptions, RunEvaluation, _credit, _index, evaluate_run

Z_95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class PPIEstimate:
    estimate: float | None
    standard_error: float | None
    low: float | None
    high: float | None
    questions: int  # N: questions with the judge's figure
    labelled: int  # n: human-labelled questions with both figures
    judge_only: float | None  # mean of f over the N
    correction: float | None  # mean of Δ over the n

    def as_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "standard_error": self.standard_error,
            "judge_only": self.judge_only,
            "correction": self.correction,
            "questions": self.questions,
            "labelled": self.labelled,
        }


def ppi_mean(
    judge_all: Sequence[float], labelled: Sequence[tuple[float, float]], *, z: float = Z_95
) -> PPIEstimate:
    """The prediction-powered mean: ``judge_all`` is f over all N items, ``labelled`` the
    (human, judge) figures (Y_i, f_i) of the n labelled items, which are among the N."""
    big_n, n = len(judge_all), len(labelled)
    judge_only = math.fsum(judge_all) / big_n if big_n else None
    if not n or judge_only is None:
        return PPIEstimate(None, None, None, None, big_n, n, judge_only, None)
    deltas = [human - judge for human, judge in labelled]
    correction = math.fsum(deltas) / n
    estimate = judge_only + correction
    if n < 2:
        return PPIEstimate(estimate, None, None, None, big_n, n, judge_only, correction)
    var_f = _variance(judge_all)
    var_delta = _variance(deltas)
    judged = [judge for _, judge in labelled]
    mean_judged = math.fsum(judged) / n
    covariance = math.fsum(
        (f - mean_judged) * (d - correction) for f, d in zip(judged, deltas, strict=True)
    ) / (n - 1)
    variance = max(var_f / big_n + var_delta / n + 2 * covariance / big_n, 0.0)
    error = math.sqrt(variance)
    return PPIEstimate(
        estimate,
        error,
        estimate - z * error,
        estimate + z * error,
        big_n,
        n,
        judge_only,
        correction,
    )


def _variance(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)


@dataclass(slots=True)
class HoleFilling:
    """One run's figures with the judge's grades, beside (never inside) its human ones."""

    judge: str
    depth: int
    holes: int = 0  # passages of the top `depth` nobody judged, over the averaged questions
    filled: int = 0  # of those, the ones the judge's grades reach
    questions: int = 0
    labelled: int = 0  # questions without a hole
    judge_filled: dict[str, float | None] = field(default_factory=dict)
    ppi: dict[str, PPIEstimate] = field(default_factory=dict)

    @property
    def note(self) -> str:
        note = (
            f"{self.filled} of {self.holes} hole(s) (passages nobody judged in the top "
            f"{self.depth}) filled by the grades of judge {self.judge!r}; the prediction-powered "
            f"figures correct the judge by the {self.labelled} of {self.questions} question(s) "
            "people judged completely"
        )
        if self.labelled < 2:
            note += " (at least two are needed for an interval, one for an estimate)"
        return note

    def as_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "depth": self.depth,
            "holes": self.holes,
            "holes_filled": self.filled,
            "questions": self.questions,
            "human_labelled_questions": self.labelled,
            "note": self.note,
            "judge_filled": dict(self.judge_filled),
            "ppi": {metric: estimate.as_dict() for metric, estimate in self.ppi.items()},
        }


def filled_metric_names(options: MetricOptions) -> list[str]:
    return [name for name in options.metric_names() if not name.startswith("judged@")]


def fill_holes(
    evaluation: RunEvaluation,
    *,
    gold: Gold,
    run: Run,
    options: MetricOptions,
    judgements: Sequence[AIJudgement],
    judge: str,
) -> HoleFilling:
    """The judge-filled and prediction-powered figures of ``run`` (whose plain figures are
    ``evaluation``), from one judge's ``judgements`` of ``gold``'s questions."""
    by_question: dict[str, list[AIJudgement]] = {}
    for judgement in judgements:
        if judgement.question_id in gold.questions:
            by_question.setdefault(judgement.question_id, []).append(judgement)
    filled_gold = replace(gold, questions=dict(gold.questions))
    judge_gold = replace(gold, questions=dict(gold.questions))
    for question_id, graded in by_question.items():
        question = gold.questions[question_id]
        filled_gold.questions[question_id] = _filled(question, graded, options.min_overlap)
        judge_gold.questions[question_id] = _judge_graded(question, graded, options.min_overlap)
    filled = evaluate_run(gold=filled_gold, run=run, options=options)
    judged = evaluate_run(gold=judge_gold, run=run, options=options)

    result = HoleFilling(judge=judge, depth=options.depth)
    labelled: list[str] = []
    for question_id in evaluation.per_question:
        ranking = run.rankings.get(question_id)
        passages = ranking.passages if ranking is not None else []
        holes = _holes(gold.questions[question_id], passages, options)
        if question_id in by_question and holes:
            left = _holes(filled_gold.questions[question_id], passages, options)
            result.filled += holes - left
        result.holes += holes
        if not holes:
            labelled.append(question_id)
    result.questions = len(evaluation.per_question)
    result.labelled = len(labelled)
    for metric in filled_metric_names(options):
        result.judge_filled[metric] = filled.metrics.get(metric)
        judge_all = [
            value
            for values in judged.per_question.values()
            if (value := values.get(metric)) is not None
        ]
        pairs = [
            (human, judge_value)
            for question_id in labelled
            if (human := evaluation.per_question[question_id].get(metric)) is not None
            and (judge_value := judged.per_question[question_id].get(metric)) is not None
        ]
        result.ppi[metric] = ppi_mean(judge_all, pairs)
    return result


def _holes(question: GoldQuestion, passages, options: MetricOptions) -> int:
    """Passages of the top ``options.depth`` that reach nothing judged."""
    documents, grades = _index(question, unreachable=set())
    _, judged_ranks, looked_at = _credit(
        documents,
        grades,
        passages,
        depth=options.depth,
        min_overlap=options.min_overlap,
        threshold=options.threshold,
    )
    return looked_at - len(judged_ranks)


def _overlaps(a_start, a_end, b_start, b_end, min_overlap: int) -> bool:
    """The reach rule between two stretches of one document (no offsets: the whole of it)."""
    if a_start is None or b_start is None:
        length = (a_end - a_start) if a_start is not None else None
        if length is None and b_start is not None:
            length = b_end - b_start
        return length is None or length >= min_overlap
    return min(a_end, b_end) - max(a_start, b_start) >= min_overlap


def _as_span(judgement: AIJudgement) -> GoldSpan:
    doc_id, start, end = judgement.passage
    return GoldSpan(doc_id, start, end, judgement.grade)


def _filled(question: GoldQuestion, graded: list[AIJudgement], min_overlap: int) -> GoldQuestion:
    """The question with each judged-by-the-judge passage no person judged added as a span."""
    people = _by_document([(s.doc_id, s.start, s.end) for s in question.spans])
    for doc_id, start, end in question.judged:
        people.setdefault(doc_id, []).append((start, end))
    added = tuple(
        _as_span(j)
        for j in graded
        if not any(
            _overlaps(start, end, j.passage.start, j.passage.end, min_overlap)
            for start, end in people.get(j.passage.doc_id, ())
        )
    )
    return replace(question, spans=question.spans + added) if added else question


def _by_document(stretches) -> dict[str, list[tuple[int | None, int | None]]]:
    found: dict[str, list[tuple[int | None, int | None]]] = {}
    for doc_id, start, end in stretches:
        found.setdefault(doc_id, []).append((start, end))
    return found


def _judge_graded(
    question: GoldQuestion, graded: list[AIJudgement], min_overlap: int
) -> GoldQuestion:
    """The question with the judge's grade wherever it gave one: its passages replace the human
    spans they overlap."""
    judged = _by_document(j.passage for j in graded)
    kept = tuple(
        span
        for span in question.spans
        if not any(
            _overlaps(span.start, span.end, start, end, min_overlap)
            for start, end in judged.get(span.doc_id, ())
        )
    )
    return replace(
        question,
        spans=kept + tuple(_as_span(j) for j in graded),
        judged=question.judged + tuple(j.passage for j in graded),
    )
