"""A pool judged in the `cal` order (issue 36 item 1) in real Chromium: grading a passage
relevant re-orders the passages not graded yet, at once, by what reads like it; the passage in
hand and the graded ones stay put, each passage is numbered by its new place, and the page
shows nothing but the order."""

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import log_in
from tests.e2e.test_grading_flow import cards, lambda_has, wait_for_keys, watch_console
from tests.e2e.test_question_view import row_ids
from tests.factories import PASSWORD, ProjectFactory
from tests.labelling.test_judging_order import CAL_TEXTS, World

pytestmark = pytest.mark.e2e


def _grading_page(live_server, browser, world, query: str = ""):
    """Ann's grading page of ``world``'s question, logged in and ready for keys: (the page, its
    context, each passage's candidate pk by name, the console's problems as they come)."""
    world.ann.set_password(PASSWORD)
    world.ann.save()
    pk = {name: candidate.pk for name, candidate in world.by_name.items()}
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    problems = watch_console(page)
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/grade/{world.pool.pk}/{world.question.pk}/{query}")
    return page, context, pk, problems


def test_a_relevant_grade_reorders_the_rest_of_the_page_by_what_reads_like_it(live_server, browser):
    world = World(ProjectFactory(slug="acme"), texts=CAL_TEXTS, strategy="cal", stop_misses=5)
    page, context, pk, problems = _grading_page(live_server, browser, world)
    wait_for_keys(page)
    assert row_ids(page) == [pk[n] for n in ("a1", "b1", "a2", "b2", "a3", "b3")]

    # A 0 on the first passage: nothing moves until something is graded relevant.
    page.keyboard.press("0")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-0"))
    page.keyboard.press("j")
    page.keyboard.press("2")  # b1, relevant: nothing reads like it, so the rest stays put
    expect(cards(page).nth(1)).to_have_class(lambda_has("grade-2"))
    page.keyboard.press("k")
    page.keyboard.press("2")  # a1 graded again, relevant now: b3 reads like it
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))
    expect(cards(page).nth(2)).to_have_id(f"candidate-{pk['b3']}")
    assert row_ids(page) == [pk[n] for n in ("a1", "b1", "b3", "a2", "b2", "a3")]
    labels = [f"Passage {n} of 6" for n in range(1, 7)]
    expect(page.locator(".passage-label")).to_have_text(labels)
    # The passage in hand is still a1; j, j goes to b3, the next to judge.
    expect(cards(page).nth(0)).to_have_class(lambda_has("current"))
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(cards(page).nth(2)).to_have_class(lambda_has("current"))
    page.keyboard.press("1")
    expect(cards(page).nth(2)).to_have_class(lambda_has("grade-1"))

    # A reload shows the same: the graded ones in the order first graded, then the rest.
    page.reload()
    wait_for_keys(page)
    assert row_ids(page)[:3] == [pk[n] for n in ("a1", "b1", "b3")]
    body = page.content()
    assert "secret-a" not in body and "99.125" not in body
    assert problems == []
    context.close()


def test_the_question_view_reorders_the_same_way(live_server, browser):
    world = World(ProjectFactory(slug="acme"), texts=CAL_TEXTS, strategy="cal")
    page, context, pk, problems = _grading_page(live_server, browser, world, "?view=question")
    expect(page.locator("#grading")).to_have_class(lambda_has("question-view"))
    wait_for_keys(page)
    assert row_ids(page) == [pk[n] for n in ("a1", "b1", "a2", "b2", "a3", "b3")]
    page.keyboard.press("2")
    expect(cards(page).nth(1)).to_have_id(f"candidate-{pk['b3']}")
    assert row_ids(page) == [pk[n] for n in ("a1", "b3", "b1", "a2", "b2", "a3")]
    labels = [f"Passage {n} of 6" for n in range(1, 7)]
    expect(page.locator(".passage-label")).to_have_text(labels)
    expect(cards(page).nth(0)).to_have_class(lambda_has("current"))
    assert problems == []
    context.close()
