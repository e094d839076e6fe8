"""A labeller answers their Re-check page in Chromium: confirms a re-anchored span, then marks
the other one again by selecting it in the new text (static/goldset/recheck.js)."""

import pytest
from playwright.sync_api import expect

from labelling.models import Change, SpanRecheck
from labelling.services.gold import resolve_gold
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    VPN_TEXT,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    add_documents,
    labelled_question_set,
)

pytestmark = pytest.mark.e2e

FIRST_SENTENCE = VPN_TEXT[: VPN_TEXT.index(".") + 1]


def test_a_labeller_confirms_one_span_and_marks_another_again(transactional_db, live_server, page):
    project = ProjectFactory(slug="acme")
    people = {}
    for name, role in (("ann", "labeller"), ("bob", "labeller"), ("lena", "lead")):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lena"]
    )
    add_documents(project, ("vpn", "Intro line.\n\n" + FIRST_SENTENCE))

    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/recheck/")
    rows = page.locator("table.recheck tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(1)).to_contain_text("not found")
    rows.nth(0).get_by_role("button", name="Confirm the new place").click()
    expect(page.locator(".messages")).to_contain_text("Confirmed")
    expect(rows.nth(0).locator(".answer")).to_contain_text("confirmed")

    rows.nth(1).get_by_role("link", name="Mark it again").click()
    expect(page.locator("h1")).to_have_text("Mark the evidence again")
    # Select "Intro lin" in the new text: the selection is completed to the whole word.
    page.evaluate(
        """() => {
            const node = document.querySelector('#remark-text .seg').firstChild;
            const range = document.createRange();
            range.setStart(node, 0);
            range.setEnd(node, 9);
            const selection = window.getSelection();
            selection.removeAllRanges();
            selection.addRange(range);
        }"""
    )
    page.get_by_role("button", name="Use the selection").click()
    expect(page.locator("#chosen-quote")).to_have_text("Intro line")
    page.get_by_role("button", name="Save the evidence in the new version").click()
    expect(page.locator(".messages")).to_contain_text("Marked again")
    expect(rows.nth(1).locator(".answer")).to_contain_text("Intro line")

    answers = {
        (r.span.start, r.span.end): (r.outcome, r.version.version, r.start, r.end)
        for r in SpanRecheck.objects.select_related("span", "version")
    }
    assert answers == {(0, 40): ("confirmed", 2, 13, 53), (100, 150): ("re-marked", 2, 0, 10)}
    assert Change.objects.filter(subject="recheck", made_by=people["ann"]).count() == 2
    (q2,) = [
        r
        for r in resolve_gold(question_set=question_set).questions
        if r.question.external_id == "q2"
    ]
    assert sorted((s.version, s.start, s.end) for s in q2.spans) == [(2, 0, 10), (2, 13, 53)]
