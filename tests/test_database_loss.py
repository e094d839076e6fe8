"""A database connection lost at any point of a request answers 503 with Retry-After ("nothing
was saved"), never a 500: pages, htmx partials, the grading POST and the trace API (in JSON),
whether the connection dies in the view or in a middleware around it (loading the user, the
session). The PostgreSQL backend is really terminated (`pg_terminate_backend`, what an operator,
a failover or an OOM kill does) just before the n-th query of the request, for every n the
request makes."""

from __future__ import annotations

import contextlib
import json

import psycopg
import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from labelling.models import Assignment, Change, Judgement, Span
from production.models import Trace
from production.services import traces as trace_services
from tests.factories import PASSWORD, MembershipFactory, UserFactory, grading_pool

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="terminates a PostgreSQL backend: set DATABASE_URL, as .ci/run does",
)
MESSAGE = "The database connection was lost and nothing was saved. Please try again."


def _terminate(pid: int) -> None:
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db["PASSWORD"] or None,
        dbname=db["NAME"],
        autocommit=True,
    ) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])


@contextlib.contextmanager
def backend_killed_before_query(n: int):
    """Terminate this connection's backend just before the request's n-th query runs; yields
    the list it appends the query to (empty: the request made fewer than n queries)."""
    seen, killed = [], []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        if len(seen) == n and not killed:
            _terminate(context["connection"].connection.info.backend_pid)
            killed.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield killed
    connection.close()  # as Django does at the end of a request whose connection broke


def sweep(send, check):
    """Send the request with the backend killed before its 1st, 2nd, … query, until it makes
    fewer queries than that; every answer while the database is gone is `check`ed."""
    n = 0
    while True:
        n += 1
        with backend_killed_before_query(n) as killed:
            response = send()
        if not killed:
            return n - 1, response
        check(response, killed[0])


def assert_503(response, query, *, json_body=False):
    assert response.status_code == 503, (response.status_code, query)
    assert response["Retry-After"] == "1"
    if json_body:
        assert response["Content-Type"] == "application/json"
        assert json.loads(response.content) == {"error": MESSAGE}
    else:
        assert response.content.decode() == MESSAGE
    assert b"Traceback" not in response.content and b"closed" not in response.content


@pytest.fixture
def grading(transactional_db, project):
    labeller = UserFactory(username="lina")
    MembershipFactory(project=project, user=labeller, role="labeller")
    pool = grading_pool(project, questions=1, passages=2)
    question = pool.question_set.questions.get()
    Assignment.objects.create(pool=pool, question=question, labeller=labeller)
    candidate = pool.candidates.order_by("shuffle_rank", "pk").first()
    client = Client(raise_request_exception=False)
    client.force_login(labeller)
    ids = {"slug": project.slug, "pool_id": pool.pk, "question_id": question.pk}
    return client, ids, candidate


def test_a_grade_whose_connection_dies_at_any_query_is_503_and_saves_nothing(grading):
    client, ids, candidate = grading
    url = reverse("labelling:grade-candidate", kwargs={**ids, "candidate_id": candidate.pk})
    for headers in ({"HTTP_HX_REQUEST": "true"}, {}):

        def check(response, query):
            assert_503(response, query)
            assert Judgement.objects.count() == Span.objects.count() == Change.objects.count() == 0

        queries, response = sweep(
            lambda headers=headers: client.post(url, {"grade": "2", "revision": "0"}, **headers),
            check,
        )
        assert queries > 3  # the user, the assignment, the candidate, the writes…
        # With the database back, the same action (same revision) is saved once.
        assert response.status_code in (200, 302)
        assert Judgement.objects.get().grade == 2 and Change.objects.count() == 1
        Change.objects.all().delete()
        Judgement.objects.all().delete()


def test_pages_and_htmx_partials_answer_503_wherever_the_connection_dies(grading):
    client, ids, candidate = grading
    for url, headers in (
        (reverse("labelling:grade-question", kwargs=ids), {}),
        (
            reverse(
                "labelling:show-passage-document", kwargs={**ids, "candidate_id": candidate.pk}
            ),
            {"HTTP_HX_REQUEST": "true"},
        ),
        (reverse("labelling:show-queue", args=[ids["slug"]]), {}),
        # No view query at all: the user is loaded by a middleware after the view.
        (reverse("favicon"), {}),
    ):
        queries, response = sweep(
            lambda url=url, headers=headers: client.get(url, **headers), assert_503
        )
        assert queries >= 1 and response.status_code in (200, 301, 302), url
    # Logging in: the user, the session written, the throttle's records.
    anonymous = Client(raise_request_exception=False)
    form = {"username": "lina", "password": PASSWORD}
    queries, response = sweep(lambda: anonymous.post(reverse("login"), form), assert_503)
    assert queries >= 1 and response.status_code == 302


def test_the_trace_api_answers_503_in_json_and_stores_nothing(transactional_db, project):
    admin = UserFactory()
    MembershipFactory(project=project, user=admin, role="admin")
    _, raw = trace_services.create_api_token(project=project, user=admin, name="bot")
    client = Client(raise_request_exception=False)
    url = reverse("production:receive-traces", args=[project.slug])
    body = json.dumps(
        {
            "trace_id": "t-1",
            "occurred_at": "2026-11-30T09:00:00Z",
            "question": "Leave?",
            "retrieved": [],
            "answer": "Five days.",
        }
    )

    def send():
        return client.post(
            url, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw}"
        )

    def check(response, query):
        assert_503(response, query, json_body=True)
        assert not Trace.objects.exists()

    queries, response = sweep(send, check)
    assert queries >= 1 and response.status_code < 300, response.content
    assert Trace.objects.count() == 1


def test_an_error_that_is_not_the_database_is_still_a_500(grading):
    """The 503 handler recognises a lost connection only: a bug stays a 500, without details."""
    client, ids, _ = grading

    def broken(execute, sql, params, many, context):
        raise ValueError("a bug, not the database")

    with connection.execute_wrapper(broken):
        response = client.get(reverse("favicon"))
    assert response.status_code == 500 and "Retry-After" not in response
    assert b"a bug" not in response.content
