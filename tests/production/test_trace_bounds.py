"""Trust at the trace API (issue 32): every value a trace carries, at any depth, is checked
against what the code downstream can hold, and a bad one is that item's 422 while the good items
of the batch are stored; rows stored before the check cannot fail a page or the daily purge;
the unknown-documents count treats a hidden document as a missing one; and a request without a
token gets the API's own 401, never Django's CSRF page."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib import import_module
from io import StringIO

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.urls import reverse

from corpus.services import projects
from production.models import Trace
from production.services import traces as services
from tests.factories import MembershipFactory, ProjectFactory, UserFactory, add_documents, login

ON_POSTGRES = connection.vendor == "postgresql"
TOO_LARGE = 2**31  # one more than a PostgreSQL integer holds


def trace(n: int, **extra) -> dict:
    return {
        "trace_id": f"t-{n}",
        "occurred_at": "2026-11-30T09:00:00Z",
        "user": {"id": f"user-{n}", "groups": ["hr"]},
        "question": f"how many leave days, case {n}?",
        "retrieved": [{"doc_id": "leave", "rank": 1, "score": 0.8, "start": 0, "end": 20}],
        "answer": "Five days.",
        "citations": [{"doc_id": "leave", "start": 0, "end": 20}],
        "feedback": {"thumb": "down", "comment": "old rule"},
        "system_version": "rag-2.3",
        "index_manifest": {"embedding_model": "minilm", "shards": [{"id": 1}]},
        **extra,
    }


@pytest.fixture
def project(db):
    project = ProjectFactory(slug="acme")
    add_documents(
        project,
        ("leave", "Employees may carry over five days of leave."),
        ("secret", "Salary bands for 2027.", ["hr"]),
    )
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


def post(body, token=None, client=None, **extra):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    # json.dumps writes NaN and lone surrogates as JSON that json.loads reads back.
    data = body if isinstance(body, bytes | str) else json.dumps(body)
    return (client or Client()).post(
        "/api/p/acme/traces", data=data, content_type="application/json", **headers, **extra
    )


def assert_only_the_bad_item_fails(token, bad: dict, field: str):
    response = post([trace(1), bad, trace(3)], token)
    assert response.status_code == 207, response.content
    body = response.json()
    assert body["stored"] == 2 and body["received"] == 3
    (error,) = body["errors"]
    assert error["index"] == 1 and error["status"] == 422
    assert field in error["message"], error["message"]
    assert sorted(Trace.objects.values_list("trace_id", flat=True)) == ["t-1", "t-3"]
    return error


# Times ----------------------------------------------------------------------------------------

BAD_TIMES = [
    "9999-12-31T23:59:59-14:00",  # the year 10000 in UTC
    "0001-01-01T00:00:00+14:00",  # the year 0 in UTC
    "0001-01-01T00:00:00Z",
    "1969-12-31T23:59:59Z",
    "3000-01-01T00:00:00Z",
    "2026-11-30T09:00:00+99:00",
    "x" * 10_000,
    -1,  # epoch seconds before 1970
    10**400,  # nanoseconds past any year
    1e300,
    float("nan"),
    float("inf"),
    True,
    ["2026-11-30T09:00:00Z"],
    {"at": "2026-11-30T09:00:00Z"},
]


@pytest.mark.parametrize("name", ["occurred_at", "start_time", "timestamp", "attributes"])
@pytest.mark.parametrize("value", BAD_TIMES, ids=range(len(BAD_TIMES)))
def test_a_time_no_reader_can_hold_is_its_items_422(token, name, value):
    bad = {k: v for k, v in trace(2).items() if k != "occurred_at"}
    if name == "attributes":  # OpenInference's span attributes, as OpenTelemetry exports them
        bad["attributes"] = {"start_time": value}
    else:
        bad[name] = value
    error = assert_only_the_bad_item_fails(token, bad, "occurred_at")
    assert len(error["message"]) < 300  # a huge value is not echoed back whole


def test_times_at_the_edges_are_stored_in_utc(token):
    edges = [
        trace(1, occurred_at="1970-01-01T00:00:00Z"),
        trace(2, occurred_at="2999-12-31T23:59:59Z"),
        trace(3, occurred_at="2026-11-30T09:00:00-14:00"),
        trace(4, occurred_at=1764579600_000_000_000),  # nanoseconds, as OpenTelemetry counts
    ]
    assert post(edges, token).json()["stored"] == 4
    assert Trace.objects.get(trace_id="t-3").occurred_at == datetime(2026, 11, 30, 23, tzinfo=UTC)


# Every nested field --------------------------------------------------------------------------

NUL, SURROGATE, BIDI = "a\x00b", "a\ud800b", "a\u202eb"
LONG = "x" * 20_001
DEEP: dict = {}
_level = DEEP
for _ in range(20):
    _level["next"] = {}
    _level = _level["next"]

BAD_VALUES = {
    # field named in the error: the change that makes the item bad
    "trace_id": [{"trace_id": NUL}, {"trace_id": SURROGATE}, {"trace_id": BIDI}, {"trace_id": []}],
    "question": [{"question": NUL}, {"question": SURROGATE}, {"question": LONG}, {"question": 5}],
    "answer": [{"answer": NUL}, {"answer": SURROGATE}, {"answer": {"text": "a"}}],
    "user": [
        {"user": {"id": NUL}},
        {"user": {"id": SURROGATE}},
        {"user": {"id": {"nested": 1}}},
        {"user": "u" * 201},
    ],
    "groups": [
        {"user": {"id": "u", "groups": [NUL]}},
        {"user": {"id": "u", "groups": [SURROGATE]}},
        {"user": {"id": "u", "groups": [1]}},
        {"user": {"id": "u", "groups": ["g"] * 201}},
        {"user": {"id": "u", "groups": "hr"}},
    ],
    "retrieved[0].doc_id": [
        {"retrieved": [{"doc_id": NUL}]},
        {"retrieved": [{"doc_id": SURROGATE}]},
        {"retrieved": [{"doc_id": BIDI}]},
        {"retrieved": [{"doc_id": "d" * 201}]},
    ],
    "retrieved[0].rank": [
        {"retrieved": [{"doc_id": "leave", "rank": TOO_LARGE}]},
        {"retrieved": [{"doc_id": "leave", "rank": 1.5}]},
        {"retrieved": [{"doc_id": "leave", "rank": 10**400}]},
    ],
    "retrieved[0].score": [
        {"retrieved": [{"doc_id": "leave", "score": float("nan")}]},
        {"retrieved": [{"doc_id": "leave", "score": float("inf")}]},
        {"retrieved": [{"doc_id": "leave", "score": 10**400}]},
        {"retrieved": [{"doc_id": "leave", "score": "high"}]},
    ],
    "retrieved[0]: start and end": [
        {"retrieved": [{"doc_id": "leave", "start": 0, "end": TOO_LARGE}]},
        {"retrieved": [{"doc_id": "leave", "start": -1, "end": 5}]},
        {"retrieved": [{"doc_id": "leave", "start": 0, "end": 10**400}]},
    ],
    "retrieved[0].version": [{"retrieved": [{"doc_id": "leave", "version": TOO_LARGE}]}],
    "retrieved": [{"retrieved": {"doc_id": "leave"}}, {"retrieved": ["leave"] * 1001}],
    "citations": [
        {"citations": {"doc_id": "leave"}},
        {"citations": [{"doc_id": "leave"}] * 1001},
        {"citations": [5]},
        {"citations": [{"doc_id": NUL}]},
        {"citations": [{"doc_id": SURROGATE}]},
        {"citations": [{"doc_id": {"x": 1}}]},
        {"citations": [{"doc_id": "leave", "start": 0, "end": TOO_LARGE}]},
        {"citations": [{"doc_id": "leave", "start": 9, "end": 2}]},
        {"citations": [{"doc_id": "leave", "note": NUL}]},
        {"citations": [{"doc_id": "leave", "note": SURROGATE}]},
        {"citations": [{"doc_id": "leave", NUL: "key"}]},
        {"citations": [{"doc_id": "leave", "weight": float("nan")}]},
        {"citations": [{"doc_id": "leave", "weight": 10**30}]},
        {"citations": [{"doc_id": "leave", "nested": DEEP}]},
        {"citations": [{"doc_id": "leave", "note": LONG}]},
    ],
    "index_manifest": [
        {"index_manifest": "minilm"},
        {"index_manifest": [1, 2]},
        {"index_manifest": {"model": NUL}},
        {"index_manifest": {"model": SURROGATE}},
        {"index_manifest": {SURROGATE: "key"}},
        {"index_manifest": {"shards": [{"id": NUL}]}},
        {"index_manifest": {"dimension": float("nan")}},
        {"index_manifest": {"dimension": float("-inf")}},
        {"index_manifest": {"size": 10**30}},
        {"index_manifest": DEEP},
        {"index_manifest": {"rows": list(range(3000))}},
        {"index_manifest": {"k" * 201: 1}},
        {"metadata": {"index_manifest": {"model": NUL}}, "index_manifest": None},
    ],
    "feedback": [
        {"feedback": {"thumb": "down", "comment": NUL}},
        {"feedback": {"thumb": "down", "comment": SURROGATE}},
        {"feedback": {"thumb": {"deep": 1}}},
        {"feedback": {"thumb": float("nan")}},
    ],
    "system_version": [{"system_version": NUL}, {"system_version": "v" * 201}],
    "refused": [{"refused": "no"}],
}
CASES = [(field, change) for field, changes in BAD_VALUES.items() for change in changes]


@pytest.mark.parametrize(
    ("field", "change"), CASES, ids=[f"{f}-{i}" for i, (f, _) in enumerate(CASES)]
)
def test_one_bad_value_anywhere_in_a_trace_costs_only_its_item(token, field, change):
    assert_only_the_bad_item_fails(token, trace(2, **change), field)


@pytest.mark.parametrize(
    "attributes",
    [
        {"input.value": NUL},
        {"output.value": SURROGATE},
        {"user.id": NUL},
        {"retrieval.documents": [{"document.id": SURROGATE}]},
        {"retrieval.documents.0.document.id": NUL},
        {
            "retrieval.documents.0.document.id": "leave",
            "retrieval.documents.0.document.score": 1e999,
        },
        {"metadata": {"system_version": NUL}},
    ],
)
def test_openinference_attributes_are_checked_as_our_own_names(token, attributes):
    bad = {
        "context": {"trace_id": "span-2"},
        "start_time": "2026-11-30T09:00:00Z",
        "attributes": {"input.value": "vpn?", **attributes},
    }
    response = post([trace(1), bad, trace(3)], token)
    assert response.status_code == 207 and response.json()["stored"] == 2
    assert response.json()["errors"][0]["index"] == 1
    assert not Trace.objects.filter(trace_id="span-2").exists()


@pytest.mark.parametrize("field", ["rank", "score", "start"])
def test_a_number_too_long_for_python_costs_its_item_not_the_body(token, field):
    """Python's JSON reader refuses an integer of more than 4,300 digits, and the whole body
    with it: the endpoint reads it as infinity, which the item's own checks refuse."""
    passage = {"doc_id": "leave", "rank": 1, "start": 0, "end": 5, field: "HUGE"}
    body = json.dumps([trace(1), trace(2, retrieved=[passage]), trace(3)])
    response = post(body.replace('"HUGE"', "9" * 5000), token)
    assert response.status_code == 207 and response.json()["stored"] == 2
    assert "retrieved[0]" in response.json()["errors"][0]["message"]
    as_id = json.dumps([trace(4), trace(5, trace_id="HUGE")]).replace('"HUGE"', "9" * 5000)
    response = post(as_id, token)
    assert response.status_code == 207 and "trace_id" in response.json()["errors"][0]["message"]
    assert not Trace.objects.filter(trace_id="inf").exists()


def test_an_item_with_a_thousand_problems_gets_a_short_answer(token):
    bad = trace(2, retrieved=[{"doc_id": NUL}] * 1000, citations=[{"doc_id": NUL}] * 1000)
    response = post([trace(1), bad], token)
    (error,) = response.json()["errors"]
    assert response.status_code == 207 and error["message"].endswith("and 1,980 more problems")
    assert len(error["message"]) < 5_000


def test_an_unusual_flat_document_index_is_ignored_not_a_500(token):
    odd = trace(2, retrieved=None)
    odd["attributes"] = {
        "retrieval.documents.².document.id": "x",
        f"retrieval.documents.{'9' * 5000}.document.id": "y",
    }
    response = post([trace(1), odd], token)
    assert response.status_code == 200 and response.json()["stored"] == 2


def test_a_good_trace_keeps_its_nested_values(token):
    assert post(trace(1), token).status_code == 200
    stored = Trace.objects.get()
    assert stored.citations == [{"doc_id": "leave", "start": 0, "end": 20}]
    assert stored.index_manifest == {"embedding_model": "minilm", "shards": [{"id": 1}]}
    assert stored.retrieved == [{"doc_id": "leave", "rank": 1, "score": 0.8, "start": 0, "end": 20}]


def test_the_error_echoes_a_trace_id_only_when_it_is_text(token):
    errors = post([trace(1, trace_id=NUL, question=NUL), trace(2, question=NUL)], token).json()
    assert [e.get("trace_id") for e in errors["errors"]] == [None, "t-2"]


def test_a_file_import_names_the_line_and_field_of_a_nested_bad_value(project, tmp_path):
    path = tmp_path / "traces.jsonl"
    lines = [
        trace(1),
        trace(2, citations=[{"doc_id": NUL}]),
        trace(3, occurred_at="0001-01-01T00:00:00+14:00"),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_traces", str(path), project="acme", stdout=StringIO(), stderr=err)
    assert f"{path}:2: citations[0].doc_id contains a NUL character" in err.getvalue()
    assert f"{path}:3: occurred_at '0001-01-01T00:00:00+14:00' is outside" in err.getvalue()
    assert not Trace.objects.exists()


# Rows stored before the check ---------------------------------------------------------------


def _set_time(trace_id: str, value: str) -> None:
    """What the old intake stored: PostgreSQL keeps the year 10000 and 1 BC."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE labelling_trace SET occurred_at = %s::timestamptz WHERE trace_id = %s",
            [value, trace_id],
        )


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite refused these times even before the fix")
def test_traces_stored_before_the_fix_no_longer_fail_the_pages_or_the_purge(
    project, token, settings
):
    settings.GOLDSET_TRACE_RETENTION_DAYS = 36_500  # only the year-0 trace is that old
    post([trace(1), trace(2), trace(3)], token)
    _set_time("t-1", "10000-01-01 13:59:59+00")
    _set_time("t-2", "0001-12-31 10:00:00+00 BC")
    # The purge reads no stored time back: it deletes the year-0 trace even before the fix.
    assert services.purge_expired_traces() == 1
    assert not Trace.objects.filter(trace_id="t-2").exists()

    import_module("production.migrations.0003_issue32_times_in_range").bring_into_range(apps, None)
    moved = Trace.objects.get(trace_id="t-1")
    assert moved.occurred_at == moved.received_at
    lead = UserFactory()
    MembershipFactory(project=project, user=lead, role="lead")
    page = login(lead).get(reverse("production:list-traces", kwargs={"slug": "acme"}))
    assert page.status_code == 200 and "t-1" in page.content.decode()
    superuser = UserFactory(is_staff=True, is_superuser=True)
    listing = login(superuser).get(reverse("admin:production_trace_changelist"))
    assert listing.status_code == 200 and "t-1" in listing.content.decode()
    assert services.purge_expired_traces() == 0


# Existence oracles ---------------------------------------------------------------------------


def test_a_hidden_document_counts_as_unknown_exactly_as_a_missing_one(project, admin, token):
    """The token's maker (an admin outside hr) learns nothing from the count: a trace naming
    the restricted document answers as one naming a document that does not exist."""
    named = {
        name: post(trace(n, retrieved=[{"doc_id": name, "rank": 1}]), token)
        for n, name in enumerate(["secret", "no-such-doc"], start=1)
    }
    assert named["secret"].status_code == named["no-such-doc"].status_code == 200
    # Alike but for the id each named itself.
    assert named["secret"].json()["unknown_doc_ids"] == ["secret"]
    assert named["secret"].json() == {**named["no-such-doc"].json(), "unknown_doc_ids": ["secret"]}
    assert named["secret"].json()["unknown_documents"] == 1
    # What is stored is the corpus' drift: the restricted document is not drift, and the
    # Traces page (for every lead) never names it.
    assert Trace.objects.get(trace_id="t-1").unknown_doc_ids == []
    assert Trace.objects.get(trace_id="t-2").unknown_doc_ids == ["no-such-doc"]
    page = login(admin).get(reverse("production:list-traces", kwargs={"slug": "acme"}))
    assert "no-such-doc" in page.content.decode() and "secret" not in page.content.decode()
    # A maker inside hr may see it: for their token it is a known document.
    projects.set_access_group_members(project=project, name="hr", users=[admin])
    assert post(trace(3, retrieved=[{"doc_id": "secret"}]), token).json()["unknown_documents"] == 0


def test_the_answer_is_the_same_before_and_after_a_hidden_document_arrives(project, token):
    """The count over a document the caller may not see does not move when it is added."""
    before = post(trace(1, retrieved=[{"doc_id": "payroll"}, {"doc_id": "leave"}]), token).json()
    add_documents(project, ("payroll", "Payroll runs on the 25th.", ["hr"]))
    after = post(trace(2, retrieved=[{"doc_id": "payroll"}, {"doc_id": "leave"}]), token).json()
    assert before == after and after["unknown_documents"] == 1


def test_a_token_whose_maker_is_gone_sees_the_unrestricted_documents_only(project, admin, token):
    projects.set_access_group_members(project=project, name="hr", users=[admin])
    admin.delete()
    assert post(trace(1, retrieved=[{"doc_id": "secret"}]), token).json()["unknown_documents"] == 1


# No token: the API's own 401 -----------------------------------------------------------------


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete", "get"])
def test_a_browser_session_without_a_token_gets_the_apis_401_never_the_csrf_page(admin, method):
    for browser in (Client(enforce_csrf_checks=True), Client()):
        browser.force_login(admin)
        for extra in ({}, {"HTTP_X_CSRFTOKEN": "forged"}, {"HTTP_HX_REQUEST": "true"}):
            if method == "get":
                response = browser.get("/api/p/acme/traces", **extra)
            else:
                response = getattr(browser, method)(
                    "/api/p/acme/traces",
                    data=json.dumps(trace(1)),
                    content_type="application/json",
                    **extra,
                )
            assert response.status_code == 401, (method, extra, response.status_code)
            assert response["Content-Type"] == "application/json"
            assert response["WWW-Authenticate"] == "Bearer"
            assert "session is not accepted" in response.json()["error"]
    assert not Trace.objects.exists()
