"""Issue 14, item 11: restricted passages never block a question set for good. Planning sends
a question to labellers who can see it, a passage only one labeller can see is single-labelled,
an item that can never get its vote waits for a lead in the adjudication queue with the reason,
and every unresolved item on the Gold page is a link."""

import pytest
from django.urls import reverse
from django.utils import timezone

from corpus.models import AccessGroup, Document, Job
from corpus.services import projects
from evaluation.services.gold_sets import FinaliseBlocked, finalise_gold_set
from labelling.models import Assignment, Candidate, Resolution
from labelling.services import adjudication, judgements
from labelling.services import assignments as services
from labelling.services.gold import collect_gold, resolve_gold
from tests.conftest import wait_for_job
from tests.factories import grading_pool, login


@pytest.fixture
def team(project, member):
    people = {
        "ann": member("labeller", username="ann"),  # in hr-confidential
        "bob": member("labeller", username="bob"),
        "cem": member("labeller", username="cem"),
        "lea": member("lead", username="lea"),  # in hr-confidential
        "leo": member("lead", username="leo"),  # outside
        "adm": member("admin", username="adm"),  # outside
    }
    return people


def restricted_pool(project, team, *, questions=2):
    pool = grading_pool(project, questions=questions, passages=3, restricted_group="hr")
    projects.set_access_group_members(project=project, name="hr", users=[team["ann"], team["lea"]])
    return pool


def grade_all(assignment, grade=2):
    """The labeller grades every passage they can see and marks the question answerable."""
    revision = 0
    for candidate in Candidate.objects.of_assignment(assignment).not_hidden_from(
        assignment.labeller
    ):
        judgements.record_grade(
            assignment=assignment,
            labeller=assignment.labeller,
            candidate_id=candidate.pk,
            grade=grade,
            revision=0,
        )
    judgements.record_verdict(
        assignment=assignment,
        labeller=assignment.labeller,
        outcome="answerable",
        reason="",
        revision=revision,
    )
    assignment.refresh_from_db()
    assert assignment.completed_at is not None


def test_planning_gives_restricted_questions_to_labellers_who_can_see_them(project, team):
    pool = restricted_pool(project, team, questions=6)
    result = services.plan_assignments(
        pool=pool, labellers=[team["ann"], team["bob"], team["cem"]], double_share=0.5
    )
    # Every question has a restricted passage only ann can see: she labels each of them.
    for question in pool.question_set.questions.all():
        holders = set(
            Assignment.objects.filter(pool=pool, question=question).values_list(
                "labeller__username", flat=True
            )
        )
        assert "ann" in holders, question
    # The doubled questions' salary passage has one labeller who can see it.
    assert result.single_by_access == 3
    assert "3 passages no second labeller can see stay single-labelled" in result.describe()


def test_a_passage_the_second_labeller_cannot_see_is_single_labelled(project, team):
    """The issue's dead end: the plan (made before access groups counted) gave bob the second
    slot of questions with a salary passage. ann grades everything she sees; bob finishes."""
    pool = restricted_pool(project, team, questions=2)
    now = timezone.now()
    for question in pool.question_set.questions.all():
        for slot, name in ((1, "ann"), (2, "bob")):
            Assignment.objects.create(
                pool=pool, question=question, slot=slot, labeller=team[name], assigned_at=now
            )
    for assignment in Assignment.objects.filter(pool=pool):
        grade_all(assignment)
    gold = resolve_gold(question_set=pool.question_set)
    assert gold.unresolved == []
    salary = [row.single_by_access for row in gold.questions]
    assert all(len(rows) == 1 and rows[0][3] == ["bob"] for rows in salary)
    report = adjudication.agreement_report(question_set=pool.question_set, n_boot=0)
    assert report["single_by_access"] == 2 and report["items"] == 4  # 2 shared passages each
    gold_set = finalise_gold_set(question_set=pool.question_set, user=team["adm"])
    assert gold_set.manifest["questions"] == 2

    page = login(team["lea"]).get(
        reverse("labelling:show-gold", args=[project.slug, pool.question_set.pk])
    )
    assert "single-labelled: bob cannot see its document" in page.content.decode()
    # The adjudication queue lists them for review, without blocking anything.
    queue = login(team["lea"]).get(
        reverse("labelling:list-adjudication", args=[project.slug, pool.question_set.pk])
    )
    body = queue.content.decode()
    assert "Waiting for a decision (0)" in body and "Single votes to review (2)" in body
    assert body.count("one vote stands: bob cannot see this document") == 2


def test_a_passage_no_labeller_can_see_goes_to_the_queue_and_a_lead_of_its_group_resolves_it(
    project, team
):
    pool = restricted_pool(project, team, questions=2)
    services.plan_assignments(pool=pool, labellers=[team["bob"], team["cem"]], double_share=0)
    for assignment in Assignment.objects.filter(pool=pool):
        grade_all(assignment, grade=1)
    question_set = pool.question_set
    queue = adjudication.adjudication_queue(question_set=question_set)
    assert [e.reason for e in queue] == [
        "can never get its vote: none of its labellers can see this document"
    ] * 2
    assert {e.kind for e in queue} == {"unreachable"}
    with pytest.raises(FinaliseBlocked):
        finalise_gold_set(question_set=question_set, user=team["adm"])

    lea = login(team["lea"])
    gold_url = reverse("labelling:show-gold", args=[project.slug, question_set.pk])
    body = lea.get(gold_url).content.decode()
    links = [
        reverse(
            "labelling:resolve-item",
            args=[project.slug, question_set.pk, pool.pk, e.question.pk, e.candidate.pk],
        )
        for e in queue
    ]
    for link in links:
        assert f'href="{link}?from=gold"' in body
    assert "A vote can never come (2)" in body
    queue_page = lea.get(
        reverse("labelling:list-adjudication", args=[project.slug, question_set.pk])
    )
    assert queue_page.content.decode().count("none of its labellers can see this document") == 2
    for link in links:
        response = lea.post(link, {"grade": "1", "spans_from": "candidate", "note": ""})
        assert response.status_code == 302
    assert Resolution.objects.filter(pool=pool).count() == 2
    gold_set = finalise_gold_set(question_set=question_set, user=team["adm"])
    assert gold_set.manifest["spans"] >= 2


def test_a_lead_outside_the_group_sees_none_of_it_but_a_count_free_note(project, team):
    pool = restricted_pool(project, team, questions=2)
    services.plan_assignments(pool=pool, labellers=[team["bob"], team["cem"]], double_share=0)
    for assignment in Assignment.objects.filter(pool=pool):
        grade_all(assignment, grade=1)
    question_set = pool.question_set
    leo = login(team["leo"])
    args = [project.slug, question_set.pk]
    gold = leo.get(reverse("labelling:show-gold", args=args)).content.decode()
    queue = leo.get(reverse("labelling:list-adjudication", args=args)).content.decode()
    hidden_doc = Document.objects.get(project=project, title="Salary bands SECRET").doc_id
    for body in (gold, queue):
        assert "handled by members of those groups" in body
        assert hidden_doc not in body and "never get its vote" not in body
    assert "Every item is resolved." in gold
    assert "Nothing to adjudicate." in queue


def test_a_deactivated_labeller_s_vote_is_not_waited_for(project, team):
    pool = grading_pool(project, questions=1, passages=2)
    question = pool.question_set.questions.get()
    now = timezone.now()
    first = Assignment.objects.create(
        pool=pool, question=question, slot=1, labeller=team["ann"], assigned_at=now
    )
    Assignment.objects.create(
        pool=pool, question=question, slot=2, labeller=team["bob"], assigned_at=now
    )
    grade_all(first)
    gold = resolve_gold(question_set=pool.question_set)
    assert {e.kind for e in gold.unresolved} == {"waiting"}
    assert adjudication.adjudication_queue(question_set=pool.question_set) == []
    team["bob"].is_active = False
    team["bob"].save()
    queue = adjudication.adjudication_queue(question_set=pool.question_set)
    assert len(queue) == 3  # two passages and the verdict
    assert {e.reason for e in queue} == {
        "can never get its vote: bob's account is deactivated",
        "can never get its verdict: bob's account is deactivated",
    }


def test_an_open_slot_nobody_can_claim_is_not_waited_for(project, team):
    pool = restricted_pool(project, team, questions=1)
    question = pool.question_set.questions.get()
    first = Assignment.objects.create(
        pool=pool, question=question, slot=1, labeller=team["ann"], assigned_at=timezone.now()
    )
    Assignment.objects.create(pool=pool, question=question, slot=2)
    grade_all(first)
    # The two open passages can be claimed by bob, cem, ...; the salary one only by lea.
    kinds = {
        e.candidate.pk if e.candidate else None: e.kind
        for e in resolve_gold(question_set=pool.question_set).unresolved
    }
    assert set(kinds.values()) == {"waiting"}
    AccessGroup.objects.get(project=project, name="hr").members.remove(team["lea"])
    entries = adjudication.adjudication_queue(question_set=pool.question_set)
    assert [e.reason for e in entries] == [
        "can never get its vote: nobody left who could claim its open slot can see it"
    ]
    questions, unresolved = collect_gold(question_set=pool.question_set)
    assert any("open slot" in item.reason for item in unresolved)


def test_finalising_blocked_by_items_an_admin_cannot_see_names_none_of_them(worker, project, team):
    pool = restricted_pool(project, team, questions=1)
    services.plan_assignments(pool=pool, labellers=[team["bob"]], double_share=0)
    for assignment in Assignment.objects.filter(pool=pool):
        grade_all(assignment, grade=1)
    hidden_doc = Document.objects.get(project=project, title="Salary bands SECRET").doc_id
    response = login(team["adm"]).post(
        reverse("evaluation:finalise-gold-set", args=[project.slug, pool.question_set.pk]), {}
    )
    # Finalising is a job: the refusal is on its page, with the hidden items left out.
    assert response.status_code == 302
    job = wait_for_job(Job.objects.get(kind="finalise_gold_set"))
    assert job.state == "failed"
    page = login(team["adm"]).get(reverse("corpus:show-job", args=[project.slug, job.pk]))
    body = page.content.decode()
    assert page.status_code == 200
    assert "Cannot finalise" in body and "handled by members of those groups" in body
    assert hidden_doc not in body and "never get its vote" not in body
