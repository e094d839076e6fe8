"""Issue 33 item 16 in Chromium: what only a terminal or a clock could do before. A new project's
first steps tick themselves; an admin plants canaries; a lead runs the daily index health check
now and an admin sends a test alert; a one-time password is changed before any other page."""

import re

import pytest
from django.core import mail
from playwright.sync_api import expect

from corpus.models import Document
from corpus.services import projects, retrieval
from health.models import IndexHealthCheck
from health.services import manifests
from labelling.models import Question, QuestionSet
from tests.e2e.conftest import after_the_job, log_in
from tests.factories import PASSWORD, POLICY_TEXT, MembershipFactory, UserFactory, add_documents
from tests.health.test_index_health import GOOD, VPN

pytestmark = pytest.mark.e2e


def heading(page, text: str):
    return page.locator("h1", has_text=re.compile(f"^{text}$"))


def test_the_first_steps_tick_themselves_as_the_project_fills(
    transactional_db, live_server, page, project
):
    lead = UserFactory(username="lea")
    MembershipFactory(project=project, user=lead, role="lead")
    log_in(page, live_server, "lea", PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/")
    steps = page.locator("#first-steps")
    expect(steps).to_contain_text("0 of 7 done")
    # The first open step leads to where it is done.
    steps.get_by_role("link", name="Upload documents").click()
    expect(page).to_have_url(re.compile(rf"/p/{project.slug}/documents/upload/$"))
    add_documents(project, ("policy", POLICY_TEXT))
    retrieval.add_retriever(project=project, name="team", kind="run")
    page.goto(f"{live_server.url}/p/{project.slug}/")
    expect(steps).to_contain_text("3 of 7 done")
    expect(steps.locator("li.done")).to_have_text(
        [
            re.compile("Upload documents"),
            re.compile("Add a retriever"),
            re.compile("Build its index"),
        ]
    )
    expect(steps.get_by_role("link", name="Import questions")).to_be_visible()


def test_an_admin_plants_canaries_in_the_browser(
    worker, transactional_db, live_server, page, project
):
    admin = UserFactory(username="ada")
    MembershipFactory(project=project, user=admin, role="admin")
    projects.set_access_group_members(project=project, name="hr-confidential", users=[admin])
    QuestionSet.objects.create(project=project, name="faq")
    log_in(page, live_server, "ada", PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/test-users/")
    page.get_by_role("link", name="Canaries").click()
    page.get_by_label("Question set").fill("faq")
    page.get_by_role("button", name="Plant canaries").click()
    expect(page.locator("#plant-canaries")).to_contain_text(
        "faq is a question set of the team's questions"
    )
    page.get_by_label("Question set").fill("canaries")
    page.get_by_label("Access group").select_option("hr-confidential")
    page.get_by_label("How many").fill("2")
    page.get_by_role("button", name="Plant canaries").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    told = after_the_job(page, heading(page, "Canaries"))
    assert "2 canaries planted in hr-confidential" in told
    expect(page.locator("table.canaries tbody tr")).to_have_count(2)
    assert Document.objects.filter(project=project, is_canary=True).count() == 2
    assert Question.objects.filter(question_set__name="canaries").count() == 2
    with page.expect_download() as download:
        page.get_by_role("link", name="Download them as JSONL").click()
    assert len(download.value.path().read_text().splitlines()) == 2


def test_check_now_and_a_test_alert_on_index_health(
    worker, transactional_db, live_server, page, project
):
    admin = UserFactory(username="ada", email="ada@example.org")
    MembershipFactory(project=project, user=admin, role="admin")
    add_documents(project, ("policy", POLICY_TEXT), ("vpn", VPN))
    team = retrieval.add_retriever(project=project, name="team", kind="run")
    manifests.import_manifest(retriever=team, data=GOOD, file_name="index.csv")
    log_in(page, live_server, "ada", PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/index-health/")
    expect(page.locator("body")).to_contain_text("No daily check recorded yet.")
    page.get_by_role("button", name="Run the daily check now").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    told = after_the_job(page, heading(page, "Index health"))
    assert "Daily check recorded for 1 retriever" in told
    assert IndexHealthCheck.objects.filter(project=project).exists()
    expect(page.locator("body")).not_to_contain_text("No daily check recorded yet.")
    mail.outbox.clear()
    page.get_by_role("button", name="Send a test alert").click()
    expect(page.locator("body")).to_contain_text("Test alert for 1 admin address")
    assert [m.to for m in mail.outbox] == [["ada@example.org"]]
    page.get_by_role("button", name="Send a test alert").click()
    expect(page.locator("body")).to_contain_text("A test alert was sent less than a minute ago")
    assert len(mail.outbox) == 1


def test_a_one_time_password_is_changed_before_anything_else(
    transactional_db, live_server, page, project
):
    admin = UserFactory(username="ada")
    MembershipFactory(project=project, user=admin, role="admin")
    log_in(page, live_server, "ada", PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/members/")
    form = page.locator("#create-account")
    form.get_by_label("Username").fill("nadia")
    form.get_by_label("A one-time password shown to you once").check()
    form.get_by_role("button", name="Create the account").click()
    password = page.locator("#one-time-password").inner_text()
    page.context.clear_cookies()

    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("nadia")
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/accounts/password/")
    expect(page.locator("#one-time-password-notice")).to_be_visible()
    page.goto(f"{live_server.url}/p/{project.slug}/queue/")
    page.wait_for_url(f"{live_server.url}/accounts/password/")
    page.get_by_label("Old password").fill(password)
    page.get_by_label("New password", exact=True).fill("a pass phrase of my own")
    page.get_by_label("New password confirmation").fill("a pass phrase of my own")
    page.get_by_role("button", name="Change my password").click()
    expect(page.locator("h1")).to_have_text("Password changed")
    page.goto(f"{live_server.url}/p/{project.slug}/queue/")
    expect(page).to_have_url(re.compile(rf"/p/{project.slug}/queue/$"))
