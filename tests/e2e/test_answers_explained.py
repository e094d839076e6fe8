"""Issue 33 items 9 and 10 in real Chromium: a refusal has no claim to grade; the lead's
decision quotes the text; the Answers page groups and explains its scores, says why a
human-graded score has no value, and keys the drill-down's marks, at 1366 and 1024 px."""

import json

import pytest
from playwright.sync_api import expect

from answers.models import AnswerAssignment
from answers.services import review
from answers.services.runs import import_answers
from evaluation.services.gold_sets import finalise_gold_set
from tests.e2e.conftest import log_in
from tests.e2e.test_answer_review_flow import make_world, watch_console
from tests.factories import PASSWORD

pytestmark = pytest.mark.e2e


def grade(assignment, support):
    for claim in assignment.claims.all():
        review.record_claim_support(
            assignment=assignment,
            labeller=assignment.labeller,
            claim=claim.position,
            support=support,
        )
        for citation in claim.citations.all():
            review.record_citation_grade(
                assignment=assignment,
                labeller=assignment.labeller,
                claim=claim.position,
                passage=citation.passage_id,
                grade=2,
            )
    reference = review.reference_for(assignment)
    for fact in reference.facts.all() if reference else ():
        review.record_fact_presence(
            assignment=assignment, labeller=assignment.labeller, fact=fact.pk, present="yes"
        )
    review.finish_answer_review(assignment=assignment, labeller=assignment.labeller)


def test_a_refusal_is_finished_without_grading_it_as_a_claim(live_server, page):
    lina, omar, lead = make_world()
    question_set = AnswerAssignment.objects.first().answer.run.question_set
    refusal = {"question_id": "q2", "answer": "I don't know.", "refused": True}
    run = import_answers(question_set=question_set, data=json.dumps(refusal), run_name="shy").run
    review.plan_answer_review(run=run, labellers=[lina], double_share=0)
    mine = AnswerAssignment.objects.get(answer__run=run)
    problems = watch_console(page)
    log_in(page, live_server, "lina", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/reviews/{mine.pk}/")
    expect(page.get_by_role("heading", name="The system refused to answer")).to_be_visible()
    expect(page.locator("#review-status")).to_have_text("Everything is graded.")
    assert page.get_by_role("heading", name="Claims").count() == 0
    page.keyboard.press("d")
    expect(page.get_by_text("Answer review saved.")).to_be_visible()
    mine.refresh_from_db()
    assert mine.done_at is not None and not mine.claims.exists()
    assert problems == []


def test_the_answers_page_explains_its_figures_and_the_decision_quotes_text(
    worker, live_server, page
):
    lina, omar, lead = make_world()
    for assignment in AnswerAssignment.objects.all():
        grade(assignment, "full" if assignment.labeller == lina else "none")
    question_set = AnswerAssignment.objects.first().answer.run.question_set
    problems = watch_console(page)
    log_in(page, live_server, "lead", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/sets/{question_set.pk}/answers/adjudication/")
    claims = page.locator(".claim-decision > q")
    expect(claims.first).to_have_text("You get 25 days.")
    expect(claims.nth(1)).to_have_text("Ask <b>HR</b>.")  # the answer's markup shown as text
    expect(page.locator(".answer-disagreement")).to_contain_text("not supported")
    expect(page.locator(".answer-disagreement")).not_to_contain_text("[0, 16)")

    gold_set = finalise_gold_set(question_set=question_set, user=lead)
    # A review finished after finalising: the page says it counts from the next version.
    later = {"question_id": "q1", "answer": "Twenty-five days.", "refused": False}
    run = import_answers(question_set=question_set, data=json.dumps(later), run_name="later").run
    review.plan_answer_review(run=run, labellers=[lina], double_share=0)
    grade(AnswerAssignment.objects.get(answer__run=run), "full")
    page.goto(f"{live_server.url}/p/acme/gold-sets/{gold_set.pk}/answers/")
    # A click does not wait for the page its form posts to: wait for it, then for the job.
    with page.expect_navigation(timeout=60_000):
        page.get_by_role("button", name="Compute the answer scores").click()
    expect(page.locator('tr[data-score="faithfulness"]')).to_be_visible(timeout=60_000)
    for title in ("Faithfulness", "Citations", "Correctness", "Refusal", "Evidence position"):
        expect(page.locator("tr.score-group th", has_text=title).first).to_be_visible()
    expect(page.locator("#why-no-value")).to_contain_text(
        "1 answer review finished since v1 was finalised"
    )
    page.locator("#why-no-value").get_by_role("link", name="Gold sets").click()
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    page.go_back()
    page.locator("details.answer-question summary").first.click()
    expect(page.locator("#drill-legend")).to_contain_text("overlaps a gold span")
    for width in (1366, 1024):
        page.set_viewport_size({"width": width, "height": 900})
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0
        page.screenshot(path=f"/tmp/iJ-answers-{width}.png", full_page=True)
    assert problems == []
