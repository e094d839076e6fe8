"""A labeller's actions are one ordered sequence (issue 14 item 1), kept and resent by
themselves when the connection returns (item 2), and never saved into another account that
logs in on the same browser (issue 12 item 5) — in real Chromium, over a slow network."""

import re

import pytest
from playwright.sync_api import expect

from labelling.models import Assignment, Change, Judgement, Span
from tests.e2e.conftest import log_in
from tests.e2e.test_grading_flow import cards, lambda_has, make_world, wait_for_keys
from tests.factories import PASSWORD, POLICY_TEXT

pytestmark = pytest.mark.e2e

ROUND_TRIP_MS = 150
STALE = "changed in another tab or window"


def open_page(browser, live_server, username, url, *, round_trip_ms=0):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    if round_trip_ms:
        # Chromium's own network emulation: every request waits, the page keeps running.
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send(
            "Network.emulateNetworkConditions",
            {
                "offline": False,
                "latency": round_trip_ms,
                "downloadThroughput": -1,
                "uploadThroughput": -1,
            },
        )
    log_in(page, live_server, username, PASSWORD)
    page.goto(f"{live_server.url}{url}")
    wait_for_keys(page)
    return context, page


def select_chars(page, card_index, start, end):
    """Select characters [start, end) of a passage's first segment with plain DOM ranges,
    across the text nodes the term highlighting splits it into."""
    page.evaluate(
        """([i, a, b]) => {
            const seg = document.querySelectorAll('li.candidate')[i].querySelector('.seg.passage');
            const walker = document.createTreeWalker(seg, NodeFilter.SHOW_TEXT);
            const point = (offset) => {
                for (let n = walker.nextNode(); n; n = walker.nextNode()) {
                    if (offset <= n.data.length) return [n, offset];
                    offset -= n.data.length;
                }
                throw new Error('offset outside the segment');
            };
            const from = point(a);
            walker.currentNode = seg;
            const to = point(b);
            const range = document.createRange();
            range.setStart(from[0], from[1]);
            range.setEnd(to[0], to[1]);
            window.getSelection().removeAllRanges();
            window.getSelection().addRange(range);
        }""",
        [card_index, start, end],
    )


def grade_requests(page) -> list[dict]:
    """The grading writes the page made, from the browser's resource timing."""
    return page.evaluate(
        """() => performance.getEntriesByType('resource')
            .filter((e) => /\\/candidates\\/\\d+\\/(grade|spans)\\/$/.test(e.name))
            .map((e) => ({start: e.startTime, end: e.responseEnd, duration: e.duration}))"""
    )


def changes_of(assignment) -> list[tuple[str, int | None]]:
    return [
        (c.action, c.after.get("grade") if c.after else None)
        for c in Change.objects.filter(assignment=assignment).order_by("pk")
    ]


def test_quick_successive_grades_on_a_slow_network_are_all_saved_in_order(live_server, browser):
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_page(browser, live_server, "lina", url, round_trip_ms=ROUND_TRIP_MS)
    mine = Assignment.objects.get(labeller=lina, question=q1)

    # 2 then 0 within a few milliseconds: the 0 is sent after the 2's reply, on top of it.
    page.keyboard.press("2")
    page.keyboard.press("0")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-0"))
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    assert changes_of(mine) == [("grade 2", 2), ("grade 0", 0)]
    timings = grade_requests(page)
    assert len(timings) == 2 and min(t["duration"] for t in timings) >= ROUND_TRIP_MS
    assert timings[1]["start"] >= timings[0]["end"] - 1  # one after the other, never crossing

    # A burst on the next passage: ten grades, ten changes, no refusal.
    page.keyboard.press("j")
    page.keyboard.type("2102102101")
    expect(page.locator("#save-state")).to_have_text("All changes saved", timeout=30_000)
    second = list(pool.candidates.filter(question=q1).order_by("shuffle_rank", "pk"))[1]
    grades = [g for action, g in changes_of(mine) if action.startswith("grade")][2:]
    assert grades == [2, 1, 0, 2, 1, 0, 2, 1, 0, 1]
    assert Judgement.objects.get(assignment=mine, candidate=second).grade == 1
    expect(cards(page).nth(1)).to_have_class(lambda_has("grade-1"))
    assert STALE not in page.locator("body").inner_text()
    context.close()


def test_a_span_marked_100_ms_after_a_grade_is_saved_with_it(live_server, browser):
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_page(browser, live_server, "lina", url, round_trip_ms=ROUND_TRIP_MS)
    mine = Assignment.objects.get(labeller=lina, question=q1)
    first = list(pool.candidates.filter(question=q1).order_by("shuffle_rank", "pk"))[0]

    page.keyboard.press("2")
    page.wait_for_timeout(100)  # the grade's reply is still on its way
    select_chars(page, 0, 0, 24)
    page.keyboard.press("s")
    expect(cards(page).nth(0).locator(".evidence-list li")).to_have_count(1)
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    assert [a for a, _ in changes_of(mine)] == ["grade 2", "add span"]
    (span,) = Span.objects.filter(judgement__candidate=first)
    assert (span.start, span.end) == (first.start, first.start + 24)
    assert span.quote == POLICY_TEXT[first.start : first.start + 24]
    assert Judgement.objects.get(candidate=first).grade == 2
    context.close()


def test_an_edit_from_another_tab_still_gets_409_and_the_page_shows_it(live_server, browser):
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_page(browser, live_server, "lina", url, round_trip_ms=ROUND_TRIP_MS)
    other = context.new_page()
    other.goto(f"{live_server.url}{url}")
    wait_for_keys(other)
    other.keyboard.press("1")
    expect(cards(other).nth(0)).to_have_class(lambda_has("grade-1"))

    page.keyboard.press("2")  # this page never saw the other tab's grade
    page.keyboard.press("0")  # made on the same stale view: refused as well
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-1"))
    expect(cards(page).nth(0).locator(".card-message")).to_contain_text(STALE)
    expect(page.locator("#flash")).to_contain_text(STALE)
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    mine = Assignment.objects.get(labeller=lina, question=q1)
    assert changes_of(mine) == [("grade 1", 1)]
    # Now the page is up to date, and the next grade is saved.
    page.keyboard.press("2")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))
    assert changes_of(mine) == [("grade 1", 1), ("grade 2", 2)]
    context.close()


def test_actions_made_offline_are_kept_in_order_and_saved_when_the_connection_returns(
    live_server, browser
):
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_page(browser, live_server, "lina", url)
    mine = Assignment.objects.get(labeller=lina, question=q1)
    candidates = list(pool.candidates.filter(question=q1).order_by("shuffle_rank", "pk"))

    context.set_offline(True)
    page.keyboard.press("2")
    page.keyboard.press("j")
    page.keyboard.press("1")
    page.keyboard.press("0")  # the labeller's last correction
    page.keyboard.press("u")
    expect(page.locator("#save-state")).to_contain_text("Offline: 4 changes kept")
    expect(page.locator("#save-state")).to_have_attribute("data-state", "offline")
    page.wait_for_timeout(1500)  # a retry or two while offline
    assert not Change.objects.filter(assignment=mine).exists()

    context.set_offline(False)
    expect(page.locator("#flash")).to_have_text("Back online: saved 4 changes made while offline.")
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    assert changes_of(mine) == [
        ("grade 2", 2),
        ("grade 1", 1),
        ("grade 0", 0),
        ("verdict unanswerable", None),
    ]
    grades = dict(Judgement.objects.filter(assignment=mine).values_list("candidate", "grade"))
    assert grades == {candidates[0].pk: 2, candidates[1].pk: 0}
    expect(cards(page).nth(1)).to_have_class(lambda_has("grade-0"))
    body = page.locator("body").inner_text()
    assert "logged in" not in body and STALE not in body
    assert page.evaluate(f"localStorage.getItem('goldset.kept-actions.{lina.pk}')") is None
    context.close()


def test_a_server_that_cannot_be_reached_gets_the_action_again_by_itself(live_server, browser):
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_page(browser, live_server, "lina", url)
    mine = Assignment.objects.get(labeller=lina, question=q1)
    refused = []

    def unreachable(route):
        refused.append(route.request.url)
        route.abort("connectionrefused")

    page.route(re.compile(r".*/candidates/\d+/grade/$"), unreachable)
    page.keyboard.press("2")
    page.keyboard.press("j")
    page.keyboard.press("1")
    expect(page.locator("#save-state")).to_contain_text("2 changes kept")
    assert len(refused) == 1  # the second waits behind the first, it does not overtake it
    page.unroute(re.compile(r".*/candidates/\d+/grade/$"))
    expect(page.locator("#save-state")).to_have_text("All changes saved", timeout=15_000)
    assert changes_of(mine) == [("grade 2", 2), ("grade 1", 1)]
    context.close()


def test_kept_actions_belong_to_their_account_and_are_dropped_on_logout(live_server, browser):
    """Issue 12 item 5: lina's session expires with an action kept; omar logs in on the same
    browser, on the very question (he holds its second slot): nothing of lina's is saved as
    his. When lina comes back her action is saved as hers; logging out drops what is kept."""
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_page(browser, live_server, "lina", url)
    lina_key = f"goldset.kept-actions.{lina.pk}"

    context.clear_cookies()  # the session expires while the page is open
    page.keyboard.press("2")
    page.wait_for_url(f"{live_server.url}/accounts/login/**")
    assert page.evaluate(f"localStorage.getItem('{lina_key}')") is not None

    page.get_by_label("Username").fill("omar")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}{url}")  # the login page's next: lina's question
    wait_for_keys(page)
    page.wait_for_timeout(1500)
    assert not Judgement.objects.exists() and not Change.objects.exists()
    expect(cards(page).nth(0)).not_to_have_class(lambda_has("graded"))
    assert "Saved" not in page.locator("#flash").inner_text()
    assert page.evaluate(f"localStorage.getItem('{lina_key}')") is not None  # still lina's

    # omar works and logs out: only his own kept actions could go with him.
    page.keyboard.press("1")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-1"))
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/accounts/login/**")
    assert page.evaluate(f"localStorage.getItem('{lina_key}')") is not None

    log_in(page, live_server, "lina", PASSWORD)
    page.goto(f"{live_server.url}{url}")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))
    expect(page.locator("#flash")).to_have_text(
        "Saved 1 change kept from before you logged in again."
    )
    assert page.evaluate(f"localStorage.getItem('{lina_key}')") is None
    theirs = {j.assignment.labeller.username: j.grade for j in Judgement.objects.all()}
    assert theirs == {"lina": 2, "omar": 1}

    # Kept, then logging out: the browser forgets it (after saying so), and nothing is saved.
    page.route(re.compile(r".*/candidates/\d+/grade/$"), lambda route: route.abort("failed"))
    page.keyboard.press("j")
    page.keyboard.press("0")
    expect(page.locator("#save-state")).to_contain_text("1 change kept")
    asked = []

    def accept(dialog):
        asked.append(dialog.message)
        dialog.accept()

    page.on("dialog", accept)
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/accounts/login/**")
    assert asked and "1 change is not saved yet" in asked[0]
    assert page.evaluate(f"localStorage.getItem('{lina_key}')") is None
    page.unroute(re.compile(r".*/candidates/\d+/grade/$"))
    log_in(page, live_server, "lina", PASSWORD)
    page.goto(f"{live_server.url}{url}")
    wait_for_keys(page)
    page.wait_for_timeout(1000)
    assert Judgement.objects.filter(assignment__labeller=lina).count() == 1
    context.close()


def test_the_queue_page_saves_what_a_grading_page_kept(live_server, browser):
    """The labeller left the question with a change still kept; the queue page sends it."""
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_page(browser, live_server, "lina", url)
    page.route(re.compile(r".*/candidates/\d+/grade/$"), lambda route: route.abort("failed"))
    page.keyboard.press("2")
    expect(page.locator("#save-state")).to_contain_text("1 change kept")
    page.get_by_role("link", name="My queue").first.click()
    page.wait_for_url(f"{live_server.url}/p/acme/queue/")
    expect(page.locator("#kept-status")).to_contain_text("1 change is kept in this browser")
    page.unroute(re.compile(r".*/candidates/\d+/grade/$"))
    page.reload()
    expect(page.locator("#kept-status")).to_have_text(
        "Back online: saved 1 change made while offline."
    )
    assert Judgement.objects.get(assignment__labeller=lina).grade == 2
    assert page.evaluate(f"localStorage.getItem('goldset.kept-actions.{lina.pk}')") is None
    context.close()


def test_two_tabs_keep_their_own_actions_and_a_closed_tabs_are_sent_by_the_other(
    live_server, browser
):
    """Tabs of one account share the browser's storage: neither overwrites the other's kept
    actions, and what a tab closed while offline had kept is sent by a tab still open."""
    project, pool, q1, lina, omar, url = make_world()
    q2 = pool.question_set.questions.exclude(pk=q1.pk).get()
    context, first = open_page(browser, live_server, "lina", url)
    second = context.new_page()
    second.set_default_timeout(20_000)
    second.goto(f"{live_server.url}/p/acme/grade/{pool.pk}/{q2.pk}/")
    wait_for_keys(second)

    context.set_offline(True)
    first.keyboard.press("2")
    second.keyboard.press("1")
    expect(first.locator("#save-state")).to_contain_text("1 change kept")
    expect(second.locator("#save-state")).to_contain_text("1 change kept")
    # Two writes at the same moment can drop one tab's entry; that tab hears of the other's
    # write (a storage event) and writes its entry back, so both are kept within moments.
    key = f"goldset.kept-actions.{lina.pk}"
    second.wait_for_function(
        f"(JSON.parse(localStorage.getItem('{key}')) || []).length === 2", timeout=5_000
    )
    stored = second.evaluate(f"JSON.parse(localStorage.getItem('{key}'))")
    assert len(stored) == 2 and len({entry["owner"] for entry in stored}) == 2
    first.close()  # closed with its change still kept

    context.set_offline(False)
    expect(second.locator("#save-state")).to_have_text("All changes saved", timeout=30_000)
    # The closed tab's change is taken over once that tab has been quiet for a while (~10 s).
    for _ in range(60):
        if second.evaluate(f"localStorage.getItem('goldset.kept-actions.{lina.pk}')") is None:
            break
        second.wait_for_timeout(500)
    grades = {j.assignment.question_id: j.grade for j in Judgement.objects.all()}
    assert grades == {q1.pk: 2, q2.pk: 1}
    context.close()
