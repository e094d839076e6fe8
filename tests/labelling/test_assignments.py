"""Planning assignments, "next question" (incl. concurrent claims), reassign/unassign, progress."""

import threading
from collections import Counter

import pytest
from django.db import connection

from labelling.models import Assignment, Change, ChangeSubject, Judgement
from labelling.services import assignments as services
from labelling.services import judgements
from tests.factories import (
    MembershipFactory,
    ProjectFactory,
    QuestionFactory,
    ReadyPoolFactory,
    UserFactory,
    grading_pool,
)


@pytest.fixture
def labellers(member):
    return [member("labeller", username=name) for name in ("ana", "ben", "cem")]


def test_plan_spreads_questions_evenly_and_doubles_a_fifth(project, labellers):
    pool = grading_pool(project, questions=10, passages=1)
    result = services.plan_assignments(pool=pool, labellers=labellers)
    assert result.assignments == 12 and result.double_labelled == 2 and result.unclaimed == 0
    load = Counter(
        Assignment.objects.filter(pool=pool).values_list("labeller__username", flat=True)
    )
    assert set(load) == {"ana", "ben", "cem"} and max(load.values()) - min(load.values()) <= 1
    for question_id in Assignment.objects.filter(pool=pool, slot=2).values_list(
        "question", flat=True
    ):
        pair = Assignment.objects.filter(pool=pool, question=question_id)
        assert pair.count() == 2 and len({a.labeller_id for a in pair}) == 2
    assert all(a.assigned_at for a in Assignment.objects.filter(pool=pool))
    assert "2 questions double-labelled" in result.describe()


def test_plan_takes_an_absolute_number_and_is_deterministic(project, labellers):
    pool = grading_pool(project, questions=8, passages=1)
    services.plan_assignments(pool=pool, labellers=labellers, double_count=5, seed=3)
    first = list(Assignment.objects.filter(pool=pool).values_list("question", "slot", "labeller"))
    assert sum(1 for _, slot, _ in first if slot == 2) == 5
    Assignment.objects.filter(pool=pool).delete()
    services.plan_assignments(pool=pool, labellers=labellers, double_count=5, seed=3)
    again = list(Assignment.objects.filter(pool=pool).values_list("question", "slot", "labeller"))
    assert again == first


def test_planning_again_only_tops_up_new_questions(project, labellers):
    pool = grading_pool(project, questions=4, passages=1)
    services.plan_assignments(pool=pool, labellers=labellers)
    assert services.plan_assignments(pool=pool, labellers=labellers).assignments == 0
    QuestionFactory(question_set=pool.question_set)
    result = services.plan_assignments(pool=pool, labellers=labellers, double_share=0)
    assert result.assignments == 1
    assert Assignment.objects.filter(pool=pool).count() == 6  # 4 + 1 double + 1 new


def test_an_absolute_number_counts_over_the_whole_pool_when_topping_up(project, labellers):
    pool = grading_pool(project, questions=4, passages=1)
    services.plan_assignments(pool=pool, labellers=labellers, double_count=3)
    again = services.plan_assignments(pool=pool, labellers=labellers, double_count=3)
    assert again.assignments == 0  # safe to repeat, as the demo does
    for _ in range(3):
        QuestionFactory(question_set=pool.question_set)
    topped = services.plan_assignments(pool=pool, labellers=labellers, double_count=5)
    assert topped.double_labelled == 2
    assert Assignment.objects.filter(pool=pool, slot=2).count() == 5


def test_plan_without_labellers_leaves_slots_to_claim(project):
    pool = grading_pool(project, questions=5, passages=1)
    result = services.plan_assignments(pool=pool, labellers=[], double_count=2)
    assert result.unclaimed == 7
    assert not Assignment.objects.filter(pool=pool, labeller__isnull=False).exists()


def test_plan_refuses_a_pool_still_building_and_strangers(project, labellers):
    pool = grading_pool(project, questions=2, passages=1)
    stranger = UserFactory(username="zed")
    with pytest.raises(services.AssignmentError, match="Not members of this project: zed"):
        services.plan_assignments(pool=pool, labellers=[labellers[0], stranger])
    building = ReadyPoolFactory(question_set=pool.question_set, state="building")
    with pytest.raises(services.AssignmentError, match="not ready"):
        services.plan_assignments(pool=building, labellers=labellers)
    with pytest.raises(services.AssignmentError, match="at least two labellers"):
        services.plan_assignments(pool=pool, labellers=labellers[:1], double_count=1)
    assert not Assignment.objects.exists()


def test_next_question_gives_own_open_work_in_question_order_then_wraps(project, labellers):
    pool = grading_pool(project, questions=3, passages=1)
    ana = labellers[0]
    questions = list(pool.question_set.questions.order_by("pk"))
    for q in questions:
        Assignment.objects.create(pool=pool, question=q, slot=1, labeller=ana)
    first = services.next_assignment(project=project, labeller=ana)
    assert first.question == questions[0]
    assert (
        services.next_assignment(project=project, labeller=ana, after=first).question
        == (questions[1])
    )
    last = Assignment.objects.get(question=questions[2])
    assert (
        services.next_assignment(project=project, labeller=ana, after=last).question
        == (questions[0])
    )


def test_first_claimable_slot_answers_as_the_orm_query_does(project, labellers):
    """`first_claimable_slot`, behind "next question"'s claim, against `claimable_by`, slot by
    slot, for each labeller in turn, over every rule: held questions, started slots (a
    judgement or a verdict left without its labeller), excluded questions, pools not ready,
    other projects, and the order (pool, question, slot)."""
    from django.utils import timezone

    from labelling.models import PoolState, Verdict

    ana, ben, cem = labellers
    pool = grading_pool(project, questions=6, passages=1)
    q1, q2, q3, q4, q5, q6 = pool.question_set.questions.order_by("pk")
    slot = {}
    for question, slots in ((q1, 2), (q2, 1), (q3, 1), (q4, 1), (q5, 3), (q6, 2)):
        for number in range(slots, 0, -1):  # created out of slot order
            slot[question.pk, number] = Assignment.objects.create(
                pool=pool, question=question, slot=number
            )
    slot[q1.pk, 2].labeller = ana  # ana already labels q1: its other slot is not for her
    slot[q1.pk, 2].save()
    candidate = pool.candidates.get(question=q2)
    Judgement.objects.create(assignment=slot[q2.pk, 1], candidate=candidate, grade=1)
    Verdict.objects.create(assignment=slot[q3.pk, 1], outcome="unanswerable")
    q4.excluded_at = timezone.now()
    q4.save()
    building = grading_pool(project, questions=1, passages=1)
    building.state = PoolState.BUILDING
    building.save()
    Assignment.objects.create(pool=building, question=building.question_set.questions.get())
    other = ProjectFactory()
    elsewhere = grading_pool(other, questions=1, passages=1)
    Assignment.objects.create(pool=elsewhere, question=elsewhere.question_set.questions.get())

    claimed = []
    for labeller in (ana, ben, cem, ana, ben, cem, ana):
        expected = (
            Assignment.objects.in_project(project)
            .claimable_by(labeller)
            .order_by("pool_id", "question_id", "slot")
            .first()
        )
        got = services.first_claimable_slot(project=project, labeller=labeller)
        assert (got and got.pk) == (expected and expected.pk)
        if got is None:
            continue
        assert got.created_at == expected.created_at and got.created_at.tzinfo is not None
        got.labeller = labeller
        got.save(update_fields=["labeller"])
        claimed.append((labeller.username, got.question_id, got.slot))
    assert claimed == [
        ("ana", q5.pk, 1),
        ("ben", q1.pk, 1),
        ("cem", q5.pk, 2),
        ("ana", q6.pk, 1),
        ("ben", q5.pk, 3),
        ("cem", q6.pk, 2),
    ]
    assert services.first_claimable_slot(project=other, labeller=ana).pool == elsewhere


def test_next_question_claims_an_unclaimed_slot_but_never_both_slots_of_one_question(
    project, labellers
):
    pool = grading_pool(project, questions=2, passages=1)
    services.plan_assignments(pool=pool, labellers=[], double_count=2)
    ana, ben, cem = labellers
    got = []
    while (a := services.next_assignment(project=project, labeller=ana)) is not None:
        # A finished assignment leaves the open queue, so "next" moves on.
        a.completed_at = a.assigned_at
        a.save()
        got.append(a)
    assert sorted(a.question_id for a in got) == sorted(
        pool.question_set.questions.values_list("pk", flat=True)
    )
    assert services.next_assignment(project=project, labeller=ben).labeller == ben
    assert services.next_assignment(project=project, labeller=ben).labeller == ben  # own, open
    assert Assignment.objects.filter(labeller=ben).count() == 1
    claims = Change.objects.filter(subject=ChangeSubject.ASSIGNMENT, action="claim")
    assert claims.count() == 3


def test_next_stays_on_the_last_open_question_instead_of_saying_done(project, labellers):
    pool = grading_pool(project, questions=1, passages=1)
    ana = labellers[0]
    only = Assignment.objects.create(
        pool=pool, question=pool.question_set.questions.get(), labeller=ana
    )
    assert services.next_assignment(project=project, labeller=ana, after=only) == only


def test_nothing_left_is_none_for_everyone_alike(project, labellers):
    pool = grading_pool(project, questions=1, passages=1)
    services.plan_assignments(pool=pool, labellers=[], double_count=0)
    ana, ben, _ = labellers
    assert services.next_assignment(project=project, labeller=ana) is not None
    assert services.next_assignment(project=project, labeller=ben) is None


def test_reassign_and_unassign_move_only_unstarted_work(project, labellers):
    pool = grading_pool(project, questions=1, passages=1)
    services.plan_assignments(pool=pool, labellers=labellers[:2], double_count=1)
    lead = UserFactory()
    first = Assignment.objects.get(pool=pool, slot=1)
    second = Assignment.objects.get(pool=pool, slot=2)
    cem = labellers[2]
    with pytest.raises(services.AssignmentError, match="already labels this question"):
        services.reassign(assignment=first, labeller=second.labeller, user=lead)
    services.reassign(assignment=first, labeller=cem, user=lead)
    assert Assignment.objects.get(pk=first.pk).labeller == cem
    services.unassign(assignment=second, user=lead)
    assert Assignment.objects.get(pk=second.pk).labeller is None
    assert list(
        Change.objects.filter(subject=ChangeSubject.ASSIGNMENT).values_list("action", flat=True)
    ) == ["reassign", "unassign"]
    first.refresh_from_db()
    candidate = pool.candidates.get()
    judgements.record_grade(
        assignment=first, candidate_id=candidate.pk, labeller=cem, grade=1, revision=0
    )
    with pytest.raises(services.AssignmentError, match="already started"):
        services.reassign(assignment=first, labeller=labellers[0], user=lead)
    with pytest.raises(services.AssignmentError, match="already started"):
        services.unassign(assignment=first, user=lead)
    stranger = UserFactory()
    with pytest.raises(services.AssignmentError, match="not a member"):
        services.reassign(assignment=second, labeller=stranger, user=lead)


def test_queue_progress_counts_done_remaining_and_median_seconds(project, labellers):
    pool = grading_pool(project, questions=3, passages=2)
    ana = labellers[0]
    for q in pool.question_set.questions.all():
        Assignment.objects.create(pool=pool, question=q, labeller=ana)
    a = Assignment.objects.filter(labeller=ana).first()
    c1, c2 = a.pool.candidates.filter(question=a.question)
    for c, seconds in ((c1, 10), (c2, 30)):
        judgements.record_grade(
            assignment=a, candidate_id=c.pk, labeller=ana, grade=0, revision=0, seconds=seconds
        )
    judgements.record_verdict(
        assignment=a, labeller=ana, outcome="unanswerable", reason="", revision=0
    )
    progress = services.queue_progress(Assignment.objects.filter(labeller=ana), viewer=ana)
    assert (progress.assigned, progress.done, progress.remaining) == (3, 1, 2)
    assert progress.judgements == 2 and progress.median_seconds == 20
    (row,) = services.progress_by_labeller(project=project, viewer=ana)
    assert row[0] == ana and row[1] == progress
    ((question_set, by_set, unclaimed),) = services.progress_by_question_set(
        project=project, viewer=ana
    )
    assert question_set == pool.question_set and by_set == progress and unclaimed == 0


# Concurrency: needs row locks, so the threaded part runs on PostgreSQL (CI) only. -----------


@pytest.mark.django_db(transaction=True)
def test_concurrent_next_question_never_hands_a_slot_to_two_people():
    if connection.vendor == "sqlite":
        pytest.skip("SQLite has no row locks; CI runs this on PostgreSQL.")
    from tests.factories import ProjectFactory

    project = ProjectFactory()
    pool = grading_pool(project, questions=12, passages=1)
    services.plan_assignments(pool=pool, labellers=[], double_count=6)  # 18 slots
    people = [UserFactory() for _ in range(8)]
    for person in people:
        MembershipFactory(project=project, user=person)
    start = threading.Barrier(len(people))
    errors = []

    def grab(person):
        try:
            start.wait()
            while services.claim_assignment(project=project, labeller=person) is not None:
                pass
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=grab, args=(p,)) for p in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    slots = Assignment.objects.filter(pool=pool)
    assert slots.count() == 18 and not slots.filter(labeller__isnull=True).exists()
    per_question = Counter(slots.values_list("question_id", flat=True))
    assert set(per_question.values()) <= {1, 2}
    pairs = Counter(slots.values_list("question_id", "labeller_id"))
    assert max(pairs.values()) == 1  # nobody holds both slots of a question
    claims = Change.objects.filter(action="claim")
    assert claims.count() == 18  # each slot claimed exactly once


@pytest.mark.django_db(transaction=True)
def test_concurrent_double_submit_of_a_grade_makes_one_row():
    if connection.vendor == "sqlite":
        pytest.skip("SQLite has no row locks; CI runs this on PostgreSQL.")
    from tests.factories import ProjectFactory

    project = ProjectFactory()
    pool = grading_pool(project, questions=1, passages=1)
    ana = UserFactory()
    MembershipFactory(project=project, user=ana)
    assignment = Assignment.objects.create(
        pool=pool, question=pool.question_set.questions.get(), labeller=ana
    )
    candidate = pool.candidates.get()
    start = threading.Barrier(6)
    results, errors = [], []

    def submit():
        try:
            start.wait()
            results.append(
                judgements.record_grade(
                    assignment=assignment,
                    candidate_id=candidate.pk,
                    labeller=ana,
                    grade=2,
                    revision=0,
                )
            )
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert Judgement.objects.count() == 1
    assert sum(1 for r in results if r.changed) == 1
    assert Change.objects.filter(subject=ChangeSubject.JUDGEMENT).count() == 1
