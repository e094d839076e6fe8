"""The answer round trip in real Chromium: a labeller reviews an answer with the keyboard (every
grade saved as it is made, kept on reload, finished with one key); a second labeller sees none
of it and disagrees; the lead decides; the finalised gold set's Answers page shows the result."""

import json
import re

import pytest
from playwright.sync_api import expect

from answers.models import (
    AnswerAssignment,
    CitationJudgement,
    ClaimEvidence,
    ClaimJudgement,
    FactJudgement,
)
from answers.services.review import plan_answer_review
from answers.services.runs import FactInput, import_answers, record_reference_answer
from evaluation.services.gold_sets import finalise_gold_set
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    labelled_question_set,
)

pytestmark = pytest.mark.e2e


def make_world():
    """A labelled question set (tests.factories); Lina and Omar review one answer to its q1
    (double-reviewed); the lead writes q1's facts."""
    project = ProjectFactory(slug="acme", name="Acme gold")
    lina, omar, lead = (UserFactory(username=name) for name in ("lina", "omar", "lead"))
    for user in (lina, omar):
        MembershipFactory(project=project, user=user, role="labeller")
    MembershipFactory(project=project, user=lead, role="lead")
    question_set = labelled_question_set(project, ann=lina, bob=omar, lead=lead)
    question = question_set.questions.get(external_id="q1")
    answer = {
        "question_id": "q1",
        "answer": "You get 25 days. Ask <b>HR</b>.",
        "refused": False,
        "sentences": [
            {"start": 0, "end": 16, "citations": [{"doc_id": "leave", "start": 0, "end": 46}]},
            {"start": 17, "end": 31},
        ],
        "context": [{"doc_id": "leave"}],
    }
    run = import_answers(question_set=question_set, data=json.dumps(answer), run_name="rag").run
    record_reference_answer(
        question=question, facts=[FactInput("25 days"), FactInput("per year", False)], user=lead
    )
    plan_answer_review(run=run, labellers=[lina, omar], double_share=1)
    return lina, omar, lead


def watch_console(page) -> list[str]:
    problems: list[str] = []
    page.on(
        "console",
        lambda m: (
            problems.append(m.text)
            if m.type == "error" and "favicon" not in m.location.get("url", "")
            else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    return problems


def test_a_labeller_reviews_an_answer_with_the_keyboard(worker, live_server, page):
    lina, omar, lead = make_world()
    mine = AnswerAssignment.objects.get(labeller=lina)
    problems = watch_console(page)
    log_in(page, live_server, "lina", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/queue/")
    page.get_by_role("link", name="My answer reviews").click()
    page.get_by_role("link", name="how many days carry over").click()
    rows = page.locator("#review [data-row]")
    expect(rows.nth(0)).to_have_class("review-row claim-ungraded current")
    # The answer's text is shown as text, never as markup.
    expect(page.locator("legend").nth(2)).to_have_text("Ask <b>HR</b>.")

    # claim 1 supported, its citation partly, claim 2 not supported, facts present / missing.
    # Typed at once, as a quick labeller would: each key grades its row and moves on.
    for key in ("f", "1", "n", "y", "n"):
        page.keyboard.press(key)
    expect(page.locator("#review-status")).to_have_text("Everything is graded.")
    assert list(
        ClaimJudgement.objects.filter(assignment=mine).values_list("support", flat=True)
    ) == [
        "full",
        "none",
    ]
    assert CitationJudgement.objects.get(claim__assignment=mine).grade == 1
    assert sorted(
        FactJudgement.objects.filter(assignment=mine).values_list("present", flat=True)
    ) == [
        "no",
        "yes",
    ]

    page.reload()
    expect(page.locator("#claim-0-full")).to_be_checked()
    expect(page.locator("#claim-1-none")).to_be_checked()
    # Evidence: select words of the context passage; e makes them the current claim's.
    expect(page.locator("#review [data-row]").nth(0)).to_have_class(re.compile("current"))
    page.evaluate(
        "() => GoldsetSelection.select(document.querySelector('#review-context .doc-view'), 0, 7)"
    )
    page.keyboard.press("e")
    page.wait_for_url(re.compile("#claim-0$"))
    expect(page.locator(".claim-evidence q")).to_have_text("Employees")
    assert ClaimEvidence.objects.get(claim__assignment=mine).quote == "Employees"
    page.keyboard.press("d")
    page.wait_for_url(f"{live_server.url}/p/acme/reviews/")
    expect(page.get_by_text("Answer review saved.")).to_be_visible()
    mine.refresh_from_db()
    assert mine.done_at is not None
    assert problems == []

    # Omar reviews the same answer and sees none of Lina's grades.
    theirs = AnswerAssignment.objects.get(labeller=omar)
    page.context.clear_cookies()
    log_in(page, live_server, "omar", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/reviews/{theirs.pk}/")
    expect(page.locator("#review-status")).to_contain_text("Still to grade")
    assert page.locator("#review input:checked").count() == 0
    response = page.goto(f"{live_server.url}/p/acme/reviews/{mine.pk}/")
    assert response.status == 404
    problems.clear()  # the browser logs that 404, which was the point

    # Omar disagrees on the first claim; the lead decides for Lina in the browser.
    page.goto(f"{live_server.url}/p/acme/reviews/{theirs.pk}/")
    expect(page.locator("#review [data-row]").nth(0)).to_have_class(re.compile("current"))
    for key in ("n", "1", "n", "y", "n"):
        page.keyboard.press(key)
    expect(page.locator("#review-status")).to_have_text("Everything is graded.")
    page.keyboard.press("d")
    page.wait_for_url(f"{live_server.url}/p/acme/reviews/")
    page.context.clear_cookies()
    log_in(page, live_server, "lead", PASSWORD)
    question_set = mine.answer.run.question_set
    page.goto(f"{live_server.url}/p/acme/sets/{question_set.pk}/answers/adjudication/")
    expect(page.locator("#answer-agreement")).to_contain_text("claim support")
    page.get_by_role("button", name="lina's review stands").click()
    expect(page.get_by_text("decided: lina's review")).to_be_visible()

    # Finalised, the gold set's Answers page shows the scores the CLI prints on its bundle.
    gold_set = finalise_gold_set(question_set=question_set, user=lead)
    page.goto(f"{live_server.url}/p/acme/gold-sets/{gold_set.pk}/answers/")
    # A click does not wait for the page its form posts to: wait for it, then for the job.
    with page.expect_navigation(timeout=60_000):
        page.get_by_role("button", name="Compute the answer scores").click()
    expect(page.locator('tr[data-score="faithfulness"]')).to_be_visible(timeout=60_000)
    faithfulness = page.locator('tr[data-score="faithfulness"] td.num').inner_text()
    assert faithfulness == "0.5000"  # Lina's review: one claim supported, one not
    assert problems == []


def test_grades_made_offline_are_kept_and_saved_when_the_connection_returns(
    transactional_db, live_server, browser
):
    """The review's autosave is the passages' kept-action queue (static/goldset/actions.js):
    grades that cannot be sent are kept in order and resent by themselves, or from the queue
    page when the labeller has left the review."""
    lina, omar, lead = make_world()
    mine = AnswerAssignment.objects.get(labeller=lina)
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []  # failed requests are logged by htmx, as they should be
    page.on("pageerror", lambda e: errors.append(str(e)))
    log_in(page, live_server, "lina", PASSWORD)
    review = f"{live_server.url}/p/acme/reviews/{mine.pk}/"
    page.goto(review)
    expect(page.locator("#review [data-row]").nth(0)).to_have_class(re.compile("current"))

    context.set_offline(True)
    for key in ("f", "1", "n"):
        page.keyboard.press(key)
    expect(page.locator("#review-status")).to_contain_text("You are offline.")
    page.wait_for_timeout(1500)  # a retry or two while offline
    assert not ClaimJudgement.objects.filter(assignment=mine).exclude(support="").exists()
    context.set_offline(False)
    expect(page.locator("#review-status")).to_have_text(
        "Back online: saved 3 changes made while offline."
    )
    assert list(
        ClaimJudgement.objects.filter(assignment=mine).values_list("support", flat=True)
    ) == ["full", "none"]
    assert CitationJudgement.objects.get(claim__assignment=mine).grade == 1

    # The server cannot be reached for the facts (the request fails); the labeller goes to
    # the queue page, which sends what this browser kept.
    page.route("**/grade/", lambda route: route.abort())
    page.keyboard.press("y")
    page.keyboard.press("n")
    expect(page.locator("#review-status")).to_contain_text("kept in this browser")
    assert not FactJudgement.objects.filter(assignment=mine).exists()
    page.unroute("**/grade/")
    page.goto(f"{live_server.url}/p/acme/queue/")
    expect(page.locator("#kept-status")).to_contain_text("saved 2 changes")
    assert sorted(
        FactJudgement.objects.filter(assignment=mine).values_list("present", flat=True)
    ) == ["no", "yes"]
    page.goto(review)
    expect(page.locator("#review-status")).to_have_text("Everything is graded.")
    assert errors == []
    context.close()
