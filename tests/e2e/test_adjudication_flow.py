"""A lead opens the queue, resolves a disagreement, and the gold view shows it — in Chromium."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from corpus.models import Document
from labelling.models import Assignment, Candidate, Judgement, Pool, Resolution
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    POLICY_TEXT,
    MembershipFactory,
    ProjectFactory,
    QuestionFactory,
    QuestionSetFactory,
    UserFactory,
    add_documents,
)

pytestmark = pytest.mark.e2e


def test_lead_resolves_a_disagreement_and_gold_shows_it(transactional_db, live_server, page):
    project = ProjectFactory(slug="acme")
    add_documents(project, ("leave", POLICY_TEXT))
    version = Document.objects.get(doc_id="leave").latest_version
    question_set = QuestionSetFactory(project=project, name="hr")
    question = QuestionFactory(
        question_set=question_set, external_id="q1", text="carry over leave??"
    )
    pool = Pool.objects.create(question_set=question_set, name="p", state="ready")
    candidate = Candidate.objects.create(
        pool=pool, question=question, version=version, start=0, end=120
    )
    now = timezone.now()
    for slot, (name, grade) in enumerate((("ann", 2), ("bob", 0)), start=1):
        user = UserFactory(username=name)
        MembershipFactory(project=project, user=user, role="labeller")
        assignment = Assignment.objects.create(
            pool=pool,
            question=question,
            slot=slot,
            labeller=user,
            assigned_at=now,
            completed_at=now,
        )
        Judgement.objects.create(assignment=assignment, candidate=candidate, grade=grade)
    MembershipFactory(project=project, user=UserFactory(username="lena"), role="lead")

    log_in(page, live_server, "lena", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/sets/{question_set.pk}/adjudication/")
    expect(page.locator("table.queue")).to_contain_text("grades differ (2 vs 0)")
    page.get_by_role("link", name="Resolve").click()
    expect(page.locator(".vote")).to_have_count(2)
    expect(page.locator(".vote-a")).to_contain_text("ann")
    expect(page.locator(".vote-b")).to_contain_text("bob")
    page.get_by_label("1 — partially answers").check()
    page.get_by_label("Evidence").select_option("candidate")
    page.get_by_role("button", name="Record the resolution").click()
    expect(page.locator(".messages")).to_contain_text("Resolved")
    page.get_by_role("link", name="Gold", exact=True).click()
    expect(page.locator("table.gold")).to_contain_text("grade 1")
    expect(page.locator("table.gold")).to_contain_text("leave v1 [0–120)")
    assert Resolution.objects.get().grade == 1
    assert sorted(Judgement.objects.values_list("grade", flat=True)) == [0, 2]  # both votes kept
