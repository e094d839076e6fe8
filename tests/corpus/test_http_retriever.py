"""The HTTP retriever in the app: configured by admins (page and command), secrets refused as
values, results placed in the corpus (offsets, exact text, fuzzy text, whole document, unknown),
test users managed by admins, acl.json exported."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from corpus.models import AccessGroup, Document, PermissionProfile, Retriever
from corpus.services import documents, http_retrieval, retrieval, test_users
from goldset.errors import ServiceError
from tests.factories import add_documents, login
from tests.search_server import IndexedDocument, SearchServer

LEAVE = (
    "Annual leave\n\n"
    "Employees receive 25 days of paid annual leave per calendar year.\n\n"
    "Up to five unused days carry over with form HR-F-112."
)
VPN = (
    "VPN access\n\n"
    "Install the NW-VPN client from the software centre and approve the multi-factor prompt.\n\n"
    "The VPN disconnects after twelve hours without activity."
)
SALARIES = "Salary bands\n\nBand C pays 52,000 to 61,000 euros per year."
# The team's index holds an older VPN text (one word differs) and a document Goldset lacks.
TEAM_VPN = VPN.replace("software centre", "software center")


@pytest.fixture
def corpus(project):
    add_documents(
        project, ("leave", LEAVE), ("vpn", VPN), ("salaries", SALARIES, ["hr-confidential"])
    )
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=12, overlap=0
    )
    return scheme


@pytest.fixture
def server(settings):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    server = SearchServer(
        documents=[
            IndexedDocument("leave", LEAVE),
            IndexedDocument("vpn", TEAM_VPN),
            IndexedDocument("salaries", SALARIES, frozenset({"hr-confidential"})),
            IndexedDocument("ghost", "A leave policy Goldset never imported."),
        ],
        users={"alice": frozenset({"hr-confidential"}), "bob": frozenset()},
    ).start()
    yield server
    server.stop()


def es_retriever(project, server, name="ours", **endpoint):
    return retrieval.add_retriever(
        project=project,
        name=name,
        kind="http",
        endpoint={"preset": "elasticsearch", "url": f"{server.url}/policies/_search", **endpoint},
    )


def test_an_elasticsearch_retriever_places_results_by_exact_and_fuzzy_text(project, corpus, server):
    retriever = es_retriever(project, server)
    run = http_retrieval.search_http(
        retriever=retriever,
        questions=[("q1", "annual leave days"), ("q2", "install the VPN client software")],
        k=5,
    )
    assert run.errors == []
    leave = run.rankings[0][0]
    assert (leave.doc_id, leave.located) == ("leave", "exact")
    text = Document.objects.get(doc_id="leave").latest_version.text
    assert (
        text[leave.start : leave.end]
        == "Employees receive 25 days of paid annual leave per calendar year."
    )
    vpn = next(h for h in run.rankings[1] if h.doc_id == "vpn")
    assert vpn.located == "fuzzy"
    vpn_text = Document.objects.get(doc_id="vpn").latest_version.text
    assert vpn_text[vpn.start : vpn.end].startswith(
        "Install the NW-VPN client from the software centre"
    )
    ghost = next(h for ranking in run.rankings for h in ranking if h.doc_id == "ghost")
    assert ghost.located == "unknown" and ghost.document_id is None
    assert [w["doc_id"] for w in run.warnings] == ["ghost"]
    assert run.located["exact"] >= 1 and run.located["fuzzy"] == 1 and run.located["unknown"] == 1
    assert "by exact text" in run.summary() and "1 by fuzzy text" in run.summary()


def test_offsets_are_taken_checked_and_a_result_without_them_is_its_whole_document(
    project, corpus, server
):
    custom = {
        "url": f"{server.url}/api/find?query={{{{question}}}}&limit={{{{k}}}}",
        "method": "GET",
        "mapping": {
            "results": "data.items",
            "doc_id": "ref.id",
            "score": "relevance",
            "start": "span.from",
            "end": "span.to",
        },
    }
    retriever = retrieval.add_retriever(
        project=project, name="custom", kind="http", endpoint=custom
    )
    run = http_retrieval.search_http(retriever=retriever, questions=[("q1", "annual leave")], k=3)
    leave = run.rankings[0][0]
    assert leave.located == "offsets" and (leave.start, leave.end) != (None, None)
    # The same API without offsets or text: each result is its whole document.
    whole = retrieval.add_retriever(
        project=project,
        name="whole",
        kind="http",
        endpoint={**custom, "mapping": {"results": "data.items", "doc_id": "ref.id"}},
    )
    run = http_retrieval.search_http(retriever=whole, questions=[("q1", "annual leave")], k=3)
    assert {h.located for h in run.rankings[0] if h.document_id} == {"document"}
    assert all(h.start is None for h in run.rankings[0])


def test_offsets_past_the_end_fall_back_to_the_text_and_never_name_a_restricted_document(
    project, corpus, server, monkeypatch
):
    retriever = es_retriever(project, server, mapping={"start": "_start", "end": "_end"})
    original = server._elasticsearch

    def with_offsets(handler, body):  # the team's index holds longer texts than Goldset
        server._json = lambda h, payload: SearchServer._json(
            server,
            h,
            {
                "hits": {
                    "hits": [
                        {**hit, "_start": 0, "_end": 10_000} for hit in payload["hits"]["hits"]
                    ]
                }
            },
        )
        try:
            original(handler, body)
        finally:
            del server._json

    monkeypatch.setattr(server, "_elasticsearch", with_offsets)
    run = http_retrieval.search_http(retriever=retriever, questions=[("q1", "salary bands")], k=2)
    hit = run.rankings[0][0]
    assert hit.doc_id == "salaries" and hit.located == "exact"
    assert "past the end of a restricted document" in run.warnings[0]["error"]
    assert "salaries" not in json.dumps(run.warnings)


def test_a_failed_question_is_listed_and_a_missing_environment_variable_named(
    project, corpus, server
):
    retriever = es_retriever(project, server, url=f"{server.url}/notjson")
    run = http_retrieval.search_http(retriever=retriever, questions=[("q7", "leave")], k=3)
    assert run.errors == [
        {
            "source": "question q7",
            "error": "ours: the answer is not JSON (text/html)",
            "remote": "<html>Login required</html>",
        }
    ]
    with pytest.raises(http_retrieval.HttpSearchFailed, match="1 question got no usable answer"):
        run.raise_for_errors(retriever)
    secret = es_retriever(project, server, name="secret", headers={"Authorization": "env:GS_NOPE"})
    with pytest.raises(ServiceError, match="GS_NOPE, which is not set"):
        http_retrieval.search_http(retriever=secret, questions=[("q1", "leave")], k=3)


def test_env_headers_are_sent_and_only_the_reference_is_stored(
    project, corpus, server, monkeypatch
):
    monkeypatch.setenv("OUR_SEARCH_TOKEN", "Bearer s3cret-value")
    retriever = es_retriever(project, server, headers={"Authorization": "env:OUR_SEARCH_TOKEN"})
    http_retrieval.search_http(retriever=retriever, questions=[("q1", "leave")], k=3)
    assert server.requests[-1].headers["Authorization"] == "Bearer s3cret-value"
    stored = Retriever.objects.filter(pk=retriever.pk).values_list("endpoint", flat=True).get()
    assert stored["headers"] == {"Authorization": "env:OUR_SEARCH_TOKEN"}
    assert "s3cret" not in json.dumps(stored)


@pytest.mark.parametrize(
    "endpoint, message",
    [
        (
            {"preset": "elasticsearch", "url": "http://10.0.0.7:9200/p/_search"},
            "10.0.0.7:9200 is not in",
        ),
        (
            {"preset": "elasticsearch", "url": "https://search.example.com/p/_search"},
            "is not in GOLDSET",
        ),
        (
            {
                "preset": "elasticsearch",
                "url": "http://127.0.0.1:9200/p/_search",
                "headers": {"Authorization": "Bearer abc"},
            },
            "looks like a credential",
        ),
        ({"url": "http://127.0.0.1:9200/p/_search"}, "results path is required"),
        ({"preset": "nope"}, "Unknown preset"),
    ],
)
def test_an_http_retriever_that_cannot_work_is_refused_and_nothing_stored(
    project, settings, endpoint, message
):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    with pytest.raises(ServiceError, match=message):
        retrieval.add_retriever(project=project, name="x", kind="http", endpoint=endpoint)
    assert not Retriever.objects.exists()


def test_an_http_retriever_has_no_index_to_build(project, corpus, server):
    retriever = es_retriever(project, server)
    with pytest.raises(ServiceError, match="it has no index"):
        retrieval.start_index_build(retriever=retriever)
    with pytest.raises(ServiceError, match="searches the team's own system"):
        retrieval.retrieve(retriever=retriever, questions=["x"], k=3)


# --- the command and the pages ----------------------------------------------------------------


def test_add_retriever_kind_http_from_the_command_line(project, corpus, server, capsys, tmp_path):
    body = tmp_path / "body.json"
    body.write_text('{"size": "{{k}}", "query": {"match": {"text": "{{question}}"}}}')
    call_command(
        "add_retriever",
        "--project",
        project.slug,
        "--name",
        "ours",
        "--kind",
        "http",
        "--preset",
        "elasticsearch",
        "--url",
        f"{server.url}/policies/_search",
        "--header",
        "Authorization: env:OUR_SEARCH_TOKEN",
        "--body",
        f"@{body}",
        "--text-path",
        "_source.text",
        "--timeout",
        "5",
        "--concurrency",
        "2",
    )
    assert "Retriever ours (http) added" in capsys.readouterr().out
    endpoint = Retriever.objects.get(name="ours").endpoint
    assert endpoint["mapping"] == {
        "results": "hits.hits",
        "doc_id": "_id",
        "score": "_score",
        "start": "",
        "end": "",
        "text": "_source.text",
    }
    assert endpoint["timeout"] == 5.0 and endpoint["concurrency"] == 2
    assert json.loads(endpoint["body"])["size"] == "{{k}}"
    for extra, message in (
        (["--header", "X-Api-Key: abc"], "looks like a credential"),
        (["--url", "http://169.254.169.254/latest"], "169.254.169.254:80 is not in"),
        (["--body", "{not json"], "not JSON"),
        (["--header", "no colon"], "should read 'Name: value'"),
    ):
        arguments = [
            "add_retriever",
            "--project",
            project.slug,
            "--name",
            "bad",
            "--kind",
            "http",
            "--preset",
            "elasticsearch",
            "--url",
            f"{server.url}/p",
        ]
        with pytest.raises(CommandError, match=message) as refused:
            call_command(*arguments, *extra)
        assert refused.value.returncode == 2
    assert not Retriever.objects.filter(name="bad").exists()


def test_only_admins_configure_http_retrievers_in_the_browser(project, corpus, server, member):
    url = reverse("corpus:add-retriever", args=[project.slug])
    lead = login(member("lead"))
    page = lead.get(url).content.decode()
    assert 'value="http"' not in page and "HTTP: URL template" not in page
    response = lead.post(url, {"name": "ours", "kind": "http", "url": server.url})
    assert response.status_code == 400 and not Retriever.objects.exists()

    admin = login(member("admin"))
    form = {
        "name": "ours",
        "kind": "http",
        "preset": "elasticsearch",
        "url": f"{server.url}/policies/_search",
        "headers": "Authorization: Bearer abc",
    }
    response = admin.post(url, form)
    assert response.status_code == 400
    assert "looks like a credential" in response.content.decode()
    response = admin.post(url, {**form, "headers": "Authorization: env:OUR_SEARCH_TOKEN"})
    retriever = Retriever.objects.get(name="ours")
    assert response.status_code == 302 and retriever.kind == "http"
    page = admin.get(reverse("corpus:show-retriever", args=[project.slug, retriever.pk]))
    text = page.content.decode()
    assert "Authorization: env:OUR_SEARCH_TOKEN" in text and "hits.hits" in text


# --- test users ---------------------------------------------------------------------------------


def test_test_users_are_checked_and_saved(project, corpus):
    alice = test_users.save_test_user(
        project=project,
        name="alice",
        groups=["hr-confidential"],
        headers={"X-Test-User": "alice", "Authorization": "env:ALICE_TOKEN"},
    )
    assert list(alice.access_groups.values_list("name", flat=True)) == ["hr-confidential"]
    for kwargs, message in (
        ({"name": "bob"}, "has no access group"),
        ({"name": "bob", "groups": ["hr-confidental"]}, "No access group 'hr-confidental'"),
        ({"name": "bob", "unrestricted": True, "groups": ["hr-confidential"]}, "give no groups"),
        ({"name": "bob", "no_groups": True, "headers": {"Cookie": "session=1"}}, "credential"),
        ({"name": "bob", "no_groups": True, "user_value": "env:SECRET_KEY"}, "own secret"),
        ({"name": "Bob Smith", "no_groups": True}, "is a slug"),
        ({"name": "unrestricted", "no_groups": True}, "reference run"),
        ({"name": "alice", "no_groups": True}, "already exists"),
    ):
        with pytest.raises(ServiceError, match=message):
            test_users.save_test_user(project=project, **kwargs)
    assert PermissionProfile.objects.count() == 1
    test_users.save_test_user(project=project, name="bob", no_groups=True)
    test_users.save_test_user(project=project, name="admin", unrestricted=True)
    assert test_users.acl_of(project) == {"admin": "*", "alice": ["hr-confidential"], "bob": []}


def test_add_test_user_and_export_acl_commands(project, corpus, capsys, tmp_path):
    call_command(
        "add_test_user",
        "--project",
        project.slug,
        "--name",
        "alice",
        "--groups",
        "hr-confidential",
        "--header",
        "X-Test-User: alice",
        "--value",
        '{"id": "alice"}',
    )
    call_command("add_test_user", "--project", project.slug, "--name", "bob", "--no-groups")
    assert "Test user bob added: sees unrestricted documents only." in capsys.readouterr().out
    assert PermissionProfile.objects.get(name="alice").user_value == {"id": "alice"}
    with pytest.raises(CommandError, match="pass --replace") as refused:
        call_command("add_test_user", "--project", project.slug, "--name", "bob", "--no-groups")
    assert refused.value.returncode == 2
    call_command(
        "add_test_user", "--project", project.slug, "--name", "bob", "--unrestricted", "--replace"
    )
    out = tmp_path / "acl.json"
    call_command("export_acl", "--project", project.slug, "--out", str(out))
    assert json.loads(out.read_text()) == {"alice": ["hr-confidential"], "bob": "*"}


def test_admins_manage_test_users_in_the_browser_and_leads_only_see_them(project, corpus, member):
    admin, lead = login(member("admin")), login(member("lead"))
    group = AccessGroup.objects.get(name="hr-confidential")
    add = reverse("corpus:add-test-user", args=[project.slug])
    assert lead.get(add).status_code == 403
    assert lead.post(add, {"name": "x", "no_groups": "on"}).status_code == 403
    response = admin.post(add, {"name": "alice", "headers": "X-Api-Key: abc"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "looks like a credential" in page or "has no access group" in page
    response = admin.post(
        add, {"name": "alice", "groups": [group.pk], "headers": "X-Api-Key: env:ALICE_KEY"}
    )
    assert response.status_code == 302
    alice = PermissionProfile.objects.get(name="alice")
    listing = lead.get(reverse("corpus:list-test-users", args=[project.slug])).content.decode()
    assert "alice" in listing and "X-Api-Key: env:ALICE_KEY" in listing and "Edit" not in listing
    edit = reverse("corpus:edit-test-user", args=[project.slug, alice.pk])
    assert admin.post(edit, {"name": "alice", "unrestricted": "on"}).status_code == 302
    alice.refresh_from_db()
    assert alice.unrestricted and not alice.access_groups.exists()
    delete = reverse("corpus:delete-test-user", args=[project.slug, alice.pk])
    assert lead.post(delete).status_code == 403
    assert admin.post(delete).status_code == 302 and not PermissionProfile.objects.exists()


def test_what_a_server_answers_reaches_admins_only_bounded_and_escaped(
    project, corpus, server, member
):
    """A server's answer (an error page, the JSON of an authentication endpoint) is never in a
    job's message or a problem's text; a bounded excerpt of it is shown to the project's admins
    only, escaped, on the job page."""
    from corpus import jobs
    from corpus.models import Job

    hostile = '<script>alert("search")</script>{"username": "elastic", "roles": ["superuser"]}'
    original = server._answer

    def answer(handler):
        if handler.path.startswith("/hostile"):
            return server._send(handler, 200, (hostile + "x" * 5000).encode(), kind="text/html")
        if handler.path.startswith("/refusing"):
            return server._send(handler, 401, hostile.encode(), kind="application/json")
        if handler.path.startswith("/shapeless"):
            return server._json(handler, {"username": "elastic", "roles": ["superuser"]})
        return original(handler)

    server._answer = answer
    admin, lead = login(member("admin")), login(member("lead"))
    for path in ("/hostile", "/refusing", "/shapeless"):
        retriever = es_retriever(project, server, name=path[1:], url=f"{server.url}{path}")
        run = http_retrieval.search_http(retriever=retriever, questions=[("q1", "leave")], k=3)
        with pytest.raises(http_retrieval.HttpSearchFailed) as failed:
            run.raise_for_errors(retriever)
        job = Job.objects.create(project=project, kind="build_pool", errors=failed.value.problems)
        jobs.finish(job, "failed", str(failed.value))
        said = "username" if path == "/shapeless" else "elastic"
        assert said not in job.message and said not in run.errors[0]["error"]
        assert len(run.errors[0]["remote"]) <= 201
        url = reverse("corpus:show-job", args=[project.slug, job.pk])
        seen_by_lead = lead.get(url).content.decode()
        assert said not in seen_by_lead and "superuser" not in seen_by_lead
        assert "alert(" not in seen_by_lead and "What the server answered" not in seen_by_lead
        htmx = lead.get(url, HTTP_HX_REQUEST="true").content.decode()
        assert said not in htmx
        seen_by_admin = admin.get(url).content.decode()
        assert "What the server answered (admins only)" in seen_by_admin
        assert said in seen_by_admin and "x" * 300 not in seen_by_admin
        assert "<script>alert(" not in seen_by_admin
        if path == "/hostile":
            assert "&lt;script&gt;alert(" in seen_by_admin


def test_admins_change_an_endpoint_in_the_browser_checked_as_when_it_was_added(
    project, corpus, server, member
):
    retriever = es_retriever(project, server)
    url = reverse("corpus:edit-endpoint", args=[project.slug, retriever.pk])
    admin, lead = login(member("admin")), login(member("lead"))
    assert lead.get(url).status_code == 403
    page = admin.get(url).content.decode()
    assert "hits.hits" in page and f"{server.url}/policies/_search" in page
    form = {
        "url": f"{server.url}/policies/_search",
        "method": "POST",
        "body": Retriever.objects.get(pk=retriever.pk).endpoint["body"],
        "results_path": "hits.hits",
        "doc_id_path": "_id",
        "score_path": "_score",
        "text_path": "highlight.text",
        "timeout": "3",
        "retries": "1",
        "concurrency": "2",
        "headers": "X-Api-Key: plain-secret",
    }
    response = admin.post(url, form)
    assert response.status_code == 400 and "looks like a credential" in response.content.decode()
    response = admin.post(url, {**form, "headers": "X-Api-Key: env:OUR_KEY", "doc_id_path": ""})
    assert response.status_code == 400 and "doc id path is required" in response.content.decode()
    assert admin.post(url, {**form, "headers": "X-Api-Key: env:OUR_KEY"}).status_code == 302
    endpoint = Retriever.objects.get(pk=retriever.pk).endpoint
    assert endpoint["headers"] == {"X-Api-Key": "env:OUR_KEY"} and endpoint["timeout"] == 3.0
    documents.chunk_corpus(scheme=corpus)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=corpus)
    assert (
        admin.get(reverse("corpus:edit-endpoint", args=[project.slug, bm25.pk])).status_code == 404
    )


# --- malformed URLs are a field's error, never a 500 ----------------------------------------------

BAD_URLS = [
    ("http://0177.0.0.1:{port}/policies/_search", "another notation"),
    ("http://127.0.0.1\t:{port}/policies/_search", "a tab character"),
    ("http://１２７.０.０.１:{port}/policies/_search", "outside ASCII"),
    ("http://127.0.0.1:８１２５/policies/_search", "not a number from 1 to 65535"),
    ("http://2130706433:{port}/policies/_search", "another notation"),
    ("http://[::1:{port}/policies/_search", "no closing ]"),
    ("http://ex\u200bample.com/policies/_search", "zero width space"),
    ("http://127.0.0.1:{port}/policies/_search?access_token=abc", "looks like a credential"),
    ("http://127.0.0.1:{port}/policies/_search?q=x&auth=abc", "looks like a credential"),
]


@pytest.mark.parametrize("bad, message", BAD_URLS)
def test_a_malformed_url_is_the_url_fields_error_on_both_forms_and_the_command(
    project, corpus, server, member, bad, message
):
    bad = bad.replace("{port}", str(server.port))
    admin = login(member("admin"))
    add = reverse("corpus:add-retriever", args=[project.slug])
    response = admin.post(
        add, {"name": "bad", "kind": "http", "preset": "elasticsearch", "url": bad}
    )
    assert response.status_code == 400 and message in response.content.decode()
    assert response.context["form"].errors["url"]  # the field is named
    assert not Retriever.objects.filter(name="bad").exists()

    retriever = es_retriever(project, server)
    before = Retriever.objects.get(pk=retriever.pk).endpoint
    edit = reverse("corpus:edit-endpoint", args=[project.slug, retriever.pk])
    form = {**_endpoint_form(before), "url": bad}
    response = admin.post(edit, form)
    assert response.status_code == 400 and message in response.content.decode()
    assert response.context["form"].errors["url"]
    assert Retriever.objects.get(pk=retriever.pk).endpoint == before

    arguments = ["add_retriever", "--project", project.slug, "--name", "bad", "--kind", "http"]
    with pytest.raises(CommandError, match=message) as refused:
        call_command(*arguments, "--preset", "elasticsearch", "--url", bad)
    assert refused.value.returncode == 2
    with pytest.raises(ServiceError, match=message):
        http_retrieval.change_endpoint(retriever=retriever, endpoint={**before, "url": bad})
    assert not Retriever.objects.filter(name="bad").exists()
    assert server.requests == []


def _endpoint_form(endpoint):
    mapping = endpoint["mapping"]
    return {
        "url": endpoint["url"],
        "method": endpoint["method"],
        "body": endpoint["body"],
        "headers": "",
        **{f"{name}_path": mapping[name] for name in mapping},
        "timeout": endpoint["timeout"],
        "retries": endpoint["retries"],
        "concurrency": endpoint["concurrency"],
    }


def test_results_naming_no_document_the_caller_may_see_are_refused(project, corpus, server, member):
    """As an upload: none known is refused, and a hidden document is unknown to its caller."""
    retriever = es_retriever(project, server)

    def run_of(*doc_ids):
        return http_retrieval.HttpRun(
            rankings=[
                [
                    http_retrieval.PlacedHit(rank, 1.0, doc_id, "document")
                    for rank, doc_id in enumerate(doc_ids, start=1)
                ]
            ]
        )

    with pytest.raises(http_retrieval.HttpSearchFailed) as refused:
        run_of("ghost", "spectre").raise_for_errors(retriever)
    assert str(refused.value).startswith(
        "ours names no document the corpus has: 2 unknown document ids ('ghost', "
        "'spectre'); nothing was stored."
    )
    outsider = member("lead")
    messages = {}
    for doc_id in ("salaries", "salariez"):
        with pytest.raises(http_retrieval.HttpSearchFailed) as refused:
            run_of(doc_id).raise_for_errors(retriever, user=outsider)
        messages[doc_id] = str(refused.value)
    assert messages["salaries"] == messages["salariez"].replace("salariez", "salaries")
    run_of("ghost", "leave").raise_for_errors(retriever, user=outsider)  # one known: used
    run_of("salaries").raise_for_errors(retriever)  # the corpus' own view knows it
