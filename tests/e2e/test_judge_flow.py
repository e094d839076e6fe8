"""The LLM judge in Chromium: an admin connects a judge, a lead starts judging, reads its
calibration and has the gold rule count its vote (then sees it on the decision pages); a
labeller's menu has no Judges and the judge's page refuses them."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from judges.models import AIJudgement, Judge
from tests.e2e.conftest import log_in
from tests.factories import PASSWORD, MembershipFactory, ProjectFactory, UserFactory
from tests.judges.world import build_world
from tests.llm_server import LLMServer

pytestmark = pytest.mark.e2e


def test_an_admin_connects_a_judge_and_a_lead_reads_its_calibration(
    worker, live_server, page, settings
):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    server = LLMServer().start()
    try:
        project = ProjectFactory(slug="acme")
        people = {}
        for name, role in (
            ("ann", "labeller"),
            ("bob", "labeller"),
            ("leo", "lead"),
            ("ada", "admin"),
        ):
            people[name] = UserFactory(username=name)
            MembershipFactory(project=project, user=people[name], role=role)
        world = build_world(
            project, ann=people["ann"], bob=people["bob"], lead=people["leo"], questions=10
        )
        server.truth.update(world.truth)
        set_id = world.question_set.pk

        log_in(page, live_server, "ada", PASSWORD)
        page.goto(f"{live_server.url}/p/acme/judges/")
        page.get_by_role("link", name="Connect a judge").click()
        page.fill("#id_name", "lenient")
        page.fill("#id_url", f"{server.url}/lenient/v1/chat/completions")
        page.fill("#id_model", "fake")
        page.fill("#id_api_key", "sk-not-a-reference")
        page.get_by_role("button", name="Connect the judge").click()
        expect(page.locator(".error")).to_contain_text("env:NAME")
        assert not Judge.objects.exists()
        page.fill("#id_api_key", "")
        page.get_by_role("button", name="Connect the judge").click()
        expect(page.locator("h1")).to_have_text("Judge lenient")

        page.context.clear_cookies()
        log_in(page, live_server, "leo", PASSWORD)
        page.goto(f"{live_server.url}/p/acme/")
        nav = page.locator(".project-nav")
        nav.get_by_role("button", name="Evaluate").hover()  # Judges is in the Evaluate menu
        nav.get_by_role("link", name="Judges").click()
        page.get_by_role("link", name="lenient").click()
        page.get_by_role("button", name="Start judging").click()
        expect(page.locator("body")).to_contain_text("30 candidates judged", timeout=60_000)
        assert AIJudgement.objects.filter(grade__isnull=False).count() == 30
        page.goto(f"{live_server.url}/p/acme/judges/{Judge.objects.get().pk}/")
        expect(page.locator("table.calibration")).to_contain_text("Cohen's kappa")
        expect(page.locator("body")).to_contain_text("graded above the gold on")
        expect(page.locator("body")).to_contain_text("items with gold are needed")
        page.get_by_role("button", name="Plant canaries in calib and judge them").click()
        expect(page.locator("body")).to_contain_text("canaries planted", timeout=60_000)
        page.goto(f"{live_server.url}/p/acme/judges/{Judge.objects.get().pk}/")
        expect(page.locator("body")).to_contain_text("Unfit: prompt v1 failed a canary class")

        # The lead has the gold rule count the judge: its disputed grades reach the queue, and
        # each decision page shows its vote beside the labellers', its quote highlighted.
        page.get_by_label("Count the AI judge's vote in the gold rule").check()
        page.get_by_role("button", name="Save").click()
        expect(page.locator("body")).to_contain_text(
            "The gold rule of calib now counts lenient's vote."
        )
        page.goto(live_server.url + reverse("labelling:list-adjudication", args=["acme", set_id]))
        expect(page.locator("body")).to_contain_text("counts the vote of the AI judge lenient")
        expect(page.locator("table.queue")).to_contain_text("vs the AI judge's")
        page.locator("table.queue").get_by_role("link", name="Resolve").first.click()
        expect(page.locator(".vote-ai h2")).to_have_text("AI judge (fake-judge-1, prompt v1)")
        expect(page.locator(".vote-ai")).to_contain_text("Counted by this set's gold rule")
        expect(page.locator("#resolve-text mark.layer-j").first).to_be_visible()
        page.goto(live_server.url + reverse("labelling:show-gold", args=["acme", set_id]))
        expect(page.locator(".ai-vote")).to_contain_text("lenient")

        page.context.clear_cookies()
        log_in(page, live_server, "ann", PASSWORD)
        page.goto(f"{live_server.url}/p/acme/")
        expect(page.get_by_role("link", name="My queue")).to_be_visible()
        expect(page.get_by_role("link", name="Judges")).to_have_count(0)
        response = page.goto(f"{live_server.url}/p/acme/judges/{Judge.objects.get().pk}/")
        assert response.status == 403
    finally:
        server.stop()
