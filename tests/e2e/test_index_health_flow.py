"""A lead uploads the team's index manifest and reads the Index health page (Chromium).

The upload is a job: the browser follows the job page and comes back to Index health, which
shows the stale document with its lag; a bad file shows its problems with lines, nothing stored.
"""

import datetime
import hashlib
import re

import pytest
from playwright.sync_api import expect

from corpus.services import retrieval
from goldeval.formats.manifests import COLUMNS
from health.models import IndexManifest
from tests.e2e.conftest import after_the_job, log_in
from tests.factories import (
    PASSWORD,
    POLICY_TEXT,
    VPN_TEXT,
    MembershipFactory,
    UserFactory,
    add_documents,
)

pytestmark = pytest.mark.e2e


def test_lead_uploads_a_manifest_and_sees_the_stale_document(
    worker, transactional_db, live_server, page, project, tmp_path
):
    lead = UserFactory(username="lea")
    MembershipFactory(project=project, user=lead, role="lead")
    add_documents(project, ("policy", POLICY_TEXT), ("vpn", VPN_TEXT))
    retrieval.add_retriever(project=project, name="team", kind="run")
    indexed = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=2)).isoformat()
    good = tmp_path / "index.csv"
    good.write_text(
        ",".join(COLUMNS)
        + "\n"
        + f"policy,1,{'0' * 64},,,{indexed},minilm,r1,384\n"
        + f"vpn,1,{hashlib.sha256(VPN_TEXT.encode()).hexdigest()},,,{indexed},minilm,r1,384\n"
    )
    bad = tmp_path / "bad.csv"
    bad.write_text(",".join(COLUMNS) + "\npolicy,1,,,,soon,minilm,r1,384\n")

    log_in(page, live_server, "lea", PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/index-health/")
    expect(page.locator("#health-team")).to_contain_text("no manifest uploaded yet")
    page.get_by_label("Retriever").select_option(label="team")
    page.get_by_label("Manifest (CSV or JSONL)").set_input_files(str(bad))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("body")).to_contain_text(
        "indexed_at 'soon' is not an ISO 8601 time", timeout=60_000
    )
    assert not IndexManifest.objects.exists()

    page.goto(f"{live_server.url}/p/{project.slug}/index-health/")
    page.get_by_label("Retriever").select_option(label="team")
    page.get_by_label("Manifest (CSV or JSONL)").set_input_files(str(good))
    page.get_by_role("button", name="Upload").click()
    # The job page follows the worker, then goes back to Index health.
    after_the_job(page, page.locator("h1", has_text=re.compile("^Index health$")))
    section = page.locator("#health-team")
    expect(section).to_contain_text("1 of 2 (50%)")
    expect(section.locator("table").filter(has_text="Told by")).to_contain_text("policy")
