"""Passages shown as rendered Markdown (issue 33 item 13), in real Chromium: headings, lists and
emphasis are structure, a hard line break is joined, hostile text stays text, and a word
selected in a heading, a list item or an emphasis is stored at its exact offsets in the
document's text."""

import re

import pytest
from playwright.sync_api import expect

from labelling.models import Assignment, Span
from tests.e2e.conftest import log_in
from tests.factories import (
    PASSWORD,
    DocumentVersionFactory,
    MembershipFactory,
    PoolCandidateFactory,
    ProjectFactory,
    QuestionFactory,
    QuestionSetFactory,
    ReadyPoolFactory,
    UserFactory,
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


def select_in_view(page, word, *, from_syntax=False):
    """Select `word` where the page shows it (a visible segment's text node) with a plain DOM
    range; with `from_syntax`, start the range at the hidden syntax just before it."""
    page.evaluate(
        """([word, fromSyntax]) => {
            const segs = Array.from(document.querySelectorAll('.doc-view .seg:not(.md-hide)'));
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
        [word, from_syntax],
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
