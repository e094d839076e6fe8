"""The Server-Timing header: a response's web CPU, only when the deployment asks for it."""

import re

import pytest
from django.test import Client

TIMING = re.compile(r"^cpu;dur=(\d+\.\d\d)$")


@pytest.mark.django_db
def test_off_by_default_no_header_on_any_response(settings):
    assert settings.GOLDSET_SERVER_TIMING is False  # the environment does not ask for it
    client = Client()
    assert "Server-Timing" not in client.get("/accounts/login/").headers
    assert "Server-Timing" not in client.get("/no-such-page/").headers


@pytest.mark.django_db
def test_on_every_response_carries_its_cpu(settings):
    settings.GOLDSET_SERVER_TIMING = True
    client = Client()  # a new client loads the middleware with the setting as it is now
    for response in (
        client.get("/accounts/login/"),
        client.get("/no-such-page/"),  # a 404 counts too
        client.post("/accounts/login/", {"username": "x", "password": "y"}),
    ):
        match = TIMING.match(response.headers["Server-Timing"])
        assert match, response.headers["Server-Timing"]
        assert float(match.group(1)) >= 0
