"""A labeller reviews an answer with the keyboard in real Chromium: every grade saved as it is
made, kept on reload, the review finished with one key; a second labeller sees none of it."""

import json

import pytest
from playwright.sync_api import expect

from labelling.models import AnswerAssignment, CitationJudgement, ClaimJudgement, FactJudgement
from labelling.services.answer_review import plan_answer_review
from labelling.services.answers import FactInput, import_answers, record_reference_answer
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    ProjectFactory,
    QuestionFactory,
    QuestionSetFactory,
    UserFactory,
    add_documents,
)

pytestmark = pytest.mark.e2e

LEAVE = "Employees receive 25 days of paid annual leave per calendar year."


def make_world():
    project = ProjectFactory(slug="acme", name="Acme gold")
    lina, omar, lead = (UserFactory(username=name) for name in ("lina", "omar", "lead"))
    for user in (lina, omar):
        MembershipFactory(project=project, user=user, role="labeller")
    MembershipFactory(project=project, user=lead, role="lead")
    add_documents(project, ("leave", LEAVE))
    question_set = QuestionSetFactory(project=project, name="staff")
    question = QuestionFactory(question_set=question_set, external_id="q1", text="leave days?")
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
    return lina, omar


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


def test_a_labeller_reviews_an_answer_with_the_keyboard(transactional_db, live_server, page):
    lina, omar = make_world()
    mine = AnswerAssignment.objects.get(labeller=lina)
    problems = watch_console(page)
    log_in(page, live_server, "lina", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/queue/")
    page.get_by_role("link", name="My answer reviews").click()
    page.get_by_role("link", name="leave days?").click()
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
