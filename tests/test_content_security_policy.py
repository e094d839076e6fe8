"""The Content-Security-Policy header, django-csp's as its documentation configures it
(`CONTENT_SECURITY_POLICY` in settings, `csp.middleware.CSPMiddleware`): every response carries
the settings' policy, enforced; what a view changes with django-csp's decorators shows in that
response's header, and a nonce asked for after the header is written is an error."""

import pytest
from csp.decorators import csp_exempt, csp_update
from csp.exceptions import CSPNonceError
from csp.middleware import CSPMiddleware
from django.http import HttpResponse
from django.test import RequestFactory

POLICY = {
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'self'",
}


def directives(header: str) -> set[str]:
    return {directive.strip() for directive in header.split(";")}


def respond(view):
    """django-csp's middleware around `view`, as Django runs it, and the response to a GET."""
    return CSPMiddleware(view)(RequestFactory().get("/somewhere/"))


def plain(request):
    return HttpResponse()


def test_the_middleware_is_django_csps_own(settings):
    assert "csp.middleware.CSPMiddleware" in settings.MIDDLEWARE
    assert "csp.context_processors.nonce" in settings.TEMPLATES[0]["OPTIONS"]["context_processors"]


def test_every_response_carries_the_settings_policy_enforced(client, db):
    for response in (client.get("/accounts/login/"), client.get("/no-such-page/")):
        assert directives(response.headers["Content-Security-Policy"]) == POLICY
    assert "Content-Security-Policy-Report-Only" not in response.headers


def test_a_view_can_widen_or_drop_the_policy_with_django_csps_decorators():
    updated = respond(csp_update({"img-src": ["https://img.example"]})(plain))
    header = directives(updated.headers["Content-Security-Policy"])
    assert "img-src 'self' data: https://img.example" in header
    assert "Content-Security-Policy" not in respond(csp_exempt()(plain)).headers


def test_a_nonce_asked_for_after_the_header_was_written_is_an_error():
    seen = {}

    def view(request):
        seen["request"] = request
        return HttpResponse()

    respond(view)
    with pytest.raises(CSPNonceError):
        str(seen["request"].csp_nonce)
