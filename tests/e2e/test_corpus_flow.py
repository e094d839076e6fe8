"""Log in, upload two files, watch the job finish, open a document — in real Chromium."""

import pytest
from playwright.sync_api import expect

from corpus.models import Document
from tests.e2e.conftest import log_in
from tests.factories import PASSWORD, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.e2e


def test_lead_uploads_two_files_and_opens_a_document(worker, live_server, page, tmp_path):
    project = ProjectFactory(slug="acme", name="Acme gold")
    lead = UserFactory(username="lena")
    MembershipFactory(project=project, user=lead, role="lead")
    policy = tmp_path / "hr-pol-014-parental-leave.md"
    policy.write_text(
        "# Parental leave (HR-POL-014)\n\nThe primary caregiver gets 20 weeks of paid "
        "leave. Requests go through form HR-F-140 at least 8 weeks ahead.\n"
    )
    vpn = tmp_path / "vpn.html"
    vpn.write_text(
        "<html><head><title>VPN access</title></head><body><h1>VPN access</h1>"
        "<p>Install the NW-VPN client and enrol your token with the IT service desk.</p>"
        "<script>document.title='pwned'</script></body></html>"
    )

    log_in(page, live_server, "lena", PASSWORD)
    page.get_by_role("link", name="Acme gold").click()
    # The button under the figures (a new project's first-steps checklist links there too).
    page.locator("a.button", has_text="Upload documents").click()
    page.get_by_label("Files").set_input_files([str(policy), str(vpn)])
    page.get_by_role("button", name="Upload").click()

    expect(page.locator(".job-state")).to_have_text("Succeeded", timeout=60_000)
    expect(page.locator(".job-message")).to_contain_text("2 new")
    page.get_by_role("link", name="See the documents").click()
    page.get_by_role("link", name="hr-pol-014-parental-leave.md").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Parental leave (HR-POL-014)")
    expect(page.locator(".document-text")).to_contain_text("primary caregiver gets 20 weeks")
    assert Document.objects.filter(project=project).count() == 2
    page.goto(f"{live_server.url}/p/acme/documents/{Document.objects.get(doc_id='vpn.html').pk}/")
    expect(page.locator(".document-text")).to_contain_text("NW-VPN client")
    assert page.title() != "pwned"
