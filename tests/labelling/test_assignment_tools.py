"""Issue 14, item 13: the Assignments list's filters, sort, search and bulk reassignment;
raising the double-labelled share after planning; excluding a question from its set."""

import re

import pytest
from django.urls import reverse

from corpus.services import projects
from evaluation.services.gold_sets import finalise_gold_set
from labelling.models import Assignment, Change, Judgement
from labelling.services import assignments as services
from labelling.services import judgements
from labelling.services.gold import collect_gold, resolve_gold
from tests.factories import grading_pool, login


@pytest.fixture
def team(member):
    return {
        name: member(role, username=name)
        for name, role in (
            ("ana", "labeller"),
            ("ben", "labeller"),
            ("cem", "labeller"),
            ("dan", "labeller"),
            ("lea", "lead"),
        )
    }


def listed(body: str) -> list[str]:
    """Question ids of the assignment rows, in page order."""
    table = body.split('<table class="assignments">')[1].split("</table>")[0]
    return re.findall(r"<code>([^<]+)</code>", table)


def start(assignment, candidate=None):
    candidate = candidate or assignment.pool.candidates.filter(question=assignment.question).first()
    judgements.record_grade(
        assignment=assignment,
        labeller=assignment.labeller,
        candidate_id=candidate.pk,
        grade=1,
        revision=0,
    )


def test_filters_sort_and_search(project, team):
    pool = grading_pool(project, questions=6, passages=1)
    services.plan_assignments(pool=pool, labellers=[team["ana"], team["ben"]], double_share=0)
    questions = list(pool.question_set.questions.order_by("pk"))
    questions[2].text = "Where is the VPN client?"
    questions[2].save()
    anas = Assignment.objects.filter(pool=pool, labeller=team["ana"]).order_by("pk")
    start(anas[0])
    lea = login(team["lea"])
    url = reverse("labelling:list-assignments", args=[project.slug])

    def ids(**params):
        response = lea.get(url, {"pool": pool.pk, **params})
        assert response.status_code == 200
        return listed(response.content.decode())

    assert ids() == [q.external_id for q in questions]
    assert set(ids(labeller=team["ana"].pk)) == {a.question.external_id for a in anas}
    assert ids(status="started") == [anas[0].question.external_id]
    assert anas[0].question.external_id not in ids(status="not_started")
    assert ids(q="vpn client") == [questions[2].external_id]
    assert ids(q=questions[4].external_id) == [questions[4].external_id]
    assert ids(sort="graded")[0] == anas[0].question.external_id
    by_labeller = ids(sort="labeller")  # ana before ben
    assert set(by_labeller[: len(anas)]) == {a.question.external_id for a in anas}
    # Nonsense values are ignored, not a 500.
    assert ids(status="bogus", sort="nope", slot="9") == [q.external_id for q in questions]
    body = lea.get(url, {"pool": pool.pk, "q": "zzz"}).content.decode()
    assert "No assignments match these filters in this pool." in body


def test_bulk_reassign_moves_unstarted_work_and_says_what_it_left(project, team):
    pool = grading_pool(project, questions=4, passages=1)
    services.plan_assignments(pool=pool, labellers=[team["ana"]], double_share=0)
    anas = list(Assignment.objects.filter(pool=pool).order_by("pk"))
    start(anas[0])
    lea = login(team["lea"])
    response = lea.post(
        reverse("labelling:reassign-assignments", args=[project.slug, pool.pk]),
        {"assignment": [a.pk for a in anas], "to": team["ben"].pk, "back": "status=not_started"},
        follow=True,
    )
    body = response.content.decode()
    assert "3 assignments moved to ben; 1 assignment not moved: its labeller has started." in body
    assert response.redirect_chain[-1][0].endswith(f"?pool={pool.pk}&status=not_started")
    holders = dict(Assignment.objects.filter(pool=pool).values_list("pk", "labeller__username"))
    assert holders == {anas[0].pk: "ana", **{a.pk: "ben" for a in anas[1:]}}
    assert Change.objects.filter(action="reassign").count() == 3
    # Back to the open slots, and a refusal for nothing ticked.
    response = lea.post(
        reverse("labelling:reassign-assignments", args=[project.slug, pool.pk]),
        {"assignment": [anas[1].pk], "to": "unassign"},
        follow=True,
    )
    assert "1 assignment moved back to the open slots." in response.content.decode()
    assert Assignment.objects.get(pk=anas[1].pk).labeller is None
    response = lea.post(
        reverse("labelling:reassign-assignments", args=[project.slug, pool.pk]),
        {"to": team["ben"].pk},
        follow=True,
    )
    assert "Tick the assignments to move." in response.content.decode()


def test_bulk_reassign_never_gives_one_labeller_both_slots(project, team):
    pool = grading_pool(project, questions=2, passages=1)
    services.plan_assignments(
        pool=pool, labellers=[team["ana"], team["ben"]], double_share=1, seed=1
    )
    # Both labellers hold one slot of each question: moving the first slots to ana moves none.
    firsts = list(Assignment.objects.filter(pool=pool, slot=1).select_related("question"))
    before = sorted(Assignment.objects.values_list())
    result = services.reassign_many(assignments=firsts, labeller=team["ana"], user=team["lea"])
    held = sum(1 for a in firsts if a.labeller == team["ana"])
    assert result.moved == 0 and result.unchanged == held
    assert len(result.conflicts) == len(firsts) - held >= 1
    assert "not moved: ana already labels" in result.describe(labeller=team["ana"])
    assert sorted(Assignment.objects.values_list()) == before


def test_an_assignment_of_another_pool_cannot_be_moved_through_this_one(project, team):
    pool = grading_pool(project, questions=1, passages=1)
    other = grading_pool(project, questions=1, passages=1)
    services.plan_assignments(pool=other, labellers=[team["ana"]], double_share=0)
    elsewhere = Assignment.objects.get(pool=other)
    before = sorted(Assignment.objects.values_list())
    response = login(team["lea"]).post(
        reverse("labelling:reassign-assignments", args=[project.slug, pool.pk]),
        {"assignment": [elsewhere.pk], "to": team["ben"].pk},
        follow=True,
    )
    assert "not in this pool any more" in response.content.decode()
    assert sorted(Assignment.objects.values_list()) == before


def test_raising_the_double_labelled_share_after_planning(project, team):
    pool = grading_pool(project, questions=10, passages=2, restricted_group="hr")
    projects.set_access_group_members(project=project, name="hr", users=[team["ana"], team["ben"]])
    services.plan_assignments(
        pool=pool, labellers=[team["ana"], team["ben"], team["cem"]], double_share=0.2
    )
    assert Assignment.objects.filter(pool=pool, slot=2).count() == 2
    response = login(team["lea"]).post(
        reverse("labelling:add-second-labellers", args=[project.slug]),
        {
            "pool": pool.pk,
            "labellers": [team["ana"].pk, team["ben"].pk, team["cem"].pk],
            "double_percent": 50,
            "seed": 0,
        },
        follow=True,
    )
    assert "3 questions got a second labeller" in response.content.decode()
    assert Assignment.objects.filter(pool=pool, slot=2).count() == 5
    for second in Assignment.objects.filter(pool=pool, slot=2):
        first = Assignment.objects.get(pool=pool, question=second.question, slot=1)
        assert first.labeller_id != second.labeller_id
        # Every question has a salary passage: both of its labellers can see it.
        assert {first.labeller.username, second.labeller.username} <= {"ana", "ben"}
    again = services.add_second_labellers(pool=pool, labellers=[team["cem"]], double_count=5)
    assert again.assignments == 0 and "already has that many" in again.describe()
    with pytest.raises(services.AssignmentError, match="cannot have 11 double-labelled"):
        services.add_second_labellers(pool=pool, labellers=[team["cem"]], double_count=11)
    bad = login(team["lea"]).post(
        reverse("labelling:add-second-labellers", args=[project.slug]),
        {"pool": pool.pk, "seed": 0},
    )
    assert bad.status_code == 400
    assert "Give the double-labelled share or a number of questions." in bad.content.decode()


def test_excluding_a_question_takes_it_out_of_work_and_gold_with_a_record(project, team):
    pool = grading_pool(project, questions=3, passages=1)
    services.plan_assignments(pool=pool, labellers=[team["ana"]], double_share=0)
    question_set = pool.question_set
    first, second, third = question_set.questions.order_by("pk")
    for assignment in Assignment.objects.filter(pool=pool, question__in=[first, third]):
        start(assignment)
        judgements.record_verdict(
            assignment=assignment,
            labeller=team["ana"],
            outcome="answerable",
            reason="",
            revision=0,
        )
    # The second question is unfinished: it blocks the gold set until it is excluded.
    assert [item.question_id for item in collect_gold(question_set=question_set)[1]] != []
    lea = login(team["lea"])
    response = lea.post(
        reverse("labelling:exclude-question", args=[project.slug, question_set.pk, second.pk]),
        {"reason": "duplicate of the first", "next": "gold"},
        follow=True,
    )
    body = response.content.decode()
    assert f"{second.external_id} is excluded from {question_set.name}" in body
    assert "duplicate of the first" in body and "by lea" in body
    second.refresh_from_db()
    assert second.excluded_by == team["lea"] and second.exclusion_reason == "duplicate of the first"
    assert Change.objects.filter(action="exclude question", made_by=team["lea"]).count() == 1
    # Out of the labeller's work: queue, next question, the grading page.
    ana = login(team["ana"])
    queue = ana.get(reverse("labelling:show-queue", args=[project.slug])).content.decode()
    assert second.text not in queue
    assert services.next_assignment(project=project, labeller=team["ana"]) is None
    grade = reverse("labelling:grade-question", args=[project.slug, pool.pk, second.pk])
    assert ana.get(grade).status_code == 404
    # Out of the gold.
    questions, unresolved = collect_gold(question_set=question_set)
    assert [q.question_id for q in questions] == [first.external_id, third.external_id]
    assert unresolved == []
    assert [r.question.pk for r in resolve_gold(question_set=question_set).questions] == [
        first.pk,
        third.pk,
    ]
    gold_set = finalise_gold_set(question_set=question_set, user=team["lea"])
    assert gold_set.manifest["questions"] == 2
    assert Judgement.objects.filter(assignment__question=first).exists()
    # And back.
    lea.post(reverse("labelling:include-question", args=[project.slug, question_set.pk, second.pk]))
    second.refresh_from_db()
    assert second.excluded_at is None
    assert services.next_assignment(project=project, labeller=team["ana"]).question == second


def test_an_overlong_exclusion_reason_is_a_message_not_a_500(project, team):
    pool = grading_pool(project, questions=1, passages=1)
    question = pool.question_set.questions.get()
    response = login(team["lea"]).post(
        reverse(
            "labelling:exclude-question", args=[project.slug, pool.question_set.pk, question.pk]
        ),
        {"reason": "x" * 501},
        follow=True,
    )
    assert response.status_code == 200
    assert "at most 500 characters" in response.content.decode()
    question.refresh_from_db()
    assert question.excluded_at is None
