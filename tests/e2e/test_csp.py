"""The Content-Security-Policy is enforced in a real browser: injected inline script never runs."""

import pytest

from tests.e2e.conftest import log_in
from tests.factories import PASSWORD, MembershipFactory, ProjectFactory, UserFactory, add_documents

pytestmark = pytest.mark.e2e

PAYLOAD = '<script>window.__pwned = "text"</script><img src=x onerror="window.__pwned=\'img\'">'


def test_injected_inline_script_does_not_run(transactional_db, live_server, page):
    project = ProjectFactory(slug="acme")
    MembershipFactory(project=project, user=UserFactory(username="lena"), role="lead")
    add_documents(project, ("evil.html", f"Policy text {PAYLOAD} continues here for a while."))
    log_in(page, live_server, "lena", PASSWORD)
    violations = []
    page.on("console", lambda message: violations.append(message.text))
    response = page.goto(f"{live_server.url}/p/acme/documents/")
    policy = response.headers["content-security-policy"]
    assert (
        "script-src 'self'" in policy
        and "content-security-policy-report-only" not in response.headers
    )
    page.get_by_role("link", name="evil.html").click()
    assert page.evaluate("window.__pwned") is None
    # Even script that reaches the DOM inline (as an attacker's would) is refused by the browser.
    with pytest.raises(Exception):  # noqa: B017 - Playwright reports the CSP refusal as an error
        page.add_script_tag(content="window.__pwned = 'inline'")
    page.evaluate(
        """() => { const s = document.createElement('script');
                   s.textContent = "window.__pwned = 'dom'"; document.body.appendChild(s); }"""
    )
    assert page.evaluate("window.__pwned") is None
    assert any("Content Security Policy" in text for text in violations)
