"""Escalation in real Chromium (issue 36 item 3): two labellers grade a passage 2 and 0, the
second one's last write gives it to a third labeller, who grades it on an ordinary page; the
lead then finds it in the queue under the rules, with three votes, and decides it."""

import re

import pytest
from playwright.sync_api import expect

from labelling.models import Assignment, EscalatedItem, Judgement, Resolution
from labelling.services.judgements import record_grade, record_verdict
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    grading_pool,
)

pytestmark = pytest.mark.e2e


def has_class(name):
    return re.compile(rf"\b{name}\b")


def test_an_escalated_item_reaches_a_third_labeller_then_the_lead(live_server, browser):
    project = ProjectFactory(slug="acme", name="Acme gold")
    users = {}
    for name, role in (("ann", "labeller"), ("bob", "labeller"), ("carl", "labeller")):
        users[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=users[name], role=role)
    MembershipFactory(project=project, user=UserFactory(username="lena"), role="lead")
    pool = grading_pool(project, questions=1, passages=2)
    question = pool.question_set.questions.get()
    question.text = "how many leave days can i carry ovr?"
    question.save()
    first, other = pool.candidates.order_by("shuffle_rank", "pk")
    ann = Assignment.objects.create(pool=pool, question=question, slot=1, labeller=users["ann"])
    Assignment.objects.create(pool=pool, question=question, slot=2, labeller=users["bob"])
    # ann finished before: 2 on the first passage, 1 on the other.
    for candidate, grade in ((first, 2), (other, 1)):
        record_grade(
            assignment=ann,
            candidate_id=candidate.pk,
            labeller=users["ann"],
            grade=grade,
            revision=0,
        )
    record_verdict(
        assignment=ann, labeller=users["ann"], outcome="answerable", reason="", revision=0
    )

    def open_question(name):
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(20_000)
        log_in(page, live_server, name, PASSWORD)
        page.get_by_role("link", name="Acme gold").click()
        page.locator(".project-nav").get_by_role("link", name="My queue", exact=True).click()
        page.get_by_role("link", name=question.text).click()
        expect(page.locator("li.candidate").nth(0)).to_have_class(has_class("current"))
        return context, page

    # bob grades 0 and 1, then answers "answerable" with the keyboard: that finishes the
    # question, and the passage graded 2 and 0 goes to a third labeller.
    context, page = open_question("bob")
    cards = page.locator("li.candidate")
    expect(cards).to_have_count(2)
    page.keyboard.press("0")
    expect(cards.nth(0)).to_have_class(has_class("grade-0"))
    page.keyboard.press("j")
    page.keyboard.press("1")
    expect(cards.nth(1)).to_have_class(has_class("grade-1"))
    page.keyboard.press("a")
    expect(page.locator("#question-progress")).to_contain_text("done")
    context.close()
    third = Assignment.objects.get(pool=pool, question=question, slot=3)
    assert third.labeller == users["carl"]
    item = EscalatedItem.objects.get()
    assert (item.candidate_id, item.assignment_id, item.grades) == (first.pk, third.pk, [2, 0])

    # carl's page is an ordinary grading page with that passage alone.
    context, page = open_question("carl")
    cards = page.locator("li.candidate")
    expect(cards).to_have_count(1)
    assert int(cards.nth(0).get_attribute("data-candidate")) == first.pk
    body = page.locator("main").inner_text().lower()
    assert "third" not in body and "escalat" not in body and "disagree" not in body
    page.keyboard.press("1")
    expect(cards.nth(0)).to_have_class(has_class("grade-1"))
    page.keyboard.press("a")
    expect(page.locator("#question-progress")).to_contain_text("done")
    context.close()
    assert Judgement.objects.get(assignment=third).grade == 1

    # lena finds it in the queue under both rules, with its three votes, and decides it.
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    log_in(page, live_server, "lena", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/sets/{pool.question_set_id}/adjudication/")
    rules = page.locator(".queue-rules")
    expect(rules).to_contain_text("two grades are two apart (0 against 2)")
    expect(rules).to_contain_text("Widest disagreement first")
    queue = page.locator("table.queue")
    expect(queue).to_contain_text("3 votes (2 vs 0 vs 1): a lead decides")
    expect(queue).to_contain_text("who graded it 1")
    queue.get_by_role("link", name="Resolve").click()
    expect(page.locator(".vote")).to_have_count(3)
    expect(page.locator(".vote-c")).to_contain_text("Third labeller: carl")
    page.get_by_label("1 — partially answers").check()
    page.get_by_label("Evidence").select_option("candidate")
    page.get_by_role("button", name="Record the resolution").click()
    expect(page.locator(".messages")).to_contain_text("Resolved")
    context.close()

    resolution = Resolution.objects.get()
    assert (resolution.candidate_id, resolution.grade) == (first.pk, 1)
    assert sorted(Judgement.objects.filter(candidate=first).values_list("grade", flat=True)) == [
        0,
        1,
        2,
    ]  # every vote kept
    assert Assignment.objects.filter(pool=pool, question=question).count() == 3
