"""Who labels what: planning a pool's assignments, handing out the next question, and a lead's
reassign/unassign.

Blindness starts here: a labeller's next question is chosen by question order only, and
nothing a labeller is told (not even "no more questions") depends on other labellers' slots.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from corpus.models import Membership, Project
from goldset.errors import ServiceError
from labelling import assignment_plan as strategy
from labelling.models import (
    Assignment,
    AssignmentQuerySet,
    Candidate,
    Change,
    ChangeSubject,
    Judgement,
    Pool,
    PoolState,
    QuestionSet,
)

User = get_user_model()


class AssignmentError(ServiceError):
    """An assignment request that cannot be carried out."""


@dataclass
class PlanResult:
    assignments: int = 0
    double_labelled: int = 0
    unclaimed: int = 0
    per_labeller: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        if not self.assignments:
            return "Every question of this pool already has its assignments; nothing was added."
        spread = ", ".join(f"{name} {count}" for name, count in sorted(self.per_labeller.items()))
        parts = [f"{self.assignments} assignments planned"]
        parts.append(f"{self.double_labelled} questions double-labelled")
        if spread:
            parts.append(f"per labeller: {spread}")
        if self.unclaimed:
            parts.append(f"{self.unclaimed} left for labellers to claim with “Next question”")
        return "; ".join(parts) + "."


def plan_assignments(
    *,
    pool: Pool,
    labellers: Sequence = (),
    double_share: float = strategy.DEFAULT_DOUBLE_SHARE,
    double_count: int | None = None,
    seed: int = 0,
    user=None,
) -> PlanResult:
    """Assignments for every question of ``pool`` that has none yet, spread evenly over
    ``labellers`` with a share (or ``double_count``) double-labelled.

    Without labellers the slots are left unclaimed for "next question". Running it again only
    tops up questions added since, so it is safe to repeat (the demo does): a share applies to
    the new questions, an absolute ``double_count`` to the whole pool (questions already
    double-labelled count towards it).
    """
    if pool.state != PoolState.READY:
        raise AssignmentError(
            f"The pool {pool.name} is not ready yet ({pool.get_state_display()})."
        )
    project_id = pool.question_set.project_id
    labellers = list(labellers)
    members = set(
        Membership.objects.filter(
            project_id=project_id, user__in=[u.pk for u in labellers]
        ).values_list("user_id", flat=True)
    )
    strangers = [u.get_username() for u in labellers if u.pk not in members]
    if strangers:
        raise AssignmentError(f"Not members of this project: {', '.join(strangers)}.")
    with transaction.atomic():
        # One plan at a time per pool: a second lead pressing "plan" waits, then tops up nothing.
        Pool.objects.select_for_update().filter(pk=pool.pk).first()
        planned_questions = Assignment.objects.filter(pool=pool).values("question_id")
        questions = list(
            pool.question_set.questions.exclude(pk__in=planned_questions)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if not questions:
            return PlanResult()
        already_double = Assignment.objects.filter(pool=pool, slot=2).count()
        if double_count is not None and Assignment.objects.filter(pool=pool).exists():
            double_count = min(len(questions), max(0, double_count - already_double))
        current_load = dict(
            Assignment.objects.filter(pool=pool, labeller__in=labellers)
            .values("labeller")
            .annotate(n=Count("pk"))
            .values_list("labeller", "n")
        )
        try:
            plan = strategy.plan_assignments(
                questions=questions,
                labellers=[u.pk for u in labellers],
                double_share=double_share,
                double_count=double_count,
                seed=seed,
                current_load=current_load,
            )
        except strategy.PlanError as exc:
            raise AssignmentError(str(exc)) from exc
        now = timezone.now()
        Assignment.objects.bulk_create(
            [
                Assignment(
                    pool=pool,
                    question_id=p.question,
                    slot=p.slot,
                    labeller_id=p.labeller,
                    assigned_at=now if p.labeller is not None else None,
                )
                for p in plan
            ],
            batch_size=2000,
        )
    names = {u.pk: u.get_username() for u in labellers}
    return PlanResult(
        assignments=len(plan),
        double_labelled=sum(1 for p in plan if p.slot == 2),
        unclaimed=sum(1 for p in plan if p.labeller is None),
        per_labeller={names[k]: v for k, v in strategy.workload(plan).items()},
    )


def next_assignment(
    *, project: Project, labeller, after: Assignment | None = None
) -> Assignment | None:
    """The labeller's next question: their own open work first (the one after ``after`` in
    queue order, wrapping round), else a newly claimed unclaimed slot, else ``after`` itself if
    it is still open, else None."""
    own = list(
        Assignment.objects.in_project(project)
        .open_for(labeller)
        .filter(pool__state=PoolState.READY)
        .in_queue_order()
        .values_list("pk", "pool_id", "question_id")
    )
    if after is not None:
        key = (after.pool_id, after.question_id)
        later = [pk for pk, pool_id, q in own if (pool_id, q) > key]
        earlier = [pk for pk, pool_id, q in own if (pool_id, q) < key]
        candidates = later + earlier
    else:
        candidates = [pk for pk, _, _ in own]
    if candidates:
        return Assignment.objects.get(pk=candidates[0])
    claimed = claim_assignment(project=project, labeller=labeller)
    if claimed is None and after is not None and any(pk == after.pk for pk, _, _ in own):
        return after  # the only open question left is the one being worked on
    return claimed


def claim_assignment(*, project: Project, labeller) -> Assignment | None:
    """Give the labeller one unclaimed slot, or None when there is none left for them.

    `SKIP LOCKED` lets concurrent requests each lock a different row, so no slot is handed to
    two people and no question gets more labellers than it has slots. (SQLite has no row locks;
    it serialises writers instead.)
    """
    for _ in range(5):
        try:
            with transaction.atomic():
                slot = (
                    Assignment.objects.in_project(project)
                    .claimable_by(labeller)
                    .order_by("pool_id", "question_id", "slot")
                    .select_for_update(skip_locked=True, of=("self",))
                    .first()
                )
                if slot is None:
                    return None
                slot.labeller = labeller
                slot.assigned_at = timezone.now()
                slot.save(update_fields=["labeller", "assigned_at"])
                _record_assignment_change(slot, action="claim", before=None, user=labeller)
                return slot
        except IntegrityError:
            # The same labeller claimed the other slot of this question in a parallel request;
            # the constraint refused the second, so look again.
            continue
    return None


def reassign(*, assignment: Assignment, labeller, user) -> Assignment:
    """Give a not-yet-started assignment to another member of the project."""
    project_id = assignment.pool.question_set.project_id
    if not Membership.objects.filter(project_id=project_id, user=labeller).exists():
        raise AssignmentError(f"{labeller.get_username()} is not a member of this project.")
    with transaction.atomic():
        locked = _unstarted(assignment)
        if locked.labeller_id == labeller.pk:
            return locked
        other = (
            Assignment.objects.filter(
                pool_id=locked.pool_id, question_id=locked.question_id, labeller=labeller
            )
            .exclude(pk=locked.pk)
            .exists()
        )
        if other:
            raise AssignmentError(
                f"{labeller.get_username()} already labels this question; a double-labelled "
                "question needs two different labellers."
            )
        before = _holder(locked)
        locked.labeller = labeller
        locked.assigned_at = timezone.now()
        locked.save(update_fields=["labeller", "assigned_at"])
        _record_assignment_change(locked, action="reassign", before=before, user=user)
        return locked


def unassign(*, assignment: Assignment, user) -> Assignment:
    """Take a not-yet-started assignment back; its slot waits to be claimed again."""
    with transaction.atomic():
        locked = _unstarted(assignment)
        if locked.labeller_id is None:
            return locked
        before = _holder(locked)
        locked.labeller = None
        locked.assigned_at = None
        locked.save(update_fields=["labeller", "assigned_at"])
        _record_assignment_change(locked, action="unassign", before=before, user=user)
        return locked


def _unstarted(assignment: Assignment) -> Assignment:
    locked = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("labeller")
        .get(pk=assignment.pk)
    )
    # Handing started work to someone else would show them another labeller's grades.
    if locked.judgements.exists() or hasattr(locked, "verdict"):
        who = locked.labeller.get_username() if locked.labeller else "A labeller"
        raise AssignmentError(
            f"{who} has already started this question, so it cannot be moved: their grades "
            "would become visible to someone else."
        )
    return locked


def _holder(assignment: Assignment) -> dict:
    return {"labeller": assignment.labeller.get_username() if assignment.labeller else None}


def _record_assignment_change(assignment: Assignment, *, action: str, before, user) -> None:
    Change.objects.create(
        assignment=assignment,
        subject=ChangeSubject.ASSIGNMENT,
        action=action,
        before=before,
        after=_holder(assignment),
        made_by=user,
    )


# Progress (reads) --------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueProgress:
    assigned: int
    done: int
    judgements: int
    median_seconds: float | None

    @property
    def remaining(self) -> int:
        return self.assigned - self.done


def queue_progress(assignments: AssignmentQuerySet, *, viewer) -> QueueProgress:
    """Done, remaining and the median seconds per judgement over ``assignments``.

    Callers pass a labeller's own assignments for the labeller's view, so the counts can never
    include anyone else's work. Judgements count only on passages ``viewer`` may see: a count
    must not reveal a restricted document (or survive the revoking of its group).
    """
    counts = assignments.aggregate(
        assigned=Count("pk"), done=Count("pk", filter=Q(completed_at__isnull=False))
    )
    seconds = list(
        Judgement.objects.filter(
            assignment__in=assignments.values("pk"),
            candidate__in=Candidate.objects.not_hidden_from(viewer).values("pk"),
        ).values_list("seconds_spent", flat=True)
    )
    return QueueProgress(
        assigned=counts["assigned"],
        done=counts["done"],
        judgements=len(seconds),
        median_seconds=statistics.median(seconds) if seconds else None,
    )


def progress_by_labeller(*, project: Project, viewer) -> list[tuple[object, QueueProgress]]:
    assignments = Assignment.objects.in_project(project)
    labeller_ids = assignments.filter(labeller__isnull=False).values("labeller")
    return [
        (labeller, queue_progress(assignments.filter(labeller=labeller), viewer=viewer))
        for labeller in User.objects.filter(pk__in=labeller_ids).order_by("username")
    ]


def progress_by_question_set(
    *, project: Project, viewer
) -> list[tuple[QuestionSet, QueueProgress, int]]:
    """Per question set: progress over all its slots, and how many slots wait to be claimed."""
    rows = []
    for question_set in QuestionSet.objects.filter(
        project=project, pools__assignments__isnull=False
    ).distinct():
        assignments = Assignment.objects.filter(pool__question_set=question_set)
        progress = queue_progress(assignments, viewer=viewer)
        rows.append((question_set, progress, assignments.unclaimed().count()))
    return rows
