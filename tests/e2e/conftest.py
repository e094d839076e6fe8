"""Real Chromium (Debian's), driven by Playwright for Python against pytest-django's live server."""

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make around
# it are still synchronous, so Django's async-safety guard does not apply.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is needed for browser tests: apt-get install -y chromium")
    from playwright.sync_api import expect, sync_playwright

    # Expectations wait as long as actions do (5 s by default): on a busy 2-core CI machine a
    # job or a queued write can take longer than that to show, and a test is not about speed.
    expect.set_options(timeout=20_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def log_in(page, live_server, username, password):
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def after_the_job(page, arrived, *, timeout: float = 60_000) -> str:
    """Follow a job a click started to the page it goes on to (``arrived``, a locator there);
    returns what the user was told the job did.

    The job page follows the worker and, once the job is done, goes on with the job's message
    shown there. A job done before its page loaded is shown done instead, with its message and
    the link to what it made (`corpus.views.show_job`): the user reads the message there and
    follows the link. Which of the two a test sees depends on the worker's speed, so it
    accepts either."""
    from playwright.sync_api import expect

    done = page.locator("#job-progress.job-succeeded")
    expect(arrived.or_(done)).to_be_visible(timeout=timeout)
    if arrived.is_visible():
        return "\n".join(page.locator("ul.messages li").all_inner_texts())
    told = done.locator(".job-message").inner_text()
    done.locator("a.button").click()
    expect(arrived).to_be_visible()
    return told
