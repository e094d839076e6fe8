"""Passages shown as rendered Markdown (issue 33 item 13), in real Chromium: headings, lists and
emphasis are structure, a hard line break is joined, hostile text stays text, and a word
selected in a heading, a list item or an emphasis is stored at its exact offsets in the
document's text."""

import re

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from corpus.models import Document
from labelling.models import Assignment, Candidate, Judgement, Pool, Resolution, Span, SpanRecheck
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    VPN_TEXT,
    DocumentVersionFactory,
    MembershipFactory,
    PoolCandidateFactory,
    ProjectFactory,
    QuestionFactory,
    QuestionSetFactory,
    ReadyPoolFactory,
    UserFactory,
    add_documents,
    labelled_question_set,
)

pytestmark = pytest.mark.e2e

MARKDOWN = (
    "# Annual leave policy\n"
    "Staff may carry over\n"
    "at most **five days** into the next year.\n"
    "\n"
    "- Requests use form *HR-F-112*\n"
    "- Deadline: 31 January\n"
    "\n"
    '<script>window.pwned = 1</script> <img src=x onerror="window.pwned = 2"> '
    "[the portal](javascript:void)\n"
)


@pytest.fixture
def grading(live_server, page):
    project = ProjectFactory(slug="acme", name="Acme gold")
    lina = UserFactory(username="lina")
    MembershipFactory(project=project, user=lina, role="labeller")
    question_set = QuestionSetFactory(project=project)
    pool = ReadyPoolFactory(question_set=question_set)
    question = QuestionFactory(question_set=question_set, text="How much leave carries over?")
    version = DocumentVersionFactory(document__project=project, text=MARKDOWN)
    PoolCandidateFactory(pool=pool, question=question, version=version, start=0, end=len(MARKDOWN))
    Assignment.objects.create(pool=pool, question=question, slot=1, labeller=lina)
    log_in(page, live_server, "lina", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/grade/{pool.pk}/{question.pk}/")
    return page


def select_in_view(page, word, *, from_syntax=False, view=".doc-view"):
    """Select `word` where the page shows it (a visible segment's text node) with a plain DOM
    range; with `from_syntax`, start the range at the hidden syntax just before it."""
    page.evaluate(
        """([word, fromSyntax, view]) => {
            const segs = Array.from(document.querySelectorAll(view + ' .seg:not(.md-hide)'));
            // The page may have marked the question's terms inside a segment: find the text
            // node that holds the word.
            const seg = segs.find((s) => s.textContent.includes(word));
            const walker = document.createTreeWalker(seg, NodeFilter.SHOW_TEXT);
            let node = walker.nextNode();
            while (!node.data.includes(word)) node = walker.nextNode();
            const at = node.data.indexOf(word);
            const range = document.createRange();
            if (fromSyntax) {
                const hidden = seg.previousElementSibling;
                range.setStart(hidden.firstChild, 0);
            } else {
                range.setStart(node, at);
            }
            range.setEnd(node, at + word.length);
            window.getSelection().removeAllRanges();
            window.getSelection().addRange(range);
        }""",
        [word, from_syntax, view],
    )


def test_markdown_is_rendered_and_hostile_text_stays_text(grading):
    page = grading
    view = page.locator(".doc-view")
    expect(view.locator(".md-h1")).to_have_text("Annual leave policy", use_inner_text=True)
    expect(view.locator(".md-syntax").first).to_be_hidden()
    # The hard line break inside the paragraph is joined with a space; the ** are hidden.
    paragraph = view.locator(".md-p").first
    assert paragraph.inner_text() == "Staff may carry over at most five days into the next year."
    expect(view.locator(".seg.md-strong")).to_have_css("font-weight", "650")
    items = view.locator(".md-li")
    expect(items).to_have_count(2)
    expect(items.nth(0)).to_have_text("Requests use form HR-F-112", use_inner_text=True)
    marker = page.evaluate(
        "() => getComputedStyle(document.querySelector('.md-li'), '::before').content"
    )
    assert marker == '"•"'
    # Raw HTML is text, a javascript: link is its words only.
    expect(view).to_contain_text("<script>window.pwned = 1</script>")
    expect(view).to_contain_text('<img src=x onerror="window.pwned = 2">')
    expect(view).to_contain_text("the portal")
    expect(view).not_to_contain_text("javascript:void", use_inner_text=True)
    assert view.locator("script, img, a").count() == 0
    assert page.evaluate("() => window.pwned") is None


def test_words_selected_in_a_heading_a_list_item_and_emphasis_are_stored_at_their_offsets(
    grading,
):
    page = grading
    card = page.locator("li.candidate").first
    expect(card).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("2")
    expect(card).to_have_class(re.compile(r"\bgrade-2\b"))
    quotes = card.locator(".evidence-list q")

    # A word of the heading: it narrows the default span (the whole passage) to itself.
    select_in_view(page, "leave")
    page.keyboard.press("s")
    expect(quotes).to_have_text(["leave"])
    span = Span.objects.get()
    assert MARKDOWN[span.start : span.end] == "leave" == span.quote
    assert span.start == MARKDOWN.index("leave")

    # Bold words, the selection starting in the hidden "**": the span starts after it.
    select_in_view(page, "five days", from_syntax=True)
    page.keyboard.press("Shift+S")
    expect(quotes).to_have_text(["leave", "five days"])
    span = Span.objects.order_by("start")[1]
    start = MARKDOWN.index("five days")
    assert (span.start, span.end) == (start, start + len("five days"))
    assert span.quote == "five days"

    # A double-click inside the emphasised form number in a list item: snapped to the whole
    # code, without the hidden "*" around it.
    card.locator(".md-li .seg.md-em").dblclick()
    page.keyboard.press("s")
    expect(quotes).to_have_text(["leave", "five days", "HR-F-112"])
    span = Span.objects.order_by("start")[2]
    assert MARKDOWN[span.start : span.end] == "HR-F-112" == span.quote

    # The saved evidence is highlighted inside the rendered structure.
    view = card.locator(".doc-view")
    expect(view.locator(".md-h1 .seg.evidence")).to_have_text("leave", use_inner_text=True)
    expect(view.locator(".md-p .seg.evidence.md-strong")).to_have_text("five days")
    expect(view.locator(".md-li .seg.evidence.md-em")).to_have_text("HR-F-112")
    assert view.locator(".seg.evidence.md-hide").count() == 0


def test_a_lead_selects_evidence_in_rendered_markdown_on_the_adjudication_page(
    transactional_db, live_server, page
):
    project = ProjectFactory(slug="acme")
    add_documents(project, ("leave", MARKDOWN))
    version = Document.objects.get(doc_id="leave").latest_version
    assert version.text == MARKDOWN
    question_set = QuestionSetFactory(project=project, name="hr")
    question = QuestionFactory(question_set=question_set, external_id="q1", text="which form?")
    pool = Pool.objects.create(question_set=question_set, name="p", state="ready")
    candidate = Candidate.objects.create(
        pool=pool, question=question, version=version, start=0, end=len(MARKDOWN)
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
    page.get_by_role("link", name="Resolve").click()
    text = page.locator("#resolve-text")
    expect(text.locator(".md-h1")).to_have_text("Annual leave policy", use_inner_text=True)
    expect(text.locator(".md-li").first).to_have_text(
        "Requests use form HR-F-112", use_inner_text=True
    )
    page.get_by_label("2 — fully answers").check()
    # The form number, from the hidden "*" before it: the span is the number alone.
    select_in_view(page, "HR-F-112", from_syntax=True, view="#resolve-text")
    page.get_by_role("button", name="Add the selection").click()
    start = MARKDOWN.index("HR-F-112")
    expect(page.locator("#chosen-spans")).to_contain_text("HR-F-112")
    expect(page.locator("[name=custom_spans]")).to_have_value(f"{start}-{start + 8}")
    page.get_by_role("button", name="Record the resolution").click()
    expect(page.locator(".messages")).to_contain_text("Resolved")
    resolution = Resolution.objects.get()
    assert [(s.start, s.end) for s in resolution.spans.all()] == [(start, start + 8)]


def test_a_labeller_marks_evidence_again_in_a_rendered_markdown_heading(
    transactional_db, live_server, page
):
    project = ProjectFactory(slug="acme")
    people = {}
    for name, role in (("ann", "labeller"), ("bob", "labeller"), ("lena", "lead")):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    labelled_question_set(project, ann=people["ann"], bob=people["bob"], lead=people["lena"])
    first_sentence = VPN_TEXT[: VPN_TEXT.index(".") + 1]
    new_text = "# Intro **line**\n\n" + first_sentence
    add_documents(project, ("vpn", new_text))

    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/recheck/")
    rows = page.locator("table.recheck tbody tr")
    expect(rows.nth(1)).to_contain_text("not found")
    rows.nth(1).get_by_role("link", name="Mark it again").click()
    text = page.locator("#remark-text")
    expect(text.locator(".md-h1")).to_have_text("Intro line", use_inner_text=True)
    # From the hidden "# " to the end of the bold word: the span is the heading's words.
    page.evaluate(
        """() => {
            const view = document.getElementById('remark-text');
            const hidden = view.querySelector('.md-syntax');
            const bold = view.querySelector('.md-strong').firstChild;
            const range = document.createRange();
            range.setStart(hidden.firstChild, 0);
            range.setEnd(bold, bold.data.length);
            window.getSelection().removeAllRanges();
            window.getSelection().addRange(range);
        }"""
    )
    page.get_by_role("button", name="Use the selection").click()
    expect(page.locator("#chosen-quote")).to_have_text("Intro **line")
    page.get_by_role("button", name="Save the evidence in the new version").click()
    expect(page.locator(".messages")).to_contain_text("Marked again")
    recheck = SpanRecheck.objects.get(outcome="re-marked")
    assert (recheck.start, recheck.end) == (2, len("# Intro **line"))
    assert new_text[recheck.start : recheck.end] == "Intro **line"
