"""Traces in: `manage.py import_traces` and `POST /api/p/<project>/traces` (tokens, limits,
idempotency, per-item errors), the token page, and retention."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from production.models import ApiToken, Trace
from production.services import traces as services
from tests.factories import MembershipFactory, ProjectFactory, UserFactory, add_documents, login


def trace(n: int, **extra) -> dict:
    return {
        "trace_id": f"t-{n}",
        "occurred_at": "2026-11-30T09:00:00Z",
        "user": {"id": f"user-{n}", "groups": ["hr"]},
        "question": f"how many leave days, case {n}?",
        "retrieved": [{"doc_id": "leave", "rank": 1, "score": 0.8}],
        **extra,
    }


@pytest.fixture
def project(db):
    project = ProjectFactory(slug="acme")
    add_documents(project, ("leave", "Employees may carry over five days of leave."))
    return project


def write(tmp_path, lines: list) -> str:
    path = tmp_path / "traces.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return str(path)


def test_the_command_stores_traces_once_and_flags_unknown_documents(project, tmp_path):
    unknown = trace(3, retrieved=[{"doc_id": "gone-from-corpus", "rank": 1}])
    path = write(tmp_path, [trace(1), trace(2), unknown, trace(1)])
    out = StringIO()
    call_command("import_traces", path, project="acme", stdout=out, stderr=StringIO())
    assert "3 traces stored, 1 already present" in out.getvalue()
    assert "1 name documents the corpus does not have" in out.getvalue()
    # The ids themselves, counted and named (never refused: they are the drift's evidence).
    assert "they: 1 unknown document id of 2 named, kept ('gone-from-corpus')" in out.getvalue()
    assert Trace.objects.filter(project=project).count() == 3
    flagged = Trace.objects.get(trace_id="t-3")
    assert flagged.has_unknown_documents and flagged.unknown_doc_ids == ["gone-from-corpus"]
    first = Trace.objects.get(trace_id="t-1")
    assert first.question == "how many leave days, case 1?"
    # On PostgreSQL the file goes in by COPY: the rows must read back as the ORM writes them.
    assert first.retrieved == [{"doc_id": "leave", "rank": 1, "score": 0.8}]
    assert first.user == "user-1" and first.user_groups == ["hr"]
    assert first.index_manifest is None and first.refused is None and first.top_score == 0.8

    out = StringIO()
    call_command("import_traces", path, project="acme", stdout=out, stderr=StringIO())
    assert "0 traces stored, 4 already present" in out.getvalue()
    assert Trace.objects.count() == 3


def test_a_bad_line_stores_nothing_and_is_named_with_its_line(project, tmp_path):
    path = write(tmp_path, [trace(1), "{broken", trace(2), {"trace_id": "x"}])
    err = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("import_traces", path, project="acme", stdout=StringIO(), stderr=err)
    assert raised.value.returncode == 2
    assert f"{path}:2: not valid JSON" in err.getvalue()
    assert f"{path}:4: occurred_at is missing" in err.getvalue()
    assert "Nothing was imported" in str(raised.value)
    assert not Trace.objects.exists()


def test_the_command_refuses_an_unknown_project_or_file(project, tmp_path):
    with pytest.raises(CommandError, match="No project with the slug 'nope'"):
        call_command("import_traces", write(tmp_path, [trace(1)]), project="nope")
    with pytest.raises(CommandError, match="is not a file"):
        call_command("import_traces", str(tmp_path / "missing.jsonl"), project="acme")


# The endpoint ------------------------------------------------------------------------------


@pytest.fixture
def token(project):
    admin = UserFactory()
    MembershipFactory(project=project, user=admin, role="admin")
    row, raw = services.create_api_token(project=project, user=admin, name="bot")
    return raw


def post(body, token=None, client=None, content_type="application/json", slug="acme"):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    data = body if isinstance(body, bytes | str) else json.dumps(body)
    return (client or Client()).post(
        f"/api/p/{slug}/traces", data=data, content_type=content_type, **headers
    )


def test_a_batch_is_stored_and_a_replay_adds_nothing(token, project):
    batch = {"traces": [trace(1), trace(2)]}
    response = post(batch, token)
    assert response.status_code == 200
    assert response.json() == {
        "received": 2,
        "stored": 2,
        "already_present": 0,
        "unknown_documents": 0,
        "unknown_doc_ids": [],
        "errors": [],
    }
    again = post(batch, token)
    assert again.status_code == 200 and again.json()["already_present"] == 2
    assert Trace.objects.filter(project=project).count() == 2
    assert post(trace(3), token).json()["stored"] == 1  # a single trace
    assert post([trace(4)], token).json()["stored"] == 1  # a bare list
    assert ApiToken.objects.get().last_used_at is not None


def test_bad_items_get_their_own_errors_and_the_good_ones_are_stored(token, project):
    response = post([trace(1), {"trace_id": "bad-1", "question": "x"}, "nonsense"], token)
    assert response.status_code == 207
    body = response.json()
    assert body["stored"] == 1
    assert body["errors"][0]["index"] == 1 and body["errors"][0]["trace_id"] == "bad-1"
    assert body["errors"][0]["status"] == 422
    assert "occurred_at is missing" in body["errors"][0]["message"]
    assert body["errors"][1] == {"index": 2, "status": 422, "message": "expected a JSON object"}
    all_bad = post([{"trace_id": "x"}], token)
    assert all_bad.status_code == 422
    assert list(Trace.objects.values_list("trace_id", flat=True)) == ["t-1"]


def test_tokens_are_checked(token, project):
    admin = UserFactory()
    row = ApiToken.objects.get()
    assert post(trace(1)).status_code == 401
    assert post(trace(1), "gst_not-a-real-token").status_code == 401
    other = ProjectFactory(slug="other")
    assert post(trace(1), token, slug="other").status_code == 404
    assert post(trace(1), token, slug="no-such-project").status_code == 404
    _, expired = services.create_api_token(
        project=project, user=admin, name="old", expires_in_days=1
    )
    ApiToken.objects.filter(name="old").update(expires_at=timezone.now() - timedelta(seconds=1))
    response = post(trace(1), expired)
    assert response.status_code == 401 and "expired" in response.json()["error"]
    services.revoke_api_token(token=row, user=admin)
    response = post(trace(1), token)
    assert response.status_code == 401 and "revoked" in response.json()["error"]
    assert response["WWW-Authenticate"] == "Bearer"
    assert not Trace.objects.exists() and other.pk


def test_only_json_within_the_limits(token, settings):
    assert (
        post("trace_id=1", token, content_type="application/x-www-form-urlencoded").status_code
        == 415
    )
    response = post(b"{not json", token)
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]
    assert post([], token).status_code == 400
    settings.GOLDSET_TRACE_MAX_BATCH = 2
    assert post([trace(1), trace(2), trace(3)], token).status_code == 413
    settings.GOLDSET_TRACE_MAX_BODY_BYTES = 100
    response = post([trace(1)], token)
    assert response.status_code == 413 and "over 100 bytes" in response.json()["error"]
    assert not Trace.objects.exists()


def test_a_flood_gets_429(token, settings):
    settings.GOLDSET_TRACE_REQUESTS_PER_MINUTE = 3
    codes = [post(trace(n), token).status_code for n in range(5)]
    assert codes[:3] == [200, 200, 200]
    assert codes[3:] == [429, 429]
    response = post(trace(9), token)
    assert int(response["Retry-After"]) >= 1
    assert Trace.objects.count() == 3


def test_a_session_is_never_accepted_and_gets_the_apis_own_401(token, project):
    admin = UserFactory()
    MembershipFactory(project=project, user=admin, role="admin")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin)
    refused = post(trace(1), client=browser)  # a cross-site form: no token, no CSRF token
    assert refused.status_code == 401 and refused["Content-Type"] == "application/json"
    assert b"CSRF" not in refused.content
    logged_in = login(admin)
    response = post(trace(1), client=logged_in)
    assert response.status_code == 401 and "session is not accepted" in response.json()["error"]
    # A token request needs no CSRF token, from any client.
    assert post(trace(1), token, client=browser).status_code == 200
    assert Trace.objects.count() == 1


# The token page ----------------------------------------------------------------------------


def test_an_admin_makes_a_token_sees_it_once_and_revokes_it(project):
    admin, lead = UserFactory(), UserFactory()
    MembershipFactory(project=project, user=admin, role="admin")
    MembershipFactory(project=project, user=lead, role="lead")
    url = reverse("production:list-api-tokens", kwargs={"slug": "acme"})
    assert login(lead).get(url).status_code == 403
    client = login(admin)
    response = client.post(url, {"name": "support bot", "expires_in_days": "30"}, follow=True)
    assert response.redirect_chain == [(url, 302)]
    secret = response.context["secret"]
    assert secret.startswith("gst_") and secret in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    row = ApiToken.objects.get()
    assert row.digest == services.digest_of(secret) and secret not in str(row.__dict__)
    # A reload of the page showing the secret is a GET: no second token, the secret not again.
    page = client.get(url).content.decode()
    assert secret not in page and row.prefix in page and "live" in page
    assert ApiToken.objects.count() == 1
    session_keys = list(client.session.keys())  # a SessionBase is not iterable
    assert not any(key.startswith("new-api-token") for key in session_keys)
    # A form with errors is shown again with them, and makes nothing.
    assert client.post(url, {"name": "", "expires_in_days": "30"}).status_code == 400
    assert ApiToken.objects.count() == 1
    revoke = reverse("production:revoke-api-token", kwargs={"slug": "acme", "token_id": row.pk})
    assert client.post(revoke).status_code == 302
    row.refresh_from_db()
    assert row.revoked_at is not None and row.state == "revoked"
    assert post(trace(1), secret).status_code == 401


def test_the_traces_page_shows_drift_to_leads_but_never_who_asked(project, tmp_path):
    lead, labeller = UserFactory(), UserFactory()
    MembershipFactory(project=project, user=lead, role="lead")
    MembershipFactory(project=project, user=labeller, role="labeller")
    unknown = trace(2, retrieved=[{"doc_id": "gone-doc", "rank": 1}])
    call_command(
        "import_traces",
        write(tmp_path, [trace(1), unknown]),
        project="acme",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    url = reverse("production:list-traces", kwargs={"slug": "acme"})
    assert login(labeller).get(url).status_code == 403
    page = login(lead).get(url).content.decode()
    assert "2 traces stored" in page and "gone-doc" in page and "have drifted apart" in page
    assert "user-1" not in page and "user-2" not in page


def test_retention_deletes_old_traces_no_sample_holds(project, settings):
    settings.GOLDSET_TRACE_RETENTION_DAYS = 30
    items = [trace(1, occurred_at="2026-01-01T00:00:00Z"), trace(2)]
    services.receive_traces(project=project, items=items)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    assert services.purge_expired_traces(now=now) == 1
    assert list(Trace.objects.values_list("trace_id", flat=True)) == ["t-2"]


def test_on_postgresql_the_unique_index_decides_what_a_batch_stores(token, project):
    """No lookup of the stored trace ids before the insert (it could race a concurrent request,
    and costs a query per batch): INSERT … ON CONFLICT DO NOTHING, as the COPY path does."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from production.services.traces import receive_traces

    receive_traces(project=project, items=[trace(1)])
    with CaptureQueriesContext(connection) as queries:
        result = receive_traces(project=project, items=[trace(1), trace(2), trace(2)])
    assert (result.intake.stored, result.intake.already_present) == (1, 2)  # t-1, t-2 again
    assert Trace.objects.filter(project=project).count() == 2
    inserts = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("INSERT")]
    if connection.vendor == "postgresql":
        assert len(inserts) == 1 and "ON CONFLICT DO NOTHING" in inserts[0]
        assert not [q for q in queries if "trace_id" in q["sql"] and "SELECT" in q["sql"]]
    else:
        assert len(inserts) == 1  # SQLite: looked up first, then inserted
