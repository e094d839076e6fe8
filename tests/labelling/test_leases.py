"""Leases on claimed questions (`labelling.services.leases`): expiry, renewal, work kept,
taking a lapsed question back, the refusal once another labeller has it, and races."""

import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from labelling import tasks
from labelling.models import Assignment, Change, ChangeSubject, Judgement, Verdict
from labelling.services import assignments as services
from labelling.services import judgements, leases
from tests.factories import MembershipFactory, ProjectFactory, UserFactory, grading_pool


@pytest.fixture
def people(member):
    return [member("labeller", username=name) for name in ("ana", "ben", "cem")]


@pytest.fixture
def pool(project):
    pool = grading_pool(project, questions=1, passages=2)
    services.plan_assignments(pool=pool, labellers=[], double_share=0)  # one unclaimed slot
    return pool


def lapse(assignment, minutes=1):
    Assignment.objects.filter(pk=assignment.pk).update(
        lease_expires_at=timezone.now() - timedelta(minutes=minutes)
    )
    assignment.refresh_from_db()


def grade(assignment, labeller, candidate, value=2, revision=0):
    return judgements.record_grade(
        assignment=assignment,
        candidate_id=candidate.pk,
        labeller=labeller,
        grade=value,
        revision=revision,
    )


def test_a_claimed_slot_has_a_lease_a_planned_one_none(project, people):
    ana, ben, _ = people
    project.lease_minutes = 30
    project.save()
    claimed_pool = grading_pool(project, questions=1, passages=1)
    services.plan_assignments(pool=claimed_pool, labellers=[])
    before = timezone.now()
    claimed = services.claim_assignment(project=project, labeller=ana)
    assert claimed.lease_expires_at is not None
    assert before + timedelta(minutes=30) <= claimed.lease_expires_at
    assert claimed.lease_expires_at <= timezone.now() + timedelta(minutes=30)
    planned_pool = grading_pool(project, questions=1, passages=1)
    services.plan_assignments(pool=planned_pool, labellers=[ben])
    planned = Assignment.objects.get(pool=planned_pool)
    assert planned.labeller == ben and planned.lease_expires_at is None
    # A lead's hand-over of the claimed slot drops its lease: it is no longer self-claimed.
    services.reassign(assignment=claimed, labeller=ben, user=None)
    claimed.refresh_from_db()
    assert claimed.labeller == ben and claimed.lease_expires_at is None


def test_leases_off_means_claimed_slots_never_lapse(project, pool, people):
    project.lease_minutes = 0
    project.save()
    slot = services.claim_assignment(project=project, labeller=people[0])
    assert slot.lease_expires_at is None
    assert leases.release_lapsed_leases() == 0
    # Turned off after the claim: a lease already running does not lapse either.
    project.lease_minutes = 60
    project.save()
    slot.lease_expires_at = timezone.now() - timedelta(hours=2)
    slot.save()
    project.lease_minutes = 0
    project.save()
    assert leases.release_lapsed_leases() == 0
    assert Assignment.objects.get(pk=slot.pk).labeller == people[0]


def test_an_abandoned_question_goes_back_to_the_pool_and_another_labeller_gets_it(
    project, pool, people
):
    ana, ben, _ = people
    slot = services.claim_assignment(project=project, labeller=ana)
    assert services.claim_assignment(project=project, labeller=ben) is None  # ana holds it
    assert leases.release_lapsed_leases() == 0  # not lapsed yet
    lapse(slot)
    # Ben's "next question" releases it first, then claims it: no beat needed.
    taken = services.claim_assignment(project=project, labeller=ben)
    assert taken.pk == slot.pk and taken.labeller == ben
    assert taken.lease_expires_at > timezone.now()
    history = list(
        Change.objects.filter(assignment=slot, subject=ChangeSubject.ASSIGNMENT)
        .order_by("pk")
        .values_list("action", "before", "made_by")
    )
    assert history == [
        ("claim", None, ana.pk),
        (
            "lease lapsed",
            {"labeller": "ana", "labeller_id": ana.pk, "lease_minutes": 60},
            None,
        ),
        ("claim", None, ben.pk),
    ]


@pytest.mark.parametrize("work", ["judgement", "note and span", "verdict", "undone grade"])
def test_a_lapsed_question_with_work_stays_its_labellers_and_is_stale(project, pool, people, work):
    ana, ben, _ = people
    slot = services.claim_assignment(project=project, labeller=ana)
    candidate = pool.candidates.order_by("pk").first()
    if work == "verdict":
        judgements.record_verdict(
            assignment=slot, labeller=ana, outcome="unanswerable", reason="", revision=0
        )
    else:
        grade(slot, ana, candidate)
        if work == "note and span":
            judgements.record_note(
                assignment=slot, candidate_id=candidate.pk, labeller=ana, note="n", revision=1
            )
        if work == "undone grade":
            judgements.undo_last_change(assignment=slot, labeller=ana)
            assert not Judgement.objects.filter(assignment=slot).exists()
    lapse(slot, minutes=600)
    assert leases.release_lapsed_leases() == 0
    assert services.claim_assignment(project=project, labeller=ben) is None
    slot.refresh_from_db()
    assert slot.labeller == ana
    assert list(leases.stale(Assignment.objects.all())) == [slot]
    assert not Change.objects.filter(action=leases.LAPSED).exists()


def test_activity_renews_the_lease(project, pool, people):
    ana = people[0]
    slot = services.claim_assignment(project=project, labeller=ana)
    lapse(slot)  # ran out, but the beat has not come by: still ana's
    grade(slot, ana, pool.candidates.order_by("pk").first())
    slot.refresh_from_db()
    assert slot.lease_expires_at > timezone.now() + timedelta(minutes=59)
    assert slot.labeller == ana


def test_a_write_takes_back_a_lapsed_question_nobody_claimed(project, pool, people):
    ana = people[0]
    slot = services.claim_assignment(project=project, labeller=ana)
    lapse(slot)
    assert leases.release_lapsed_leases() == 1
    slot.refresh_from_db()
    assert slot.labeller is None
    outcome = grade(slot, ana, pool.candidates.order_by("pk").first())
    assert outcome.changed and outcome.lease_until > timezone.now()
    slot.refresh_from_db()
    assert slot.labeller == ana and slot.lease_expires_at > timezone.now()
    assert Judgement.objects.get().assignment == slot
    assert Change.objects.filter(assignment=slot, action=leases.RETAKEN, made_by=ana).exists()


def test_a_write_after_another_labeller_took_the_question_is_refused(project, pool, people):
    ana, ben, cem = people
    slot = services.claim_assignment(project=project, labeller=ana)
    project.lease_minutes = 15
    project.save()
    lapse(slot)
    leases.release_lapsed_leases()
    assert services.claim_assignment(project=project, labeller=ben).pk == slot.pk
    candidate = pool.candidates.order_by("pk").first()
    grade(slot, ben, candidate, value=1)
    with pytest.raises(leases.LeaseLost) as refused:
        grade(slot, ana, candidate, value=2, revision=1)
    assert str(refused.value).startswith(
        "This question went back to the pool after 15 minutes without work and another "
        "labeller has it now."
    )
    assert refused.value.status == 409
    assert list(Judgement.objects.values_list("assignment__labeller", "grade")) == [(ben.pk, 1)]
    slot.refresh_from_db()
    assert slot.labeller == ben
    # Someone who never held it learns nothing: the plain "not in your queue".
    with pytest.raises(judgements.NotInQueue):
        grade(slot, cem, candidate, revision=1)


def test_a_lead_moving_the_lapsed_question_is_not_a_lost_lease(project, pool, people):
    ana, ben, _ = people
    slot = services.claim_assignment(project=project, labeller=ana)
    lapse(slot)
    leases.release_lapsed_leases()
    services.reassign(assignment=slot, labeller=ben, user=None)
    services.unassign(assignment=slot, user=None)
    with pytest.raises(judgements.NotInQueue):
        grade(slot, ana, pool.candidates.order_by("pk").first())
    assert not Verdict.objects.exists() and not Judgement.objects.exists()


def test_the_beat_task_releases_every_projects_lapsed_questions(project, pool, people):
    assert settings.CELERY_BEAT_SCHEDULE["release-lapsed-leases"] == {
        "task": "labelling.tasks.release_lapsed_leases",
        "schedule": 60.0,
    }
    other = ProjectFactory()
    other_pool = grading_pool(other, questions=1, passages=1)
    services.plan_assignments(pool=other_pool, labellers=[])
    dan = UserFactory()
    MembershipFactory(project=other, user=dan)
    lapse(services.claim_assignment(project=project, labeller=people[0]))
    lapse(services.claim_assignment(project=other, labeller=dan))
    assert tasks.release_lapsed_leases() == 2
    assert tasks.release_lapsed_leases() == 0
    assert not Assignment.objects.filter(labeller__isnull=False).exists()


def test_set_lease_minutes(project):
    assert leases.set_lease_minutes(project=project, minutes=None).lease_minutes == 0
    assert leases.set_lease_minutes(project=project, minutes=45).lease_minutes == 45
    project.refresh_from_db()
    assert project.lease_minutes == 45


# Races: row locks, so PostgreSQL only. ------------------------------------------------------


def _run_together(*targets):
    start = threading.Barrier(len(targets))
    results, errors = {}, []

    def wrap(name, target):
        try:
            start.wait()
            results[name] = target()
        except Exception as exc:  # noqa: BLE001 - reported to the test
            results[name] = exc
            if not isinstance(exc, leases.LeaseLost | judgements.GradingError):
                errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=wrap, args=item) for item in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results, errors


@pytest.mark.django_db(transaction=True)
def test_a_lapsed_slot_wanted_by_its_labeller_and_two_others_at_once_goes_to_one():
    if connection.vendor == "sqlite":
        pytest.skip("SQLite has no row locks; CI runs this on PostgreSQL.")
    project = ProjectFactory()
    pool = grading_pool(project, questions=1, passages=1)
    services.plan_assignments(pool=pool, labellers=[], double_share=0)
    ana, ben, cem = (UserFactory() for _ in range(3))
    for person in (ana, ben, cem):
        MembershipFactory(project=project, user=person)
    candidate = pool.candidates.get()
    for round_ in range(6):
        slot = Assignment.objects.get(pool=pool)
        if slot.labeller_id is not None:  # start each round with ana's lapsed, empty slot
            Judgement.objects.all().delete()
            Change.objects.exclude(subject=ChangeSubject.ASSIGNMENT).delete()
            Assignment.objects.filter(pk=slot.pk).update(labeller=None)
        Assignment.objects.filter(pk=slot.pk).update(
            labeller=ana, lease_expires_at=timezone.now() - timedelta(minutes=1)
        )
        if round_ % 2:  # the beat got there first in odd rounds
            leases.release_lapsed_leases()
        results, errors = _run_together(
            ("ana", lambda slot=slot: grade(slot, ana, candidate)),
            ("ben", lambda: services.claim_assignment(project=project, labeller=ben)),
            ("cem", lambda: services.claim_assignment(project=project, labeller=cem)),
        )
        assert errors == []
        slot.refresh_from_db()
        holders = {name for name, r in results.items() if isinstance(r, Assignment)}
        if isinstance(results["ana"], judgements.Outcome):
            holders.add("ana")
        assert len(holders) == 1, results
        assert slot.labeller == {"ana": ana, "ben": ben, "cem": cem}[holders.pop()]
        # A grade is only ever on the slot of the one who made it.
        for judgement in Judgement.objects.select_related("assignment"):
            assert judgement.assignment.labeller == ana
        if slot.labeller != ana:
            assert not Judgement.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_release_never_takes_a_slot_from_a_grade_saved_at_the_same_moment():
    if connection.vendor == "sqlite":
        pytest.skip("SQLite has no row locks; CI runs this on PostgreSQL.")
    project = ProjectFactory()
    pool = grading_pool(project, questions=8, passages=1)
    services.plan_assignments(pool=pool, labellers=[], double_share=0)
    ana = UserFactory()
    MembershipFactory(project=project, user=ana)
    slots = [services.claim_assignment(project=project, labeller=ana) for _ in range(8)]
    Assignment.objects.update(lease_expires_at=timezone.now() - timedelta(minutes=1))
    candidates = {c.question_id: c for c in pool.candidates.all()}
    results, errors = _run_together(
        ("release", leases.release_lapsed_leases),
        *[(f"grade-{s.pk}", lambda s=s: grade(s, ana, candidates[s.question_id])) for s in slots],
    )
    assert errors == []
    for slot in Assignment.objects.all():
        has_work = Judgement.objects.filter(assignment=slot).exists()
        # Graded: still ana's (taken back if the release came first); never left in the pool.
        assert slot.labeller == ana and has_work
    assert all(isinstance(r, judgements.Outcome) for k, r in results.items() if k != "release")
