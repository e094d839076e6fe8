"""Calibration items answered blind (issue 36 item 4), in real Chromium: a lead sets the share,
a labeller gets a question a lead decided, on a page like any other, grades it, then reads her
figures and the guideline behind her disagreement; the lead sees everyone's; the gold export is
unchanged."""

import re

import pytest
from playwright.sync_api import expect

from evaluation.services import gold_sets
from labelling.models import Assignment, AssignmentPurpose, CalibrationShare, Guideline, Pool
from labelling.services import adjudication
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    ProjectFactory,
    QuestionFactory,
    ReadyPoolFactory,
    UserFactory,
    labelled_question_set,
)

pytestmark = pytest.mark.e2e

# Any element outside the menu (which links "My calibration") whose attributes or text name
# calibration would give the question away.
MARKERS = """() => {
  const hits = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('.project-nav')) continue;
    for (const a of el.attributes) {
      if (/calib|purpose/i.test(a.name + ' ' + a.value)) hits.push(el.tagName + ' ' + a.name);
    }
  }
  const main = document.querySelector('main') || document.body;
  const text = [...main.childNodes].map(n => n.textContent || '').join(' ');
  if (/calibrat/i.test(text.replace(/My calibration/g, ''))) hits.push('text');
  return hits;
}"""


def make_world():
    project = ProjectFactory(slug="acme", name="Acme gold")
    people = {}
    for name, role in (
        ("ann", "labeller"),
        ("bob", "labeller"),
        ("cara", "labeller"),
        ("lea", "lead"),
        ("adm", "admin"),
    ):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    Guideline.objects.create(
        project=project,
        version=1,
        text="# Relevance\n\n## Vendor documents\n\nA vendor's manual answers **no** HR question.",
        created_by=people["lea"],
    )
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lea"]
    )
    pool = Pool.objects.get(question_set=question_set)
    q1 = question_set.questions.get(external_id="q1")
    vpn = pool.candidates.get(question=q1, version__document__doc_id="vpn")
    adjudication.resolve(
        pool=pool,
        question=q1,
        candidate=vpn,
        user=people["lea"],
        grade=0,
        note="A VPN manual: see Vendor documents.",
    )
    # Real work waiting for cara, in a set of its own.
    other = ReadyPoolFactory(question_set__project=project)
    Assignment.objects.create(
        pool=other, question=QuestionFactory(question_set=other.question_set), slot=1
    )
    return project, people, question_set, pool, q1


def gold_files(gold_set):
    return {n: c for n, c in gold_sets.bundle_files(gold_set).items() if n != "manifest.json"}


def test_calibration_items_answered_blind(live_server, browser):
    project, people, question_set, pool, q1 = make_world()
    before = gold_sets.finalise_gold_set(question_set=question_set, user=people["adm"])

    lead_context = browser.new_context()
    lead = lead_context.new_page()
    lead.set_default_timeout(20_000)
    log_in(lead, live_server, "lea", PASSWORD)
    lead.goto(f"{live_server.url}/p/acme/")
    nav = lead.locator(".project-nav")
    nav.get_by_role("button", name="Labelling").click()
    nav.get_by_role("link", name="Calibration", exact=True).click()
    expect(lead.locator("h1")).to_have_text("Calibration")
    lead.get_by_label("Calibration share (%)").fill("50")
    lead.get_by_role("button", name="Save the share").click()
    expect(lead.locator(".messages")).to_contain_text("Calibration share set to 50%.")
    assert CalibrationShare.objects.get(project=project).percent == 50
    # Beyond the form's bound, so the draw is certain in a test: every "next" is calibration.
    CalibrationShare.objects.filter(project=project).update(percent=100)

    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    log_in(page, live_server, "cara", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/queue/")
    page.locator("#continue-button").click()
    page.wait_for_url(re.compile(rf"/p/acme/grade/{pool.pk}/{q1.pk}/$"))
    served = Assignment.objects.get(labeller=people["cara"], question=q1)
    assert served.purpose == AssignmentPurpose.CALIBRATION
    # Blind: the same page as any question, nothing in the DOM naming calibration.
    expect(page.locator("#question-text")).to_have_text(q1.text)
    assert page.evaluate(MARKERS) == []
    cards = page.locator("li.candidate")
    expect(cards).to_have_count(2)
    expect(cards.nth(0)).to_have_class(re.compile(r"\bcurrent\b"))
    # The leave passage (shown first) fully answers; the vpn one too, says cara: the lead
    # decided 0.
    page.keyboard.press("2")
    expect(cards.nth(0)).to_have_class(re.compile(r"\bgrade-2\b"))
    page.keyboard.press("j")
    page.keyboard.press("2")
    expect(cards.nth(1)).to_have_class(re.compile(r"\bgrade-2\b"))
    page.keyboard.press("a")
    expect(page.locator("#question-progress")).to_contain_text("done")
    assert page.evaluate(MARKERS) == []
    # Her queue counts it like any other question.
    page.goto(f"{live_server.url}/p/acme/queue/")
    expect(page.locator("#my-progress")).to_contain_text("Done1")
    assert page.evaluate(MARKERS) == []

    page.locator(".project-nav").get_by_role("link", name="My calibration", exact=True).click()
    expect(page.locator("h1")).to_have_text("My calibration")
    expect(page.locator("#my-calibration")).to_be_visible()
    disagreement = page.locator(".calibration-disagreement")
    expect(disagreement).to_have_count(1)
    expect(disagreement).to_contain_text("You graded it 2; the lead decided 0")
    expect(disagreement).to_contain_text("A VPN manual: see Vendor documents.")
    expect(disagreement.locator(".guideline-section")).to_contain_text(
        "A vendor's manual answers no HR question."
    )
    expect(disagreement.get_by_role("link", name="guideline version 1")).to_be_visible()
    # Her own figures only: no other labeller, nor who decided.
    shown = page.locator("main").inner_text()
    assert not re.search(r"\b(ann|bob|lea)\b", shown), shown

    lead.reload()
    row = lead.locator("#calibration-labellers tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator("th")).to_have_text("cara")
    expect(row).to_contain_text("lenient")
    for width in (1366, 1024):  # a row of figures fits the page, as every lead page does
        lead.set_viewport_size({"width": width, "height": 900})
        assert lead.evaluate("document.documentElement.scrollWidth") <= width

    after = gold_sets.finalise_gold_set(question_set=question_set, user=people["adm"])
    assert gold_files(after) == gold_files(before)
    context.close()
    lead_context.close()
