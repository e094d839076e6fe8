"""A lead pastes questions, adds and builds a BM25 retriever, and pools — in real Chromium;
a labeller then sees the pool without its provenance."""

import pytest
from playwright.sync_api import expect

from corpus.models import Retriever
from corpus.services import documents
from labelling.models import Candidate, Pool, Question
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    add_documents,
)

pytestmark = pytest.mark.e2e


def test_lead_imports_questions_builds_bm25_and_pools(worker, live_server, page, browser):
    project = ProjectFactory(slug="acme", name="Acme gold")
    MembershipFactory(project=project, user=UserFactory(username="lena"), role="lead")
    MembershipFactory(project=project, user=UserFactory(username="lars"), role="labeller")
    documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=60, overlap=0
    )
    add_documents(
        project,
        ("leave.md", "Annual leave\n\nUp to five unused days carry over with form HR-F-112."),
        ("vpn.md", "VPN access\n\nInstall the NW-VPN client and approve the prompt."),
    )

    log_in(page, live_server, "lena", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/")
    page.get_by_role("button", name="Labelling").click()  # the menu's pages open under it
    # The menu's, not the first-steps checklist's "Import questions" (loaded by htmx).
    page.locator(".project-nav").get_by_role("link", name="Questions", exact=True).click()
    page.get_by_role("link", name="Import questions").click()
    page.get_by_label("Question set").fill("staff")
    page.get_by_label("…or paste questions, one per line").fill(
        "how many days carry over??\nvpn client where  \nHow many days carry over??"
    )
    page.get_by_role("button", name="Import").click()
    expect(page.locator(".messages")).to_contain_text("3 new questions")
    expect(page.get_by_text("duplicate of q001")).to_be_visible()
    assert list(Question.objects.order_by("pk").values_list("text", flat=True)) == [
        "how many days carry over??",
        "vpn client where  ",
        "How many days carry over??",
    ]

    page.get_by_role("button", name="Corpus").click()
    page.get_by_role("link", name="Retrievers").click()
    page.get_by_role("link", name="Add a retriever").click()
    page.get_by_label("Name").fill("keywords")
    page.get_by_label("Kind").select_option("bm25")
    page.get_by_label("Chunking scheme").select_option(label="paragraphs")
    page.get_by_label("BM25: stem words (Snowball)").check()
    page.get_by_role("button", name="Add the retriever").click()
    expect(page.get_by_text("No index yet")).to_be_visible()
    page.get_by_role("button", name="Build the index").click()
    expect(page.locator(".job-state")).to_have_text("Succeeded", timeout=60_000)
    assert Retriever.objects.get(name="keywords").active_index is not None

    page.get_by_role("button", name="Labelling").click()
    page.get_by_role("link", name="Pools").click()
    page.get_by_role("link", name="Create a pool").click()
    page.get_by_label("Name").fill("first")
    page.get_by_label("keywords").check()
    page.get_by_role("button", name="Create the pool").click()
    expect(page.get_by_role("heading", name="Pool size per question")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Found by it alone")).to_be_visible()
    pool = Pool.objects.get(name="first")
    assert pool.state == "ready" and Candidate.objects.filter(pool=pool).exists()

    labeller = browser.new_context().new_page()
    log_in(labeller, live_server, "lars", PASSWORD)
    labeller.goto(f"{live_server.url}/p/acme/pools/{pool.pk}/")
    expect(labeller.get_by_role("heading", name="Pool size per question")).to_be_visible()
    expect(labeller.get_by_text("Found by it alone")).to_have_count(0)
    expect(labeller.get_by_text("keywords")).to_have_count(0)
