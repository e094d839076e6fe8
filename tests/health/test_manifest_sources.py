"""A retriever's manifest is fetched from its own admin-configured source, with that source's
headers only: never the search endpoint's credentials, never a URL a lead chose, never after a
redirect, and what the server answered reaches admins only, bounded and escaped."""

from __future__ import annotations

import threading
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils.html import escape

from corpus.models import Job, JobState
from corpus.services import retrieval
from goldset.errors import ServiceError
from health.models import IndexManifest, ManifestSource
from health.services import manifest_sources
from tests.factories import login
from tests.health.test_index_health import GOOD, corpus  # noqa: F401 - the corpus fixture

AUTHENTICATE = b'{"username": "elastic", "roles": ["superuser"], "token": "<script>x</script>"}'


class Server:
    """A team's host on 127.0.0.1: the manifest, an authentication endpoint, a redirect, and an
    error page; every request recorded with its headers."""

    def __init__(self):
        self.seen: list[tuple[str, dict]] = []
        routes = self.routes = {
            "/manifest.csv": (200, GOOD, {}),
            "/_security/_authenticate": (200, AUTHENTICATE, {}),
            "/denied": (401, AUTHENTICATE + b" " + b"x" * 5000, {}),
        }
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                seen.append((self.path, dict(self.headers.items())))
                status, body, headers = routes.get(self.path, (404, b"no", {}))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.port = self.server.server_address[1]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def team_host(settings, monkeypatch):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    monkeypatch.setenv("SEARCH_TOKEN", "search-secret")
    monkeypatch.setenv("MANIFEST_KEY", "manifest-secret")
    server = Server()
    yield server
    server.stop()


@pytest.fixture
def live(corpus, team_host):  # noqa: F811
    return retrieval.add_retriever(
        project=corpus,
        name="live",
        kind="http",
        endpoint={
            "preset": "elasticsearch",
            "url": f"{team_host.url}/policies/_search",
            "headers": {"Authorization": "env:SEARCH_TOKEN", "X-Token": "env:SEARCH_TOKEN"},
        },
    )


def fetch(client, retriever, capture):
    with capture(execute=True):
        response = client.post(
            reverse("health:fetch-manifest", args=[retriever.project.slug, retriever.pk])
        )
    return response, Job.objects.filter(kind="import_manifest").latest("pk")


def test_a_fetch_goes_to_the_admins_source_with_its_own_headers_only(
    live, team_host, member, django_capture_on_commit_callbacks, inline_jobs
):
    admin, lead = login(member("admin")), login(member("lead"))
    edit = reverse("health:edit-manifest-source", args=[live.project.slug, live.pk])
    response = admin.post(
        edit,
        {
            "url": f"{team_host.url}/manifest.csv",
            "headers": "X-Manifest-Key: env:MANIFEST_KEY",
            "timeout": "5",
        },
    )
    assert response.status_code == 302
    source = ManifestSource.objects.get(retriever=live)
    assert source.headers == {
        "X-Manifest-Key": "env:MANIFEST_KEY"
    }  # the reference, never the value
    page = lead.get(reverse("health:show-index-health", args=[live.project.slug])).content.decode()
    assert f"{team_host.url}/manifest.csv" in page and "Fetch live's manifest" in page

    response, job = fetch(lead, live, django_capture_on_commit_callbacks)
    assert response.status_code == 302 and job.state == JobState.SUCCEEDED, job.message
    assert IndexManifest.objects.get(retriever=live).rows == 4
    ((path, headers),) = team_host.seen
    assert path == "/manifest.csv" and headers["X-Manifest-Key"] == "manifest-secret"
    # The search endpoint's credentials never travel with a fetch.
    assert "search-secret" not in str(headers) and "Authorization" not in headers

    # Any retriever may have a source (an uploaded run's team index too).
    team = retrieval.add_retriever(project=live.project, name="team", kind="run")
    manifest_sources.set_manifest_source(
        retriever=team, url=f"{team_host.url}/manifest.csv", headers={}, user=None
    )
    response, job = fetch(lead, team, django_capture_on_commit_callbacks)
    assert job.state == JobState.SUCCEEDED and IndexManifest.objects.filter(retriever=team).exists()
    assert "X-Manifest-Key" not in team_host.seen[-1][1]


def test_leads_never_choose_where_a_fetch_goes(
    live, team_host, member, django_capture_on_commit_callbacks, inline_jobs
):
    lead = login(member("lead"))
    slug = live.project.slug
    edit = reverse("health:edit-manifest-source", args=[slug, live.pk])
    assert lead.get(edit).status_code == 403
    assert lead.post(edit, {"url": f"{team_host.url}/_security/_authenticate"}).status_code == 403
    assert login(member("labeller")).post(edit, {"url": team_host.url}).status_code == 403
    assert not ManifestSource.objects.exists()
    # The upload form takes no URL any more; the fetch button needs a source.
    upload = reverse("health:upload-manifest", args=[slug])
    target = f"{team_host.url}/_security/_authenticate"
    with django_capture_on_commit_callbacks(execute=True):
        response = lead.post(upload, {"retriever": live.pk, "url": target})
    assert response.status_code == 400 and not Job.objects.exists()
    response, _ = (
        lead.post(reverse("health:fetch-manifest", args=[slug, live.pk]), follow=True),
        None,
    )
    assert "live has no manifest source: an admin configures one" in response.content.decode()
    # A job queued when the form still took a URL is never fetched.
    job = Job.objects.create(
        project=live.project,
        kind="import_manifest",
        task="health.tasks.import_manifest",
        params={"retriever_id": live.pk, "url": target},
    )
    from corpus import jobs
    from health.services.manifests import run_manifest_import

    jobs.run(job.pk, run_manifest_import)
    job.refresh_from_db()
    assert job.state == JobState.FAILED and "an admin sets live's manifest source" in job.message
    assert team_host.seen == [] and not IndexManifest.objects.exists()
    with pytest.raises(CommandError, match="no manifest source"):
        call_command("import_manifest", "--fetch", "--project", slug, "--retriever", "live")


BAD_SOURCES = [
    ({"url": "http://0177.0.0.1:{port}/manifest.csv"}, "url", "another notation"),
    ({"url": "http://127.0.0.1\t:{port}/manifest.csv"}, "url", "a tab character"),
    ({"url": "http://１２７.０.０.１:{port}/manifest.csv"}, "url", "outside ASCII"),
    ({"url": "http://127.0.0.1:８１２５/manifest.csv"}, "url", "not a number from 1 to 65535"),
    ({"url": "http://2130706433:{port}/m.csv"}, "url", "another notation"),
    ({"url": "http://[::1:{port}/m.csv"}, "url", "no closing ]"),
    ({"url": "{{question}}"}, "url", "takes no placeholders"),
    ({"url": "http://169.254.169.254/latest/meta-data"}, "url", "is not in GOLDSET_HTTP_ALLOWED"),
    ({"url": "http://user:pw@127.0.0.1:{port}/m.csv"}, "url", "user name or password"),
    ({"url": "file:///etc/passwd"}, "url", "must start with http:// or https://"),
    ({"url": "http://127.0.0.1:{port}/m.csv?api_key=abc"}, "url", "looks like a credential"),
    ({"url": "http://127.0.0.1:{port}/m.csv?X-Amz-Signature=f0"}, "url", "looks like a credential"),
    ({"headers": "Authorization: Bearer abc"}, "headers", "looks like a credential"),
    ({"headers": "X-Key: env:SECRET_KEY"}, "headers", "Goldset's own secret"),
    ({"headers": "no colon"}, "headers", "should read 'Name: value'"),
    ({"timeout": "0"}, "timeout", "greater than or equal to 0.1"),
]


@pytest.mark.parametrize("change, field, message", BAD_SOURCES)
def test_a_source_that_cannot_be_used_is_its_fields_error_and_the_commands(
    live, team_host, member, change, field, message
):
    change = {k: v.replace("{port}", str(team_host.port)) for k, v in change.items()}
    form = {"url": f"{team_host.url}/manifest.csv", "headers": "", "timeout": "5", **change}
    admin = login(member("admin"))
    edit = reverse("health:edit-manifest-source", args=[live.project.slug, live.pk])
    response = admin.post(edit, form)
    assert response.status_code == 400 and message in unescape(response.content.decode())
    assert response.context["form"].errors[field]
    arguments = ["--project", live.project.slug, "--retriever", "live", "--url", form["url"]]
    if form["headers"]:
        arguments += ["--header", form["headers"]]
    if field == "timeout":
        arguments += ["--timeout", form["timeout"]]
    with pytest.raises(CommandError) as refused:
        call_command("set_manifest_source", *arguments)
    assert refused.value.returncode == 2
    if field != "timeout":  # the form's own bound words it differently
        assert message in str(refused.value)
    assert not ManifestSource.objects.exists() and team_host.seen == []


def test_a_scheme_is_never_downgraded_and_an_address_port_binds_names(live, settings, team_host):
    https = retrieval.add_retriever(
        project=live.project,
        name="secure",
        kind="http",
        endpoint={
            "preset": "elasticsearch",
            "url": f"https://127.0.0.1:{team_host.port}/p/_search",
        },
    )
    with pytest.raises(ServiceError, match="over https: its manifest is fetched over https too"):
        manifest_sources.set_manifest_source(
            retriever=https, url=f"{team_host.url}/manifest.csv", headers={}, user=None
        )
    # localhost is listed by name, its address only on another port: the address's port binds.
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["localhost", f"127.0.0.1:{team_host.port + 1}"]
    source = ManifestSource.objects.create(
        retriever=live, url=f"http://localhost:{team_host.port}/manifest.csv"
    )
    with pytest.raises(ServiceError, match="for port"):
        manifest_sources.fetch_manifest(source=source)
    assert team_host.seen == []


def test_a_redirect_is_never_followed(
    live, team_host, member, django_capture_on_commit_callbacks, inline_jobs
):
    other = Server()
    try:
        team_host.routes["/moved"] = (
            302,
            b"",
            {"Location": f"http://127.0.0.1:{other.port}/_security/_authenticate"},
        )
        manifest_sources.set_manifest_source(
            retriever=live,
            url=f"{team_host.url}/moved",
            headers={"X-Manifest-Key": "env:MANIFEST_KEY"},
            user=None,
        )
        _, job = fetch(login(member("lead")), live, django_capture_on_commit_callbacks)
        assert job.state == JobState.FAILED and "redirects are not followed" in job.message
        assert other.seen == [] and not IndexManifest.objects.exists()
    finally:
        other.stop()


@pytest.mark.parametrize("path", ["/denied", "/_security/_authenticate"])
def test_what_the_source_answered_reaches_admins_only_bounded_and_escaped(
    live, team_host, member, django_capture_on_commit_callbacks, inline_jobs, path
):
    """An error page, or a body that is no manifest (an authentication endpoint's JSON): the
    job's message and problems never quote it; admins see a bounded, escaped excerpt."""
    manifest_sources.set_manifest_source(
        retriever=live, url=f"{team_host.url}{path}", headers={}, user=None
    )
    lead, admin = login(member("lead")), login(member("admin"))
    _, job = fetch(lead, live, django_capture_on_commit_callbacks)
    assert job.state == JobState.FAILED and "nothing was stored" in job.message
    assert "elastic" not in job.message and "superuser" not in job.message
    assert all("elastic" not in e["error"] for e in job.errors)
    assert all(len(e["remote"]) <= 201 for e in job.errors)
    url = reverse("corpus:show-job", args=[live.project.slug, job.pk])
    for page in (lead.get(url), lead.get(url, HTTP_HX_REQUEST="true")):
        text = page.content.decode()
        assert page.status_code == 200 and "elastic" not in text and "superuser" not in text
    text = admin.get(url).content.decode()
    assert "What the server answered (admins only)" in text
    # The error page's words; for the body read as a manifest, what its lines held.
    assert path != "/denied" or "elastic" in text
    assert escape(job.errors[0]["remote"]) in text
    assert "<script>x" not in text and "x" * 300 not in text
    assert not IndexManifest.objects.exists()


def test_import_manifest_fetch_from_the_command_line(live, team_host, capsys):
    call_command(
        "set_manifest_source",
        "--project",
        live.project.slug,
        "--retriever",
        "live",
        "--url",
        f"{team_host.url}/manifest.csv",
        "--header",
        "X-Manifest-Key: env:MANIFEST_KEY",
    )
    call_command(
        "import_manifest", "--fetch", "--project", live.project.slug, "--retriever", "live"
    )
    assert "Stored 4 manifest rows for live." in capsys.readouterr().out
    assert team_host.seen[-1][1]["X-Manifest-Key"] == "manifest-secret"
    call_command(
        "set_manifest_source", "--project", live.project.slug, "--retriever", "live", "--remove"
    )
    assert not ManifestSource.objects.exists()
