"""The misses of a production sample, and what they say about production: Django-free.

For each labelled question of a sample: the gold evidence the production system did not
retrieve in the top k it sent to the model (and where a built-in retriever found it), its
recall@k and reciprocal rank; over the sample, production recall@k and MRR estimated with the
inclusion weights (`goldeval.scoring.sampling.weighted_mean`, Hájek, stratified intervals), so a
sample that over-draws negative feedback still estimates the whole of production; and the
unanswerable questions production answered instead of refusing.

The span rules are the metrics' (`goldeval.scoring.metrics`): a passage reaches a span when they
overlap in the same document, each span is credited once. A passage's offsets are in the version
it names, else the version current when the trace occurred; where that is not the version of
the question's gold spans of the document, the passage is placed on the gold's version first
(`place_on`: its text found again with `goldeval.text.anchoring`), so offsets of one version never
meet spans of another by accident. A passage whose text is not found there reaches nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan
from goldeval.formats.runfiles import Passage
from goldeval.formats.runs import Ranking, Run
from goldeval.scoring.metrics import MetricOptions, evaluate_run, first_reaching_ranks
from goldeval.scoring.sampling import Estimate, Observation, weighted_mean
from goldeval.text.anchoring import locate

MRR_CUTOFF = 10


def place_on(passage: Passage, *, text: str, onto: str) -> Passage | None:
    """``passage``, whose offsets are in ``text`` (one version of its document), placed on
    ``onto`` (another version of it): where its text is found again (exactly, nearest its old
    offset, else fuzzily above `goldeval.text.anchoring`'s floor). None when it is not there: the
    passage reaches nothing in that version. A whole-document passage stays as it is."""
    if passage.start is None or passage.end is None:
        return passage
    found = locate(text[passage.start : passage.end], onto, near=passage.start)
    if found is None:
        return None
    return Passage(passage.doc_id, found.start, found.end)


def unplaced(doc_id: str) -> Passage:
    """A passage that reaches nothing (an empty stretch): it keeps its rank in the ranking."""
    return Passage(doc_id, 0, 0)


@dataclass(frozen=True)
class SampledQuestion:
    question_id: str
    text: str
    trace_id: str
    probability: float
    stratum: str
    answerable: bool | None  # None: not decided yet (still being labelled)
    spans: tuple[GoldSpan, ...]
    production: tuple[Passage, ...]  # ranked, as the trace logged it
    refused: bool | None
    answered: bool  # production gave an answer (not refused, with text)
    built_in: dict[str, Sequence[Passage]] = field(default_factory=dict)  # retriever → ranking
    unplaced: int = 0  # production passages whose text is not in the gold's version


@dataclass(frozen=True)
class Miss:
    span: GoldSpan
    production_rank: int | None  # reached, but below k; None: not in what production logged
    found_by: tuple[tuple[str, int], ...]  # (built-in retriever, rank)


@dataclass(frozen=True)
class QuestionMisses:
    question: SampledQuestion
    recall: float | None
    reciprocal_rank: float
    misses: tuple[Miss, ...]


@dataclass
class MissesReport:
    k: int
    questions: int  # sampled
    decided: int  # labelled far enough to count
    answerable: int
    recall: Estimate
    mrr: Estimate
    per_question: list[QuestionMisses]
    answered_unanswerable: list[SampledQuestion]
    unanswerable: int
    unplaced: int = 0

    @property
    def missed(self) -> list[QuestionMisses]:
        return [q for q in self.per_question if q.misses]


def _gold_question(q: SampledQuestion) -> GoldQuestion:
    return GoldQuestion(
        question_id=q.question_id, question=q.text, answerable=bool(q.answerable), spans=q.spans
    )


def misses_report(questions: Sequence[SampledQuestion], *, k: int) -> MissesReport:
    decided = [q for q in questions if q.answerable is not None]
    answerable = [q for q in decided if q.answerable]
    gold = Gold(questions={q.question_id: _gold_question(q) for q in decided})
    run = Run(
        name="production",
        rankings={q.question_id: Ranking(list(q.production), q.refused) for q in decided},
    )
    options = MetricOptions(ks=(k,), mrr_cutoff=MRR_CUTOFF)
    scores = evaluate_run(gold=gold, run=run, options=options).per_question if decided else {}
    per_question = []
    for q in answerable:
        gq = gold.questions[q.question_id]
        ranks = first_reaching_ranks(gq, q.production, depth=max(k, len(q.production)))
        misses = []
        for span, rank in zip(gq.spans, ranks, strict=True):
            if span.grade < 1 or (rank is not None and rank <= k):
                continue
            alone = GoldQuestion(q.question_id, q.text, True, (span,))
            found = []
            for name, ranking in sorted(q.built_in.items()):
                (hit,) = first_reaching_ranks(alone, ranking, depth=len(ranking))
                if hit is not None:
                    found.append((name, hit))
            misses.append(Miss(span, rank, tuple(found)))
        metrics = scores.get(q.question_id, {})
        per_question.append(
            QuestionMisses(
                question=q,
                recall=metrics.get(f"recall@{k}"),
                reciprocal_rank=metrics.get(f"mrr@{MRR_CUTOFF}", 0.0),
                misses=tuple(misses),
            )
        )
    # Every sampled question stays in its stratum (a zero-weight member outside the domain),
    # so the intervals keep the design's stratum sizes.
    by_id = {row.question.question_id: row for row in per_question}

    def observations(value) -> list[Observation]:
        return [
            Observation(
                value(by_id[q.question_id]) if q.question_id in by_id else None,
                q.probability,
                q.stratum,
            )
            for q in questions
        ]

    unanswerable = [q for q in decided if q.answerable is False]
    return MissesReport(
        k=k,
        questions=len(questions),
        decided=len(decided),
        answerable=len(answerable),
        recall=weighted_mean(observations(lambda row: row.recall)),
        mrr=weighted_mean(observations(lambda row: row.reciprocal_rank)),
        per_question=per_question,
        answered_unanswerable=[q for q in unanswerable if q.answered],
        unanswerable=len(unanswerable),
        unplaced=sum(q.unplaced for q in answerable),
    )


def _estimate(estimate: Estimate) -> dict:
    return {
        "mean": estimate.mean,
        "low": estimate.low,
        "high": estimate.high,
        "n": estimate.n,
        "defined": estimate.defined,
    }


def _span(span: GoldSpan) -> dict:
    return {
        "doc_id": span.doc_id,
        "version": span.version,
        "start": span.start,
        "end": span.end,
        "grade": span.grade,
        "quote": span.quote,
    }


def report_content(report: MissesReport) -> dict:
    """What the misses page shows of a report, as JSON (stored by the job that computes it)."""
    return {
        "k": report.k,
        "questions": report.questions,
        "decided": report.decided,
        "answerable": report.answerable,
        "unanswerable": report.unanswerable,
        "unplaced": report.unplaced,
        "recall": _estimate(report.recall),
        "mrr": _estimate(report.mrr),
        "missed": [
            {
                "text": row.question.text,
                "question_id": row.question.question_id,
                "trace_id": row.question.trace_id,
                "recall": row.recall,
                "reciprocal_rank": row.reciprocal_rank,
                "misses": [
                    {
                        "span": _span(miss.span),
                        "production_rank": miss.production_rank,
                        "found_by": [list(found) for found in miss.found_by],
                    }
                    for miss in row.misses
                ],
            }
            for row in report.missed
        ],
        "answered_unanswerable": [
            {"text": q.text, "question_id": q.question_id, "trace_id": q.trace_id}
            for q in report.answered_unanswerable
        ],
    }
