"""A third-party page must not be able to make a logged-in user's browser change data: every
unsafe request needs the CSRF token (htmx requests included), and no GET or HEAD writes a row.
The URLs come from the URL conf (`tests/test_access_matrix.py`), so a new view is covered."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from labelling.models import Judgement
from tests import test_access_matrix
from tests.test_access_matrix import OPEN_URL_KWARGS, OPEN_URLS, TOKEN_URLS, routes, snapshot

worlds = test_access_matrix.worlds  # the fixture: two projects with one of everything

UNSAFE = ("post", "put", "patch", "delete")
HTMX = {"HTTP_HX_REQUEST": "true"}
CSRF_REFUSAL = b"CSRF verification failed"


def urls(ids: dict):
    for name, kwargs in routes():
        yield name, reverse(name, kwargs={k: ids[k] for k in kwargs})
    for name in sorted(OPEN_URLS):
        yield name, reverse(name, kwargs=OPEN_URL_KWARGS.get(name))
    for name in sorted(TOKEN_URLS):  # never a session: see the token API's own test below
        yield name, reverse(name, kwargs={"slug": ids["slug"]})


def browser_of(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


@pytest.mark.parametrize("role", ["admin", "ann"])
def test_every_unsafe_request_without_a_token_is_refused(worlds, role):
    a, _ = worlds
    browser = browser_of(a["people"][role])
    before = snapshot()
    for name, url in urls(a["ids"]):
        if name in TOKEN_URLS:
            continue
        for method in UNSAFE:
            for headers in ({}, HTMX):
                response = getattr(browser, method)(url, **headers)
                # The refusal must come from the CSRF check, not from a role or method check
                # that a better-placed user would pass.
                assert response.status_code == 403, (name, method, headers, response.status_code)
                assert CSRF_REFUSAL in response.content, (name, method, headers)
    assert snapshot() == before


@pytest.mark.parametrize("role", ["admin", "ann"])
def test_the_token_api_answers_a_session_without_a_token_with_its_own_401(worlds, role):
    """The trace API never accepts a session, so there is nothing for CSRF to guard there: a
    logged-in browser (a cross-site form) without a token gets the API's 401 in JSON."""
    a, _ = worlds
    browser = browser_of(a["people"][role])
    before = snapshot()
    for name in sorted(TOKEN_URLS):
        url = reverse(name, kwargs={"slug": a["ids"]["slug"]})
        for method in UNSAFE:
            for headers in ({}, HTMX):
                response = getattr(browser, method)(url, **headers)
                assert response.status_code == 401, (name, method, headers)
                assert response["Content-Type"] == "application/json", (name, method)
                assert CSRF_REFUSAL not in response.content
    assert snapshot() == before


def test_the_token_is_what_lets_a_write_through(worlds):
    a, _ = worlds
    ids = a["ids"]
    ann = a["people"]["ann"]
    browser = browser_of(ann)
    page = reverse(
        "labelling:grade-question",
        kwargs={k: ids[k] for k in ("slug", "pool_id", "question_id")},
    )
    assert browser.get(page).status_code == 200
    token = browser.cookies["csrftoken"].value
    grade = reverse(
        "labelling:grade-candidate",
        kwargs={k: ids[k] for k in ("slug", "pool_id", "question_id", "candidate_id")},
    )
    data = {"grade": "1", "revision": "0"}

    refused = browser.post(grade, data, **HTMX)
    assert refused.status_code == 403
    judgement = Judgement.objects.get(assignment__labeller=ann, candidate_id=ids["candidate_id"])
    assert judgement.grade == 2

    accepted = browser.post(grade, data, HTTP_X_CSRFTOKEN=token, **HTMX)
    assert accepted.status_code == 200
    judgement.refresh_from_db()
    assert judgement.grade == 1


@pytest.mark.parametrize("role", ["ann", "bob", "lead", "admin"])
def test_no_get_or_head_changes_anything(worlds, role):
    a, _ = worlds
    browser = browser_of(a["people"][role])
    before = snapshot()
    for name, url in urls(a["ids"]):
        for method in ("get", "head"):
            for headers in ({}, HTMX):
                response = getattr(browser, method)(url, **headers)
                assert response.status_code < 500, (name, method, headers)
    assert snapshot() == before
