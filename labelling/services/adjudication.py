"""Agreement, the adjudication queue and lead resolutions.

Reads here gather the votes of a question set (every pool of it); the statistics come from
`labelling.agreement` and the rule from `labelling.resolution`, both free of Django. What the
votes make the gold of a question set is `labelling.services.gold`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction

from goldset.errors import ServiceError
from labelling import agreement
from labelling.models import (
    Assignment,
    Candidate,
    Judgement,
    Pool,
    Question,
    QuestionSet,
    Resolution,
    Span,
    VerdictOutcome,
)
from labelling.resolution import (
    DEFAULT_MIN_SPAN_F1,
    Decision,
    Pending,
    VerdictDecision,
    Vote,
    resolve_item,
    resolve_verdict,
    union,
)


@dataclass
class ItemVotes:
    """Everything known about one candidate of one question in one pool."""

    pool: Pool
    question: Question
    candidate: Candidate
    planned_votes: int
    judgements: list[Judgement] = field(default_factory=list)
    resolution: Resolution | None = None

    @property
    def votes(self) -> list[Vote]:
        return [
            Vote(
                labeller=j.assignment.labeller.get_username() if j.assignment.labeller else "?",
                grade=j.grade,
                spans=tuple((s.start, s.end) for s in j.spans.all()),
            )
            for j in self.judgements
        ]

    def decide(self, *, min_span_f1: float) -> Decision | Pending:
        resolved = None
        if self.resolution is not None and self.resolution.grade is not None:
            resolved = Decision(
                grade=self.resolution.grade,
                spans=tuple((s.start, s.end) for s in self.resolution.spans.all()),
                source="resolved",
            )
        return resolve_item(
            self.votes,
            planned_votes=self.planned_votes,
            resolution=resolved,
            min_span_f1=min_span_f1,
        )


@dataclass
class QuestionVotes:
    pool: Pool
    question: Question
    assignments: list[Assignment]
    items: list[ItemVotes]
    resolution: Resolution | None = None

    @property
    def outcomes(self) -> list[str]:
        return finished_outcomes(self.assignments)

    def decide_verdict(self) -> VerdictDecision | Pending:
        resolved = self.resolution.outcome if self.resolution and self.resolution.outcome else None
        return resolve_verdict(
            self.outcomes, planned_votes=len(self.assignments), resolution=resolved
        )


def finished_outcomes(assignments: Sequence[Assignment]) -> list[str]:
    """Verdicts of finished assignments; finishing without a mark means answerable."""
    outcomes = []
    for assignment in assignments:
        verdict = getattr(assignment, "verdict", None)
        if verdict is not None:
            outcomes.append(verdict.outcome)
        elif assignment.completed_at is not None:
            outcomes.append(VerdictOutcome.ANSWERABLE)
    return outcomes


def gather_votes(
    *,
    question_set: QuestionSet,
    pool_id: int | None = None,
    question_id: int | None = None,
    candidate_id: int | None = None,
) -> list[QuestionVotes]:
    """Every pooled question of the set with its assignments, judgements and resolutions.

    With ``pool_id`` and ``question_id``, only that question is read (and of its candidates
    only ``candidate_id``, if given): see `question_votes` and `item_votes`.
    """
    pools = list(question_set.pools.all())
    assigned = Assignment.objects.filter(pool__in=pools)
    judged = Judgement.objects.filter(assignment__pool__in=pools)
    resolved = Resolution.objects.filter(pool__in=pools)
    candidates = Candidate.objects.filter(pool__in=pools)
    if pool_id is not None or question_id is not None:
        # The adjudication pages need one question, not the set: read only its rows.
        one = {"pool_id": pool_id, "question_id": question_id}
        assigned = assigned.filter(**one)
        resolved = resolved.filter(**one)
        candidates = candidates.filter(**one)
        judged = judged.filter(candidate__pool_id=pool_id, candidate__question_id=question_id)
        if candidate_id is not None:
            candidates = candidates.filter(pk=candidate_id)
            judged = judged.filter(candidate_id=candidate_id)
    assignments = defaultdict(list)
    for assignment in assigned.select_related("labeller", "verdict").order_by("slot"):
        assignments[(assignment.pool_id, assignment.question_id)].append(assignment)
    judgements = defaultdict(list)
    for judgement in (
        judged.select_related("assignment__labeller", "guideline")
        .prefetch_related("spans")
        .order_by("assignment__slot")
    ):
        judgements[judgement.candidate_id].append(judgement)
    resolutions = {
        (r.pool_id, r.question_id, r.candidate_id): r for r in resolved.prefetch_related("spans")
    }
    by_question: dict[tuple[int, int], QuestionVotes] = {}
    candidates = candidates.select_related("pool", "question", "version__document").order_by(
        "pool_id", "question_id", "shuffle_rank"
    )
    for candidate in candidates:
        key = (candidate.pool_id, candidate.question_id)
        if key not in by_question:
            by_question[key] = QuestionVotes(
                pool=candidate.pool,
                question=candidate.question,
                assignments=assignments.get(key, []),
                items=[],
                resolution=resolutions.get((*key, None)),
            )
        by_question[key].items.append(
            ItemVotes(
                pool=candidate.pool,
                question=candidate.question,
                candidate=candidate,
                planned_votes=len(assignments.get(key, [])),
                judgements=judgements.get(candidate.pk, []),
                resolution=resolutions.get((*key, candidate.pk)),
            )
        )
    return [q for q in by_question.values() if q.assignments]


# Agreement ---------------------------------------------------------------------------------


def _pair_key(item: ItemVotes) -> str:
    names = sorted(
        j.assignment.labeller.get_username() for j in item.judgements if j.assignment.labeller
    )
    return " & ".join(names)


def _guideline_key(item: ItemVotes) -> str:
    versions = sorted(
        {f"v{j.guideline.version}" if j.guideline else "none" for j in item.judgements}
    )
    return " + ".join(versions)


def agreement_report(
    *, question_set: QuestionSet, min_span_f1: float = DEFAULT_MIN_SPAN_F1, n_boot: int = 1000
) -> dict:
    """Every agreement statistic for the double-labelled items of a question set, JSON-able."""
    questions = gather_votes(question_set=question_set)
    double = [i for q in questions for i in q.items if len(i.judgements) == 2]
    pairs = [(i.judgements[0].grade, i.judgements[1].grade) for i in double]
    report = agreement.pairwise_report(pairs, n_boot=n_boot)
    # Krippendorff's alpha over every labeller, with missing values, not only one pair.
    labellers = sorted({j.assignment.labeller_id for i in double for j in i.judgements})
    matrix = [
        [
            next((j.grade for j in i.judgements if j.assignment.labeller_id == lab), None)
            for i in double
        ]
        for lab in labellers
    ]
    if len(labellers) > 2:
        for level in ("ordinal", "nominal"):
            alpha = agreement.krippendorff_alpha(matrix, level=level, n_boot=n_boot)
            report[f"alpha_{level}"] = alpha.value
            report[f"alpha_{level}_ci"] = [alpha.low, alpha.high] if alpha.has_interval else None
        report["guideline_needs_rewrite"] = (
            report["alpha_ordinal"] is not None
            and report["alpha_ordinal"] < agreement.GUIDELINE_ALPHA_THRESHOLD
        )
    report["labellers"] = len(labellers)
    report["pairs"] = [
        {
            "labellers": key,
            **agreement.pairwise_report(
                [(i.judgements[0].grade, i.judgements[1].grade) for i in items], n_boot=0
            ),
        }
        for key, items in _grouped(double, _pair_key).items()
    ]
    report["per_guideline_version"] = [
        {
            "guideline": key,
            **agreement.pairwise_report(
                [(i.judgements[0].grade, i.judgements[1].grade) for i in items], n_boot=0
            ),
        }
        for key, items in _grouped(double, _guideline_key).items()
    ]
    report["per_question"] = [
        {
            "question_id": q.question.external_id,
            "question": q.question.text,
            "items": len(items),
            "disagreements": sum(
                1 for i in items if i.judgements[0].grade != i.judgements[1].grade
            ),
            "percent": agreement.percent_agreement(
                [(i.judgements[0].grade, i.judgements[1].grade) for i in items], n_boot=0
            ).value,
        }
        for q in questions
        if (items := [i for i in q.items if len(i.judgements) == 2])
    ]
    report["per_question"].sort(key=lambda row: (-row["disagreements"], row["question_id"]))
    f1 = agreement.mean_span_f1(
        [
            tuple(
                agreement.GradedSpans(
                    grade=j.grade, spans=tuple((s.start, s.end) for s in j.spans.all())
                )
                for j in i.judgements
            )
            for i in double
        ],
        n_boot=n_boot,
    )
    report["span_f1"] = f1.value
    report["span_f1_ci"] = [f1.low, f1.high] if f1.has_interval else None
    if f1.reason:
        report["reasons"]["span_f1"] = f1.reason
    verdict_pairs = [
        tuple(q.outcomes) for q in questions if len(q.assignments) == 2 and len(q.outcomes) == 2
    ]
    report["verdicts"] = agreement.verdict_report(verdict_pairs, n_boot=n_boot)
    report["disagreements"] = [
        {
            "question_id": i.question.external_id,
            "candidate": i.candidate.pk,
            "doc_id": i.candidate.version.document.doc_id,
            "grades": [j.grade for j in i.judgements],
        }
        for i in sorted(double, key=lambda i: -abs(i.judgements[0].grade - i.judgements[1].grade))
        if i.judgements[0].grade != i.judgements[1].grade
    ]
    return report


def _grouped(items: Sequence[ItemVotes], key) -> dict[str, list[ItemVotes]]:
    groups: dict[str, list[ItemVotes]] = defaultdict(list)
    for item in items:
        groups[key(item)].append(item)
    return dict(sorted(groups.items()))


# Adjudication ------------------------------------------------------------------------------


@dataclass
class QueueEntry:
    pool: Pool
    question: Question
    candidate: Candidate | None
    reason: str
    item: ItemVotes | None = None
    question_votes: QuestionVotes | None = None


def adjudication_queue(
    *,
    question_set: QuestionSet,
    min_span_f1: float = DEFAULT_MIN_SPAN_F1,
    include_resolved: bool = False,
) -> list[QueueEntry]:
    """Double-labelled items whose grades, spans or verdicts disagree (or a "can't tell")."""
    entries = []
    for q in gather_votes(question_set=question_set):
        verdict = q.decide_verdict()
        has_resolution = q.resolution is not None and bool(q.resolution.outcome)
        outcomes = q.outcomes
        if (
            isinstance(verdict, Pending)
            and len(outcomes) == len(q.assignments)
            or (include_resolved and has_resolution)
        ):
            entries.append(
                QueueEntry(
                    pool=q.pool,
                    question=q.question,
                    candidate=None,
                    question_votes=q,
                    reason=verdict.reason if isinstance(verdict, Pending) else "resolved",
                )
            )
        for item in q.items:
            if len(item.judgements) < 2:
                continue
            decision = item.decide(min_span_f1=min_span_f1)
            if isinstance(decision, Pending) or (include_resolved and item.resolution is not None):
                entries.append(
                    QueueEntry(
                        pool=q.pool,
                        question=q.question,
                        candidate=item.candidate,
                        item=item,
                        question_votes=q,
                        reason=decision.reason if isinstance(decision, Pending) else "resolved",
                    )
                )
    return entries


def resolve_item_reason(item: ItemVotes, *, min_span_f1: float) -> str:
    decision = item.decide(min_span_f1=min_span_f1)
    return decision.reason if isinstance(decision, Pending) else f"settled ({decision.source})"


def is_frozen(*, pool_id: int, question_id: int, candidate_id: int | None) -> bool:
    """Labellers' votes on a resolved item may no longer change."""
    return Resolution.objects.filter(
        pool_id=pool_id, question_id=question_id, candidate_id=candidate_id
    ).exists()


def resolve(
    *,
    pool: Pool,
    question: Question,
    candidate: Candidate | None,
    user,
    grade: int | None = None,
    spans: Sequence[tuple[int, int]] = (),
    outcome: str = "",
    note: str = "",
) -> Resolution:
    """Record a lead's decision. Votes are never touched; spans are validated against the text."""
    if candidate is not None:
        if candidate.pool_id != pool.pk or candidate.question_id != question.pk:
            raise ServiceError("That candidate does not belong to this question.")
        if grade not in (0, 1, 2):
            raise ServiceError("Choose a grade: 0, 1 or 2.")
        text = candidate.version.text
        for start, end in spans:
            if not (0 <= start < end <= len(text)):
                raise ServiceError(f"Span {start}–{end} is outside the document (0–{len(text)}).")
        if grade == 0:
            spans = ()
        elif not spans:
            spans = [(candidate.start, candidate.end)]
    elif outcome not in VerdictOutcome.values:
        raise ServiceError("Choose a verdict.")
    with transaction.atomic():
        resolution, _ = Resolution.objects.update_or_create(
            pool=pool,
            question=question,
            candidate=candidate,
            defaults={
                "grade": grade if candidate else None,
                "outcome": outcome if candidate is None else "",
                "note": note,
                "resolved_by": user,
            },
        )
        resolution.spans.all().delete()
        if candidate is not None:
            Span.objects.bulk_create(
                [
                    Span(
                        resolution=resolution,
                        version=candidate.version,
                        start=s,
                        end=e,
                        quote=candidate.version.text[s:e],
                    )
                    for s, e in spans
                ]
            )
    return resolution


def question_votes(
    *, question_set: QuestionSet, pool_id: int, question_id: int
) -> QuestionVotes | None:
    """One pooled question's votes (as `gather_votes` gives them), read for it alone; None if
    the set has no such pooled, assigned question."""
    found = gather_votes(question_set=question_set, pool_id=pool_id, question_id=question_id)
    return found[0] if found else None


def item_votes(
    *, question_set: QuestionSet, pool_id: int, question_id: int, candidate_id: int
) -> ItemVotes | None:
    """One candidate's votes, read for it alone; None if it is not an item of the set."""
    found = gather_votes(
        question_set=question_set,
        pool_id=pool_id,
        question_id=question_id,
        candidate_id=candidate_id,
    )
    return found[0].items[0] if found else None


# Where a lead's resolution takes its evidence from (`resolve_item_from`).
EVIDENCE_SOURCES = ("both", "a", "b", "candidate", "custom")


def resolve_item_from(
    *,
    item: ItemVotes,
    user,
    grade: int,
    spans_from: str,
    custom_spans: Sequence[tuple[int, int]] = (),
    note: str = "",
) -> Resolution:
    """Resolve an item with evidence taken from the votes ("both": the union of the
    labellers' spans, "a" or "b": the first or second labeller's), from the candidate passage,
    or from ``custom_spans``; then as `resolve`."""
    if spans_from not in EVIDENCE_SOURCES:
        raise ServiceError("Choose where the evidence comes from.")
    candidate = item.candidate
    vote_spans = [vote.spans for vote in item.votes]
    spans = {
        "both": union(*vote_spans),
        "a": vote_spans[0] if vote_spans else (),
        "b": vote_spans[1] if len(vote_spans) > 1 else (),
        "candidate": ((candidate.start, candidate.end),),
        "custom": tuple(custom_spans),
    }[spans_from]
    return resolve(
        pool=item.pool,
        question=item.question,
        candidate=candidate,
        user=user,
        grade=grade,
        spans=spans,
        note=note,
    )
