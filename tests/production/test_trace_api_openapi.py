"""The trace API's OpenAPI document (docs/api/traces.yaml) says what the endpoint really does:
each request here goes to the running app, and its real status, headers and body are validated
against the document, so the manual cannot drift from the code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from django.test import Client
from openapi_core import OpenAPI
from openapi_core.testing import MockRequest, MockResponse
from openapi_spec_validator import validate as validate_spec

from production.services import traces as services
from tests.factories import MembershipFactory, ProjectFactory, UserFactory, add_documents

SPEC_PATH = Path(__file__).resolve().parents[2] / "docs" / "api" / "traces.yaml"
# The document names an example installation; the requests below are checked as if sent there.
SERVER = yaml.safe_load(SPEC_PATH.read_text())["servers"][0]["url"]


@pytest.fixture(scope="module")
def openapi() -> OpenAPI:
    return OpenAPI.from_file_path(str(SPEC_PATH))


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


@pytest.fixture
def admin(project):
    user = UserFactory()
    MembershipFactory(project=project, user=user, role="admin")
    return user


@pytest.fixture
def token(project, admin):
    _, raw = services.create_api_token(project=project, user=admin, name="bot")
    return raw


def exchange(
    openapi: OpenAPI,
    body=None,
    token: str | None = None,
    *,
    method: str = "post",
    slug: str = "acme",
    content_type: str = "application/json",
    client: Client | None = None,
    valid_request: bool = True,
):
    """Send a real request; check the response (and, when the request is one the document
    allows, the request too) against the document. Returns the Django response."""
    path = f"/api/p/{slug}/traces"
    data = body if isinstance(body, bytes | str) or body is None else json.dumps(body)
    data = data.encode() if isinstance(data, str) else data
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    client = client or Client()
    extra = {"HTTP_AUTHORIZATION": headers["Authorization"]} if token else {}
    if method == "post":
        response = client.post(path, data=data or b"", content_type=content_type, **extra)
    else:
        response = client.get(path, **extra)
    request = MockRequest(
        SERVER,
        method,
        path,
        headers=headers,
        data=data,
        content_type=content_type if method == "post" else None,
    )
    if valid_request:
        openapi.validate_request(request)
    openapi.validate_response(
        request,
        MockResponse(
            response.content,
            status_code=response.status_code,
            headers=dict(response.items()),
            content_type=response["Content-Type"].split(";")[0],
        ),
    )
    return response


def test_the_document_is_valid_openapi_3_1():
    spec = yaml.safe_load(SPEC_PATH.read_text())
    assert spec["openapi"].startswith("3.1")
    validate_spec(spec)


def test_a_batch_a_replay_a_single_trace_and_a_bare_list(openapi, token):
    first = exchange(openapi, {"traces": [trace(1), trace(2)]}, token)
    assert first.status_code == 200 and first.json()["stored"] == 2
    replay = exchange(openapi, {"traces": [trace(1), trace(2)]}, token)
    assert replay.status_code == 200 and replay.json()["already_present"] == 2
    drifted = trace(3, retrieved=[{"doc_id": "gone", "start": 0, "end": 9}])
    single = exchange(openapi, drifted, token)
    assert single.status_code == 200 and single.json()["unknown_documents"] == 1
    assert exchange(openapi, [trace(4)], token).json()["stored"] == 1


def test_bad_items_get_their_own_errors(openapi, token):
    mixed = exchange(openapi, [trace(1), {"trace_id": "bad-1", "question": "x"}, "nonsense"], token)
    assert mixed.status_code == 207
    errors = mixed.json()["errors"]
    assert [error["index"] for error in errors] == [1, 2]
    assert errors[0]["trace_id"] == "bad-1" and errors[0]["status"] == 422
    all_bad = exchange(openapi, [{"trace_id": "x"}], token)
    assert all_bad.status_code == 422 and all_bad.json()["stored"] == 0


def test_authentication_failures(openapi, project, admin, token):
    missing = exchange(openapi, trace(1), valid_request=False)
    assert missing.status_code == 401 and missing["WWW-Authenticate"] == "Bearer"
    assert exchange(openapi, trace(1), "gst_not-a-real-token").status_code == 401
    ProjectFactory(slug="other")
    assert exchange(openapi, trace(1), token, slug="other").status_code == 404
    row = services.find_api_token(raw=token)
    services.revoke_api_token(token=row, user=admin)
    revoked = exchange(openapi, trace(1), token)
    assert revoked.status_code == 401 and "revoked" in revoked.json()["error"]


def test_a_session_or_a_cross_site_form_without_a_token_gets_the_apis_401(openapi, admin):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin)
    refused = exchange(openapi, trace(1), client=browser, valid_request=False)
    assert refused.status_code == 401 and refused["Content-Type"] == "application/json"
    assert refused["WWW-Authenticate"] == "Bearer"


def test_a_bad_nested_value_is_its_items_422_as_documented(openapi, token):
    bad = trace(2, citations=[{"doc_id": "a\x00b"}], occurred_at="9999-12-31T23:59:59-14:00")
    response = exchange(openapi, [trace(1), bad, trace(3)], token)
    assert response.status_code == 207 and response.json()["stored"] == 2
    (error,) = response.json()["errors"]
    assert "citations[0].doc_id" in error["message"] and "occurred_at" in error["message"]


def test_bad_bodies_and_limits(openapi, token, settings):
    assert exchange(openapi, b"{not json", token, valid_request=False).status_code == 400
    assert exchange(openapi, [], token, valid_request=False).status_code == 400
    form = exchange(
        openapi,
        "trace_id=1",
        token,
        content_type="application/x-www-form-urlencoded",
        valid_request=False,
    )
    assert form.status_code == 415
    settings.GOLDSET_TRACE_MAX_BATCH = 2
    too_many = exchange(openapi, [trace(1), trace(2), trace(3)], token, valid_request=False)
    assert too_many.status_code == 413
    settings.GOLDSET_TRACE_MAX_BODY_BYTES = 100
    assert exchange(openapi, [trace(1)], token, valid_request=False).status_code == 413


def test_the_rate_limit_answers_429_with_retry_after(openapi, token, settings):
    settings.GOLDSET_TRACE_REQUESTS_PER_MINUTE = 1
    assert exchange(openapi, trace(1), token).status_code == 200
    flood = exchange(openapi, trace(2), token)
    assert flood.status_code == 429 and int(flood["Retry-After"]) >= 1


def test_only_post_is_accepted(openapi, token):
    response = exchange(openapi, token=token, method="get")
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert exchange(openapi, method="get", valid_request=False).status_code == 401
