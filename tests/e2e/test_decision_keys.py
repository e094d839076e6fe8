"""Issue 33, item 15: a lead decides with the keys the grading page has, in Chromium: 0 1 2
choose the final grade, a / u the verdict, ? lists the keys, Ctrl+Enter records (from the note
too), and keys typed into the note stay text."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from corpus.models import Document
from labelling.models import Assignment, Candidate, Judgement, Pool, Resolution, Verdict
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


def disagreement():
    project = ProjectFactory(slug="acme")
    add_documents(project, ("leave", POLICY_TEXT))
    version = Document.objects.get(doc_id="leave").latest_version
    question_set = QuestionSetFactory(project=project, name="hr")
    questions = [
        QuestionFactory(question_set=question_set, external_id=f"q{i}", text=f"leave {i}?")
        for i in (1, 2)
    ]
    pool = Pool.objects.create(question_set=question_set, name="p", state="ready")
    candidate, other = (
        Candidate.objects.create(pool=pool, question=q, version=version, start=0, end=120)
        for q in questions
    )
    now = timezone.now()
    for slot, (name, grade, outcome) in enumerate(
        (("ann", 2, "answerable"), ("bob", 0, "unanswerable")), start=1
    ):
        user = UserFactory(username=name)
        MembershipFactory(project=project, user=user, role="labeller")
        for question in questions:
            assignment = Assignment.objects.create(
                pool=pool,
                question=question,
                slot=slot,
                labeller=user,
                assigned_at=now,
                completed_at=now,
            )
            if question == questions[0]:  # the grades differ
                Judgement.objects.create(assignment=assignment, candidate=candidate, grade=grade)
            else:  # the grades agree, the verdicts differ
                Judgement.objects.create(assignment=assignment, candidate=other, grade=1)
                Verdict.objects.create(assignment=assignment, outcome=outcome)
    MembershipFactory(project=project, user=UserFactory(username="lena"), role="lead")
    return question_set, pool, candidate, questions


@pytest.mark.parametrize("width", [1366, 1024])
def test_a_lead_decides_a_passage_and_a_verdict_by_keys(transactional_db, live_server, page, width):
    page.set_viewport_size({"width": width, "height": 800})
    question_set, pool, candidate, questions = disagreement()
    log_in(page, live_server, "lena", PASSWORD)
    base = f"{live_server.url}/p/acme/sets/{question_set.pk}/adjudication/{pool.pk}"
    page.goto(f"{base}/{questions[0].pk}/candidates/{candidate.pk}/")

    # ? lists the keys; ? again (or Esc) closes the list, and a grade key does nothing under it.
    page.keyboard.press("?")
    keys = page.locator("#keys-help")
    expect(keys).to_be_visible()
    expect(keys).to_contain_text("final grade")
    page.screenshot(path=f"/tmp/iG-decision-keys-{width}.png")
    page.keyboard.press("1")
    expect(page.get_by_label("1 — partially answers")).not_to_be_checked()
    page.keyboard.press("?")
    expect(keys).to_be_hidden()

    page.keyboard.press("1")
    expect(page.get_by_label("1 — partially answers")).to_be_checked()
    page.keyboard.press("2")
    expect(page.get_by_label("2 — fully answers")).to_be_checked()
    # Typed into the note, digits and letters are text.
    note = page.get_by_label("Note")
    note.click()
    page.keyboard.type("0 a u 1 by the guideline")
    expect(note).to_have_value("0 a u 1 by the guideline")
    expect(page.get_by_label("2 — fully answers")).to_be_checked()
    page.screenshot(path=f"/tmp/iG-decision-page-{width}.png", full_page=True)
    page.keyboard.press("Control+Enter")  # records from the note
    expect(page.locator(".messages")).to_contain_text("Resolved")
    resolution = Resolution.objects.get(candidate=candidate)
    assert (resolution.grade, resolution.note) == (2, "0 a u 1 by the guideline")

    # The verdict: u, then Ctrl+Enter; 0 1 2 are not this page's.
    page.goto(f"{base}/{questions[1].pk}/verdict/")
    page.keyboard.press("2")
    page.keyboard.press("u")
    expect(page.get_by_label("No passage answers this question")).to_be_checked()
    page.keyboard.press("a")
    expect(page.get_by_label("Answerable")).to_be_checked()
    page.keyboard.press("u")
    page.keyboard.press("Control+Enter")
    expect(page.locator(".messages")).to_contain_text("Resolved")
    verdict = Resolution.objects.get(question=questions[1], candidate=None)
    assert verdict.outcome == "unanswerable"
