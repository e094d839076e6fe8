"""Leases: a question a labeller claims from the pool is theirs for the project's
`lease_minutes`, renewed by their activity (opening the page, any grading write).

When a lease runs out and nothing was graded on the slot (no judgement, verdict, note or span,
and no grading change since undone), the slot goes back to the pool for anyone to claim
(`release_lapsed_leases`: lazily before every claim, and by Celery beat every minute). A slot
with work stays its labeller's whatever the time (blindness: nobody is handed another's grades);
leads see it as *stale* on the Assignments page and decide. Only self-claimed slots carry a
lease: a lead's plan or hand-over never lapses.

A labeller whose slot went back to the pool and is still free takes it again with their next
write or visit (`retake_lapsed`), so nothing is lost; once another labeller holds it, their
write is refused with `LeaseLost`, which names no one and shows nothing of the other's work.

Two labellers never hold one slot: every change of holder locks the row first (claims with
`SKIP LOCKED`, `labelling.services.assignments.claim_assignment`), and a release re-reads the
slot's work after locking it, so a grade saved a moment before is never handed on.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from corpus.models import Project
from goldset.errors import ServiceError
from labelling.models import Assignment, Change, ChangeSubject, Judgement, Verdict
from labelling.services import gold_state

LAPSED = "lease lapsed"
RETAKEN = "lease retaken"
# Activity renews a lease at most this often: not every grade needs to write the row.
RENEW_EVERY = timedelta(minutes=1)
RELEASE_BATCH = 500


class LeaseLost(ServiceError):
    """The labeller's claimed question went back to the pool and someone else holds it now."""

    status = 409


def lease_lost_message(minutes: int) -> str:
    return (
        f"This question went back to the pool after {minutes} minute{'s' if minutes != 1 else ''}"
        " without work and another labeller has it now. Nothing of yours was on it; go on to "
        "your next question."
    )


def lease_end(*, project: Project, now: datetime | None = None) -> datetime | None:
    """When a lease taken (or renewed) now ends, or None when the project has leases off."""
    if not project.lease_minutes:
        return None
    return (now or timezone.now()) + timedelta(minutes=project.lease_minutes)


def renew_lease(*, assignment: Assignment, lease_minutes: int, now: datetime | None = None) -> None:
    """Push a leased slot's end on by the project's lease (activity by its labeller). Slots
    without a lease keep none; with leases turned off since, the lease is dropped."""
    if assignment.lease_expires_at is None:
        return
    now = now or timezone.now()
    if lease_minutes:
        until = now + timedelta(minutes=lease_minutes)
        if until - assignment.lease_expires_at < RENEW_EVERY:
            return
    else:
        until = None
    Assignment.objects.filter(pk=assignment.pk, labeller_id=assignment.labeller_id).update(
        lease_expires_at=until
    )
    assignment.lease_expires_at = until


def _graded_q() -> Q:
    """Work on a slot: a judgement (with its note and spans), a verdict, or a grading change
    (an undone grade still shows in the revisions the page carries)."""
    return (
        Q(Exists(Judgement.objects.filter(assignment=OuterRef("pk"))))
        | Q(Exists(Verdict.objects.filter(assignment=OuterRef("pk"))))
        | Q(
            Exists(
                Change.objects.filter(
                    assignment=OuterRef("pk"),
                    subject__in=[ChangeSubject.JUDGEMENT, ChangeSubject.VERDICT],
                )
            )
        )
    )


def lapsed(now: datetime | None = None):
    """Held slots of the pools' work whose lease has ended, in projects that have leases on
    (a calibration question never goes back to a pool: it is nobody else's work)."""
    return Assignment.objects.work().filter(
        labeller__isnull=False,
        lease_expires_at__lt=now or timezone.now(),
        pool__question_set__project__lease_minutes__gt=0,
    )


def stale(queryset, now: datetime | None = None):
    """Of ``queryset``, the slots whose lease ended with work on them: they stay their
    labeller's, and a lead decides."""
    return queryset.filter(
        labeller__isnull=False, lease_expires_at__lt=now or timezone.now()
    ).filter(_graded_q())


def release_lapsed_leases(*, project: Project | None = None, now: datetime | None = None) -> int:
    """Send back to the pool every slot (of ``project``, or of all projects) whose lease ended
    with nothing graded on it; each release is a `Change` like a lead's unassign. Returns how
    many went back. Slots another request holds locked (a write in progress) are left alone."""
    now = now or timezone.now()
    candidates = lapsed(now).exclude(_graded_q())
    if project is not None:
        candidates = candidates.filter(pool__question_set__project=project)
    released = 0
    while True:
        with transaction.atomic():
            locked = list(
                candidates.select_for_update(skip_locked=True, of=("self",))
                .select_related("labeller", "pool__question_set__project")
                .order_by("pk")[:RELEASE_BATCH]
            )
            if not locked:
                return released
            # Read again now the rows are locked: a grade committed after the query above began
            # must keep its slot with its labeller.
            worked = set(
                Assignment.objects.filter(pk__in=[a.pk for a in locked])
                .filter(_graded_q())
                .values_list("pk", flat=True)
            )
            gone = [a for a in locked if a.pk not in worked and a.lease_expires_at < now]
            Assignment.objects.filter(pk__in=[a.pk for a in gone]).update(
                labeller=None, assigned_at=None, lease_expires_at=None
            )
            # An open slot is a vote the gold rule still waits for (or can never get).
            gold_state.mark_questions_stale((a.pool_id, a.question_id) for a in gone)
            Change.objects.bulk_create(
                [
                    Change(
                        assignment=a,
                        subject=ChangeSubject.ASSIGNMENT,
                        action=LAPSED,
                        before={
                            "labeller": a.labeller.get_username(),
                            "labeller_id": a.labeller_id,
                            "lease_minutes": a.pool.question_set.project.lease_minutes,
                        },
                        after={"labeller": None},
                        made_by=None,
                    )
                    for a in gone
                ]
            )
            released += len(gone)
            if len(locked) < RELEASE_BATCH or not gone:
                return released


def _last_lapse(*, labeller, assignment_ids) -> Change | None:
    """The newest lapse of ``labeller``'s lease among these slots."""
    return (
        Change.objects.filter(
            assignment_id__in=assignment_ids,
            subject=ChangeSubject.ASSIGNMENT,
            action=LAPSED,
            before__labeller_id=labeller.pk,
        )
        .order_by("-pk")
        .first()
    )


def lapsed_slot(*, project: Project, labeller, pool_id: int, question_id: int):
    """The slot of (pool, question) in ``project`` whose lease ``labeller`` last held and lost,
    or None. Only its id, pool and question are read: a write locks it (`retake_lapsed`)."""
    slots = (
        Assignment.objects.in_project(project)
        .for_question(pool_id=pool_id, question_id=question_id)
        .values_list("pk", flat=True)
    )
    lapse = _last_lapse(labeller=labeller, assignment_ids=list(slots))
    if lapse is None:
        return None
    return Assignment.objects.only("id", "pool_id", "question_id", "labeller_id").get(
        pk=lapse.assignment_id
    )


def retake_lapsed(*, assignment_id: int, labeller) -> bool:
    """Give ``labeller`` back the slot their lease lapsed on, if nobody has taken it since and
    it is still theirs to claim (call inside the write's transaction: the row stays locked).
    False when it was never theirs; `LeaseLost` when someone else holds it now."""
    slot = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("pool__question_set__project")
        .filter(pk=assignment_id)
        .first()
    )
    if slot is None or slot.labeller_id == labeller.pk:
        return False
    lapse = _last_lapse(labeller=labeller, assignment_ids=[slot.pk])
    if lapse is None:
        return False
    later = Change.objects.filter(
        assignment=slot, subject=ChangeSubject.ASSIGNMENT, pk__gt=lapse.pk
    ).exists()
    if slot.labeller_id is not None or later:
        if slot.labeller_id is None:
            return False  # a lead moved it since: simply not theirs any more
        raise LeaseLost(lease_lost_message(lapse.before.get("lease_minutes") or 0))
    if not Assignment.objects.claimable_by(labeller).filter(pk=slot.pk).exists():
        return False
    project = slot.pool.question_set.project
    slot.labeller = labeller
    slot.assigned_at = timezone.now()
    slot.lease_expires_at = lease_end(project=project, now=slot.assigned_at)
    slot.save(update_fields=["labeller", "assigned_at", "lease_expires_at"])
    gold_state.mark_stale(pool_id=slot.pool_id, question_id=slot.question_id)
    Change.objects.create(
        assignment=slot,
        subject=ChangeSubject.ASSIGNMENT,
        action=RETAKEN,
        before={"labeller": None},
        after={"labeller": labeller.get_username()},
        made_by=labeller,
    )
    return True


def retake_for_page(*, project: Project, labeller, pool_id: int, question_id: int) -> bool:
    """Opening the page of a question whose lease lapsed: take it back if it is still free
    (True), `LeaseLost` if another labeller has it, False if it was never theirs."""
    slot = lapsed_slot(project=project, labeller=labeller, pool_id=pool_id, question_id=question_id)
    if slot is None:
        return False
    with transaction.atomic():
        return retake_lapsed(assignment_id=slot.pk, labeller=labeller)


def set_lease_minutes(*, project: Project, minutes: int | None) -> Project:
    """A lead's setting: how long a claimed question stays its labeller's without activity
    (None or 0: no limit). Leases running now keep their end until their next renewal."""
    project.lease_minutes = minutes or 0
    project.save(update_fields=["lease_minutes"])
    return project
