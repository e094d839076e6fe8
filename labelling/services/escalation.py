"""A third, blind labeller for passages the first two labellers of a question graded apart
(issue 36; the rule is `labelling.escalation`'s, the project's `escalate_on` chooses it).

It runs in the transaction of the write that completes a question's second assignment
(`labelling.services.completion.update_completion`), so the third slot exists as soon as the
write is saved and never without it. When both labellers finish at the same moment, each
transaction sees the other's slot still open; so a write that finds the other slot open looks
again once it has committed (`transaction.on_commit`), in a transaction of its own that locks
the question's row, and the later of the two looks sees both done. (Locking the question in
the write itself could deadlock with a lead excluding it, which locks the question, then the
assignments.) It is idempotent: a question escalates once (its `EscalatedItem` rows are the
record, unique per passage, as the slot is per question), whatever writes follow.

The third labeller is a project labeller (the labeller role), active, who labels no other slot
of the question and may see the passage's document: among them the one who can see most of
the disputed passages, then the one with the least open work, then the oldest account. Their
slot shows only the escalated passages (`labelling.grading_passages`), on the same page as any
question, with nothing that says it is a third vote; the first two labellers are told nothing.
A passage nobody qualifies for is recorded without a slot and goes straight to a lead, whose
page says why.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from corpus.models import Membership, Role
from goldset.errors import ServiceError
from labelling.escalation import needs_third_vote
from labelling.models import (
    Assignment,
    Candidate,
    Change,
    ChangeSubject,
    EscalatedItem,
    Judgement,
    Question,
    Resolution,
)
from labelling.services import gold_state
from labelling.services.votes import Sight


class NotAThirdLabeller(ServiceError):
    """A third labeller's slot may go only to a project labeller who can see its passages and
    holds no other slot of the question."""


def escalate_if_due(*, assignment: Assignment) -> int:
    """Give the assignment's question a third labeller for its disputed passages, if both of
    its first two assignments are now done and the project's rule says so. Returns how many
    passages were escalated (0 when nothing was due, not yet, or it was done before). Call it
    inside the transaction of the write that completed ``assignment``."""
    try:
        with transaction.atomic():
            escalated, other_open = _escalate(assignment, lock=False)
    except IntegrityError:  # the other labeller's check made the same rows first
        return 0
    if other_open:
        # The other slot looked open: it may be finishing in a transaction of its own that
        # saw this one open too. Look again once both are committed.
        transaction.on_commit(lambda: _look_again(assignment))
    return escalated


def _look_again(assignment: Assignment) -> None:
    try:
        with transaction.atomic():
            _escalate(assignment, lock=True)
    except IntegrityError:
        pass  # escalated meanwhile, by the other labeller's own look


def _escalate(assignment: Assignment, *, lock: bool) -> tuple[int, bool]:
    """How many passages it escalated, and whether the question's other slot was open."""
    if EscalatedItem.objects.filter(assignment_id=assignment.pk).exists():
        return 0, False  # a third labeller's own slot
    if lock:
        # After both writes committed (no assignment lock held): serialises the two looks.
        Question.objects.select_for_update(of=("self",)).filter(pk=assignment.question_id).first()
    key = {"pool_id": assignment.pool_id, "question_id": assignment.question_id}
    if EscalatedItem.objects.filter(**key).exists():
        return 0, False
    # The pool's work only: a calibration question on it (slot 0) is never a vote.
    slots = list(Assignment.objects.filter(**key).work().order_by("slot")[:3])
    firsts = slots[:2]
    if len(slots) != 2 or any(a.labeller_id is None for a in firsts):
        return 0, False  # single-labelled, an open slot, or already more than two votes
    if any(a.completed_at is None for a in firsts):
        return 0, not lock
    project = assignment.pool.question_set.project
    grades: dict[int, dict[int, int]] = {}
    for candidate_id, assignment_id, grade in Judgement.objects.filter(
        assignment__in=[a.pk for a in firsts]
    ).values_list("candidate_id", "assignment_id", "grade"):
        grades.setdefault(candidate_id, {})[assignment_id] = grade
    decided = set(
        Resolution.objects.filter(**key, candidate__isnull=False).values_list(
            "candidate_id", flat=True
        )
    )
    disputed = [
        candidate_id
        for candidate_id, by in sorted(grades.items())
        if len(by) == 2
        and candidate_id not in decided
        and needs_third_vote(*(by[a.pk] for a in firsts), rule=project.escalate_on)
    ]
    if not disputed:
        return 0, False
    documents = dict(
        Candidate.objects.filter(pk__in=disputed).values_list("pk", "version__document_id")
    )
    # Nobody who holds the question in any way, a calibration question on it included (a
    # labeller labels a question once).
    holders = set(Assignment.objects.filter(**key).values_list("labeller_id", flat=True))
    third, seen = _third_labeller(project, holders, documents)
    slot = None
    if third is not None:
        top = Assignment.objects.filter(**key).aggregate(top=Max("slot"))["top"]
        slot = Assignment.objects.create(
            **key, slot=top + 1, labeller_id=third, assigned_at=timezone.now()
        )
        # For the lead's history of the question; a labeller's pages never list these rows.
        Change.objects.create(
            assignment=slot,
            subject=ChangeSubject.ASSIGNMENT,
            action="third labeller (escalation)",
            before=None,
            after={"passages": len(seen)},
            made_by=None,
        )
    EscalatedItem.objects.bulk_create(
        [
            EscalatedItem(
                **key,
                candidate_id=candidate_id,
                assignment=slot if candidate_id in seen else None,
                grades=[grades[candidate_id][a.pk] for a in firsts],
            )
            for candidate_id in disputed
        ]
    )
    # The third slot and the escalated passages change what the gold rule decides (a vote
    # awaited, the verdict's voters); both paths (the write's and the look after its commit)
    # come here, in their own transaction.
    gold_state.mark_stale(**key)
    return len(disputed), False


def _third_labeller(
    project, holders: set[int | None], documents: dict[int, int]
) -> tuple[int | None, set[int]]:
    """The third labeller's user id (None if nobody qualifies: ``holders`` already hold the
    question) and the disputed candidates they can see."""
    labellers = list(
        Membership.objects.filter(project=project, role=Role.LABELLER, user__is_active=True)
        .exclude(user_id__in=holders)
        .values_list("user_id", flat=True)
    )
    if not labellers:
        return None, set()
    sight = Sight(project_id=project.pk, document_ids=set(documents.values()))
    open_work = dict(
        Assignment.objects.in_project(project)
        .filter(labeller_id__in=labellers)
        .values("labeller_id")
        .annotate(n=Count("pk", filter=Q(completed_at__isnull=True)))
        .values_list("labeller_id", "n")
    )
    best, best_seen, best_key = None, set(), None
    for user_id in labellers:
        seen = {c for c, document in documents.items() if sight.sees(user_id, document)}
        if not seen:
            continue
        rank = (-len(seen), open_work.get(user_id, 0), user_id)
        if best_key is None or rank < best_key:
            best, best_seen, best_key = user_id, seen, rank
    return best, best_seen


# A lead moving a third labeller's slot --------------------------------------------------------


def is_third_slot(assignment: Assignment) -> bool:
    """Whether ``assignment`` is a third labeller's slot (it holds escalated passages)."""
    return assignment.slot > 2 and EscalatedItem.objects.filter(assignment=assignment).exists()


def check_third_labeller(*, slot: Assignment, labeller) -> None:
    """Raise NotAThirdLabeller unless ``labeller`` may take the third labeller's ``slot`` from a
    lead: the rule that picked the first one (an active project labeller who holds no other
    slot of the question), and one who can see every escalated passage of it, since the slot
    shows nothing else and a passage they cannot see would wait for them forever."""
    project = slot.pool.question_set.project
    name = labeller.get_username()
    if not Membership.objects.filter(
        project=project, role=Role.LABELLER, user=labeller, user__is_active=True
    ).exists():
        raise NotAThirdLabeller(
            f"{name} is not an active labeller of this project; a third vote on disputed "
            "passages goes to a labeller."
        )
    documents = _documents(slot)
    sight = Sight(project_id=project.pk, document_ids=set(documents.values()))
    if not all(sight.sees(labeller.pk, document) for document in documents.values()):
        raise NotAThirdLabeller(
            f"{name} cannot see every disputed passage of this third vote; choose a labeller "
            "who can see them."
        )


def hand_on(*, slot: Assignment, user) -> Assignment | None:
    """A lead took the third labeller's ``slot`` back: give it to the next labeller the rule
    picks, never one of its previous holders (nor anyone holding the question). Passages the new one
    cannot see go to a lead, as at escalation; with nobody left, all of them do and the slot
    goes (an open third slot must not be claimable from the pool, where anyone could take it,
    nor wait for nobody). Returns the slot, or None when it went. Call inside the transaction
    that locked ``slot``."""
    key = {"pool_id": slot.pool_id, "question_id": slot.question_id}
    documents = _documents(slot)
    holders = set(Assignment.objects.filter(**key).values_list("labeller_id", flat=True))
    project = slot.pool.question_set.project
    third, seen = _third_labeller(project, holders | _past_holders(slot), documents)
    before = {"labeller": slot.labeller.get_username() if slot.labeller else None}
    EscalatedItem.objects.filter(assignment=slot).exclude(candidate_id__in=seen).update(
        assignment=None
    )
    gold_state.mark_stale(**key)
    if third is None:
        # The slot's own history goes with it, so the question's first slot keeps the record
        # (a lead's page; a labeller's pages never list these rows).
        first = Assignment.objects.filter(**key).work().order_by("slot").first()
        Change.objects.create(
            assignment=first,
            subject=ChangeSubject.ASSIGNMENT,
            action="third labeller withdrawn",
            before=before,
            after={"passages to a lead": len(documents), "why": "nobody else can see them"},
            made_by=user,
        )
        slot.delete()
        return None
    slot.labeller_id = third
    slot.assigned_at = timezone.now()
    slot.lease_expires_at = None
    slot.save(update_fields=["labeller", "assigned_at", "lease_expires_at"])
    slot.refresh_from_db(fields=["labeller"])
    Change.objects.create(
        assignment=slot,
        subject=ChangeSubject.ASSIGNMENT,
        action="third labeller handed on",
        before=before,
        after={"labeller": slot.labeller.get_username(), "passages": len(seen)},
        made_by=user,
    )
    return slot


def _documents(slot: Assignment) -> dict[int, int]:
    """The slot's escalated candidates and their documents."""
    return dict(
        EscalatedItem.objects.filter(assignment=slot).values_list(
            "candidate_id", "candidate__version__document_id"
        )
    )


def _past_holders(slot: Assignment) -> set[int]:
    """Everyone who held ``slot`` before: a lead who took it from them meant it."""
    names = set()
    for before, after in Change.objects.filter(
        assignment=slot, subject=ChangeSubject.ASSIGNMENT
    ).values_list("before", "after"):
        for side in (before, after):
            if isinstance(side, dict) and side.get("labeller"):
                names.add(side["labeller"])
    return set(get_user_model().objects.filter(username__in=names).values_list("pk", flat=True))
