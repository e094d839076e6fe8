"""Who labels what: planning a pool's assignments, handing out the next question, and a lead's
reassign/unassign.

Blindness starts here: a labeller's next question is chosen by question order only, and
nothing a labeller is told (not even "no more questions") depends on other labellers' slots.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from corpus.models import Membership, Project
from goldset.errors import ServiceError
from labelling import assignment_plan as strategy
from labelling.models import (
    Assignment,
    AssignmentPurpose,
    AssignmentQuerySet,
    Candidate,
    Change,
    ChangeSubject,
    Judgement,
    Pool,
    PoolState,
    QuestionSet,
    included_q,
)
from labelling.services import calibration, escalation, gold_state, leases
from labelling.services.judgement_time import (
    JudgementTime,
    SecondsSummary,
    judgement_time,
    summarize,
)
from labelling.services.votes import Sight

User = get_user_model()


class AssignmentError(ServiceError):
    """An assignment request that cannot be carried out."""


class AlreadyStarted(AssignmentError):
    """Started work never moves to someone else."""


class HoldsOtherSlot(AssignmentError):
    """A double-labelled question needs two different labellers."""


def _count(n: int, noun: str, plural: str = "") -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


@dataclass
class PlanResult:
    assignments: int = 0
    double_labelled: int = 0
    unclaimed: int = 0
    per_labeller: dict[str, int] = field(default_factory=dict)
    # Passages of planned questions that only one of their labellers can see (single-labelled
    # although the question is double-labelled), and those none of them can see (each goes to
    # the adjudication queue, for a lead in its access group).
    single_by_access: int = 0
    unseen: int = 0
    added_seconds: bool = False  # a top-up of second labellers, not a plan

    def describe(self) -> str:
        if not self.assignments:
            if self.added_seconds:
                return "No question got a second labeller: the pool already has that many."
            return "Every question of this pool already has its assignments; nothing was added."
        spread = ", ".join(f"{name} {count}" for name, count in sorted(self.per_labeller.items()))
        if self.added_seconds:
            parts = [f"{_count(self.assignments, 'question')} got a second labeller"]
        else:
            parts = [f"{_count(self.assignments, 'assignment')} planned"]
            parts.append(f"{_count(self.double_labelled, 'question')} double-labelled")
        if spread:
            parts.append(f"per labeller: {spread}")
        if self.unclaimed:
            parts.append(f"{self.unclaimed} left for labellers to claim with “Next question”")
        if self.single_by_access:
            parts.append(
                f"{_count(self.single_by_access, 'passage')} no second labeller can see "
                f"{'stays' if self.single_by_access == 1 else 'stay'} single-labelled"
            )
        if self.unseen:
            parts.append(
                f"{_count(self.unseen, 'passage')} none of the chosen labellers can see will "
                "wait in the adjudication queue for a lead of its access group"
            )
        return "; ".join(parts) + "."


def _check_members(pool: Pool, labellers: Sequence) -> None:
    members = set(
        Membership.objects.filter(
            project_id=pool.question_set.project_id, user__in=[u.pk for u in labellers]
        ).values_list("user_id", flat=True)
    )
    strangers = [u.get_username() for u in labellers if u.pk not in members]
    if strangers:
        raise AssignmentError(f"Not members of this project: {', '.join(strangers)}.")
    inactive = [u.get_username() for u in labellers if not u.is_active]
    if inactive:
        raise AssignmentError(f"These accounts are deactivated: {', '.join(inactive)}.")


def hidden_passages(*, pool: Pool, question_ids, labeller_ids) -> dict[int, dict[int, int]]:
    """For each question, how many of its passages in ``pool`` each labeller's access groups
    hide (only non-zero counts are kept)."""
    rows = list(
        Candidate.objects.filter(pool=pool, question_id__in=list(question_ids)).values_list(
            "question_id", "version__document_id"
        )
    )
    sight = Sight(project_id=pool.question_set.project_id, document_ids={d for _, d in rows})
    hidden: dict[int, dict[int, int]] = defaultdict(dict)
    for question_id, document_id in rows:
        for labeller_id in labeller_ids:
            if not sight.sees(labeller_id, document_id):
                counts = hidden[question_id]
                counts[labeller_id] = counts.get(labeller_id, 0) + 1
    return dict(hidden)


def _access_outcome(plan, hidden, pool: Pool) -> tuple[int, int]:
    """(passages single-labelled because only one labeller of their double-labelled question
    sees them, passages none of their labellers sees) among the questions of a plan, counted
    after it is written. Unclaimed slots are anyone's, so such questions are not counted."""
    if not hidden:
        return 0, 0
    questions = {planned.question for planned in plan} & set(hidden)
    holders: dict = defaultdict(list)
    for question_id, labeller_id in (
        Assignment.objects.work().filter(pool=pool, question_id__in=questions)
    ).values_list("question_id", "labeller_id"):
        holders[question_id].append(labeller_id)
    rows = list(
        Candidate.objects.filter(pool=pool, question_id__in=questions).values_list(
            "question_id", "version__document_id"
        )
    )
    sight = Sight(project_id=pool.question_set.project_id, document_ids={d for _, d in rows})
    single = unseen = 0
    for question_id, document_id in rows:
        labs = holders[question_id]
        if None in labs:
            continue
        seeing = sum(1 for lab in labs if sight.sees(lab, document_id))
        if seeing == 0:
            unseen += 1
        elif seeing == 1 and len(labs) >= 2:
            single += 1
    return single, unseen


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
    ``labellers`` with a share (or ``double_count``) double-labelled, each question to the
    labellers who can see the most of its passages (access groups).

    Without labellers the slots are left unclaimed for "next question". Running it again only
    tops up questions added since, so it is safe to repeat (the demo does): a share applies to
    the new questions, an absolute ``double_count`` to the whole pool (questions already
    double-labelled count towards it).
    """
    if pool.state != PoolState.READY:
        raise AssignmentError(
            f"The pool {pool.name} is not ready yet ({pool.get_state_display()})."
        )
    labellers = list(labellers)
    _check_members(pool, labellers)
    with transaction.atomic():
        # One plan at a time per pool: a second lead pressing "plan" waits, then tops up nothing.
        Pool.objects.select_for_update().filter(pk=pool.pk).first()
        planned_questions = Assignment.objects.filter(pool=pool).values("question_id")
        questions = list(
            pool.question_set.questions.included()
            .exclude(pk__in=planned_questions)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if not questions:
            return PlanResult()
        already_double = Assignment.objects.filter(pool=pool, slot=2).count()
        if double_count is not None and Assignment.objects.filter(pool=pool).exists():
            double_count = min(len(questions), max(0, double_count - already_double))
        current_load = _current_load(pool, labellers)
        hidden = hidden_passages(
            pool=pool, question_ids=questions, labeller_ids=[u.pk for u in labellers]
        )
        try:
            plan = strategy.plan_assignments(
                questions=questions,
                labellers=[u.pk for u in labellers],
                double_share=double_share,
                double_count=double_count,
                seed=seed,
                current_load=current_load,
                hidden=hidden,
            )
        except strategy.PlanError as exc:
            raise AssignmentError(str(exc)) from exc
        _create(pool, plan)
        single, unseen = _access_outcome(plan, hidden, pool)
    names = {u.pk: u.get_username() for u in labellers}
    return PlanResult(
        assignments=len(plan),
        double_labelled=sum(1 for p in plan if p.slot == 2),
        unclaimed=sum(1 for p in plan if p.labeller is None),
        per_labeller={names[k]: v for k, v in strategy.workload(plan).items()},
        single_by_access=single,
        unseen=unseen,
    )


def add_second_labellers(
    *,
    pool: Pool,
    labellers: Sequence = (),
    double_share: float | None = None,
    double_count: int | None = None,
    seed: int = 0,
    user=None,
) -> PlanResult:
    """Raise a planned pool's double-labelled share: give second labellers to more of its
    single-labelled questions until ``double_count`` questions (or ``double_share`` of its
    planned questions) are double-labelled. Each second labeller differs from the first and
    can see the question's passages where possible; without labellers the new slots wait to
    be claimed. Questions already double-labelled count towards the target."""
    if pool.state != PoolState.READY:
        raise AssignmentError(
            f"The pool {pool.name} is not ready yet ({pool.get_state_display()})."
        )
    labellers = list(labellers)
    _check_members(pool, labellers)
    with transaction.atomic():
        Pool.objects.select_for_update().filter(pk=pool.pk).first()
        planned = Assignment.objects.work().filter(included_q("question__"), pool=pool)
        doubled = set(planned.filter(slot=2).values_list("question_id", flat=True))
        firsts = dict(
            planned.filter(slot=1)
            .exclude(question_id__in=doubled)
            .order_by("question_id")
            .values_list("question_id", "labeller_id")
        )
        total = len(doubled) + len(firsts)
        if not total:
            raise AssignmentError(
                f"The pool {pool.name} has no planned questions yet: plan it first."
            )
        if double_count is not None:
            target = double_count
        elif double_share is not None and 0 <= double_share <= 1:
            target = int(double_share * total + 0.5)
        else:
            raise AssignmentError(
                "Give the double-labelled share (0–100%) or a number of questions."
            )
        if target > total:
            raise AssignmentError(
                f"The pool has {_count(total, 'planned question')}; it cannot have {target} "
                "double-labelled."
            )
        wanted = max(0, target - len(doubled))
        if not wanted:
            return PlanResult(added_seconds=True)
        hidden = hidden_passages(
            pool=pool, question_ids=list(firsts), labeller_ids=[u.pk for u in labellers]
        )
        try:
            plan = strategy.plan_second_labels(
                first_labellers=firsts,
                labellers=[u.pk for u in labellers],
                count=wanted,
                seed=seed,
                current_load=_current_load(pool, labellers),
                hidden=hidden,
            )
        except strategy.PlanError as exc:
            raise AssignmentError(str(exc)) from exc
        _create(pool, plan)
        single, unseen = _access_outcome(plan, hidden, pool)
        for planned_slot in plan:
            if planned_slot.labeller is not None:
                _record_assignment_change(
                    Assignment.objects.get(pool=pool, question_id=planned_slot.question, slot=2),
                    action="second labeller added",
                    before=None,
                    user=user,
                )
    names = {u.pk: u.get_username() for u in labellers}
    return PlanResult(
        assignments=len(plan),
        double_labelled=len(plan),
        unclaimed=sum(1 for p in plan if p.labeller is None),
        per_labeller={names[k]: v for k, v in strategy.workload(plan).items()},
        single_by_access=single,
        unseen=unseen,
        added_seconds=True,
    )


def _current_load(pool: Pool, labellers: Sequence) -> dict:
    return dict(
        Assignment.objects.work()
        .filter(pool=pool, labeller__in=labellers)
        .values("labeller")
        .annotate(n=Count("pk"))
        .values_list("labeller", "n")
    )


def _create(pool: Pool, plan) -> None:
    """Write a plan. A labeller who answered one of its questions as a calibration question
    cannot label it again: that slot is left open for someone else to claim."""
    calibrated = set(
        Assignment.objects.calibration()
        .filter(pool=pool, question_id__in=[p.question for p in plan])
        .values_list("question_id", "labeller_id")
    )
    plan = [
        replace(p, labeller=None) if (p.question, p.labeller) in calibrated else p for p in plan
    ]
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
    gold_state.mark_questions_stale((pool.pk, p.question) for p in plan)


def next_assignment(
    *, project: Project, labeller, after: Assignment | None = None, rng=None
) -> Assignment | None:
    """The labeller's next question: their own open work first (the one after ``after`` in
    queue order, wrapping round), else a newly claimed unclaimed slot, else ``after`` itself if
    it is still open, else None. Only ``after``'s pool and question are read: it need not be a
    saved row (the queue's "next" names them), and only the labeller's own rows are returned.

    While real work waits for the labeller, the project's calibration share of these requests
    gives a calibration question instead (`labelling.services.calibration.serve`; ``rng``
    draws)."""
    own = list(
        Assignment.objects.in_project(project)
        .open_for(labeller)
        .filter(pool__state=PoolState.READY)
        .in_queue_order()
    )
    key = (after.pool_id, after.question_id) if after is not None else None
    if key is not None:
        later = [a for a in own if (a.pool_id, a.question_id) > key]
        candidates = later + [a for a in own if (a.pool_id, a.question_id) < key]
    else:
        candidates = own
    real_work = calibration.share_percent(project) > 0 and (
        any(a.purpose == AssignmentPurpose.WORK for a in candidates)
        or Assignment.objects.in_project(project).claimable_by(labeller).exists()
    )
    if real_work:
        served = calibration.serve(project=project, labeller=labeller, rng=rng)
        if served is not None:
            return served
    if candidates:
        return candidates[0]
    claimed = claim_assignment(project=project, labeller=labeller)
    if claimed is None:  # the only open question left may be the one being worked on
        return next((a for a in own if (a.pool_id, a.question_id) == key), None)
    return claimed


def claim_assignment(*, project: Project, labeller) -> Assignment | None:
    """Give the labeller one unclaimed slot, or None when there is none left for them. The slot
    is theirs for the project's lease (`labelling.services.leases`); slots whose lease lapsed
    with nothing graded go back to the pool first, so they can be claimed here.

    `SKIP LOCKED` lets concurrent requests each lock a different row, so no slot is handed to
    two people and no question gets more labellers than it has slots. (SQLite has no row locks;
    it serialises writers instead.)
    """
    leases.release_lapsed_leases(project=project)
    for _ in range(5):
        try:
            with transaction.atomic():
                slot = first_claimable_slot(project=project, labeller=labeller)
                if slot is None:
                    return None
                slot.labeller = labeller
                slot.assigned_at = timezone.now()
                slot.lease_expires_at = leases.lease_end(project=project, now=slot.assigned_at)
                slot.save(update_fields=["labeller", "assigned_at", "lease_expires_at"])
                _record_assignment_change(slot, action="claim", before=None, user=labeller)
                return slot
        except IntegrityError:
            # The same labeller claimed the other slot of this question in a parallel request;
            # the constraint refused the second, so look again.
            continue
    return None


def first_claimable_slot(*, project: Project, labeller) -> Assignment | None:
    """The first slot the labeller may claim, in (pool, question, slot) order, locked where
    the database has row locks (call it inside a transaction); a slot another request holds
    locked is skipped, so parallel "next question"s never wait on each other."""
    return (
        Assignment.objects.in_project(project)
        .claimable_by(labeller)
        .order_by("pool_id", "question_id", "slot")
        .select_for_update(skip_locked=True, of=("self",))
        .first()
    )


def reassign(*, assignment: Assignment, labeller, user) -> Assignment:
    """Give a not-yet-started assignment to another member of the project."""
    project_id = assignment.pool.question_set.project_id
    if not Membership.objects.filter(project_id=project_id, user=labeller).exists():
        raise AssignmentError(f"{labeller.get_username()} is not a member of this project.")
    if not labeller.is_active:
        raise AssignmentError(f"{labeller.get_username()}'s account is deactivated.")
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
            raise HoldsOtherSlot(
                f"{labeller.get_username()} already labels this question; a double-labelled "
                "question needs two different labellers."
            )
        if escalation.is_third_slot(locked):
            escalation.check_third_labeller(slot=locked, labeller=labeller)
        before = _holder(locked)
        locked.labeller = labeller
        locked.assigned_at = timezone.now()
        locked.lease_expires_at = None  # a lead's hand-over: no lease
        locked.save(update_fields=["labeller", "assigned_at", "lease_expires_at"])
        _record_assignment_change(locked, action="reassign", before=before, user=user)
        return locked


def unassign(*, assignment: Assignment, user) -> Assignment | None:
    """Take a not-yet-started assignment back; its slot waits to be claimed again. A third
    labeller's slot is never left open (anyone could claim it): it goes on to the next
    labeller who may take it, or, with nobody left, its passages go to a lead and it goes
    (None; `labelling.services.escalation.hand_on`)."""
    with transaction.atomic():
        locked = _unstarted(assignment)
        if locked.labeller_id is None:
            return locked
        if escalation.is_third_slot(locked):
            return escalation.hand_on(slot=locked, user=user)
        before = _holder(locked)
        locked.labeller = None
        locked.assigned_at = None
        locked.lease_expires_at = None
        locked.save(update_fields=["labeller", "assigned_at", "lease_expires_at"])
        _record_assignment_change(locked, action="unassign", before=before, user=user)
        return locked


@dataclass
class BulkResult:
    moved: int = 0
    unchanged: int = 0
    started: int = 0  # refused: their labellers have begun them
    conflicts: list[str] = field(default_factory=list)  # refused: the labeller holds the other slot
    # refused: a third vote's slot, and the labeller may not take it (role, or passages unseen)
    third_votes: list[str] = field(default_factory=list)

    def describe(self, *, labeller=None) -> str:
        target = (
            f"to {labeller.get_username()}" if labeller is not None else "back to the open slots"
        )
        parts = [f"{_count(self.moved, 'assignment')} moved {target}"]
        if self.unchanged:
            parts.append(f"{self.unchanged} already there")
        if self.started:
            parts.append(
                f"{_count(self.started, 'assignment')} not moved: "
                f"{'its labeller has' if self.started == 1 else 'their labellers have'} started"
            )
        if self.conflicts:
            parts.append(
                f"{_count(len(self.conflicts), 'assignment')} not moved: "
                f"{labeller.get_username() if labeller else 'the labeller'} already labels "
                f"{', '.join(sorted(set(self.conflicts)))}"
            )
        if self.third_votes:
            parts.append(
                f"{_count(len(self.third_votes), 'assignment')} not moved: "
                f"{', '.join(sorted(set(self.third_votes)))} "
                f"{'is a third vote' if len(self.third_votes) == 1 else 'are third votes'} "
                "on disputed passages, for a labeller who can see them"
            )
        return "; ".join(parts) + "."


def reassign_many(*, assignments: Sequence[Assignment], labeller, user) -> BulkResult:
    """Move unstarted assignments to ``labeller`` (None: back to the open slots, for "next
    question"). Each moves on its own, so one refusal does not hold back the others; started
    work never moves (it would show someone else a labeller's grades)."""
    result = BulkResult()
    for assignment in assignments:
        before = assignment.labeller_id
        target = labeller.pk if labeller is not None else None
        if before == target:
            result.unchanged += 1
            continue
        try:
            if labeller is None:
                unassign(assignment=assignment, user=user)
            else:
                reassign(assignment=assignment, labeller=labeller, user=user)
        except (AlreadyStarted, HoldsOtherSlot, escalation.NotAThirdLabeller) as exc:
            if isinstance(exc, escalation.NotAThirdLabeller):
                result.third_votes.append(assignment.question.external_id)
            elif isinstance(exc, HoldsOtherSlot):
                result.conflicts.append(assignment.question.external_id)
            elif isinstance(exc, AlreadyStarted):
                result.started += 1
        else:
            result.moved += 1
    return result


def _unstarted(assignment: Assignment) -> Assignment:
    locked = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("labeller")
        .get(pk=assignment.pk)
    )
    # Handing started work to someone else would show them another labeller's grades.
    if locked.judgements.exists() or hasattr(locked, "verdict"):
        who = locked.labeller.get_username() if locked.labeller else "A labeller"
        raise AlreadyStarted(
            f"{who} has already started this question, so it cannot be moved: their grades "
            "would become visible to someone else."
        )
    return locked


def _holder(assignment: Assignment) -> dict:
    return {"labeller": assignment.labeller.get_username() if assignment.labeller else None}


def _record_assignment_change(assignment: Assignment, *, action: str, before, user) -> None:
    """History of a slot's holder, and the question's stored gold decisions marked stale (who
    may still vote changed)."""
    gold_state.mark_stale(pool_id=assignment.pool_id, question_id=assignment.question_id)
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
    counts = assignments.aggregate(**_slot_counts())
    seconds = list(
        Judgement.objects.filter(
            assignment__in=assignments.values("pk"),
            candidate__in=Candidate.objects.not_hidden_from(viewer).values("pk"),
        ).values_list("seconds_spent", flat=True)
    )
    return _progress(counts, summarize(seconds) if seconds else None)


def _slot_counts() -> dict:
    """The counts a `QueueProgress` shows, as aggregates of assignments: slots, and done."""
    return {"assigned": Count("pk"), "done": Count("pk", filter=Q(completed_at__isnull=False))}


def _progress(counts: dict, seconds: SecondsSummary | None) -> QueueProgress:
    """Slot counts (``assigned``, ``done``) and the seconds of their judgements, as progress."""
    return QueueProgress(
        assigned=counts.get("assigned", 0),
        done=counts.get("done", 0),
        judgements=seconds.judgements if seconds else 0,
        median_seconds=seconds.median if seconds else None,
    )


def progress_by_labeller(
    *, project: Project, viewer, seconds: JudgementTime | None = None
) -> list[tuple[object, QueueProgress]]:
    """Each labeller's progress on the project's work (calibration questions left out: they
    are no pool's work; the Calibration page has them); ``seconds``: `judgement_time`, if
    read already."""
    if seconds is None:
        seconds = judgement_time(project=project, viewer=viewer)
    assignments = Assignment.objects.in_project(project).work()
    counts = {
        row["labeller"]: row
        for row in assignments.filter(labeller__isnull=False)
        .values("labeller")
        .annotate(**_slot_counts())
        .order_by()
    }
    return [
        (labeller, _progress(counts[labeller.pk], seconds.by_labeller.get(labeller.pk)))
        for labeller in User.objects.filter(pk__in=list(counts)).order_by("username")
    ]


def progress_by_question_set(
    *, project: Project, viewer, seconds: JudgementTime | None = None
) -> list[tuple[QuestionSet, QueueProgress, int]]:
    """Per question set: progress over all its slots, and how many slots wait to be claimed;
    ``seconds``: `judgement_time`, if read already."""
    if seconds is None:
        seconds = judgement_time(project=project, viewer=viewer)
    sets = QuestionSet.objects.filter(
        project=project, pools__assignments__purpose=AssignmentPurpose.WORK
    ).distinct()
    counts = {
        row["pool__question_set"]: row
        for row in Assignment.objects.work()
        .filter(pool__question_set__project=project)
        .values("pool__question_set")
        .annotate(**_slot_counts(), unclaimed=Count("pk", filter=Q(labeller__isnull=True)))
        .order_by()
    }
    return [
        (
            question_set,
            _progress(counts[question_set.pk], seconds.by_question_set.get(question_set.pk)),
            counts[question_set.pk]["unclaimed"],
        )
        for question_set in sets
    ]
