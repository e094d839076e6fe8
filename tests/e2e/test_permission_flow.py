"""An admin points Goldset at the team's live search (a server on 127.0.0.1 in the Elasticsearch
shape, leaking one restricted document to one user), adds two test users, replays the gold set
as them and reads the leak — in real Chromium."""

import os

import pytest
from playwright.sync_api import expect

from corpus.models import AccessGroup, PermissionProfile, Retriever
from evaluation.models import PermissionReplay
from evaluation.services.gold_sets import finalise_gold_set
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    POLICY_TEXT,
    SALARY_TEXT,
    VPN_TEXT,
    MembershipFactory,
    UserFactory,
    labelled_question_set,
)
from tests.search_server import IndexedDocument, SearchServer

pytestmark = pytest.mark.e2e
GROUP = "hr-confidential"


@pytest.fixture
def server(settings):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    server = SearchServer(
        documents=[
            IndexedDocument("leave", POLICY_TEXT),
            IndexedDocument("vpn", VPN_TEXT),
            IndexedDocument("salaries", SALARY_TEXT + " Days carry over.", frozenset({GROUP})),
        ],
        users={"alice": frozenset({GROUP}), "bob": frozenset()},
        leaks={"bob": {"salaries"}},
    ).start()
    yield server
    server.stop()


def test_admin_configures_the_live_system_and_test_users_and_finds_the_leak(
    worker, live_server, page, project, server
):
    people = {}
    for name, role in (("ann", "labeller"), ("bob", "labeller"), ("lea", "lead"), ("ada", "admin")):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lea"], restricted=True
    )
    AccessGroup.objects.get(name=GROUP).members.add(people["ada"])
    finalise_gold_set(question_set=question_set, user=people["ada"])
    csp_errors = []
    page.on(
        "console", lambda m: csp_errors.append(m.text) if "Content Security" in m.text else None
    )

    log_in(page, live_server, "ada", PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/retrievers/add/")
    page.locator("#id_name").fill("ours")
    page.get_by_label("Kind").select_option("http")
    page.get_by_label("HTTP: preset").select_option("elasticsearch")
    page.get_by_label("HTTP: URL template").fill(f"{server.url}/policies/_search")
    page.get_by_label("HTTP: headers").fill("Authorization: Bearer not-an-env-reference")
    page.get_by_role("button", name="Add the retriever").click()
    expect(page.get_by_role("alert")).to_contain_text("looks like a credential")
    page.get_by_label("HTTP: headers").fill("Authorization: env:OUR_SEARCH_TOKEN_UNUSED")
    page.get_by_label("HTTP: headers").fill("")
    page.get_by_role("button", name="Add the retriever").click()
    expect(page.locator("h1")).to_contain_text("ours")
    expect(page.locator("body")).to_contain_text("hits.hits")
    assert Retriever.objects.get(name="ours").kind == "http"

    for name, groups, header in (
        ("alice", [GROUP], "X-Test-User: alice"),
        ("bob", [], "X-Test-User: bob"),
    ):
        page.goto(f"{live_server.url}/p/{project.slug}/test-users/add/")
        page.locator("#id_name").fill(name)
        for group in groups:
            page.get_by_label(group).check()
        page.get_by_label("Headers").fill(header)
        page.get_by_role("button", name="Save the test user").click()
        if not groups:  # no group must be said, not forgotten
            expect(page.get_by_role("alert")).to_contain_text("has no access group")
            page.get_by_label("In no group").check()
            page.get_by_role("button", name="Save the test user").click()
        expect(page.locator(".messages")).to_contain_text(f"Test user {name} saved.")
    assert PermissionProfile.objects.count() == 2

    nav = page.locator(".project-nav")
    nav.get_by_role("button", name="Evaluate").hover()
    nav.get_by_role("link", name="Permission replays").click()
    page.get_by_label("Retriever").select_option(label="ours")
    page.get_by_label("Results per question").fill("5")
    page.get_by_role("button", name="Start the replay").click()
    expect(page.locator(".verdict")).to_contain_text("1 leak", timeout=60_000)
    row = page.locator("table.findings tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("bob")
    expect(row).to_contain_text("salaries")
    expect(row).to_contain_text(GROUP)
    replay = PermissionReplay.objects.get()
    assert [f["user"] for f in replay.report["findings"]] == ["bob"]
    if os.environ.get("GOLDSET_SCREENSHOTS"):
        page.screenshot(path=os.environ["GOLDSET_SCREENSHOTS"], full_page=True)
    assert csp_errors == []
