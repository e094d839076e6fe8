"""Issue 33, items 1, 2, 8 and 12 in Chromium, as a lead: "Assign it" on a production sample
reaches the Assignments page with its pool chosen; a label under *Second labellers* ticks its
own form's box; "Draw now" on a rule drawn this week opens that sample instead of drawing
another; Index health's banner says what its page says and links nowhere. (Every link, form
and id of every page, for every role: tests/test_links.py.)"""

import datetime

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from corpus.services import projects, retrieval
from health.services import manifests
from health.tasks import check_index_health
from labelling.services import assignments
from production.models import Sample
from production.services import sampling
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    UserFactory,
    add_documents,
    grading_pool,
)
from tests.health.test_health_banner import INDEXED
from tests.health.test_index_health import NEW_POLICY, POLICY_TEXT, SECRET, VPN, reimport

pytestmark = pytest.mark.e2e


def lead_and_labellers(project):
    lead = UserFactory(username="lea")
    MembershipFactory(project=project, user=lead, role="lead")
    labellers = []
    for name in ("labeller1", "labeller2"):
        user = UserFactory(username=name)
        MembershipFactory(project=project, user=user, role="labeller")
        labellers.append(user)
    return lead, labellers


@pytest.mark.parametrize("width", [1366, 1024])
def test_from_a_sample_to_its_labellers_and_no_second_draw(
    transactional_db, live_server, page, project, width
):
    page.set_viewport_size({"width": width, "height": 900})
    lead, (first, second) = lead_and_labellers(project)
    planned = grading_pool(project, questions=4, passages=1)  # both planning forms show
    assignments.plan_assignments(pool=planned, labellers=[first], double_share=0)
    pool = grading_pool(project, questions=2, passages=1)
    rule = sampling.save_sampling_rule(
        project=project,
        user=lead,
        name="weekly",
        spec=sampling.check_rule(filters={}, strategy="uniform", size=5),
    )
    now = timezone.now()
    sample = Sample.objects.create(
        project=project,
        rule=rule,
        window_start=now - datetime.timedelta(days=7),
        window_end=now,
        population=2,
        question_set=pool.question_set,
    )

    log_in(page, live_server, "lea", PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/samples/{sample.pk}/")
    page.get_by_role("link", name="Assign it").click()
    expect(page.get_by_role("heading", name="Plan a pool")).to_be_visible()
    plan = page.locator("form.plan-form").first
    seconds = page.locator("#second-labellers")
    expect(plan.get_by_label("Pool")).to_have_value(str(pool.pk))

    # The label "labeller2" under Second labellers ticks that form's box, not Plan a pool's.
    seconds.locator("label", has_text="labeller2").click()
    expect(seconds.get_by_label("labeller2")).to_be_checked()
    expect(plan.get_by_label("labeller2")).not_to_be_checked()
    plan.locator("label", has_text="labeller1").click()
    expect(plan.get_by_label("labeller1")).to_be_checked()
    expect(seconds.get_by_label("labeller1")).not_to_be_checked()
    page.screenshot(path=f"/tmp/iG-assignments-{width}.png", full_page=True)

    # Draw now, on a rule this week's sample came from: that sample, and no second one.
    page.goto(f"{live_server.url}/p/{project.slug}/samples/")
    page.get_by_role("button", name="Draw now").click()
    expect(page.locator(".messages")).to_contain_text("already drew")
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"Production sample {sample.pk}")
    # The banner of this sample names it without a link to this very page.
    banner = page.locator(".banner", has_text="New production sample")
    expect(banner).to_contain_text(pool.question_set.name)
    expect(banner.get_by_role("link")).to_have_count(0)
    page.screenshot(path=f"/tmp/iG-sample-{width}.png", full_page=True)
    assert Sample.objects.count() == 1


@pytest.mark.parametrize("width", [1366, 1024])
def test_index_health_s_banner_says_what_its_page_says(
    transactional_db, live_server, page, project, width
):
    page.set_viewport_size({"width": width, "height": 900})
    add_documents(project, ("policy", POLICY_TEXT), ("vpn", VPN), ("secret", SECRET, ["hr"]))
    team = retrieval.add_retriever(project=project, name="team", kind="run")
    manifests.import_manifest(retriever=team, data=INDEXED, file_name="index.csv")
    modified = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=9)
    reimport(project, "policy", NEW_POLICY, modified)
    reimport(project, "secret", SECRET + " Revised.", modified)
    lead = UserFactory(username="lea")
    MembershipFactory(project=project, user=lead, role="lead")
    projects.set_access_group_members(project=project, name="hr", users=[lead])
    check_index_health.apply()

    log_in(page, live_server, "lea", PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/")
    project_banner = page.locator("#index-health-banner")
    expect(project_banner).to_contain_text("the daily check of")
    expect(project_banner).to_contain_text("1 of 2 searchable documents are stale")
    project_banner.get_by_role("link", name="Open Index health").click()

    banner = page.locator("#index-health-banner")
    expect(banner).to_contain_text("the figures below cross")
    expect(banner).to_contain_text("2 of 3 searchable documents are stale")
    expect(page.locator("#health-team")).to_contain_text("2 of 3")
    expect(banner.get_by_role("link")).to_have_count(0)
    page.screenshot(path=f"/tmp/iG-index-health-{width}.png")
