"""The votes of a question set, read once for the agreement, adjudication and gold pages.

Two things decide what a page may say about an item besides its votes:

- **the viewer**: a lead or admin outside a document's access groups learns nothing of it, so
  with ``viewer`` every candidate on a document hidden from them is left out, as if it did not
  exist (and every count, statistic and row built on these reads with it);
- **who can vote**: a labeller whose access groups hide a passage's document never sees it, so
  they are no planned voter for it (their assignment is done without it). A double-labelled
  question's passage that only one labeller can see is single-labelled; a vote that can never
  come (a deactivated account, an open slot nobody left can claim, no labeller able to see the
  passage) makes the item "unreachable", for a lead to decide (`labelling.resolution`). In a
  pool with a stopping rule, a labeller who finished the question without grading a passage
  is no planned voter for it either; a passage every labeller stopped before is no item at all:
  it stays pooled, not judged.

Questions a lead excluded from their set are nobody's work and no part of the gold.

Beside the labellers' votes, each item carries the machine votes (the AI judge's,
`labelling.services.machine_votes`): shown to leads, and counted by the gold rule only where a
lead turned that on for the set. ``machine=False`` reads the humans' votes alone, what a judge
is calibrated against.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from django.db.models import Count, Exists, F, Max, OuterRef, Prefetch, QuerySet, Sum
from django.db.models.functions import Coalesce

from corpus import visibility
from corpus.models import DocumentVersion, Membership
from labelling.models import (
    Assignment,
    Candidate,
    EscalatedItem,
    Guideline,
    Judgement,
    Pool,
    Question,
    QuestionSet,
    Resolution,
    Span,
    VerdictOutcome,
)
from labelling.resolution import (
    Decision,
    Pending,
    VerdictDecision,
    Vote,
    resolve_item,
    resolve_verdict,
)
from labelling.services.machine_votes import MachineVote, machine_votes


@dataclass
class ItemVotes:
    """Everything known about one candidate of one question in one pool."""

    pool: Pool
    question: Question
    candidate: Candidate
    planned_votes: int  # labellers who voted or still may (those who can see the passage)
    judgements: list[Judgement] = field(default_factory=list)
    resolution: Resolution | None = None
    unreachable: str = ""  # why a planned vote can never come
    unseen_by: list[str] = field(default_factory=list)  # labellers the document is hidden from
    waiting_for: list[str] = field(default_factory=list)  # who may still vote
    machine_votes: list[MachineVote] = field(default_factory=list)  # the AI judge's, for leads
    # Set when the first two grades called for a third labeller (`labelling.escalation`).
    escalation: EscalatedItem | None = None

    @property
    def first_judgements(self) -> list[Judgement]:
        """The first two labellers' judgements: what agreement is computed over (a third
        labeller's vote exists only where the first two disagreed)."""
        return [j for j in self.judgements if not getattr(j.assignment, "is_third", False)]

    @property
    def escalation_note(self) -> str:
        """What a lead is told about the item's escalation ("" if it was not escalated)."""
        if self.escalation is None:
            return ""
        first = " and ".join(str(g) for g in self.escalation.grades)
        if self.escalation.assignment_id is None:
            return (
                f"The first two grades ({first}) called for a third labeller, but no other "
                "labeller of the project can see this document, so it came straight to a lead."
            )
        third = next(
            (j for j in self.judgements if j.assignment_id == self.escalation.assignment_id),
            None,
        )
        if third is None:
            return f"The first two grades ({first}) called for a third labeller: waiting for them."
        return (
            f"The first two grades ({first}) called for a third labeller, who graded it "
            f"{third.grade}. A third vote never settles an item: a lead decides."
        )

    @property
    def counted_machine_vote(self) -> MachineVote | None:
        """The machine vote the gold rule counts (at most one), if any."""
        return next((vote for vote in self.machine_votes if vote.counted), None)

    @cached_property
    def votes(self) -> list[Vote]:
        return [
            Vote(
                labeller=j.assignment.labeller.get_username() if j.assignment.labeller else "?",
                grade=j.grade,
                spans=tuple((s.start, s.end) for s in j.span_list),
            )
            for j in self.judgements
        ]

    @property
    def single_by_access(self) -> bool:
        """Double-labelled by plan, but only one of its labellers can see the passage."""
        return bool(self.unseen_by) and self.planned_votes == 1

    def decide(self, *, min_span_f1: float) -> Decision | Pending:
        resolved = None
        if self.resolution is not None and self.resolution.grade is not None:
            resolved = Decision(
                grade=self.resolution.grade,
                spans=tuple((s.start, s.end) for s in self.resolution.spans.all()),
                source="resolved",
            )
        counted = self.counted_machine_vote
        return resolve_item(
            self.votes,
            planned_votes=self.planned_votes,
            resolution=resolved,
            min_span_f1=min_span_f1,
            unreachable=self.unreachable,
            machine=counted.as_vote() if counted is not None else None,
        )


@dataclass
class QuestionVotes:
    pool: Pool
    question: Question
    assignments: list[Assignment]
    items: list[ItemVotes]
    resolution: Resolution | None = None
    unreachable: str = ""  # why a labeller's verdict can never come

    @property
    def outcomes(self) -> list[str]:
        return finished_outcomes(self.assignments)

    @property
    def waiting_for(self) -> list[str]:
        """Who has not finished the question yet."""
        return [
            _name(a)
            for a in self.assignments
            if a.completed_at is None and not hasattr(a, "verdict")
        ]

    def decide_verdict(self) -> VerdictDecision | Pending:
        resolved = self.resolution.outcome if self.resolution and self.resolution.outcome else None
        return resolve_verdict(
            self.outcomes,
            planned_votes=len(self.assignments),
            resolution=resolved,
            unreachable=self.unreachable,
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


class Sight:
    """Which users of a project can see which documents, read once for a whole set."""

    def __init__(self, *, project_id: int, document_ids: Iterable[int]) -> None:
        self._groups_of_document = visibility.groups_of_documents(document_ids)
        self._groups_of_user = visibility.groups_of_members(project_id)
        # Anyone who may press "Next question" and claim an open slot.
        self.claimants = set(
            Membership.objects.filter(project_id=project_id, user__is_active=True).values_list(
                "user_id", flat=True
            )
        )

    def sees(self, user_id: int, document_id: int) -> bool:
        return visibility.may_see(
            self._groups_of_user.get(user_id, ()), self._groups_of_document.get(document_id, ())
        )


def _name(assignment: Assignment) -> str:
    return assignment.labeller.get_username() if assignment.labeller else "an open slot"


@dataclass
class _Voters:
    planned: int = 0
    unreachable: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)  # finished by the pool's stopping rule


def _item_voters(
    candidate: Candidate,
    assignments: Sequence[Assignment],
    judged_by: set[int],
    sight: Sight,
    third_for: dict[int, set[int]] | None = None,
) -> _Voters:
    """Who voted on a passage, who still may, who never will (and why), who cannot see it.
    A third labeller's slot (``third_for``: slot → its escalated candidates) is a voter on its
    escalated passages only."""
    document_id = candidate.version.document_id
    voters = _Voters()
    holders = {a.labeller_id for a in assignments if a.labeller_id is not None}
    third_for = third_for or {}
    for assignment in assignments:
        if assignment.pk in third_for and candidate.pk not in third_for[assignment.pk]:
            continue
        if assignment.pk in judged_by:
            voters.planned += 1
        elif assignment.labeller_id is None:
            if any(sight.sees(user_id, document_id) for user_id in sight.claimants - holders):
                voters.planned += 1
                voters.waiting.append(_name(assignment))
            else:
                voters.unreachable.append("nobody left who could claim its open slot can see it")
        elif not sight.sees(assignment.labeller_id, document_id):
            voters.unseen.append(_name(assignment))
        elif _stopped(assignment, candidate):
            voters.stopped.append(_name(assignment))
        elif not assignment.labeller.is_active:
            voters.planned += 1
            voters.unreachable.append(f"{_name(assignment)}'s account is deactivated")
        else:
            voters.planned += 1
            voters.waiting.append(_name(assignment))
    return voters


def _stopped(assignment: Assignment, candidate: Candidate) -> bool:
    """Whether the labeller finished the question by the pool's stopping rule without grading
    this passage: they are no planned voter for it (it stays pooled, not judged)."""
    return candidate.pool.stopping_rule.active and assignment.completed_at is not None


def _verdict_unreachable(assignments: Sequence[Assignment], sight: Sight) -> str:
    reasons = []
    holders = {a.labeller_id for a in assignments if a.labeller_id is not None}
    for assignment in assignments:
        if assignment.completed_at is not None or hasattr(assignment, "verdict"):
            continue
        if assignment.labeller_id is None:
            if not sight.claimants - holders:
                reasons.append("nobody is left to claim its open slot")
        elif not assignment.labeller.is_active:
            reasons.append(f"{_name(assignment)}'s account is deactivated")
    return "; ".join(reasons)


def gather_votes(
    *,
    question_set: QuestionSet,
    viewer=None,
    pool_id: int | None = None,
    question_id: int | None = None,
    candidate_id: int | None = None,
    machine: bool = True,
    keys: Collection[tuple[int, int]] | None = None,
    candidate_ids: Collection[int] | None = None,
) -> list[QuestionVotes]:
    """Every pooled, assigned question of the set with its assignments, judgements and
    resolutions, and (unless ``machine`` is False) the machine votes of its candidates; with
    ``viewer``, only the candidates on documents they may see.

    With ``pool_id`` and ``question_id``, only that question is read (and of its candidates
    only ``candidate_id``, if given). With ``keys``, only those (pool id, question id) pairs
    are read (a page of the lead pages, `labelling.services.gold_state`); with
    ``candidate_ids`` too, each of their questions with its verdict but only those candidates
    as items (the ones a page lists).
    """
    pools = list(question_set.pools.all())
    questions = Question.objects.filter(question_set=question_set).included()
    if candidate_ids is not None:
        candidate_ids = set(candidate_ids)
    if keys is not None:
        keys = set(keys)
        questions = questions.filter(pk__in={question for _, question in keys})
        pools = [pool for pool in pools if pool.pk in {pool_id for pool_id, _ in keys}]
    # Calibration answers are no votes: their judgements find no assignment below and are
    # skipped, as those of excluded questions are.
    assigned = Assignment.objects.work().filter(pool__in=pools, question__in=questions)
    resolved = Resolution.objects.filter(pool__in=pools, question__in=questions)
    escalated = EscalatedItem.objects.filter(pool__in=pools, question__in=questions)
    candidates: QuerySet = Candidate.objects.filter(pool__in=pools, question__in=questions)
    if viewer is not None:
        candidates = candidates.not_hidden_from(viewer)
    if pool_id is not None or question_id is not None:
        # The adjudication pages need one question, not the set: read only its rows.
        one = {"pool_id": pool_id, "question_id": question_id}
        assigned = assigned.filter(**one)
        resolved = resolved.filter(**one)
        escalated = escalated.filter(**one)
        candidates = candidates.filter(**one)
        if candidate_id is not None:
            candidates = candidates.filter(pk=candidate_id)
    # A set has thousands of candidates: read each row's own columns only, and share one
    # object per pool, question, document version, assignment and guideline among them.
    rows = list(
        candidates.only(
            "id", "pool_id", "question_id", "version_id", "start", "end", "shuffle_rank"
        ).order_by("pool_id", "question_id", "shuffle_rank", "pk")
    )
    if keys is not None:
        rows = [row for row in rows if (row.pool_id, row.question_id) in keys]
    if candidate_ids is not None:
        # The wanted items, and one row of each question (so its verdict is read: a question
        # is there when the viewer may see one of its candidates).
        first = {}
        for row in rows:
            first.setdefault((row.pool_id, row.question_id), row.pk)
        wanted = candidate_ids | set(first.values())
        rows = [row for row in rows if row.pk in wanted]
    if not rows:
        return []
    by_pool = {pool.pk: pool for pool in pools}
    by_question_id = {q.pk: q for q in questions.filter(pk__in=candidates.values("question_id"))}
    versions = {
        v.pk: v
        for v in DocumentVersion.objects.filter(pk__in={row.version_id for row in rows})
        .select_related("document")
        .defer("minhash", "extraction")
    }
    for candidate in rows:
        candidate.pool = by_pool[candidate.pool_id]
        candidate.question = by_question_id[candidate.question_id]
        candidate.version = versions[candidate.version_id]

    escalations = {e.candidate_id: e for e in escalated}
    third_for: dict[int, set[int]] = defaultdict(set)
    for escalation in escalations.values():
        if escalation.assignment_id is not None:
            third_for[escalation.assignment_id].add(escalation.candidate_id)
    assignments = defaultdict(list)
    by_assignment_id = {}
    for assignment in assigned.select_related("labeller", "verdict").order_by("slot"):
        # A third labeller votes on escalated passages, never on the question's verdict.
        assignment.is_third = assignment.pk in third_for
        assignments[(assignment.pool_id, assignment.question_id)].append(assignment)
        by_assignment_id[assignment.pk] = assignment
    items = candidates if candidate_ids is None else candidates.filter(pk__in=candidate_ids)
    judged = Judgement.objects.filter(candidate__in=items.values("pk")).defer(
        "created_at", "updated_at"
    )
    guidelines = {g.pk: g for g in Guideline.objects.filter(pk__in=judged.values("guideline_id"))}
    # Spans as a plain list per judgement (`span_list`): a prefetch into the related manager
    # builds a queryset per judgement, which costs more than reading them.
    spans = Prefetch("spans", queryset=Span.objects.defer("created_at"), to_attr="span_list")
    judgements = defaultdict(list)
    for judgement in judged.prefetch_related(spans).order_by("assignment__slot", "pk"):
        assignment = by_assignment_id.get(judgement.assignment_id)
        if assignment is None:  # an excluded question's, or a calibration answer
            continue
        judgement.assignment = assignment
        judgement.guideline = guidelines.get(judgement.guideline_id)
        judgements[judgement.candidate_id].append(judgement)
    resolutions = {
        (r.pool_id, r.question_id, r.candidate_id): r for r in resolved.prefetch_related("spans")
    }
    machines = (
        machine_votes(question_set=question_set, candidates=items.values("pk")) if machine else {}
    )
    sight = Sight(
        project_id=question_set.project_id,
        document_ids={c.version.document_id for c in rows},
    )
    by_question: dict[tuple[int, int], QuestionVotes] = {}
    for candidate in rows:
        key = (candidate.pool_id, candidate.question_id)
        held = assignments.get(key, [])
        if not held:
            continue
        if key not in by_question:
            firsts = [a for a in held if not a.is_third]
            by_question[key] = QuestionVotes(
                pool=candidate.pool,
                question=candidate.question,
                assignments=firsts,
                items=[],
                resolution=resolutions.get((*key, None)),
                unreachable=_verdict_unreachable(firsts, sight),
            )
        if candidate_ids is not None and candidate.pk not in candidate_ids:
            continue  # its question's verdict is wanted, not this item
        votes = judgements.get(candidate.pk, [])
        voters = _item_voters(candidate, held, {j.assignment_id for j in votes}, sight, third_for)
        resolution = resolutions.get((*key, candidate.pk))
        if voters.stopped and not (votes or voters.planned or voters.unreachable or resolution):
            continue  # every labeller stopped before it: pooled, not judged (no item to resolve)
        by_question[key].items.append(
            ItemVotes(
                pool=candidate.pool,
                question=candidate.question,
                candidate=candidate,
                planned_votes=voters.planned,
                judgements=votes,
                resolution=resolution,
                unreachable="; ".join(voters.unreachable),
                unseen_by=voters.unseen,
                waiting_for=voters.waiting,
                machine_votes=machines.get(candidate.pk, []),
                escalation=escalations.get(candidate.pk),
            )
        )
    return list(by_question.values())


# The double-labelled items alone, for the agreement statistics ------------------------------


@dataclass(frozen=True)
class PairedVote:
    """One of the first two labellers' judgements of a double-labelled item."""

    labeller_id: int | None
    labeller: str | None  # the username; None for a vote whose labeller is gone
    grade: int
    guideline: str  # "v3", or "none" when the judgement names no guideline version
    spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class PairedItem:
    """A candidate the first two labellers of its question both graded: the unit of agreement."""

    pool_id: int
    question_id: int
    candidate_id: int
    doc_id: str
    votes: tuple[PairedVote, PairedVote]  # in slot order

    @property
    def grades(self) -> tuple[int, int]:
        return (self.votes[0].grade, self.votes[1].grade)


@dataclass(frozen=True)
class PairedQuestion:
    pool_id: int
    question_id: int
    external_id: str
    text: str
    outcomes: tuple[str, ...]  # the first labellers' verdicts (`finished_outcomes`)
    first_slots: int  # the question's slots bar a third labeller's


@dataclass(frozen=True)
class PairedVotes:
    """What `gather_votes` gives of the double-labelled questions, reduced to what agreement
    reads: the questions (pool, question order) with a candidate the viewer may see, and the
    items the first two labellers both graded, in `gather_votes`' order (so the bootstrap draws
    the same resamples)."""

    questions: list[PairedQuestion]
    items: list[PairedItem]


def double_labelled_keys(question_set: QuestionSet) -> QuerySet:
    """(pool id, question id) of the set's questions with two slots of work or more."""
    return (
        Assignment.objects.work()
        .filter(pool__question_set=question_set)
        .values("pool_id", "question_id")
        .annotate(slots=Count("pk"))
        .filter(slots__gte=2)
        .values_list("pool_id", "question_id")
    )


def paired_from_votes(questions: Iterable[QuestionVotes]) -> PairedVotes:
    """`PairedVotes` from `gather_votes`' questions (the reference `paired_votes` is checked
    against)."""
    paired_questions, items = [], []
    for q in questions:
        paired_questions.append(
            PairedQuestion(
                pool_id=q.pool.pk,
                question_id=q.question.pk,
                external_id=q.question.external_id,
                text=q.question.text,
                outcomes=tuple(q.outcomes),
                first_slots=len(q.assignments),
            )
        )
        for item in q.items:
            if len(item.first_judgements) != 2:
                continue
            votes = tuple(
                PairedVote(
                    labeller_id=j.assignment.labeller_id,
                    labeller=j.assignment.labeller.get_username()
                    if j.assignment.labeller
                    else None,
                    grade=j.grade,
                    guideline=f"v{j.guideline.version}" if j.guideline else "none",
                    spans=tuple(sorted((s.start, s.end) for s in j.span_list)),
                )
                for j in item.first_judgements
            )
            items.append(
                PairedItem(
                    pool_id=q.pool.pk,
                    question_id=q.question.pk,
                    candidate_id=item.candidate.pk,
                    doc_id=item.candidate.version.document.doc_id,
                    votes=votes,
                )
            )
    return PairedVotes(questions=paired_questions, items=items)


def _double_labelled(question_set: QuestionSet) -> tuple[QuerySet, QuerySet]:
    """The work assignments of the set's included questions held by two or more, and of
    those the first slots (not a third labeller's): the votes agreement reads."""
    double = Assignment.objects.work().filter(
        pool__question_set=question_set,
        question__question_set=question_set,
        question__excluded_at__isnull=True,
    )
    double = double.filter(
        Exists(
            Assignment.objects.work()
            .filter(pool_id=OuterRef("pool_id"), question_id=OuterRef("question_id"))
            .exclude(pk=OuterRef("pk"))
        )
    )
    # A third labeller's slot votes on escalated passages only, never in agreement.
    third = EscalatedItem.objects.filter(
        pool__question_set=question_set, assignment__isnull=False
    ).values("assignment_id")
    return double, double.exclude(pk__in=third)


def paired_state(*, question_set: QuestionSet) -> tuple:
    """What moves when any vote `paired_votes` reads is inserted, deleted or changed in place,
    by any path (a service, the admin, a bulk write that marks nothing stale): the first
    slots' judgements and spans, each as its count, largest id and sums of its values
    weighted by id. Three small queries, the slots read first by id as `paired_votes` does.
    For figures kept between requests (`adjudication.agreement_report`); the rest of what
    they read (slots, access, exclusions) moves `gold_state.version` through the hook."""
    _, firsts = _double_labelled(question_set)
    slot_ids = sorted(firsts.values_list("pk", flat=True))
    judgements = Judgement.objects.filter(assignment_id__in=slot_ids).aggregate(
        n=Count("pk"),
        last=Max("pk"),
        grades=Sum(F("pk") * (F("grade") + 1)),
        guidelines=Sum(F("pk") * Coalesce("guideline_id", 0)),
    )
    spans = Span.objects.filter(judgement__assignment_id__in=slot_ids).aggregate(
        n=Count("pk"),
        last=Max("pk"),
        starts=Sum(F("pk") * F("start")),
        ends=Sum(F("pk") * F("end")),
        owners=Sum(F("pk") * F("judgement_id")),
    )
    return tuple(slot_ids), tuple(judgements.values()), tuple(spans.values())


def paired_votes(*, question_set: QuestionSet, viewer=None) -> PairedVotes:
    """`paired_from_votes(gather_votes(...))` over the double-labelled questions, read as rows:
    the judgements of the first two slots of work on candidates the viewer may see, their
    spans, and the questions' verdicts. The agreement page reads a set's 2,000 double-labelled
    items this way, without building a model object per vote (`tests/labelling/
    test_agreement_reads.py` checks the two agree on generated worlds, for every viewer)."""
    double, firsts = _double_labelled(question_set)
    seen = Candidate.objects.filter(pool__question_set=question_set)
    if viewer is not None:
        seen = seen.not_hidden_from(viewer)
    shown = seen.filter(pool_id=OuterRef("pool_id"), question_id=OuterRef("question_id"))
    question_rows = list(
        double.filter(Exists(shown))
        .values_list("pool_id", "question_id", "question__external_id", "question__text")
        .distinct()
        .order_by("pool_id", "question_id")
    )
    # The slots are read first, by id: a judgement on a candidate the viewer may see is of one
    # of them, and the judgements' index then reads theirs alone, whatever the planner guesses.
    slots: dict[tuple[int, int], list[Assignment]] = defaultdict(list)
    for assignment in firsts.filter(Exists(shown)).select_related("verdict").order_by("slot"):
        slots[(assignment.pool_id, assignment.question_id)].append(assignment)
    questions = [
        PairedQuestion(
            pool_id=pool_id,
            question_id=question_id,
            external_id=external_id,
            text=text,
            outcomes=tuple(finished_outcomes(slots[(pool_id, question_id)])),
            first_slots=len(slots[(pool_id, question_id)]),
        )
        for pool_id, question_id, external_id, text in question_rows
    ]
    slot_ids = [a.pk for held in slots.values() for a in held]
    judged = Judgement.objects.filter(assignment_id__in=slot_ids)
    if viewer is not None:  # on the rows read, not as a set of every candidate seen
        judged = judged.filter(
            visibility.not_hidden_q(viewer, prefix="candidate__version__document__")
        )
    spans: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for judgement_id, start, end in Span.objects.filter(
        judgement__assignment_id__in=slot_ids
    ).values_list("judgement_id", "start", "end"):
        spans[judgement_id].append((start, end))
    votes: dict[int, list] = defaultdict(list)
    where: dict[int, tuple] = {}
    for row in judged.order_by("assignment__slot", "pk").values_list(
        "pk",
        "candidate_id",
        "candidate__pool_id",
        "candidate__question_id",
        "candidate__shuffle_rank",
        "candidate__version__document__doc_id",
        "assignment__labeller_id",
        "assignment__labeller__username",
        "grade",
        "guideline__version",
    ):
        pk, candidate_id, pool_id, question_id, rank, doc_id, labeller_id, name, grade, g = row
        votes[candidate_id].append(
            PairedVote(
                labeller_id=labeller_id,
                labeller=name,
                grade=grade,
                guideline="none" if g is None else f"v{g}",
                spans=tuple(sorted(spans.get(pk, ()))),
            )
        )
        where[candidate_id] = (pool_id, question_id, rank, doc_id)
    items = [
        PairedItem(
            pool_id=where[c][0],
            question_id=where[c][1],
            candidate_id=c,
            doc_id=where[c][3],
            votes=tuple(pair),
        )
        for c, pair in votes.items()
        if len(pair) == 2
    ]
    items.sort(key=lambda i: (i.pool_id, i.question_id, where[i.candidate_id][2], i.candidate_id))
    return PairedVotes(questions=questions, items=items)
