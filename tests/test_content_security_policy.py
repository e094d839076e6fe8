"""The Content-Security-Policy header, which `ContentSecurityPolicyMiddleware` builds once per
process: every response carries django-csp's header for the settings' policy, and what a view
changes with django-csp's decorators, or a nonce a page asks for, still goes through django-csp."""

import pytest
from csp.decorators import csp_exempt, csp_update
from csp.exceptions import CSPNonceError
from csp.middleware import CSPMiddleware
from csp.utils import build_policy
from django.http import HttpResponse
from django.test import RequestFactory

from goldset.middleware import ContentSecurityPolicyMiddleware


def respond(view, middleware=ContentSecurityPolicyMiddleware):
    """The middleware around `view`, as Django runs it, and the response to a GET."""
    return middleware(view)(RequestFactory().get("/somewhere/"))


def plain(request):
    return HttpResponse()


def using_a_nonce(request):
    str(request.csp_nonce)
    return HttpResponse()


VIEWS = {
    "plain": plain,
    "using a nonce": using_a_nonce,
    "updated": csp_update({"img-src": ["https://img.example"]})(plain),
    "exempt": csp_exempt()(plain),
}


def test_every_response_carries_the_settings_policy_as_django_csp_builds_it(client, db):
    expected = build_policy()
    assert "default-src 'self'" in expected and "frame-ancestors 'none'" in expected
    for response in (client.get("/accounts/login/"), client.get("/no-such-page/")):
        assert response.headers["Content-Security-Policy"] == expected
    assert "Content-Security-Policy-Report-Only" not in response.headers


@pytest.mark.parametrize("name", VIEWS)
def test_each_response_gets_the_headers_django_csps_own_middleware_gives(name):
    ours, theirs = (
        respond(VIEWS[name], m) for m in (ContentSecurityPolicyMiddleware, CSPMiddleware)
    )
    for header in ("Content-Security-Policy", "Content-Security-Policy-Report-Only"):
        assert ours.headers.get(header) == theirs.headers.get(header), header
    if name == "updated":
        assert "https://img.example" in ours.headers["Content-Security-Policy"]
    if name == "exempt":
        assert "Content-Security-Policy" not in ours.headers


def test_a_nonce_asked_for_after_the_header_was_written_is_an_error():
    seen = {}

    def view(request):
        seen["request"] = request
        return HttpResponse()

    respond(view)
    with pytest.raises(CSPNonceError):
        str(seen["request"].csp_nonce)
