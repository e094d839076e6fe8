"""One question on one page (issue 36 item 5) in real Chromium: a labeller switches to the
question view, grades with the keys, marks a span, reloads (the same view, order, grades and
span), grades two passages while offline, sees them saved when the connection returns, and
undoes one."""

import pytest
from playwright.sync_api import expect

from labelling.models import Assignment, Change, Judgement, Span
from tests.e2e.conftest import log_in
from tests.e2e.test_grading_actions import select_chars
from tests.e2e.test_grading_flow import cards, lambda_has, make_world, wait_for_keys, watch_console
from tests.factories import PASSWORD, POLICY_TEXT, PoolCandidateFactory

pytestmark = pytest.mark.e2e


def row_ids(page) -> list[int]:
    return [
        int(pk)
        for pk in page.eval_on_selector_all(
            "li.candidate", "rows => rows.map(r => r.dataset.candidate)"
        )
    ]


def grades_of(assignment) -> dict[int, int]:
    return dict(Judgement.objects.filter(assignment=assignment).values_list("candidate", "grade"))


def test_a_labeller_in_the_question_view_reloads_goes_offline_and_undoes(live_server, browser):
    project, pool, q1, lina, omar, url = make_world()
    mine = Assignment.objects.get(labeller=lina, question=q1)
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    problems = watch_console(page)
    log_in(page, live_server, "lina", PASSWORD)
    page.goto(f"{live_server.url}{url}")
    wait_for_keys(page)
    expect(page.locator("#grading")).not_to_have_class(lambda_has("question-view"))

    # The switch: a link in the page's head (the v key does the same).
    switch = page.locator(".view-switch")
    switch.get_by_role("link", name="One question on one page", exact=True).click()
    page.wait_for_url("**?view=question")
    expect(page.locator("#grading")).to_have_class(lambda_has("question-view"))
    expect(switch.locator("[aria-current=page]")).to_have_text("One question on one page")
    expect(cards(page)).to_have_count(3)
    wait_for_keys(page)
    order = row_ids(page)
    labels = [f"Passage {n} of 3" for n in (1, 2, 3)]
    expect(page.locator(".passage-label")).to_have_text(labels)

    # Keys: 2 on the first row, j, 1 on the second; then a span on the first row.
    page.keyboard.press("2")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))
    page.keyboard.press("j")
    page.keyboard.press("1")
    expect(cards(page).nth(1)).to_have_class(lambda_has("grade-1"))
    select_chars(page, 0, 0, 24)
    page.keyboard.press("s")
    expect(cards(page).nth(0).locator(".evidence-list li")).to_have_count(1)
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    # A reply re-renders its row: the row keeps its number in this view's order.
    expect(page.locator(".passage-label")).to_have_text(labels)
    first = pool.candidates.get(pk=order[0])
    (span,) = Span.objects.filter(judgement__assignment=mine, judgement__candidate=first)
    # Snapped to whole words (s; Shift+s keeps the selection exactly).
    assert span.start == first.start and first.start + 24 <= span.end <= first.end
    assert span.quote == POLICY_TEXT[span.start : span.end]

    # A reload, by its plain address: the view is remembered, the order and the work kept.
    page.goto(f"{live_server.url}{url}")
    wait_for_keys(page)
    expect(page.locator("#grading")).to_have_class(lambda_has("question-view"))
    assert row_ids(page) == order
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))
    expect(cards(page).nth(1)).to_have_class(lambda_has("grade-1"))
    expect(cards(page).nth(0).locator(".evidence-list q")).to_contain_text(span.quote)
    assert grades_of(mine) == {order[0]: 2, order[1]: 1}

    # Offline: the third row graded 0 (g finds it), the second changed to 2. Both are kept.
    context.set_offline(True)
    page.keyboard.press("g")
    expect(cards(page).nth(2)).to_have_class(lambda_has("current"))
    page.keyboard.press("0")
    page.keyboard.press("k")
    page.keyboard.press("2")
    expect(page.locator("#save-state")).to_contain_text("Offline: 2 changes kept")
    page.wait_for_timeout(1000)  # a retry while offline
    assert grades_of(mine) == {order[0]: 2, order[1]: 1}

    context.set_offline(False)
    expect(page.locator("#flash")).to_have_text("Back online: saved 2 changes made while offline.")
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    assert grades_of(mine) == {order[0]: 2, order[1]: 2, order[2]: 0}
    expect(cards(page).nth(1)).to_have_class(lambda_has("grade-2"))
    expect(cards(page).nth(2)).to_have_class(lambda_has("grade-0"))

    # Undo the last change: the second row goes back to 1.
    page.keyboard.press("z")
    expect(cards(page).nth(1)).to_have_class(lambda_has("grade-1"))
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    assert grades_of(mine) == {order[0]: 2, order[1]: 1, order[2]: 0}
    assert Change.objects.filter(assignment=mine).order_by("-pk").first().action.startswith("undo")
    expect(page.locator(".passage-label")).to_have_text(labels)

    # v goes back to the cards, in the pool's shuffled order.
    page.keyboard.press("v")
    page.wait_for_url("**?view=cards")
    expect(page.locator("#grading")).not_to_have_class(lambda_has("question-view"))
    shuffled = list(pool.candidates.filter(question=q1).order_by("shuffle_rank", "pk"))
    assert row_ids(page) == [c.pk for c in shuffled]
    assert problems == []
    context.close()


def test_a_long_passage_is_clipped_to_a_few_lines_and_opens_with_x(live_server, browser):
    project, pool, q1, lina, omar, url = make_world()
    version = pool.candidates.filter(question=q1).first().version
    long = PoolCandidateFactory(
        pool=pool, question=q1, version=version, start=0, end=len(POLICY_TEXT), shuffle_rank=0
    )
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    log_in(page, live_server, "lina", PASSWORD)
    page.goto(f"{live_server.url}{url}?view=question")
    wait_for_keys(page)
    row = page.locator(f"#candidate-{long.pk}")
    expect(row).to_have_class(lambda_has("clipped"))
    expect(row.locator(".toggle-clip")).to_be_visible()
    clipped = row.locator(".doc-view").bounding_box()["height"]
    # The short ones fit: nothing to open.
    for other in pool.candidates.filter(question=q1).exclude(pk=long.pk):
        expect(page.locator(f"#candidate-{other.pk} .toggle-clip")).to_be_hidden()

    row.locator(".candidate-head").click()  # the current row
    page.keyboard.press("x")
    expect(row).to_have_class(lambda_has("open"))
    expect(row.locator(".toggle-clip")).to_have_text("Clip the passage again")
    assert row.locator(".doc-view").bounding_box()["height"] > clipped * 1.5

    # A grade's reply re-renders the row: it stays open.
    page.keyboard.press("1")
    expect(row).to_have_class(lambda_has("grade-1"))
    expect(row).to_have_class(lambda_has("open"))
    expect(row.locator(".toggle-clip")).to_have_text("Clip the passage again")
    row.locator(".toggle-clip").click()
    expect(row).to_have_class(lambda_has("clipped"))
    expect(row.locator(".toggle-clip")).to_have_text("Show all of the passage")
    # e shows the text around it, unclipped; e again clips it back.
    page.keyboard.press("e")
    expect(row).to_have_class(lambda_has("expanded"))
    expect(row).not_to_have_class(lambda_has("clipped"))
    expect(row.locator(".toggle-clip")).to_be_hidden()
    page.keyboard.press("e")
    expect(row).to_have_class(lambda_has("clipped"))
    context.close()
