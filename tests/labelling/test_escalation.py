"""Escalation (issue 36 item 3): the rule (`labelling/escalation.py`), the third labeller
(`labelling/services/escalation.py`) and what the votes, the queue and agreement make of it."""

import random

import pytest

from corpus.models import AccessGroup
from labelling.escalation import (
    ANY_DIFFERENCE,
    NEVER,
    TWO_APART,
    needs_third_vote,
    questions_moved,
    vote_distance,
)
from labelling.grading_passages import passages_for_grading, passages_for_grading_orm
from labelling.models import Assignment, EscalatedItem, QuestionSet
from labelling.resolution import Pending
from labelling.services import adjudication
from labelling.services.escalation import escalate_if_due
from labelling.services.judgements import record_grade, record_verdict
from labelling.services.votes import gather_votes
from tests.factories import grading_pool

# The rule, free of Django ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "rule", "expected"),
    [
        (0, 2, TWO_APART, True),
        (2, 0, TWO_APART, True),
        (0, 1, TWO_APART, False),
        (1, 2, TWO_APART, False),
        (1, 1, TWO_APART, False),
        (0, 1, ANY_DIFFERENCE, True),
        (2, 1, ANY_DIFFERENCE, True),
        (2, 2, ANY_DIFFERENCE, False),
        (0, 2, NEVER, False),
    ],
)
def test_needs_third_vote_follows_the_projects_rule(first, second, rule, expected):
    assert needs_third_vote(first, second, rule=rule) is expected


def test_an_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="Unknown escalation rule"):
        needs_third_vote(0, 2, rule="sometimes")


def test_vote_distance_is_the_highest_grade_minus_the_lowest():
    assert vote_distance([0, 2, 1]) == 2
    assert vote_distance([1, 2]) == 1
    assert vote_distance([2]) == 0
    assert vote_distance([]) == 0


def test_questions_moved_counts_each_question_with_overlapping_undecided_text_once():
    passages = [
        (1, 10, 0, 100),  # q1
        (2, 10, 50, 150),  # q2 overlaps q1's
        (2, 10, 60, 70),  # q2 again, inside: still one question
        (3, 10, 100, 200),  # q3 touches q1's end (no shared character), overlaps q2's
        (4, 11, 0, 100),  # another version: never counted with the others
    ]
    moved = questions_moved(passages)
    assert moved[(1, 10, 0, 100)] == 2  # q1 and q2
    assert moved[(2, 10, 50, 150)] == 3  # q1, q2, q3
    assert moved[(3, 10, 100, 200)] == 2  # q2 and q3
    assert moved[(4, 11, 0, 100)] == 1


def test_questions_moved_matches_the_pairwise_definition_on_random_passages():
    rng = random.Random(36)
    for _ in range(200):
        passages = list(
            {
                (rng.randrange(6), rng.randrange(3), start, start + rng.randrange(1, 30))
                for start in (rng.randrange(100) for _ in range(rng.randrange(1, 25)))
            }
        )
        expected = {
            p: len({o[0] for o in passages if o[1] == p[1] and o[2] < p[3] and p[2] < o[3]})
            for p in passages
        }
        assert questions_moved(passages) == expected


# The third labeller --------------------------------------------------------------------------


class Escalation:
    """ann and bob double-label q1 (three passages, the last on a document of access group
    "hr"); carl and dora are other labellers, lena a lead."""

    def __init__(self, project, member):
        self.project = project
        self.ann, self.bob = member(username="ann"), member(username="bob")
        self.carl, self.dora = member(username="carl"), member(username="dora")
        self.lead = member("lead", username="lena")
        self.group = AccessGroup.objects.create(project=project, name="hr")
        self.group.members.add(self.ann, self.bob, self.lead)
        self.pool = grading_pool(project, questions=1, passages=3, restricted_group="hr")
        self.question = self.pool.question_set.questions.get()
        self.question_set = self.pool.question_set
        self.a = Assignment.objects.create(
            pool=self.pool, question=self.question, slot=1, labeller=self.ann
        )
        self.b = Assignment.objects.create(
            pool=self.pool, question=self.question, slot=2, labeller=self.bob
        )
        candidates = self.pool.candidates.order_by("pk")
        self.c1, self.c2, self.hidden = candidates

    def finish(self, assignment, user, grades, *, outcome="answerable"):
        """Grade the passages (by candidate) and give the verdict that completes the slot."""
        for candidate, grade in grades.items():
            record_grade(
                assignment=assignment,
                candidate_id=candidate.pk,
                labeller=user,
                grade=grade,
                revision=0,
            )
        record_verdict(assignment=assignment, labeller=user, outcome=outcome, reason="", revision=0)
        assignment.refresh_from_db()

    def third(self) -> Assignment | None:
        return (
            Assignment.objects.filter(pool=self.pool, question=self.question, slot__gt=2)
            .select_related("labeller")
            .first()
        )

    def set_rule(self, rule):
        self.project.escalate_on = rule
        self.project.save()


@pytest.fixture
def esc(project, member):
    return Escalation(project, member)


def test_two_grades_apart_get_a_third_labeller_when_the_second_finishes(esc):
    esc.finish(esc.a, esc.ann, {esc.c1: 0, esc.c2: 1, esc.hidden: 2})
    assert esc.third() is None  # bob has not finished: nothing is due yet
    esc.finish(esc.b, esc.bob, {esc.c1: 2, esc.c2: 2, esc.hidden: 2})
    third = esc.third()
    assert third is not None and third.slot == 3 and third.labeller in (esc.carl, esc.dora)
    assert third.assigned_at is not None and third.completed_at is None
    item = EscalatedItem.objects.get()
    assert (item.candidate, item.assignment, item.grades) == (esc.c1, third, [0, 2])
    # The third labeller's page shows the disputed passage only, by SQL and by the ORM alike.
    for read in (passages_for_grading, passages_for_grading_orm):
        assert [c.pk for c in read(assignment=third, user=third.labeller)] == [esc.c1.pk]
    # The first two keep their whole question.
    assert len(passages_for_grading(assignment=esc.a, user=esc.ann)) == 3


def test_any_difference_escalates_a_one_grade_disagreement(esc):
    esc.set_rule(ANY_DIFFERENCE)
    esc.finish(esc.a, esc.ann, {esc.c1: 0, esc.c2: 1, esc.hidden: 2})
    esc.finish(esc.b, esc.bob, {esc.c1: 1, esc.c2: 1, esc.hidden: 2})
    assert list(EscalatedItem.objects.values_list("candidate_id", "grades")) == [
        (esc.c1.pk, [0, 1])
    ]


def test_never_sends_disagreements_straight_to_a_lead(esc):
    esc.set_rule(NEVER)
    esc.finish(esc.a, esc.ann, {esc.c1: 0, esc.c2: 1, esc.hidden: 2})
    esc.finish(esc.b, esc.bob, {esc.c1: 2, esc.c2: 1, esc.hidden: 2})
    assert esc.third() is None and not EscalatedItem.objects.exists()
    (entry,) = adjudication.adjudication_queue(question_set=esc.question_set)
    assert entry.candidate == esc.c1 and entry.reason == "grades differ (0 vs 2)"


def test_escalation_is_idempotent(esc):
    esc.finish(esc.a, esc.ann, {esc.c1: 0, esc.c2: 1, esc.hidden: 2})
    esc.finish(esc.b, esc.bob, {esc.c1: 2, esc.c2: 1, esc.hidden: 2})
    assert escalate_if_due(assignment=esc.a) == 0
    assert escalate_if_due(assignment=esc.b) == 0
    # Reopening and finishing again changes nothing either.
    record_verdict(
        assignment=esc.b, labeller=esc.bob, outcome="cant_tell", reason="unsure", revision=1
    )
    record_verdict(assignment=esc.b, labeller=esc.bob, outcome="answerable", reason="", revision=2)
    assert Assignment.objects.filter(pool=esc.pool, question=esc.question).count() == 3
    assert EscalatedItem.objects.count() == 1


def test_two_labellers_finishing_at_once_still_escalate_once(
    esc, django_capture_on_commit_callbacks
):
    # bob's last write, in a transaction of its own, has not committed when ann's last write
    # reads his slot: ann's check finds it open and looks again after her commit.
    for candidate, grade in {esc.c1: 2, esc.c2: 1, esc.hidden: 2}.items():
        record_grade(
            assignment=esc.b, candidate_id=candidate.pk, labeller=esc.bob, grade=grade, revision=0
        )
    with django_capture_on_commit_callbacks() as looks:
        esc.finish(esc.a, esc.ann, {esc.c1: 0, esc.c2: 1, esc.hidden: 2})
    assert esc.third() is None and len(looks) == 1
    # bob's write commits (its own look, made while ann's was open, found nothing).
    esc.b.completed_at = esc.a.completed_at
    esc.b.save(update_fields=["completed_at"])
    looks[0]()
    assert esc.third() is not None and EscalatedItem.objects.count() == 1
    looks[0]()  # a second look (bob's, say) changes nothing
    assert EscalatedItem.objects.count() == 1
    assert Assignment.objects.filter(pool=esc.pool, question=esc.question).count() == 3


def test_the_third_labeller_must_see_the_document_and_be_a_labeller(esc, member):
    # The disputed passage is on the "hr" document: carl and dora are outside the group, so
    # only a labeller in it qualifies, never the lead who is.
    erin = member(username="erin")
    esc.group.members.add(erin)
    esc.finish(esc.a, esc.ann, {esc.c1: 1, esc.c2: 1, esc.hidden: 0})
    esc.finish(esc.b, esc.bob, {esc.c1: 1, esc.c2: 1, esc.hidden: 2})
    assert esc.third().labeller == erin
    assert [c.pk for c in passages_for_grading(assignment=esc.third(), user=erin)] == [
        esc.hidden.pk
    ]


def test_the_least_busy_qualifying_labeller_is_chosen(esc):
    other = grading_pool(esc.project, questions=2, passages=1)
    for question in other.question_set.questions.all():
        Assignment.objects.create(pool=other, question=question, labeller=esc.carl)
    esc.finish(esc.a, esc.ann, {esc.c1: 0, esc.c2: 1, esc.hidden: 2})
    esc.finish(esc.b, esc.bob, {esc.c1: 2, esc.c2: 1, esc.hidden: 2})
    assert esc.third().labeller == esc.dora


def test_nobody_qualifies_so_the_item_goes_straight_to_a_lead_saying_why(esc):
    esc.finish(esc.a, esc.ann, {esc.c1: 1, esc.c2: 1, esc.hidden: 0})
    esc.finish(esc.b, esc.bob, {esc.c1: 1, esc.c2: 1, esc.hidden: 2})
    assert esc.third() is None
    item = EscalatedItem.objects.get()
    assert item.candidate == esc.hidden and item.assignment is None
    (entry,) = adjudication.adjudication_queue(question_set=esc.question_set, viewer=esc.lead)
    assert entry.candidate == esc.hidden and entry.kind == "disagreement"
    assert "no other labeller of the project can see this document" in entry.item.escalation_note


def test_the_item_waits_for_the_third_vote_then_reaches_the_lead_with_all_three(esc):
    esc.finish(esc.a, esc.ann, {esc.c1: 0, esc.c2: 1, esc.hidden: 2})
    esc.finish(esc.b, esc.bob, {esc.c1: 2, esc.c2: 1, esc.hidden: 2})
    third = esc.third()
    assert adjudication.adjudication_queue(question_set=esc.question_set) == []
    (waiting,) = adjudication.adjudication_queue(
        question_set=esc.question_set, include_escalated_waiting=True
    )
    assert waiting.kind == "escalated_waiting" and waiting.waiting_for == [third.labeller.username]
    assert "waiting for them" in waiting.item.escalation_note

    esc.finish(third, third.labeller, {esc.c1: 1}, outcome="unanswerable")
    assert third.completed_at is not None
    assert Assignment.objects.filter(pool=esc.pool, question=esc.question).count() == 3
    (entry,) = adjudication.adjudication_queue(question_set=esc.question_set)
    assert entry.candidate == esc.c1 and entry.kind == "disagreement"
    assert entry.reason == "3 votes (0 vs 2 vs 1): a lead decides"
    assert [j.grade for j in entry.item.judgements] == [0, 2, 1]
    assert entry.distance == 2 and entry.moves == 1
    assert "who graded it 1" in entry.item.escalation_note
    # The third labeller votes on the passage only: the question's verdict stays the first
    # two's ("answerable" twice), whatever they said.
    (question_votes,) = gather_votes(question_set=esc.question_set)
    assert question_votes.decide_verdict().outcome == "answerable"
    # Agreement is over the first two labellers' votes, as before the third came.
    report = adjudication.agreement_report(question_set=esc.question_set, n_boot=0)
    assert [d["grades"] for d in report["disagreements"]] == [[0, 2]]
    # Resolving settles it; the third labeller's evidence may be taken.
    adjudication.resolve_item_from(item=entry.item, user=esc.lead, grade=1, spans_from="c")
    assert adjudication.adjudication_queue(question_set=esc.question_set) == []


def test_the_third_labeller_losing_sight_of_the_document_sends_it_to_the_lead(esc):
    esc.group.members.add(esc.carl, esc.dora)
    esc.finish(esc.a, esc.ann, {esc.c1: 1, esc.c2: 1, esc.hidden: 0})
    esc.finish(esc.b, esc.bob, {esc.c1: 1, esc.c2: 1, esc.hidden: 2})
    third = esc.third()
    esc.group.members.remove(third.labeller)
    (entry,) = adjudication.adjudication_queue(question_set=esc.question_set)
    assert entry.candidate == esc.hidden and entry.reason == "grades differ (0 vs 2)"


def test_a_deactivated_third_labeller_sends_it_to_the_lead_with_the_reason(esc):
    esc.finish(esc.a, esc.ann, {esc.c1: 0, esc.c2: 1, esc.hidden: 2})
    esc.finish(esc.b, esc.bob, {esc.c1: 2, esc.c2: 1, esc.hidden: 2})
    third = esc.third()
    third.labeller.is_active = False
    third.labeller.save()
    (entry,) = adjudication.adjudication_queue(question_set=esc.question_set)
    assert entry.candidate == esc.c1 and entry.kind == "unreachable"
    assert f"{third.labeller.username}'s account is deactivated" in entry.reason


def test_the_queue_puts_the_widest_disagreement_first_then_the_most_questions(project, member):
    project.escalate_on = NEVER
    project.save()
    ann, bob = member(username="ann"), member(username="bob")
    pool = grading_pool(project, questions=3, passages=2)
    question_set = QuestionSet.objects.get(pk=pool.question_set_id)
    q1, q2, q3 = question_set.questions.order_by("pk")
    grades = {  # (ann, bob) per question, per passage in pool order
        q1: [(0, 1), (1, 1)],  # distance 1; its passage is also disputed in q2
        q2: [(0, 1), (2, 2)],  # distance 1, same text as q1's first: two questions
        q3: [(1, 1), (0, 2)],  # distance 2: first whatever the count
    }
    for question, pairs in grades.items():
        a = Assignment.objects.create(pool=pool, question=question, slot=1, labeller=ann)
        b = Assignment.objects.create(pool=pool, question=question, slot=2, labeller=bob)
        candidates = list(pool.candidates.filter(question=question).order_by("shuffle_rank"))
        for candidate, (ga, gb) in zip(candidates, pairs, strict=True):
            record_grade(
                assignment=a, candidate_id=candidate.pk, labeller=ann, grade=ga, revision=0
            )
            record_grade(
                assignment=b, candidate_id=candidate.pk, labeller=bob, grade=gb, revision=0
            )
    # q1's second passage (same sentence as q3's second) is agreed; q3's is disputed.
    entries = adjudication.adjudication_queue(question_set=question_set)
    summary = [(e.question.pk, e.distance, e.moves) for e in entries]
    assert summary == [(q3.pk, 2, 1), (q1.pk, 1, 2), (q2.pk, 1, 2)]
    assert all(isinstance(e.item.decide(min_span_f1=0.5), Pending) for e in entries)


def test_a_calibration_question_on_the_same_question_is_neither_a_vote_nor_a_third_labeller(esc):
    # carl answered q1 as a calibration question (slot 0), dora is away: nobody may be the
    # third labeller (carl labels q1 already), and carl's slot is not one of the two votes.
    from labelling.models import AssignmentPurpose

    Assignment.objects.create(
        pool=esc.pool,
        question=esc.question,
        slot=0,
        labeller=esc.carl,
        purpose=AssignmentPurpose.CALIBRATION,
    )
    esc.dora.is_active = False
    esc.dora.save()
    esc.finish(esc.a, esc.ann, {esc.c1: 0, esc.c2: 1, esc.hidden: 2})
    esc.finish(esc.b, esc.bob, {esc.c1: 2, esc.c2: 1, esc.hidden: 2})
    assert esc.third() is None
    item = EscalatedItem.objects.get()
    assert (item.candidate, item.assignment, item.grades) == (esc.c1, None, [0, 2])
