"""A labeller grades with the keyboard, marks evidence with the mouse, reloads; a second
labeller on the same (double-labelled) question sees none of it — in real Chromium."""

import re

import pytest
from playwright.sync_api import expect

from labelling.models import Assignment, Judgement, Span, Verdict
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    POLICY_TEXT,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    grading_pool,
)

pytestmark = pytest.mark.e2e


def make_world():
    project = ProjectFactory(slug="acme", name="Acme gold")
    lina = UserFactory(username="lina")
    omar = UserFactory(username="omar")
    for user in (lina, omar):
        MembershipFactory(project=project, user=user, role="labeller")
    pool = grading_pool(project, questions=2, passages=3)
    q1, q2 = pool.question_set.questions.order_by("pk")
    q1.text = "how many leave days can i carry ovr into next year?"
    q1.save()
    Assignment.objects.create(pool=pool, question=q1, slot=1, labeller=lina)
    Assignment.objects.create(pool=pool, question=q1, slot=2, labeller=omar)
    Assignment.objects.create(pool=pool, question=q2, slot=1, labeller=lina)
    url = f"/p/acme/grade/{pool.pk}/{q1.pk}/"
    return project, pool, q1, lina, omar, url


def watch_console(page) -> list[str]:
    """Script errors and CSP violations (a missing favicon is not a problem)."""
    problems: list[str] = []

    def on_console(message):
        if message.type == "error" and "favicon" not in message.location.get("url", ""):
            problems.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda e: problems.append(str(e)))
    return problems


def cards(page):
    return page.locator("li.candidate")


def wait_for_keys(page):
    """grading.js is deferred: keys pressed before it runs would be lost. It marks the first
    passage current when it starts."""
    expect(cards(page).nth(0)).to_have_class(lambda_has("current"))


def test_keyboard_grading_mouse_span_unanswerable_survive_reload_and_stay_blind(
    live_server, browser
):
    project, pool, q1, lina, omar, url = make_world()
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    problems = watch_console(page)

    log_in(page, live_server, "lina", PASSWORD)
    page.get_by_role("link", name="Acme gold").click()
    page.get_by_role("link", name="My queue").click()
    page.get_by_role("link", name=q1.text).click()
    expect(page.locator("#question-text")).to_have_text(q1.text)
    expect(cards(page)).to_have_count(3)
    wait_for_keys(page)

    # Keyboard only: 2 on the first passage, j, 1, j, 0.
    page.keyboard.press("2")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))
    page.keyboard.press("j")
    page.keyboard.press("1")
    expect(cards(page).nth(1)).to_have_class(lambda_has("grade-1"))
    page.keyboard.press("j")
    page.keyboard.press("0")
    expect(cards(page).nth(2)).to_have_class(lambda_has("grade-0"))
    expect(page.locator("#question-progress")).to_contain_text("3 of 3")

    # The mouse selects a few words of the first passage; "s" narrows its evidence to them.
    passage = cards(page).nth(0).locator(".seg.passage").first
    passage.scroll_into_view_if_needed()
    page.wait_for_timeout(600)  # let the smooth scroll from j/k settle before measuring
    box = passage.bounding_box()
    page.mouse.move(box["x"] + 3, box["y"] + 8)
    page.mouse.down()
    page.mouse.move(box["x"] + 160, box["y"] + 8, steps=8)
    page.mouse.up()
    selected = page.evaluate("window.getSelection().toString()")
    assert len(selected.strip()) > 5
    page.keyboard.press("s")
    expect(cards(page).nth(0).locator(".evidence-list li")).to_have_count(1)

    page.keyboard.press("u")
    expect(page.locator("#verdict button.chosen")).to_contain_text("No passage answers")

    first_candidate = int(cards(page).nth(0).get_attribute("data-candidate"))
    page.reload()
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))
    expect(cards(page).nth(1)).to_have_class(lambda_has("grade-1"))
    expect(cards(page).nth(2)).to_have_class(lambda_has("grade-0"))
    expect(cards(page).nth(0).locator(".evidence-list q")).to_contain_text(selected.strip()[:20])
    expect(page.locator("#verdict button.chosen")).to_contain_text("No passage answers")
    expect(page.locator("#question-progress")).to_contain_text("done")

    mine = Assignment.objects.get(labeller=lina, question=q1)
    grades = dict(Judgement.objects.filter(assignment=mine).values_list("candidate", "grade"))
    ordered = list(pool.candidates.filter(question=q1).order_by("shuffle_rank", "pk"))
    assert [grades[c.pk] for c in ordered] == [2, 1, 0]
    (span,) = Span.objects.filter(judgement__assignment=mine, judgement__candidate=first_candidate)
    candidate = ordered[0]
    assert candidate.start <= span.start < span.end <= candidate.end
    assert span.end - span.start < candidate.end - candidate.start  # narrowed, not the default
    # The drag is snapped to whole words (static/goldset/selection.js).
    assert span.quote == POLICY_TEXT[span.start : span.end]
    assert selected.strip() in span.quote
    assert span.start == 0 or not POLICY_TEXT[span.start - 1].isalnum()
    assert span.end == len(POLICY_TEXT) or not POLICY_TEXT[span.end].isalnum()
    assert Verdict.objects.get(assignment=mine).outcome == "unanswerable"
    assert mine.completed_at is not None
    assert problems == []
    context.close()

    # omar holds the second slot of the same question: he sees none of lina's work.
    context, page = open_grading_page(browser, live_server, url, "omar")
    expect(page.locator("#question-progress")).to_contain_text("0 of 3")
    expect(page.locator("#question-progress")).to_contain_text("no verdict yet")
    expect(page.locator(".grade-button.chosen")).to_have_count(0)
    expect(page.locator(".evidence-list")).to_have_count(0)
    expect(page.locator(".seg.evidence")).to_have_count(0)
    expect(page.locator("#verdict button.chosen")).to_have_count(0)
    assert "lina" not in page.content()
    theirs = Assignment.objects.get(labeller=omar, question=q1)
    assert not Judgement.objects.filter(assignment=theirs).exists()
    context.close()


def test_an_action_made_after_the_session_expired_is_replayed_after_login(live_server, browser):
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_grading_page(browser, live_server, url)

    context.clear_cookies()  # the session expires while the page is open
    page.keyboard.press("2")
    page.wait_for_url(f"{live_server.url}/accounts/login/**")
    assert not Judgement.objects.exists()
    page.get_by_label("Username").fill("lina")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}{url}")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))
    expect(page.locator("#flash")).to_have_text(
        "Saved 1 change kept from before you logged in again."
    )
    assert Judgement.objects.get().grade == 2
    assert page.evaluate(f"localStorage.getItem('goldset.kept-actions.{lina.pk}')") is None
    context.close()


def test_a_grade_refused_with_503_is_sent_again_and_saved_once(live_server, browser):
    """What the page does when the server answers as DatabaseUnavailableMiddleware does (the
    server side is tests/test_faults.py): wait as Retry-After says, send again, save once."""
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_grading_page(browser, live_server, url)

    sent = []

    def database_gone_twice(route):
        sent.append(route.request.post_data)
        if len(sent) <= 2:
            route.fulfill(
                status=503,
                headers={"Retry-After": "1"},
                content_type="text/plain",
                body="The database connection was lost and nothing was saved. Please try again.",
            )
        else:
            route.continue_()

    page.route(re.compile(r".*/candidates/\d+/grade/$"), database_gone_twice)
    page.keyboard.press("2")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-2"))
    expect(page.locator("#flash")).to_have_text("The server is back: saved 1 change.")
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    assert len(sent) == 3 and len(set(sent)) == 1  # the same action, the same revision
    assert Judgement.objects.get().grade == 2
    context.close()


def test_a_copy_of_an_answered_action_never_goes_out_again(live_server, browser):
    """An action is sent once per attempt: a second copy of one already answered (as htmx's
    request queue could replay it) is neither sent nor allowed to swap over the answer."""
    project, pool, q1, lina, omar, url = make_world()
    context, page = open_grading_page(browser, live_server, url)
    sent = []

    grade_url = re.compile(r".*/candidates/\d+/grade/$")

    def count(request):
        if request.method == "POST" and grade_url.match(request.url):
            sent.append((request.headers.get("x-goldset-action"), request.post_data))

    # Requests as the page sends them, not intercepted: a route's handler runs only while the
    # test waits, so a count taken through one depends on when the test looked.
    page.on("request", count)
    # Each key's action is waited for by its answer: "All changes saved" is also what the page
    # says before an action goes out, so that text alone could match too early.
    with page.expect_response(grade_url):
        page.keyboard.press("2")
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    assert len(sent) == 1 and sent[0][0]
    page.evaluate(
        """([id, body]) => htmx.ajax("POST", document.querySelector(".candidate").dataset.gradeUrl,
             {source: document.getElementById("grading"), swap: "none",
              values: Object.fromEntries(new URLSearchParams(body)),
              headers: {"X-Goldset-Action": id}})""",
        list(sent[0]),
    )
    # The next real action goes out behind anything htmx sent or queued before it.
    with page.expect_response(
        lambda response: (
            bool(grade_url.match(response.url)) and "grade=0" in (response.request.post_data or "")
        )
    ):
        page.keyboard.press("0")
    expect(page.locator("#save-state")).to_have_text("All changes saved")
    expect(cards(page).nth(0)).to_have_class(lambda_has("grade-0"))
    assert len(sent) == 2 and "grade=0" in sent[1][1]
    assert Judgement.objects.get().grade == 0
    context.close()


def open_grading_page(browser, live_server, url, username="lina"):
    """A labeller's grading page in a fresh browser context, once its keys answer."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    log_in(page, live_server, username, PASSWORD)
    page.goto(f"{live_server.url}{url}")
    expect(cards(page)).to_have_count(3)
    wait_for_keys(page)
    return context, page


def lambda_has(name: str):
    return re.compile(rf"(^|\s){re.escape(name)}(\s|$)")
