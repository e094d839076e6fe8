"""Issue 33, item 11, in Chromium: Add a retriever shows only the chosen kind's fields, the
chosen HTTP preset's body and paths, and Try a question shows the mapped results of one live
call before anything is saved."""

import pytest
from playwright.sync_api import expect

from corpus.models import Retriever
from tests.e2e.conftest import log_in
from tests.factories import PASSWORD, MembershipFactory, ProjectFactory, UserFactory, add_documents
from tests.search_server import IndexedDocument, SearchServer

pytestmark = pytest.mark.e2e

LEAVE = "Annual leave\n\nEmployees receive 25 days of paid annual leave per calendar year."


@pytest.mark.parametrize("width", [1366, 1024])
def test_an_admin_sees_each_kinds_fields_and_tries_a_question(
    transactional_db, live_server, page, settings, width
):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    server = SearchServer(
        documents=[IndexedDocument("leave", LEAVE), IndexedDocument("ghost", "<b>leave</b>")]
    ).start()
    try:
        project = ProjectFactory(slug="acme")
        add_documents(project, ("leave", LEAVE))
        MembershipFactory(project=project, user=UserFactory(username="ada"), role="admin")
        page.set_viewport_size({"width": width, "height": 800})
        log_in(page, live_server, "ada", PASSWORD)
        page.goto(f"{live_server.url}/p/acme/retrievers/add/")

        # BM25 first: its fields, ticked as the help text says; no embedding or HTTP field.
        expect(page.locator("#id_stem")).to_be_checked()
        expect(page.locator("#id_stopwords")).to_be_checked()
        expect(page.locator("#id_k1")).to_be_visible()
        expect(page.locator("#id_vectors")).to_be_hidden()
        expect(page.locator("#id_url")).to_be_hidden()
        expect(page.get_by_role("button", name="Try a question")).to_be_hidden()

        page.select_option("#id_kind", "embedding")
        expect(page.locator("#id_vectors")).to_be_visible()
        expect(page.locator("#id_stem")).to_be_hidden()

        page.select_option("#id_kind", "http")
        expect(page.locator("#id_k1")).to_be_hidden()
        expect(page.locator("#id_url")).to_be_visible()
        page.select_option("#id_preset", "elasticsearch")
        preset = page.locator("#preset-elasticsearch")
        expect(preset).to_be_visible()
        expect(preset).to_contain_text('"size": "{{k}}"')
        expect(preset).to_contain_text("hits.hits")
        expect(page.locator("#preset-generic")).to_be_hidden()
        # The URL field is wide enough to read a whole template.
        assert page.locator("#id_url").bounding_box()["width"] >= 0.5 * min(width, 960)

        page.fill("#id_name", "ours")
        page.fill("#id_url", f"{server.url}/policies/_search")
        page.fill("#id_question", "annual leave")
        page.get_by_role("button", name="Try a question").click()
        trial = page.locator("#trial")
        expect(trial).to_contain_text("What the endpoint answered")
        expect(trial.locator("tr", has_text="leave").first).to_contain_text("yes")
        expect(trial.locator("tr", has_text="ghost")).to_contain_text("not found")
        expect(trial.locator("b")).to_have_count(0)  # the endpoint's text stays text
        # The form kept what was typed, on the HTTP kind, and nothing was saved.
        expect(page.locator("#id_url")).to_have_value(f"{server.url}/policies/_search")
        expect(page.locator("#id_k1")).to_be_hidden()
        assert not Retriever.objects.exists()
        page.screenshot(path=f"/tmp/iK-add-retriever-{width}.png", full_page=True)

        page.get_by_role("button", name="Add the retriever").click()
        expect(page.locator("h1")).to_contain_text("ours")
        assert Retriever.objects.get(name="ours").kind == "http"
    finally:
        server.stop()
