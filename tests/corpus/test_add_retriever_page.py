"""Add a retriever: the defaults its help text names, each kind's fields marked, the HTTP
presets' body and paths shown, and "Try a question": one live call by an admin through the
same client and host policy, showing the mapped results, storing nothing."""

import json

import pytest
from django.urls import reverse

from corpus.forms import RetrieverForm
from corpus.models import Retriever
from corpus.services import documents, retrieval
from tests.factories import add_documents, login
from tests.search_server import IndexedDocument, RawServer, SearchServer

LEAVE = "Annual leave\n\nEmployees receive 25 days of paid annual leave per calendar year."


@pytest.fixture
def corpus(project):
    add_documents(project, ("leave", LEAVE))
    return documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=12, overlap=0
    )


@pytest.fixture
def server(settings):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    server = SearchServer(
        documents=[
            IndexedDocument("leave", LEAVE),
            IndexedDocument("ghost", "<script>alert('leave')</script> a leave rule."),
        ]
    ).start()
    yield server
    server.stop()


def _page(client, project):
    return client.get(reverse("corpus:add-retriever", args=[project.slug]))


def _try(client, project, **fields):
    form = {"name": "ours", "kind": "http", "preset": "elasticsearch", "try": "1", **fields}
    return client.post(reverse("corpus:add-retriever", args=[project.slug]), form)


def test_the_form_starts_from_the_settings_its_help_text_calls_typical(project, corpus, member):
    page = _page(login(member("lead")), project).content.decode()
    assert "stemming and stopwords on" in page
    assert 'name="stem" id="id_stem" checked' in page
    assert 'name="stopwords" id="id_stopwords" checked' in page
    assert 'value="0.9"' in page and 'value="0.4"' in page


def test_an_unticked_default_is_honoured(project, corpus):
    # A browser sends nothing for an unticked box: the defaults are the page's, not the POST's.
    form = RetrieverForm(
        {"name": "plain", "kind": "bm25", "scheme": corpus.pk, "title": "on"},
        project=project,
        may_choose_model=False,
    )
    assert form.is_valid(), form.errors
    arguments = form.service_arguments()
    assert (arguments["stem"], arguments["stopwords"], arguments["title"]) == (False, False, True)
    assert "question" not in arguments


def test_each_field_names_the_kinds_it_belongs_to(project, corpus, member):
    page = _page(login(member("admin")), project).content.decode()
    assert '<div data-kinds="bm25"><label for="id_stem">' in page
    assert '<div data-kinds="embedding"><label for="id_vectors">' in page
    assert '<div data-kinds="http"><label for="id_url">' in page
    assert '<div><label for="id_name">' in page and '<div><label for="id_kind">' in page
    assert 'class="wide"' in page and "retriever_form.js" in page


def test_the_presets_body_and_paths_are_shown_escaped(project, corpus, member):
    page = _page(login(member("admin")), project).content.decode()
    assert 'data-preset="elasticsearch"' in page and 'data-preset="generic"' in page
    assert "&quot;size&quot;: &quot;{{k}}&quot;" in page
    assert "<code>hits.hits</code>" in page and "<code>highlight.text</code>" in page
    # A lead may not configure an HTTP retriever: neither presets nor the trial are offered.
    lead = _page(login(member("lead")), project).content.decode()
    assert "data-preset" not in lead and 'name="try"' not in lead


def test_an_admin_tries_a_question_and_sees_the_mapped_results(project, corpus, server, member):
    admin = login(member("admin"))
    response = _try(admin, project, url=f"{server.url}/policies/_search", question="annual leave")
    page = response.content.decode()
    assert response.status_code == 200
    assert "What the endpoint answered" in page and "Nothing was saved" in page
    assert "<td>leave</td><td>yes</td>" in page
    assert '<td>ghost</td><td><span class="badge warn">not found</span>' in page
    # The endpoint's text is untrusted: escaped, never markup.
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert len(server.requests) == 1
    assert json.loads(server.requests[0].body)["query"]["match"]["text"] == "annual leave"
    assert not Retriever.objects.exists()


def test_a_trial_shows_a_failing_endpoint_to_the_admin(project, corpus, member, settings):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    raw = RawServer()
    raw.bodies["leave"] = (500, {}, b'{"error": "index_not_found_exception"}')
    try:
        admin = login(member("admin"))
        response = _try(
            admin,
            project,
            preset="generic",
            url=f"{raw.url}/search?q={{{{question}}}}",
            retries="0",
            question="leave",
        )
    finally:
        raw.stop()
    page = response.content.decode()
    assert response.status_code == 200 and 'role="alert"' in page
    assert "index_not_found_exception" in page  # the server's words, to the admin
    assert raw.requests == 1 and not Retriever.objects.exists()


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"question": ""}, "Question: type a question to try."),
        ({"question": "x" * 1001}, "at most 1000 characters"),
        ({"url": "http://10.0.0.1/_search", "question": "leave"}, "cannot be called"),
        # A blank URL keeps the preset's example, which the host policy refuses.
        ({"url": "", "question": "leave"}, "search.example.com:9200 is not in"),
        ({"kind": "bm25", "question": "leave"}, "Kind: Try a question calls an HTTP search API"),
    ],
)
def test_a_trial_that_cannot_run_says_why_and_calls_nothing(
    project, corpus, server, member, fields, message
):
    fields = {"url": f"{server.url}/policies/_search", **fields}
    response = _try(login(member("admin")), project, **fields)
    assert response.status_code == 400 and message in response.content.decode()
    assert server.requests == [] and not Retriever.objects.exists()


def test_only_admins_may_try_an_endpoint(project, corpus, server, member):
    for role in ("lead", "labeller"):
        response = _try(
            login(member(role)), project, url=f"{server.url}/policies/_search", question="leave"
        )
        assert response.status_code in (400, 403, 404)
        assert "What the endpoint answered" not in response.content.decode()
    assert server.requests == [] and not Retriever.objects.exists()


def test_changing_an_endpoint_has_the_same_wide_url_field(project, corpus, server, member):
    retriever = retrieval.add_retriever(
        project=project,
        name="ours",
        kind="http",
        endpoint={"preset": "elasticsearch", "url": f"{server.url}/policies/_search"},
    )
    url = reverse("corpus:edit-endpoint", args=[project.slug, retriever.pk])
    page = login(member("admin")).get(url).content.decode()
    assert 'class="wide"' in page and f"{server.url}/policies/_search" in page
