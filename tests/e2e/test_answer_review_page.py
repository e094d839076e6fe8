"""The answer review page is finished like the grading page (issue 33 item 10), in real Chromium
at 1366 and 1024 px: the work beside the guideline panel, the status bar with "All changes
saved" and the count of changes kept, `?` listing the keys, and a whole review made with keys
only (claims, citations, a group of partial citations, facts, finishing with d), across a
reload with changes not yet saved that loses nothing. A second reviewer sees nothing of it."""

import json
import re

import pytest
from playwright.sync_api import expect

from answers.models import AnswerAssignment, CitationJudgement, ClaimJudgement, FactJudgement
from answers.services.review import plan_answer_review
from answers.services.runs import FactInput, import_answers, record_reference_answer
from labelling.services.guidelines import save_guideline
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    labelled_question_set,
)

pytestmark = pytest.mark.e2e

GUIDELINE = "# How we grade\n\nA claim is **supported** when the context says it, <b>not</b> more."


def make_world():
    """q1's answer: a first claim citing two passages, a second citing none; two reference
    facts; Lina and Omar both review it; the project has a guideline."""
    project = ProjectFactory(slug="acme", name="Acme gold")
    lina, omar, lead = (UserFactory(username=name) for name in ("lina", "omar", "lead"))
    for user in (lina, omar):
        MembershipFactory(project=project, user=user, role="labeller")
    MembershipFactory(project=project, user=lead, role="lead")
    question_set = labelled_question_set(project, ann=lina, bob=omar, lead=lead)
    answer = {
        "question_id": "q1",
        "answer": "You get 25 days. Ask <b>HR</b>.",
        "refused": False,
        "sentences": [
            {
                "start": 0,
                "end": 16,
                "citations": [
                    {"doc_id": "leave", "start": 0, "end": 46},
                    {"doc_id": "vpn", "start": 0, "end": 50},
                ],
            },
            {"start": 17, "end": 31},
        ],
        "context": [{"doc_id": "leave"}],
    }
    run = import_answers(question_set=question_set, data=json.dumps(answer), run_name="rag").run
    record_reference_answer(
        question=question_set.questions.get(external_id="q1"),
        facts=[FactInput("25 days"), FactInput("per year", False)],
        user=lead,
    )
    save_guideline(project=project, text=GUIDELINE, user=lead)
    plan_answer_review(run=run, labellers=[lina, omar], double_share=1)
    return AnswerAssignment.objects.get(labeller=lina), AnswerAssignment.objects.get(labeller=omar)


def check_layout(page, width, shot):
    """Two columns as on the grading page, nothing wider than the window, the status bar on
    screen at the bottom."""
    main = page.locator(".grading-main").bounding_box()
    panel = page.locator(".guideline-panel").bounding_box()
    assert panel["x"] >= main["x"] + main["width"], (width, main, panel)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    bar = page.locator("#status-bar")
    expect(bar).to_be_in_viewport()
    box = bar.bounding_box()
    assert abs(box["y"] + box["height"] - page.viewport_size["height"]) <= 1
    page.screenshot(path=str(shot))


@pytest.mark.parametrize("width", [1366, 1024])
def test_an_answer_is_reviewed_with_keys_only_and_a_reload_loses_nothing(
    worker, live_server, page, width, tmp_path
):
    mine, theirs = make_world()
    page.set_viewport_size({"width": width, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    log_in(page, live_server, "lina", PASSWORD)
    review = f"{live_server.url}/p/acme/reviews/{mine.pk}/"
    page.goto(review)

    # The grading page's pieces: the guideline beside the work, rendered and safe; the bar.
    panel = page.locator(".guideline-panel")
    expect(panel).to_contain_text("Guideline v1")
    expect(panel.locator("strong")).to_have_text("supported")
    expect(panel.locator("b")).to_have_count(0)  # raw HTML in the guideline is text
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    expect(page.locator("#review-progress")).to_have_text("0 of 6 decisions made")
    expect(page.locator("#review-status")).to_contain_text("Still to grade")
    check_layout(page, width, tmp_path / f"review-{width}.png")

    # ? lists every key of the page; ? again (or Escape) closes the list.
    page.keyboard.press("?")
    keys = page.locator("#keys-help")
    expect(keys).to_be_visible()
    for meaning in ("next row not decided yet", "on a claim", "on a citation", "done"):
        expect(keys).to_contain_text(meaning)
    page.screenshot(path=str(tmp_path / f"review-keys-{width}.png"))
    page.keyboard.press("?")
    expect(keys).to_be_hidden()
    page.locator("#status-bar .show-keys").click()  # the bar's button opens the same list
    expect(keys).to_be_visible()
    page.keyboard.press("Escape")
    expect(keys).to_be_hidden()

    # Claim 1 supported, both its citations partly: each key decides its row and moves on.
    rows = page.locator("#review [data-row]")
    expect(rows.nth(0)).to_have_class(re.compile(r"\bcurrent\b"))
    for key in ("f", "1", "1"):
        page.keyboard.press(key)
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    expect(page.locator("#review-progress")).to_have_text("3 of 6 decisions made")
    assert ClaimJudgement.objects.get(assignment=mine, position=0).support == "full"
    assert sorted(
        CitationJudgement.objects.filter(claim__assignment=mine).values_list("grade", flat=True)
    ) == [1, 1]

    # The server cannot be reached: claim 2 and the first fact are kept, and the bar says so.
    page.route("**/grade/", lambda route: route.abort())
    page.keyboard.press("n")
    page.keyboard.press("y")
    expect(page.locator("#save-state")).to_contain_text("2 changes kept")
    expect(page.locator("#save-state")).to_have_attribute("data-state", "offline")
    assert ClaimJudgement.objects.get(assignment=mine, position=1).support == ""
    page.unroute("**/grade/")

    # A reload mid-review loses nothing: the kept changes are saved and shown.
    page.reload()
    expect(page.locator("#claim-1-none")).to_be_checked()
    fact = page.locator(".review-row.fact").first
    expect(fact.locator("input[value=yes]")).to_be_checked()
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    expect(page.locator("#claim-0-full")).to_be_checked()
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(tmp_path / f"review-reloaded-{width}.png"))
    assert ClaimJudgement.objects.get(assignment=mine, position=1).support == "none"
    assert list(
        FactJudgement.objects.filter(assignment=mine).values_list("present", flat=True)
    ) == ["yes"]

    # Shift+j and Shift+k go from claim to claim, over the citations between them.
    page.keyboard.press("Shift+J")
    expect(page.locator("#claim-1")).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("Shift+K")
    expect(page.locator("#claim-0")).to_have_class(re.compile(r"\bcurrent\b"))

    # g finds the one row still to decide (the second fact); 0 says it is missing.
    page.keyboard.press("g")
    expect(page.locator(".review-row.fact").nth(1)).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("0")
    expect(page.locator("#review-status")).to_have_text("Everything is graded.")
    expect(page.locator("#review-progress")).to_have_text("6 of 6 decisions made")
    expect(page.locator("#save-state")).to_have_text("All changes saved")

    # The two partial citations support the claim together: k up to their row, tick 1 and 2,
    # Enter adds the group.
    group = page.locator("#supporting-0")
    while "current" not in (group.get_attribute("class") or ""):
        page.keyboard.press("k")
    for key in ("1", "2", "Enter"):
        page.keyboard.press(key)
    expect(page.locator(".supporting-groups")).to_contain_text("leave + vpn")
    # The page comes back on the row the labeller was working on.
    assert page.url.endswith("#supporting-0")
    expect(group).to_have_class(re.compile(r"\bcurrent\b"))
    assert ClaimJudgement.objects.get(assignment=mine, position=0).supporting_sets == [[0, 1]]
    page.screenshot(path=str(tmp_path / f"review-done-{width}.png"), full_page=True)

    # d finishes; this was Lina's only review.
    page.keyboard.press("d")
    page.wait_for_url(f"{live_server.url}/p/acme/reviews/")
    expect(page.get_by_text("Answer review saved.")).to_be_visible()
    mine.refresh_from_db()
    assert mine.done_at is not None
    assert errors == []

    # Omar, in the same browser, reviews the same answer and sees nothing of Lina's.
    page.context.clear_cookies()
    log_in(page, live_server, "omar", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/reviews/{theirs.pk}/")
    expect(page.locator("#review-progress")).to_have_text("0 of 6 decisions made")
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    assert page.locator("#review input:checked").count() == 0
    expect(page.locator(".supporting-groups")).to_have_count(0)
    expect(page.locator("#review-page")).not_to_contain_text("lina")
    assert not ClaimJudgement.objects.filter(assignment=theirs).exclude(support="").exists()
    assert not FactJudgement.objects.filter(assignment=theirs).exists()
    assert page.goto(review).status == 404
