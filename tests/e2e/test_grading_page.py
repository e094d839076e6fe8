"""The grading page as a labeller uses it, in real Chromium (issue 14 items 3-10): a
selection survives a grade, the whole document opens at the passage and stays there, every
message is seen where the labeller is looking, labellers land on their queue, a contradictory
verdict is pointed out, the keys do what `?` says, and the question's terms stand out."""

import re

import pytest
from playwright.sync_api import expect

from corpus.models import Document
from labelling.models import Assignment, Candidate, Change, Judgement, Pool, Span, Verdict
from tests.e2e.conftest import log_in
from tests.e2e.test_grading_actions import ROUND_TRIP_MS, open_page, select_chars
from tests.e2e.test_grading_flow import cards, lambda_has, make_world, wait_for_keys
from tests.factories import (
    PASSWORD,
    POLICY_TEXT,
    MembershipFactory,
    ProjectFactory,
    QuestionFactory,
    QuestionSetFactory,
    UserFactory,
    add_documents,
)

pytestmark = pytest.mark.e2e

# A handbook of 400 paragraphs; the passage about carrying leave over is the 390th.
PARAGRAPH = (
    "Section {n}. Staff travelling on business book trains through the travel desk and keep "
    "their receipts for the monthly expense claim, which a manager approves within ten days."
)
TARGET = (
    "Carry-over: up to five days of unused annual leave may be carried into the next calendar "
    "year if the request reaches the HR service desk by 31 January."
)


def handbook_world():
    project = ProjectFactory(slug="acme", name="Acme gold")
    lina = UserFactory(username="lina")
    MembershipFactory(project=project, user=lina, role="labeller")
    paragraphs = [PARAGRAPH.format(n=n) for n in range(1, 401)]
    paragraphs[389] = TARGET
    add_documents(project, ("handbook", "\n\n".join(paragraphs)), ("leave", POLICY_TEXT))
    handbook = Document.objects.get(doc_id="handbook").latest_version
    leave = Document.objects.get(doc_id="leave").latest_version
    question_set = QuestionSetFactory(project=project, name="hr")
    question = QuestionFactory(
        question_set=question_set, text="how many leave days can i carry ovr into next year?"
    )
    pool = Pool.objects.create(question_set=question_set, name="p", state="ready")
    start = handbook.text.index(TARGET)
    for rank, (version, a, b) in enumerate(
        [(handbook, start, start + len(TARGET)), (leave, 0, 94), (leave, 95, 178)]
    ):
        Candidate.objects.create(
            pool=pool, question=question, version=version, start=a, end=b, shuffle_rank=rank
        )
    Assignment.objects.create(pool=pool, question=question, slot=1, labeller=lina)
    return project, pool, question, lina, f"/p/acme/grade/{pool.pk}/{question.pk}/"


def in_viewport(page, locator) -> bool:
    box = locator.bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"]


def visible_in_view(page, card_index) -> bool:
    """Whether the passage is inside its document view's visible box (and on screen)."""
    return page.evaluate(
        """(i) => {
            const view = document.querySelectorAll('li.candidate')[i].querySelector('.doc-view');
            const passage = view.querySelector('.seg.passage');
            const v = view.getBoundingClientRect(), p = passage.getBoundingClientRect();
            return p.top >= v.top - 1 && p.top < v.bottom && p.top >= 0 && p.top < innerHeight;
        }""",
        card_index,
    )


def test_a_selection_survives_the_grades_re_render_and_s_works_before_a_grade(live_server, browser):
    """Item 3."""
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_page(browser, live_server, "lina", url, round_trip_ms=ROUND_TRIP_MS)
    first, second, _ = pool.candidates.filter(question=q1).order_by("shuffle_rank", "pk")

    select_chars(page, 0, 0, 24)  # "Employees may carry over"
    page.keyboard.press("2")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))  # re-rendered
    assert page.evaluate("window.getSelection().toString()") == POLICY_TEXT[0:24]
    page.keyboard.press("s")
    expect(cards(page).nth(0).locator(".evidence-list q")).to_have_text(POLICY_TEXT[0:24])
    assert Span.objects.get(judgement__candidate=first).quote == POLICY_TEXT[0:24]

    # s on a passage nobody graded: the span is kept and the passage graded 1, with a word.
    page.keyboard.press("j")
    select_chars(page, 1, 0, 8)
    page.keyboard.press("s")
    card = cards(page).nth(1)
    expect(card).to_have_class(lambda_has("grade-1"))
    expect(card.locator(".card-message")).to_contain_text("now graded 1 (partly answers)")
    expect(card.locator(".evidence-list li")).to_have_count(1)
    (span,) = Span.objects.filter(judgement__candidate=second)
    assert (span.start, span.end) == (second.start, second.start + 8)
    assert Judgement.objects.get(candidate=second).grade == 1
    context.close()


def test_the_whole_document_opens_at_the_passage_and_stays_there(live_server, browser):
    """Item 4: the passage is 85,000 px down a long document."""
    project, pool, question, lina, url = handbook_world()
    context, page = open_page(browser, live_server, "lina", url)
    card = cards(page).nth(0)
    page.keyboard.press("2")
    expect(card).to_have_class(lambda_has("grade-2"))
    card.get_by_role("button", name="Show the whole document").click()
    view = card.locator(".doc-view.whole")
    expect(view).to_have_count(1)
    expect(card.get_by_role("button", name="Show the passage only")).to_be_visible()
    assert page.evaluate("document.querySelector('.doc-view.whole').scrollHeight") > 20_000
    assert visible_in_view(page, 0)
    before = page.evaluate("document.querySelector('.doc-view.whole').scrollTop")
    assert before > 10_000

    # Mark evidence in the open document: the reply keeps it open, at the same place.
    select_chars(page, 0, 0, 11)  # "Carry-over:" (split by the highlighted term "Carry")
    page.keyboard.press("s")
    expect(card.locator(".evidence-list q")).to_have_text("Carry-over:")
    expect(card.locator(".doc-view.whole")).to_have_count(1)
    after = page.evaluate("document.querySelector('.doc-view.whole').scrollTop")
    assert abs(after - before) <= 2 and visible_in_view(page, 0)
    assert Span.objects.get().quote == "Carry-over:"

    # d closes it again (the passage only), and opens it at the passage once more.
    page.keyboard.press("d")
    expect(card.locator(".doc-view.whole")).to_have_count(0)
    expect(card.get_by_role("button", name="Show the whole document")).to_be_visible()
    page.keyboard.press("d")
    expect(card.locator(".doc-view.whole")).to_have_count(1)
    assert visible_in_view(page, 0)
    context.close()


def test_messages_show_on_the_passage_and_the_status_bar_stays_on_screen(live_server, browser):
    """Item 5: the labeller has scrolled down to the last passage."""
    project, pool, question, lina, url = handbook_world()
    context, page = open_page(browser, live_server, "lina", url)
    page.set_viewport_size({"width": 1280, "height": 700})
    page.keyboard.press("j")
    page.keyboard.press("j")
    last = cards(page).nth(2)
    last.scroll_into_view_if_needed()
    page.wait_for_timeout(600)
    assert page.evaluate("window.scrollY") > 0
    bar = page.locator("#status-bar")
    expect(bar.locator("#question-progress")).to_contain_text("0 of 3")
    assert in_viewport(page, bar)

    page.keyboard.press("s")  # nothing selected
    message = last.locator(".card-message")
    expect(message).to_have_text("Select some text in a passage first, then press s.")
    assert in_viewport(page, message)
    expect(bar.locator("#flash")).to_have_text("Select some text in a passage first, then press s.")

    page.keyboard.press("1")
    expect(bar.locator("#question-progress")).to_contain_text("1 of 3")
    expect(bar.locator("#save-state")).to_have_text("All changes saved")
    assert in_viewport(page, bar)

    # A refusal from the server lands on the passage too (here: a note before a grade is
    # impossible in the page, so ask for a span outside the document instead).
    page.evaluate(
        """() => {
            const card = document.querySelectorAll('li.candidate')[2];
            card.dataset.revision = '0';  // as if another tab had moved on
        }"""
    )
    page.keyboard.press("2")
    expect(message).to_contain_text("changed in another tab or window")
    assert in_viewport(page, message) and in_viewport(page, bar)
    context.close()


def test_a_labeller_lands_on_the_queue_and_continues_with_one_click(live_server, page):
    """Item 7."""
    project, pool, q1, lina, omar, url = make_world()
    log_in(page, live_server, "lina", PASSWORD)
    page.get_by_role("link", name="Acme gold").click()
    page.wait_for_url(f"{live_server.url}/p/acme/queue/")
    nav = page.locator("nav.project-nav")
    expect(nav.get_by_role("link")).to_have_text(
        ["Acme gold", "My queue", "Re-check", "My calibration", "Guideline"]
    )
    page.get_by_role("link", name="Continue").click()
    page.wait_for_url(f"{live_server.url}{url}")
    wait_for_keys(page)
    page.keyboard.press("2")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))
    page.goto(f"{live_server.url}/p/acme/")
    page.wait_for_url(f"{live_server.url}/p/acme/queue/")
    expect(page.locator("#continue")).to_contain_text("where you left off")
    expect(page.locator("#continue")).to_contain_text(q1.text)


def test_unanswerable_with_a_passage_graded_2_is_pointed_out(live_server, browser):
    """Item 8: warned, never refused."""
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_page(browser, live_server, "lina", url)
    page.keyboard.press("2")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))
    page.keyboard.press("u")
    warning = "You marked the question unanswerable, but a passage is graded 1 or 2"
    expect(page.locator("#verdict")).to_contain_text(warning)
    expect(page.locator("#question-progress")).to_contain_text("verdict and grades disagree")
    assert Verdict.objects.get().outcome == "unanswerable"
    page.keyboard.press("j")
    page.keyboard.press("1")
    expect(cards(page).nth(1).locator(".card-message")).to_contain_text(
        "2 passages are graded 1 or 2"
    )
    page.keyboard.press("a")
    expect(page.locator("#question-progress")).not_to_contain_text("disagree")
    context.close()


def test_the_keys_listed_under_question_mark_all_work(live_server, browser):
    """Item 9: auto-advance, can't tell, grade the rest 0, next ungraded, undo beyond the
    question, and `?` listing them all."""
    project, pool, q1, lina, omar, url = make_world()
    q2 = pool.question_set.questions.exclude(pk=q1.pk).get()
    q2_url = f"/p/acme/grade/{pool.pk}/{q2.pk}/"
    mine = Assignment.objects.get(labeller=lina, question=q1)
    context, page = open_page(browser, live_server, "lina", q2_url)
    page.keyboard.press("2")  # lina's last change on q2
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))

    page.goto(f"{live_server.url}{url}")
    wait_for_keys(page)
    page.keyboard.press("?")
    keys = page.locator("#keys-help")
    expect(keys).to_be_visible()
    for key in (
        "j",
        "k",
        "g",
        "0",
        "1",
        "2",
        "r",
        "s",
        "e",
        "d",
        "x",
        "v",
        "h",
        "u",
        "a",
        "c",
        "z",
        "n",
    ):
        kbd = keys.locator("kbd", has_text=re.compile(rf"^{re.escape(key)}$"))
        expect(kbd.first).to_be_visible()
    page.keyboard.press("Escape")
    expect(keys).to_be_hidden()

    # Auto-advance: a grade moves on to the next passage.
    page.get_by_label("next passage after a grade").check()
    page.keyboard.press("1")
    expect(cards(page).nth(1)).to_have_class(lambda_has("current"))
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-1"))
    # g: the next passage not graded yet (from the second: the third is next).
    page.keyboard.press("k")
    page.keyboard.press("g")
    expect(cards(page).nth(1)).to_have_class(lambda_has("current"))
    # r: grade the rest 0, after asking.
    page.keyboard.press("r")
    dialog = page.locator("#confirm-rest")
    expect(dialog).to_contain_text("The 2 passages not graded yet will be graded 0")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert Judgement.objects.filter(assignment=mine).count() == 1
    page.keyboard.press("r")
    page.get_by_role("button", name="Grade them 0").click()
    expect(page.locator("#question-progress")).to_contain_text("3 of 3")
    assert sorted(Judgement.objects.filter(assignment=mine).values_list("grade", flat=True)) == [
        0,
        0,
        1,
    ]
    # c: can't tell needs a reason; Ctrl+Enter in it saves the verdict.
    page.keyboard.press("c")
    reason = page.locator("#verdict textarea[name=reason]")
    expect(reason).to_be_focused()
    expect(page.locator("#verdict-message")).to_contain_text("Type why you can't tell")
    reason.type("The guideline does not say whether part-time staff count.")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#verdict button.chosen")).to_contain_text("can't tell", ignore_case=True)
    assert Verdict.objects.get(assignment=mine).outcome == "cant_tell"
    # z walks back this question's changes (verdict, then the grades), then goes on to q2.
    page.locator("body").click(position={"x": 5, "y": 5})
    for _ in range(4):
        page.keyboard.press("z")
    expect(page.locator("#question-progress")).to_contain_text("0 of 3")
    assert not Judgement.objects.filter(assignment=mine).exists()
    assert not Verdict.objects.filter(assignment=mine).exists()
    page.keyboard.press("z")
    page.wait_for_url(f"{live_server.url}{q2_url}")
    expect(page.locator("#flash")).to_contain_text(f"Undone on question {q2.external_id}: grade 2")
    assert not Judgement.objects.filter(assignment__question=q2).exists()
    assert Change.objects.filter(assignment__labeller=lina, action="undo").count() == 5
    context.close()


def test_question_terms_are_highlighted_and_passages_read_in_sans_serif(live_server, browser):
    """Item 10."""
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_page(browser, live_server, "lina", url)
    first = cards(page).nth(0)
    terms = first.locator("mark.term")
    expect(terms.first).to_be_visible()
    marked = {t.lower() for t in terms.all_inner_texts()}
    assert {"carry", "leave", "next", "year"} <= marked  # from "carry ovr into next year"
    assert "into" not in marked and "can" not in marked  # stopwords are not terms
    assert page.evaluate(
        "getComputedStyle(document.querySelector('mark.term')).backgroundColor"
    ) not in ("rgba(0, 0, 0, 0)", "transparent")
    page.keyboard.press("h")
    assert page.evaluate(
        "getComputedStyle(document.querySelector('mark.term')).backgroundColor"
    ) in ("rgba(0, 0, 0, 0)", "transparent")
    expect(page.get_by_label("highlight question terms")).not_to_be_checked()
    page.reload()
    wait_for_keys(page)
    expect(page.get_by_label("highlight question terms")).not_to_be_checked()  # remembered
    font = page.evaluate("getComputedStyle(document.querySelector('.doc-view')).fontFamily")
    assert font.endswith("sans-serif") and "Georgia" not in font
    # Terms survive a re-render, and selecting across them still gives exact offsets.
    page.keyboard.press("h")
    page.keyboard.press("2")
    expect(first).to_have_class(lambda_has("grade-2"))
    expect(first.locator("mark.term").first).to_be_visible()
    select_chars(page, 0, 0, 30)
    page.keyboard.press("s")
    expect(first.locator(".evidence-list q")).to_have_text("Employees may carry over at most")
    assert Span.objects.get().quote == "Employees may carry over at most"
    context.close()
