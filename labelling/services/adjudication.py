"""Agreement, the adjudication queue and lead resolutions.

Reads here take the votes of a question set (every pool of it) from `labelling.services.votes`,
as the viewer may see them: a lead outside a document's access groups gets statistics, rows
and queue entries computed as if the document did not exist. The statistics come from
`labelling.agreement` and the rule from `labelling.resolution`, both free of Django. What the
votes make the gold of a question set is `labelling.services.gold`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from django.db import transaction

from corpus.visibility import hidden_document_ids
from goldset.errors import ServiceError
from labelling import agreement, escalation
from labelling.models import (
    Candidate,
    Pool,
    Question,
    QuestionSet,
    Resolution,
    Span,
    VerdictOutcome,
)
from labelling.resolution import DEFAULT_MIN_SPAN_F1, Pending, union
from labelling.services import gold_state
from labelling.services.votes import (
    ItemVotes,
    PairedItem,
    PairedVotes,
    QuestionVotes,
    gather_votes,
    paired_state,
    paired_votes,
)

# Agreement ---------------------------------------------------------------------------------


def _pair_key(item: PairedItem) -> str:
    return " & ".join(sorted(v.labeller for v in item.votes if v.labeller is not None))


def _guideline_key(item: PairedItem) -> str:
    return " + ".join(sorted({v.guideline for v in item.votes}))


def agreement_report(
    *,
    question_set: QuestionSet,
    min_span_f1: float = DEFAULT_MIN_SPAN_F1,
    n_boot: int = 1000,
    viewer=None,
) -> dict:
    """Every agreement statistic for the double-labelled items of a question set, JSON-able;
    with ``viewer``, over the items on documents they may see.

    Every figure here is about questions with two assignments or more in a pool (two votes on
    an item, a passage one of two labellers cannot see, two verdicts), so only those are read:
    a set of 60,000 candidates with 2,000 double-labelled items reads 2,000, as rows
    (`votes.paired_votes`; `tests/labelling/test_agreement_reads.py` checks the figures
    against those of `gather_votes`). The passages one labeller of two cannot see are counted
    from the stored decisions (`gold_state`)."""
    gold_state.refresh(question_set=question_set)
    report = dict(_kept_figures(question_set=question_set, viewer=viewer, n_boot=n_boot))
    # Passages of double-labelled questions that one of the two labellers cannot see: their
    # one vote is the gold, and they are missing from every statistic here. (Such a passage
    # is always of a question with two slots or more: one labeller who cannot see it, one who
    # votes.)
    report["single_by_access"] = gold_state.single_by_access_count(
        question_set=question_set, viewer=viewer
    )
    return report


# The figures of the last reports this process computed (`_kept_figures`), oldest first, with
# the state they were computed at; one lock, for a server that runs requests in threads.
_KEPT: OrderedDict[tuple, tuple[tuple, dict]] = OrderedDict()
_KEPT_LOCK = threading.Lock()
KEPT_REPORTS = 16


def _state(question_set: QuestionSet) -> tuple:
    return gold_state.version(question_set=question_set), paired_state(question_set=question_set)


def _kept_figures(*, question_set: QuestionSet, viewer, n_boot: int) -> dict:
    """`_agreement_figures` of the set's votes as ``viewer`` may see them, computed once per
    change of the votes: kept in this process by the documents hidden from the viewer (the
    only way two viewers' figures differ) and the state of what they are computed from: the
    set's stored version (`gold_state.version`, read after `refresh`), which every write that
    changes a vote moves (the hook marks its question stale, and the refresh rewrites its
    rows), and the votes' own rows (`votes.paired_state`), which a write bypassing the hook
    (the admin, a bulk delete) moves too. The state is read before the votes, so a vote
    that lands while they are read moves it for the next request; figures are kept only
    when the state read again after computing them is unchanged, so a vote changed and
    changed back meanwhile is not kept either. Callers copy what it returns before
    changing it: it is shared."""
    hidden = (
        None
        if viewer is None
        else frozenset(
            hidden_document_ids(project=question_set.project, user=viewer).values_list(
                "document_id", flat=True
            )
        )
    )
    key = (question_set.pk, n_boot, hidden)
    state = _state(question_set)
    with _KEPT_LOCK:
        kept = _KEPT.get(key)
        if kept is not None and kept[0] == state:
            _KEPT.move_to_end(key)
            return kept[1]
    with agreement.shared_resamples():
        figures = _agreement_figures(
            paired_votes(question_set=question_set, viewer=viewer), n_boot=n_boot
        )
    if _state(question_set) == state:
        with _KEPT_LOCK:
            _KEPT[key] = (state, figures)
            _KEPT.move_to_end(key)
            while len(_KEPT) > KEPT_REPORTS:
                _KEPT.popitem(last=False)
    return figures


def _agreement_figures(paired: PairedVotes, *, n_boot: int) -> dict:
    double = paired.items
    pairs = [i.grades for i in double]
    report = agreement.pairwise_report(pairs, n_boot=n_boot)
    # Krippendorff's alpha over every labeller, with missing values, not only one pair.
    labellers = sorted({v.labeller_id for i in double for v in i.votes})
    grade_of = []  # per item, each labeller's (first) grade
    for item in double:
        grades: dict = {}
        for vote in item.votes:
            grades.setdefault(vote.labeller_id, vote.grade)
        grade_of.append(grades)
    matrix = [[grades.get(lab) for grades in grade_of] for lab in labellers]
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
        {"labellers": key, **agreement.pairwise_report([i.grades for i in items], n_boot=0)}
        for key, items in _grouped(double, _pair_key).items()
    ]
    report["per_guideline_version"] = [
        {"guideline": key, **agreement.pairwise_report([i.grades for i in items], n_boot=0)}
        for key, items in _grouped(double, _guideline_key).items()
    ]
    of_question = _grouped_in_order(double)
    report["per_question"] = [
        {
            "question_id": q.external_id,
            "question_pk": q.question_id,
            "question": q.text,
            "items": len(items),
            "disagreements": sum(1 for i in items if i.grades[0] != i.grades[1]),
            "percent": agreement.percent_agreement([i.grades for i in items], n_boot=0).value,
        }
        for q in paired.questions
        if (items := of_question.get((q.pool_id, q.question_id)))
    ]
    report["per_question"].sort(key=lambda row: (-row["disagreements"], row["question_id"]))
    f1 = agreement.mean_span_f1(
        [
            tuple(agreement.GradedSpans(grade=v.grade, spans=v.spans) for v in i.votes)
            for i in double
        ],
        n_boot=n_boot,
    )
    report["span_f1"] = f1.value
    report["span_f1_ci"] = [f1.low, f1.high] if f1.has_interval else None
    if f1.reason:
        report["reasons"]["span_f1"] = f1.reason
    verdict_pairs = [
        q.outcomes for q in paired.questions if q.first_slots == 2 and len(q.outcomes) == 2
    ]
    report["verdicts"] = agreement.verdict_report(verdict_pairs, n_boot=n_boot)
    text_of = {(q.pool_id, q.question_id): q for q in paired.questions}
    report["disagreements"] = [
        {
            "question_id": text_of[(i.pool_id, i.question_id)].external_id,
            "question_pk": i.question_id,
            "pool": i.pool_id,
            "candidate": i.candidate_id,
            "doc_id": i.doc_id,
            "grades": list(i.grades),
        }
        for i in sorted(double, key=lambda i: -abs(i.grades[0] - i.grades[1]))
        if i.grades[0] != i.grades[1]
    ]
    return report


def _grouped(items: Sequence[PairedItem], key) -> dict[str, list[PairedItem]]:
    groups: dict[str, list[PairedItem]] = defaultdict(list)
    for item in items:
        groups[key(item)].append(item)
    return dict(sorted(groups.items()))


def _grouped_in_order(items: Sequence[PairedItem]) -> dict[tuple[int, int], list[PairedItem]]:
    groups: dict[tuple[int, int], list[PairedItem]] = defaultdict(list)
    for item in items:
        groups[(item.pool_id, item.question_id)].append(item)
    return groups


# Adjudication ------------------------------------------------------------------------------


@dataclass
class QueueEntry:
    pool: Pool
    question: Question
    candidate: Candidate | None
    reason: str
    item: ItemVotes | None = None
    question_votes: QuestionVotes | None = None
    kind: str = "disagreement"  # `labelling.resolution.Pending.kind`, or "resolved"
    # The queue's order (`labelling.escalation`): the labellers' vote distance, then how many
    # questions' figures the passage can move.
    distance: int = 0
    moves: int = 0
    # Read from the stored decisions instead of the votes (`labelling.services.lead_pages`):
    # what the pages show of the item (`ItemState.shown`, keys in `gold_state.SHOWN`); None
    # when ``item`` or ``question_votes`` hold the votes themselves.
    shown: dict | None = None

    @property
    def waiting_for(self) -> list[str]:
        """The labellers (or open slots) whose vote the entry still waits for."""
        if self.shown is not None:
            return self.shown.get("waiting_for", [])
        if self.item is not None:
            return self.item.waiting_for
        return self.question_votes.waiting_for if self.question_votes else []

    @property
    def graders(self) -> list[tuple[int, str]]:
        """Each labeller's grade of the passage and their username, in slot order."""
        if self.shown is not None:
            return [(grade, name) for grade, name in self.shown.get("votes", [])]
        if self.item is None:
            return []
        return [
            (j.grade, j.assignment.labeller.get_username() if j.assignment.labeller else "")
            for j in self.item.judgements
        ]

    @property
    def grades(self) -> list[int]:
        return [grade for grade, _ in self.graders]

    @property
    def machine_grade(self) -> int | None:
        """The grade of the AI judge's vote the gold rule counts for the passage, if any."""
        if self.shown is not None:
            return self.shown.get("machine")
        counted = self.item.counted_machine_vote if self.item is not None else None
        return counted.grade if counted is not None else None

    @property
    def escalation_note(self) -> str:
        if self.shown is not None:
            return self.shown.get("note", "")
        return self.item.escalation_note if self.item is not None else ""

    @property
    def resolved_grade(self) -> int | None:
        """The grade a lead's resolution gave the passage."""
        if self.shown is not None:
            return self.shown.get("resolution_grade")
        resolution = self.item.resolution if self.item is not None else None
        return resolution.grade if resolution is not None else None

    @property
    def resolved_outcome(self) -> str:
        """The verdict a lead's resolution gave the question, as displayed."""
        if self.shown is not None:
            return self.shown.get("outcome", "")
        votes = self.question_votes
        if votes is None or votes.resolution is None:
            return ""
        return votes.resolution.get_outcome_display()


def adjudication_queue(
    *,
    question_set: QuestionSet,
    min_span_f1: float = DEFAULT_MIN_SPAN_F1,
    include_resolved: bool = False,
    include_single_by_access: bool = False,
    include_escalated_waiting: bool = False,
    viewer=None,
    keys: Collection[tuple[int, int]] | None = None,
    candidate_ids: Collection[int] | None = None,
    moved: dict[tuple[int, int, int, int], int] | None = None,
) -> list[QueueEntry]:
    """Every item a lead must decide: votes that disagree (grades, spans, verdicts), a "can't
    tell", and items that can never get their vote (`labelling.services.votes`). Items still
    waiting for a labeller are not here (the Gold page lists them). With
    ``include_single_by_access``, also the passages of double-labelled questions whose single
    vote stands because the other labeller cannot see them (kind "single_by_access", for a lead
    to review, not to decide); with ``include_escalated_waiting``, the escalated passages whose
    third labeller has not graded them yet (kind "escalated_waiting", for a lead to know of).
    With ``viewer``, only items on documents they may see; with ``keys``, only those (pool id,
    question id) pairs (``candidate_ids``: `gather_votes`).

    Ordered by `labelling.escalation`'s rule: the widest vote distance first, then the
    passages that can move the most questions' figures, then as read (stable). How many a
    passage moves depends on every undecided passage of the set: a caller that reads only some
    questions (``keys``) passes ``moved``, `escalation.questions_moved` over the whole set's."""
    entries = []
    undecided: list[tuple[int, int, int, int]] = []
    for q in gather_votes(
        question_set=question_set, viewer=viewer, keys=keys, candidate_ids=candidate_ids
    ):
        verdict = q.decide_verdict()
        has_resolution = q.resolution is not None and bool(q.resolution.outcome)
        if (isinstance(verdict, Pending) and verdict.needs_lead) or (
            include_resolved and has_resolution
        ):
            entries.append(
                QueueEntry(
                    pool=q.pool,
                    question=q.question,
                    candidate=None,
                    question_votes=q,
                    reason=verdict.reason if isinstance(verdict, Pending) else "resolved",
                    kind=verdict.kind if isinstance(verdict, Pending) else "resolved",
                )
            )
        for item in q.items:
            decision = item.decide(min_span_f1=min_span_f1)
            if isinstance(decision, Pending):
                c = item.candidate
                undecided.append((q.question.pk, c.version_id, c.start, c.end))
            if (
                include_escalated_waiting
                and item.escalation is not None
                and item.escalation.assignment_id is not None
                and isinstance(decision, Pending)
                and decision.kind == "waiting"
            ):
                entries.append(
                    QueueEntry(
                        pool=q.pool,
                        question=q.question,
                        candidate=item.candidate,
                        item=item,
                        question_votes=q,
                        reason=THIRD_WAITING_REASON,
                        kind="escalated_waiting",
                    )
                )
            elif (
                include_single_by_access
                and item.single_by_access
                and item.resolution is None
                and not isinstance(decision, Pending)
            ):
                entries.append(
                    QueueEntry(
                        pool=q.pool,
                        question=q.question,
                        candidate=item.candidate,
                        item=item,
                        question_votes=q,
                        reason=single_vote_reason(item.unseen_by),
                        kind="single_by_access",
                    )
                )
            elif (isinstance(decision, Pending) and decision.needs_lead) or (
                include_resolved and item.resolution is not None
            ):
                entries.append(
                    QueueEntry(
                        pool=q.pool,
                        question=q.question,
                        candidate=item.candidate,
                        item=item,
                        question_votes=q,
                        reason=decision.reason if isinstance(decision, Pending) else "resolved",
                        kind=decision.kind if isinstance(decision, Pending) else "resolved",
                    )
                )
    if moved is None:
        moved = escalation.questions_moved(undecided)
    for entry in entries:
        if entry.candidate is None:
            entry.moves = 1  # a verdict moves its own question's answerability
            continue
        c = entry.candidate
        entry.distance = escalation.vote_distance([j.grade for j in entry.item.judgements])
        entry.moves = moved.get((entry.question.pk, c.version_id, c.start, c.end), 0)
    entries.sort(key=lambda entry: (-entry.distance, -entry.moves))
    return entries


def single_vote_reason(unseen_by: Sequence[str]) -> str:
    """Why a passage's one vote stands (kind "single_by_access")."""
    return f"one vote stands: {', '.join(unseen_by)} cannot see this document"


THIRD_WAITING_REASON = "waiting for a third labeller"  # kind "escalated_waiting"


def resolve_item_reason(item: ItemVotes, *, min_span_f1: float) -> str:
    decision = item.decide(min_span_f1=min_span_f1)
    if isinstance(decision, Pending):
        return decision.reason
    if decision.source == "single" and item.single_by_access:
        return single_vote_reason(item.unseen_by)
    return f"settled ({decision.source})"


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
        gold_state.mark_stale(pool_id=pool.pk, question_id=question.pk)
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
    *, question_set: QuestionSet, pool_id: int, question_id: int, viewer=None
) -> QuestionVotes | None:
    """One pooled question's votes (as `gather_votes` gives them), read for it alone; None if
    the set has no such pooled, assigned question (or, with ``viewer``, none they may see)."""
    found = gather_votes(
        question_set=question_set, pool_id=pool_id, question_id=question_id, viewer=viewer
    )
    return found[0] if found else None


def item_votes(
    *, question_set: QuestionSet, pool_id: int, question_id: int, candidate_id: int, viewer=None
) -> ItemVotes | None:
    """One candidate's votes, read for it alone; None if it is not an item of the set (or is on
    a document hidden from ``viewer``)."""
    found = gather_votes(
        question_set=question_set,
        pool_id=pool_id,
        question_id=question_id,
        candidate_id=candidate_id,
        viewer=viewer,
    )
    return found[0].items[0] if found else None


# Where a lead's resolution takes its evidence from (`resolve_item_from`); "c" is a third
# labeller's, on an escalated item.
EVIDENCE_SOURCES = ("both", "a", "b", "c", "candidate", "custom")


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
    labellers' spans, "a", "b" or "c": the first, second or third labeller's), from the
    candidate passage,
    or from ``custom_spans``; then as `resolve`."""
    if spans_from not in EVIDENCE_SOURCES:
        raise ServiceError("Choose where the evidence comes from.")
    candidate = item.candidate
    vote_spans = [vote.spans for vote in item.votes]
    spans = {
        "both": union(*vote_spans),
        "a": vote_spans[0] if vote_spans else (),
        "b": vote_spans[1] if len(vote_spans) > 1 else (),
        "c": vote_spans[2] if len(vote_spans) > 2 else (),
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
