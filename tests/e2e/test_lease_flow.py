"""Leases (issue 36 item 2) in real Chromium: lina claims a question and leaves it; her lease
runs out (set in the database, not waited for); omar claims the same slot and grades it; lina's
open page, when she grades — at once, or later from actions kept while offline — is told the
question is no longer hers, is shown nothing of omar's, and loses nothing of her own."""

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from labelling.models import Assignment, Change, ChangeSubject, Judgement
from labelling.services import assignments as services
from tests.e2e.conftest import log_in
from tests.e2e.test_grading_flow import cards, lambda_has, wait_for_keys
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    grading_pool,
)

pytestmark = pytest.mark.e2e

LOST = (
    "This question went back to the pool after 30 minutes without work and another labeller "
    "has it now."
)


def claim_from_the_queue(browser, live_server, username, timezone_id="UTC"):
    context = browser.new_context(timezone_id=timezone_id)
    page = context.new_page()
    page.set_default_timeout(20_000)
    log_in(page, live_server, username, PASSWORD)
    page.get_by_role("link", name="Acme gold").click()
    page.locator(".project-nav").get_by_role("link", name="My queue", exact=True).click()
    page.get_by_role("button", name="Start grading").click()
    expect(page.locator("#question-text")).to_be_visible()
    wait_for_keys(page)
    return context, page


def test_a_lapsed_question_goes_to_another_labeller_and_nothing_is_lost(live_server, browser):
    project = ProjectFactory(slug="acme", name="Acme gold", lease_minutes=30)
    lina, omar = UserFactory(username="lina"), UserFactory(username="omar")
    for user in (lina, omar):
        MembershipFactory(project=project, user=user, role="labeller")
    pool = grading_pool(project, questions=1, passages=3)
    services.plan_assignments(pool=pool, labellers=[], double_share=0)  # one slot, unclaimed
    slot = Assignment.objects.get(pool=pool)

    # lina (in India) claims it: the status bar says until when it is hers, in her time.
    lina_context, lina_page = claim_from_the_queue(browser, live_server, "lina", "Asia/Kolkata")
    slot.refresh_from_db()
    assert slot.labeller == lina
    until = slot.lease_expires_at.astimezone(ZoneInfo("Asia/Kolkata")).strftime("%H:%M")
    expect(lina_page.locator("#lease")).to_have_text(f"Yours until {until}")

    # She leaves it without grading; her lease runs out.
    Assignment.objects.filter(pk=slot.pk).update(
        lease_expires_at=timezone.now() - timedelta(minutes=1)
    )

    # omar presses "Next question" and gets the same slot, and grades its first passage 1.
    omar_context, omar_page = claim_from_the_queue(browser, live_server, "omar", "America/New_York")
    slot.refresh_from_db()
    assert slot.labeller == omar
    expect(omar_page.locator("#lease")).to_contain_text("Yours until")
    omar_page.keyboard.press("1")
    expect(cards(omar_page).nth(0)).to_have_class(lambda_has("grade-1"))
    expect(omar_page.locator("#save-state")).to_have_text("All changes saved")
    # The grade renewed his lease; the status bar it sent back is in his time too.
    slot.refresh_from_db()
    until = slot.lease_expires_at.astimezone(ZoneInfo("America/New_York")).strftime("%H:%M")
    expect(omar_page.locator("#lease")).to_have_text(f"Yours until {until}")

    # lina's page, still open, grades: refused, with where to go next, and nothing of omar's.
    lina_page.keyboard.press("2")
    expect(lina_page.locator("#flash")).to_contain_text(LOST)
    expect(lina_page.locator("#lease")).to_have_text("No longer yours. Go on to your next question")
    expect(cards(lina_page).nth(0)).not_to_have_class(lambda_has("grade-1"))
    expect(lina_page.locator("#save-state")).to_have_text("All changes saved")

    # Made while offline and kept: resent when the connection returns, refused, never again.
    lina_context.set_offline(True)
    lina_page.keyboard.press("j")
    lina_page.keyboard.press("0")
    expect(lina_page.locator("#save-state")).to_have_attribute("data-state", "offline")
    lina_context.set_offline(False)
    expect(lina_page.locator("#flash")).to_have_text(
        "1 kept change was not saved: this question is no longer yours."
    )
    expect(lina_page.locator("#save-state")).to_have_text("All changes saved")
    assert lina_page.evaluate(f"localStorage.getItem('goldset.kept-actions.{lina.pk}')") is None
    body = lina_page.locator("body").inner_text()
    assert "omar" not in body

    # The database: omar's grade alone, on omar's slot; the history says what happened.
    assert list(Judgement.objects.values_list("assignment__labeller__username", "grade")) == [
        ("omar", 1)
    ]
    slot.refresh_from_db()
    assert slot.labeller == omar and slot.lease_expires_at > timezone.now()
    history = Change.objects.filter(assignment=slot, subject=ChangeSubject.ASSIGNMENT)
    assert list(history.order_by("pk").values_list("action", "made_by__username")) == [
        ("claim", "lina"),
        ("lease lapsed", None),
        ("claim", "omar"),
    ]

    # The link takes lina to her queue, where the question is no longer listed.
    lina_page.locator("#lease").get_by_role("link", name="Go on to your next question").click()
    expect(lina_page.get_by_role("button", name="Next question")).to_be_visible()
    assert pool.question_set.questions.get().text not in lina_page.locator("main").inner_text()

    # omar's page still shows his grade, and his next write is saved as usual.
    omar_page.reload()
    wait_for_keys(omar_page)
    expect(cards(omar_page).nth(0)).to_have_class(lambda_has("grade-1"))
    omar_page.keyboard.press("j")
    omar_page.keyboard.press("2")
    expect(cards(omar_page).nth(1)).to_have_class(lambda_has("grade-2"))
    expect(omar_page.locator("#save-state")).to_have_text("All changes saved")
    assert Judgement.objects.filter(assignment__labeller=omar).count() == 2
    lina_context.close()
    omar_context.close()
