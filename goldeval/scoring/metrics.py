"""Span-based retrieval metrics: recall@k, precision@k, MRR, nDCG@k and judged@k.

Why our own code rather than trec_eval / pytrec_eval: those match retrieved ids against judged
ids. Goldset's relevant units are character spans of a document, and a retrieved passage earns
credit by *overlapping* a span, whatever chunking produced it. Each span is credited once, so
five near-duplicate chunks of one paragraph earn nothing extra, and labels survive re-chunking.
On document-level data (whole-document spans and passages) the figures equal trec_eval's, which
tests/goldeval/scoring/test_trec_eval.py checks against trec_eval's own test files.

Semantics (DESIGN.md §3):
- answerability is the gold's verdict (`GoldQuestion.answerable`: a span of grade >= 1 or the
  question's verdict), whatever the threshold. Unanswerable questions are reported apart.
- relevant units of a question: its gold spans with grade >= ``threshold``. An answerable
  question without any keeps its place: recall@k is undefined (None, left out of the recall
  mean and counted in `RunEvaluation.recall_undefined`), precision@k and MRR are 0, nDCG as
  always.
- conventions (`COMPATS`): "goldset" averages over the answerable questions, a question missing
  from the run scoring 0. "trec_eval" reproduces trec_eval's query set and means: the questions
  in both the run and the gold set, a question without relevant units scoring 0 on every
  measure; "trec_eval-c" (trec_eval -c) averages over every question of the gold set, missing
  ones scoring 0.
- a passage reaches a span when both sit in the same document and overlap by at least
  ``min_overlap`` characters. Its grade is the highest grade among the spans it reaches that no
  earlier passage reached.
- recall@k: relevant units reached in the top k / relevant units.
- precision@k: passages in the top k whose grade is >= threshold, divided by k.
- mrr@c: 1 / rank of the first passage whose grade is >= threshold, within the top c, else 0.
- ndcg@k: gain (2**g - 1) (or g, "linear", trec_eval's) / log2(rank + 1), ranks from 1. As in
  trec_eval, every grade >= 1 carries gain whatever the threshold; the ideal DCG takes the grades
  of all the question's spans of grade >= 1, retrieved or not, sorted descending, cut at k.
- max_passages (trec_eval -M): a ranking counts only its first N passages, for every measure.
- judged@k: share of the top-k passages that overlap a judged passage or a gold span (how far a
  system strays outside the labelled pool); its divisor is the number of passages in the top k.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan, Passage
from goldeval.formats.runfiles import WholeDocuments
from goldeval.formats.runs import Ranking, Run

Gain = Literal["exp", "linear"]
COMPATS = ("goldset", "trec_eval", "trec_eval-c")
CONVENTIONS = {
    "goldset": (
        "goldset: means over the gold set's answerable questions (a question missing from the "
        "run scores 0; recall@k over those with units at the threshold); unanswerable questions "
        "reported apart"
    ),
    "trec_eval": (
        "trec_eval: means over the questions in both the run and the gold set; a question "
        "without relevant units scores 0"
    ),
    "trec_eval-c": (
        "trec_eval -c: means over every question of the gold set; a question missing from the "
        "run or without relevant units scores 0"
    ),
}


@dataclass(frozen=True, slots=True)
class MetricOptions:
    ks: tuple[int, ...] = (1, 3, 5, 10)
    gain: Gain = "exp"
    threshold: int = 1
    mrr_cutoff: int = 10
    min_overlap: int = 1
    compat: str = "goldset"  # one of COMPATS
    # trec_eval's -M: only the first N passages of each ranking are scored (None: all).
    max_passages: int | None = None

    def __post_init__(self) -> None:
        if self.compat not in COMPATS:
            raise ValueError(f"compat must be one of {', '.join(COMPATS)}")
        if not self.ks or any(k < 1 for k in self.ks):
            raise ValueError("every k must be a positive integer")
        if self.gain not in ("exp", "linear"):
            raise ValueError("gain must be 'exp' or 'linear'")
        if self.threshold < 1:
            raise ValueError("the relevance threshold must be at least 1 (grade 0 = not relevant)")
        if self.mrr_cutoff < 1 or self.min_overlap < 1:
            raise ValueError("the MRR cut-off and the minimum overlap must be at least 1")
        if self.max_passages is not None and self.max_passages < 1:
            raise ValueError("the maximum number of passages per question must be at least 1")

    @property
    def depth(self) -> int:
        """How many passages of a ranking any metric looks at."""
        depth = max(*self.ks, self.mrr_cutoff)
        return depth if self.max_passages is None else min(depth, self.max_passages)

    def metric_names(self) -> list[str]:
        ks = sorted(set(self.ks))
        names = [f"recall@{k}" for k in ks] + [f"precision@{k}" for k in ks]
        names.append(f"mrr@{self.mrr_cutoff}")
        names += [f"ndcg@{k}" for k in ks] + [f"judged@{k}" for k in ks]
        return names


@dataclass(slots=True)
class UnanswerableReport:
    questions: int
    # Share of unanswerable questions the run refused; None when the run does not say.
    refusal_accuracy: float | None
    # Share of answerable questions the run refused; None when the run does not say.
    wrongly_refused: float | None


@dataclass(slots=True)
class RunEvaluation:
    questions: int
    answerable: int
    missing: int
    metrics: dict[str, float | None]
    unanswerable: UnanswerableReport
    # Metric values of each question in the means (answerable ones by default); missing
    # questions score 0; recall@k is None where undefined.
    per_question: dict[str, dict[str, float | None]] = field(default_factory=dict)
    refused: dict[str, bool] = field(default_factory=dict)
    missing_questions: list[str] = field(default_factory=list)
    unanswerable_questions: list[str] = field(default_factory=list)
    # Answerable questions without units at the threshold: left out of the recall@k means.
    recall_undefined: int = 0
    compat: str = "goldset"

    @property
    def convention(self) -> str:
        return CONVENTIONS[self.compat]


# --- the gold side, compiled per question for each run -----------------------------------------


class _RangedDocument:
    """A document where some span or judged passage has offsets: found by an overlap scan."""

    __slots__ = ("whole_units", "ranged_units", "judged_whole", "judged_ranges")

    def __init__(self) -> None:
        self.whole_units: tuple[int, ...] = ()
        # (start, end, unit), sorted by start, so a passage's scan stops at its own end.
        self.ranged_units: list[tuple[int, int, int]] = []
        self.judged_whole = False
        self.judged_ranges: list[tuple[int, int]] = []

    def reach(self, start: int | None, end: int | None, min_overlap: int) -> tuple[list[int], bool]:
        """Units a passage reaches here, and whether it overlaps anything judged."""
        if start is None or end is None:
            # A whole-document passage covers every span of the document.
            units = [*self.whole_units]
            units += [unit for s, e, unit in self.ranged_units if e - s >= min_overlap]
            judged = self.judged_whole or any(e - s >= min_overlap for s, e in self.judged_ranges)
            return units, judged
        long_enough = end - start >= min_overlap
        units = [*self.whole_units] if long_enough else []
        for s, e, unit in self.ranged_units:
            if s >= end:
                break
            if min(e, end) - max(s, start) >= min_overlap:
                units.append(unit)
        judged = self.judged_whole and long_enough
        if not judged:
            for s, e in self.judged_ranges:
                if s >= end:
                    break
                if min(e, end) - max(s, start) >= min_overlap:
                    judged = True
                    break
        return units, judged


# Per document of a question: a tuple of unit numbers when everything judged there is the whole
# document (the document-level fast path: one dict lookup, no overlap search), else a
# _RangedDocument.
_DocumentEntry = tuple[int, ...] | _RangedDocument


@dataclass(slots=True)
class _CompiledQuestion:
    documents: dict[str, _DocumentEntry]
    grades: list[int]  # grade of each unit (a span of grade >= 1)
    relevant: int  # units with grade >= threshold
    ideal_dcg: list[float]  # per k of options.ks


def _compile(
    question: GoldQuestion,
    *,
    options: MetricOptions,
    gains: dict[int, float],
    unreachable: set[tuple[str, GoldSpan]],
) -> _CompiledQuestion:
    documents, grades = _index(question, unreachable=unreachable)
    # Ideal DCG: every unit's gain, best first, as if all were ranked at the top.
    ideal_gains = sorted((gains[grade] for grade in grades), reverse=True)
    prefix = [0.0]
    for i, gain in enumerate(ideal_gains[: max(options.ks)]):
        prefix.append(prefix[-1] + gain / math.log2(i + 2))
    ideal_dcg = [prefix[min(k, len(prefix) - 1)] for k in options.ks]
    relevant = sum(1 for grade in grades if grade >= options.threshold)
    return _CompiledQuestion(documents, grades, relevant, ideal_dcg)


def _index(
    question: GoldQuestion, *, unreachable: set[tuple[str, GoldSpan]]
) -> tuple[dict[str, _DocumentEntry], list[int]]:
    """Per document, what a passage there can reach; and the grade of each unit, numbered in
    the order of the question's spans of grade >= 1."""
    whole: dict[str, tuple[int, ...]] = {}
    ranged: dict[str, _RangedDocument] = {}
    grades: list[int] = []
    for span in question.spans:
        doc_id = span.doc_id
        unit = None
        if span.grade >= 1:
            unit = len(grades)
            grades.append(span.grade)
            # A span whose quote was lost in a newer version stays in the denominators, so a
            # failed re-anchoring lowers the scores rather than silently raising them.
            if unreachable and (question.question_id, span) in unreachable:
                unit = None
        if span.start is None:
            units = whole.get(doc_id, ())
            whole[doc_id] = units if unit is None else (*units, unit)
        else:
            document = ranged.get(doc_id) or ranged.setdefault(doc_id, _RangedDocument())
            document.judged_ranges.append((span.start, span.end))
            if unit is not None:
                document.ranged_units.append((span.start, span.end, unit))
    for doc_id, start, end in question.judged:
        if start is None:
            whole.setdefault(doc_id, ())
        else:
            document = ranged.get(doc_id) or ranged.setdefault(doc_id, _RangedDocument())
            document.judged_ranges.append((start, end))
    documents: dict[str, _DocumentEntry] = dict(whole)
    for doc_id, document in ranged.items():
        units = whole.get(doc_id)
        if units is not None:
            document.whole_units = units
            document.judged_whole = True
        document.ranged_units.sort()
        document.judged_ranges.sort()
        documents[doc_id] = document
    return documents, grades


def _gain_table(grades: Iterable[int], gain: Gain) -> dict[int, float]:
    if gain == "exp":
        return {grade: float(2**grade - 1) for grade in grades}
    return {grade: float(grade) for grade in grades}


# --- scoring one ranking ------------------------------------------------------------------------


def _credit(
    documents: dict[str, _DocumentEntry],
    grades: list[int],
    passages: Sequence[Passage],
    *,
    depth: int,
    min_overlap: int,
    threshold: int,
    first_ranks: list[int | None] | None = None,
) -> tuple[list[tuple[int, int, int]], list[int], int]:
    """Walk the top of a ranking once; this loop is where the time goes on large runs.

    Returns the passages that earned credit as (rank, grade, relevant units newly reached), the
    ranks of judged passages (both 0-based, ascending), and how many passages were looked at.
    With ``first_ranks`` (one slot per unit), each unit's slot gets the rank that reached it.
    """
    reached: set[int] = set()
    hits: list[tuple[int, int, int]] = []
    judged_ranks: list[int] = []
    find = documents.get
    if passages.__class__ is WholeDocuments:
        # A TREC ranking: look its doc ids up directly (in C), no passage made; only the
        # judged ones reach the loop below.
        top_ids = passages.doc_ids[:depth]
        looked_at = len(top_ids)
        judged_at: Iterable = (
            (rank, entry, None, None)
            for rank, entry in enumerate(map(find, top_ids))
            if entry is not None
        )
    else:
        top = passages[:depth]
        looked_at = len(top)
        judged_at = (
            (rank, entry, start, end)
            for rank, (doc_id, start, end) in enumerate(top)
            if (entry := find(doc_id)) is not None  # most documents: nobody judged them
        )
    for rank, entry, start, end in judged_at:
        if entry.__class__ is tuple:
            if start is not None and end - start < min_overlap:
                continue
            judged_ranks.append(rank)
            if len(entry) == 1:
                unit = entry[0]
                if unit not in reached:
                    reached.add(unit)
                    if first_ranks is not None:
                        first_ranks[unit] = rank
                    grade = grades[unit]
                    hits.append((rank, grade, 1 if grade >= threshold else 0))
                continue
            units = entry
        else:
            units, judged = entry.reach(start, end, min_overlap)
            if judged:
                judged_ranks.append(rank)
        new_units = [unit for unit in units if unit not in reached]
        if new_units:
            reached.update(new_units)
            if first_ranks is not None:
                for unit in new_units:
                    first_ranks[unit] = rank
            new_grades = [grades[unit] for unit in new_units]
            relevant = sum(1 for grade in new_grades if grade >= threshold)
            hits.append((rank, max(new_grades), relevant))
    return hits, judged_ranks, looked_at


def first_reaching_ranks(
    question: GoldQuestion, passages: Sequence[Passage], *, depth: int, min_overlap: int = 1
) -> list[int | None]:
    """For each of the question's spans, the 1-based rank of the first of the top ``depth``
    passages that reaches it; None when none does, and for spans of grade 0 (no unit).

    The rule the metrics credit by, through their own walk: a passage reaches a span when both
    sit in the same document and overlap by at least ``min_overlap`` characters (no offsets: the
    whole document), and each span is credited once, at its first reaching rank. So recall@k is
    the share of relevant spans whose rank is at most k. Re-anchoring is the caller's: spans the
    reader could not re-anchor get a rank here like any other.
    """
    documents, grades = _index(question, unreachable=set())
    unit_ranks: list[int | None] = [None] * len(grades)
    _credit(
        documents,
        grades,
        passages,
        depth=depth,
        min_overlap=min_overlap,
        threshold=1,
        first_ranks=unit_ranks,
    )
    ranks: list[int | None] = []
    units = iter(unit_ranks)  # one unit per span of grade >= 1, in span order
    for span in question.spans:
        rank = next(units) if span.grade >= 1 else None
        ranks.append(None if rank is None else rank + 1)
    return ranks


def passages_reaching_gold(
    question: GoldQuestion, passages: Sequence[Passage], *, min_overlap: int = 1
) -> list[bool]:
    """For each passage, whether it reaches any of the question's spans of grade >= 1: the
    metrics' reach rule without crediting a span once (the answer scores ask, of every citation
    and context passage, whether it touches gold evidence)."""
    documents, _ = _index(question, unreachable=set())
    reached: list[bool] = []
    for doc_id, start, end in passages:
        entry = documents.get(doc_id)
        if entry is None:
            reached.append(False)
        elif entry.__class__ is tuple:
            reached.append(bool(entry) and (start is None or end - start >= min_overlap))
        else:
            units, _ = entry.reach(start, end, min_overlap)
            reached.append(bool(units))
    return reached


def _score_ranking(
    compiled: _CompiledQuestion,
    passages: Sequence[Passage],
    *,
    options: MetricOptions,
    gains: dict[int, float],
    discounts: list[float],
) -> dict[str, float | None]:
    threshold = options.threshold
    hits, judged_ranks, looked_at = _credit(
        compiled.documents,
        compiled.grades,
        passages,
        depth=options.depth,
        min_overlap=options.min_overlap,
        threshold=threshold,
    )
    reciprocal_rank = 0.0
    for rank, grade, _ in hits:
        if grade >= threshold:
            if rank < options.mrr_cutoff:
                reciprocal_rank = 1.0 / (rank + 1)
            break
    values: dict[str, float | None] = {}
    relevant_units = compiled.relevant
    # Without units at the threshold recall is undefined (0 under trec_eval's conventions).
    no_recall = None if options.compat == "goldset" else 0.0
    for (k, recall, precision, ndcg, judged), ideal_dcg in zip(
        _names_per_k(options), compiled.ideal_dcg, strict=True
    ):
        reached_relevant = 0
        relevant_passages = 0
        dcg = 0.0
        for rank, grade, relevant in hits:
            if rank >= k:
                break
            reached_relevant += relevant
            if grade >= threshold:
                relevant_passages += 1
            dcg += gains[grade] * discounts[rank]
        values[recall] = reached_relevant / relevant_units if relevant_units else no_recall
        values[precision] = relevant_passages / k
        values[ndcg] = dcg / ideal_dcg if ideal_dcg else 0.0
        shown = min(k, looked_at)
        values[judged] = bisect_left(judged_ranks, k) / shown if shown else 0.0
    values[f"mrr@{options.mrr_cutoff}"] = reciprocal_rank
    return values


@lru_cache(maxsize=32)
def _names_per_k(options: MetricOptions) -> tuple[tuple[int, str, str, str, str], ...]:
    return tuple(
        (k, f"recall@{k}", f"precision@{k}", f"ndcg@{k}", f"judged@{k}") for k in options.ks
    )


# --- a whole run --------------------------------------------------------------------------------


def evaluate_run(*, gold: Gold, run: Run, options: MetricOptions) -> RunEvaluation:
    """Score one run against the gold set; what is averaged follows ``options.compat``."""
    all_grades = {span.grade for q in gold.questions.values() for span in q.spans if span.grade > 0}
    gains = _gain_table(all_grades, options.gain)
    # As deep as the longest ranking, never the cut-off: cost follows the run (a k of a billion
    # over a five-line run is five discounts).
    longest = max((len(ranking.passages) for ranking in run.rankings.values()), default=0)
    discounts = [1.0 / math.log2(rank + 2) for rank in range(min(options.depth, longest))]
    unreachable = {(item.question_id, item.span) for item in gold.unanchored}
    names = options.metric_names()
    compat = options.compat
    zero: dict[str, float | None] = dict.fromkeys(names, 0.0)
    no_units = dict(zero)  # a missing question without units at the threshold
    if compat == "goldset":
        no_units.update(dict.fromkeys((n for n in names if n.startswith("recall@")), None))

    per_question: dict[str, dict[str, float | None]] = {}
    missing_questions: list[str] = []
    refused: dict[str, bool] = {}
    unanswerable_ids: list[str] = []
    reports_refusals = run.reports_refusals
    answerable = 0
    for question_id, question in gold.questions.items():
        ranking: Ranking | None = run.rankings.get(question_id)
        if ranking is None:
            missing_questions.append(question_id)
        elif reports_refusals:
            refused[question_id] = bool(ranking.refused)
        # The gold's verdict, never the threshold's (DESIGN.md §3).
        if question.answerable:
            answerable += 1
        else:
            unanswerable_ids.append(question_id)
        averaged = question.answerable if compat == "goldset" else True
        if not averaged or (ranking is None and compat == "trec_eval"):
            continue
        compiled = _compile(question, options=options, gains=gains, unreachable=unreachable)
        if ranking is None:
            per_question[question_id] = dict(zero if compiled.relevant else no_units)
            continue
        per_question[question_id] = _score_ranking(
            compiled, ranking.passages, options=options, gains=gains, discounts=discounts
        )

    metrics: dict[str, float | None] = {}
    for name in names:
        values = [v[name] for v in per_question.values() if v[name] is not None]
        metrics[name] = math.fsum(values) / len(values) if values else None
    recall_undefined = 0
    if per_question and compat == "goldset":
        first_recall = f"recall@{min(options.ks)}"
        recall_undefined = sum(1 for v in per_question.values() if v[first_recall] is None)
    refusal_accuracy = wrongly_refused = None
    if reports_refusals:
        if unanswerable_ids:
            refusal_accuracy = sum(refused.get(q, False) for q in unanswerable_ids) / len(
                unanswerable_ids
            )
        if answerable:
            answerable_ids = (q for q, item in gold.questions.items() if item.answerable)
            wrongly_refused = sum(refused.get(q, False) for q in answerable_ids) / answerable
    return RunEvaluation(
        questions=len(gold.questions),
        answerable=answerable,
        missing=len(missing_questions),
        metrics=metrics,
        unanswerable=UnanswerableReport(
            questions=len(unanswerable_ids),
            refusal_accuracy=refusal_accuracy,
            wrongly_refused=wrongly_refused,
        ),
        per_question=per_question,
        refused=refused,
        missing_questions=missing_questions,
        unanswerable_questions=unanswerable_ids,
        recall_undefined=recall_undefined,
        compat=compat,
    )
