"""A document is re-uploaded with "40 percent" now "50 percent" (issue 33 items 3 and 4), in
Chromium: the labeller's Re-check and the lead's (a resolution's evidence) show the word diff,
the lead keeps it as "the facts changed", the Gold page marks it with a link, and finalising
reports how many spans on changed documents the gold set keeps and how."""

import json

import pytest
from playwright.sync_api import expect

from labelling.models import Span, SpanRecheck
from tests.e2e.conftest import after_the_job, log_in
from tests.factories import (
    FEE_V2,
    PASSWORD,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    fee_question_set,
)

pytestmark = pytest.mark.e2e


def test_the_facts_changed_reach_labeller_and_lead_and_finalising_counts_them(
    worker, live_server, page, tmp_path
):
    project = ProjectFactory(slug="acme", name="Acme gold")
    people = {}
    for name, role in (
        ("ann", "labeller"),
        ("bob", "labeller"),
        ("lena", "lead"),
        ("adm", "admin"),
    ):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    question_set = fee_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lena"]
    )
    resolution_span = Span.objects.get(resolution__isnull=False)
    new_version = tmp_path / "fees.jsonl"
    new_version.write_text(json.dumps({"doc_id": "fees", "title": "fees", "text": FEE_V2}) + "\n")

    # The lead re-uploads the document: 40 percent is now 50 percent.
    log_in(page, live_server, "lena", PASSWORD)
    page.get_by_role("link", name="Acme gold").click()
    page.get_by_role("link", name="Upload documents").click()
    page.get_by_label("Files").set_input_files(str(new_version))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator(".job-state")).to_have_text("Succeeded", timeout=60_000)
    page.get_by_role("button", name="Log out").click()

    # ann's Re-check: her "40 percent" shows the word diff, and she keeps it.
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/recheck/")
    expect(page.locator("h2#resolutions")).to_have_count(0)
    row = page.locator("table.recheck tbody tr", has_text="how much of the gym fee?")
    expect(row).to_have_count(1)
    expect(row.locator(".worddiff del")).to_have_text("40")
    expect(row.locator(".worddiff ins")).to_have_text("50")
    expect(page.locator("table.recheck")).not_to_contain_text("refunds 40 percent")
    row.get_by_role("button", name="Keep it: the facts changed").click()
    expect(page.locator(".messages")).to_contain_text("the facts changed")
    expect(row.locator(".answer")).to_contain_text("the facts changed")
    page.get_by_role("button", name="Log out").click()

    # The lead's Gold page marks the resolution's span, not yet re-checked, with a link.
    log_in(page, live_server, "lena", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/sets/{question_set.pk}/gold/")
    expect(page.locator(".changed-documents")).to_contain_text(
        "2 gold spans on changed documents kept"
    )
    marked = page.locator("#question-" + str(resolution_span.resolution.question_id))
    expect(marked.locator(".changed-note")).to_contain_text("not re-checked")
    expect(marked.locator(".changed-note")).to_contain_text(
        "marked in v1 as refunds 40 percent of the gym fee; "
        "in v2 now refunds 50 percent of the gym fee"
    )
    expect(marked.locator(".worddiff del")).to_have_text("40")
    marked.get_by_role("link", name="Re-check this resolution's evidence").click()

    # On the lead's Re-check page the resolution shows the diff; the lead decides.
    expect(page.locator("h1")).to_have_text("Re-check")
    row = page.locator(f"#span-{resolution_span.pk}")
    expect(row).to_contain_text("refunds 40 percent of the gym fee")
    expect(row.locator(".worddiff del")).to_have_text("40")
    expect(row.locator(".worddiff ins")).to_have_text("50")
    row.get_by_role("button", name="Keep it: the facts changed").click()
    expect(page.locator(".messages")).to_contain_text("the facts changed")
    expect(page.locator(f"#span-{resolution_span.pk} .answer")).to_contain_text("the facts changed")
    assert SpanRecheck.objects.get(span=resolution_span).outcome == "facts_changed"

    # The Gold page now says how it keeps it.
    page.goto(f"{live_server.url}/p/acme/sets/{question_set.pk}/gold/")
    expect(marked.locator(".changed-note")).to_contain_text("changed document: the facts changed")
    expect(marked).to_contain_text("refunds 50 percent of the gym fee")
    expect(page.locator(".changed-documents")).to_contain_text(
        "1 with the facts changed, 0 marked again in the new version, 1 not re-checked"
    )
    page.get_by_role("button", name="Log out").click()

    # The admin finalises: the gold set's page and manifest say what was kept, and how.
    log_in(page, live_server, "adm", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/gold-sets/")
    page.get_by_role("button", name="Finalise fees as a new gold set").click()
    after_the_job(page, page.locator("h1", has_text="Gold set fees v1"))
    expect(page.locator(".changed-documents")).to_contain_text(
        "2 gold spans on changed documents kept: 0 re-anchored (moved, same words), "
        "1 with the facts changed, 0 marked again in the new version, 1 not re-checked"
    )
    gold_set = question_set.gold_sets.get()
    assert gold_set.manifest["spans_on_changed_documents"] == {
        "spans": 2,
        "moved": 0,
        "re_marked": 0,
        "facts_changed": 1,
        "not_rechecked": 1,
        "fact_links": 0,
    }
