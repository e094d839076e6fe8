"""labelling.passage_html: document text rendered as Markdown with every character kept at its
offset, so a selection on the page turns back into exact offsets of the stored text."""

from __future__ import annotations

import random
import re
from html import unescape

import pytest

from labelling.highlight import highlight
from labelling.passage_html import HIDE, parse, passage_html

SPAN = re.compile(
    r'<span class="([^"]*)" data-start="(\d+)">(?:<mark class="([^"]*)">)?(.*?)<', re.S
)

SAMPLE = (
    "# Annual leave\n"
    "Staff get **25 days** of leave\n"
    "a year, *plus* public holidays.\n"
    "\n"
    "- Carry over up to _five_ days\n"
    "- Ask your manager\n"
    "  first\n"
    "1. Fill in the form\n"
    "\n"
    "> Quoted text\n"
    "\n"
    "```\n"
    "code **not bold**\n"
    "```\n"
    "Remote work\n"
    "-----------\n"
    "See [the policy](https://example.test/p) and `FIN_PROC_030` or snake_case_name.\n"
)


def spans(html: str) -> list[tuple[str, int, str]]:
    """(classes, start, text) of each segment in the page's HTML, in order."""
    return [
        (classes, int(start), unescape(text)) for classes, start, _m, text in SPAN.findall(html)
    ]


def visible(html: str) -> str:
    return "".join(text for classes, _s, text in spans(html) if "md-hide" not in classes)


def blocks_of(html: str) -> list[tuple[str, str]]:
    """(classes, visible text) of each block."""
    return [
        (classes, visible(inner))
        for classes, inner in re.findall(
            r'<div class="(md-block[^"]*)"[^>]*>(.*?)</div>', html, re.S
        )
    ]


def render(text: str, offset: int = 0, **kwargs) -> str:
    return str(passage_html(highlight(text, offset=offset), context=False, **kwargs))


def test_headings_lists_and_emphasis_become_structure_with_their_syntax_hidden():
    html = render(SAMPLE)
    blocks = blocks_of(html)
    assert blocks[0] == ("md-block md-h md-h1", "Annual leave")
    # A hard line break inside a paragraph stays (the page joins it with a space); the
    # emphasis marks are hidden.
    assert blocks[1] == (
        "md-block md-p",
        "Staff get 25 days of leave\na year, plus public holidays.",
    )
    assert blocks[2] == ("md-block md-li", "Carry over up to five days")
    assert blocks[3] == ("md-block md-li", "Ask your manager\n  first")
    assert blocks[4] == ("md-block md-li", "Fill in the form")
    assert blocks[5] == ("md-block md-quote", "Quoted text")
    assert blocks[6] == ("md-block md-code", "code **not bold**")
    assert blocks[7] == ("md-block md-h md-h2", "Remote work")
    assert blocks[8][1] == "See the policy and FIN_PROC_030 or snake_case_name."
    assert 'data-marker="•"' in html and 'data-marker="1."' in html
    styled = {text: classes for classes, _s, text in spans(html)}
    assert "md-strong" in styled["25 days"] and "md-em" in styled["plus"]
    assert "md-em" in styled["five"] and "md-code" in styled["FIN_PROC_030"]
    assert "md-link" in styled["the policy"]
    assert "md-hide" in styled["# "] and "md-syntax" in styled["# "]


def test_a_blank_line_makes_a_new_paragraph_and_is_hidden():
    html = render("one\ntwo\n\nthree")
    assert [text for _c, text in blocks_of(html)] == ["one\ntwo", "three"]
    assert [(c, s, t) for c, s, t in spans(html) if not t.strip()] == [
        ("seg", 3, "\n"),  # joined: the page shows it as a space
        ("seg md-hide", 7, "\n"),
        ("seg md-hide", 8, "\n"),
    ]


@pytest.mark.parametrize("offset", [0, 1234])
def test_every_segment_spells_the_stored_text_at_its_offset(offset):
    html = render(SAMPLE, offset=offset)
    found = spans(html)
    assert "".join(text for _c, _s, text in found) == SAMPLE
    for _classes, start, text in found:
        assert SAMPLE[start - offset : start - offset + len(text)] == text


def random_markdownish(rng: random.Random) -> str:
    pieces = [
        "word",
        "Policy",
        "FIN-PROC-030",
        "snake_case",
        " ",
        " ",
        " ",
        "\n",
        "\n\n",
        "\r",
        "\u2028",
        "\x0c",
        "\x85",
        "# ",
        "## ",
        "- ",
        "* ",
        "1. ",
        "2) ",
        "> ",
        "**",
        "*",
        "_",
        "__",
        "`",
        "```",
        "~~~",
        "---",
        "===",
        "[link](http://x.test/a)",
        "![img](x.png)",
        "\\*",
        "\\",
        "|",
        "| a | b |",
        "<b>",
        "&amp;",
        "\t",
        "\r\n",
        "é",
        "𝔄",
        "[",
        "]",
        "(",
        ")",
        "#",
        "  ",
        "3.",
        "***",
    ]
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 120)))


def test_random_markdownish_text_round_trips_through_pieces_and_html():
    rng = random.Random(20261206)
    for _ in range(400):
        text = random_markdownish(rng)
        blocks, pieces = parse(text)
        # The pieces cover the text exactly once, in order.
        assert "".join(text[p.start : p.end] for p in pieces) == text
        assert all(a.end == b.start for a, b in zip(pieces, pieces[1:], strict=False))
        assert all(-1 <= p.block < len(blocks) for p in pieces)
        # Cut at a passage and at evidence, the HTML's segments still spell it at their offsets.
        cut = sorted(rng.sample(range(len(text) + 1), 2)) if len(text) > 1 else [0, len(text)]
        segments = highlight(text, offset=7, passage=(7 + cut[0], 7 + cut[1]), layers={"e": []})
        html = str(passage_html(segments))
        found = spans(html)
        assert "".join(t for _c, _s, t in found) == text
        for _classes, start, chars in found:
            assert text[start - 7 : start - 7 + len(chars)] == chars
        # What is shown is what is not hidden: every hidden piece is syntax or white space.
        for piece in pieces:
            if piece.block == -1:
                assert not text[piece.start : piece.end].strip()


def test_evidence_and_passage_cut_the_rendered_segments():
    text = "# Title\nThe **deadline** is March."
    start = text.index("deadline")
    segments = highlight(
        text, offset=0, passage=(8, len(text)), layers={"e": [(start, start + len("deadline"))]}
    )
    html = str(passage_html(segments))
    evidence = [(c, s, t) for c, s, t in spans(html) if "evidence" in c]
    assert evidence == [("seg passage evidence md-strong", start, "deadline")]
    # The heading is all context: hidden with the context around the passage.
    assert blocks_of(html)[0] == ("md-block context md-h md-h1", "Title")
    assert blocks_of(html)[1][0] == "md-block md-p"


def test_adjudication_layers_are_marks_in_the_rendered_text():
    text = "- **Both** saw it"
    segments = highlight(
        text, offset=0, passage=(0, len(text)), layers={"a": [(4, 8)], "b": [(4, 8)]}
    )
    html = str(passage_html(segments, context=False, layer_marks=True))
    assert (
        '<span class="seg passage md-strong" data-start="4"><mark class="layer-ab">Both</mark>'
        in html
    )
    assert "context" not in html and "evidence" not in html


HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[click me](javascript:alert(1))",
    "[click](javascript:alert)",
    '<a href="javascript:alert(1)">x</a>',
    "**<svg onload=alert(1)>**",
    "# <iframe src=//evil.test>",
    "`<script>`",
    '![x](javascript:alert) " onmouseover="alert(1)',
]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_document_text_never_becomes_markup(hostile):
    text = f"Intro\n\n{hostile}\n\n- item {hostile}\n"
    html = render(text)
    assert "<script" not in html and "<img" not in html and "<svg" not in html
    assert "<iframe" not in html and "<a " not in html
    # Only the renderer's own tags and attributes appear; the text is escaped text.
    tags = re.findall(r"<(\w+)([^>]*)>", html)
    assert {name for name, _attributes in tags} <= {"div", "span", "mark"}
    attributes = {a for _n, attrs in tags for a in re.findall(r"([\w-]+)=", attrs)}
    assert attributes <= {"class", "data-start", "data-marker"}
    assert "".join(t for _c, _s, t in spans(html)) == text


def test_nothing_to_show_is_empty():
    assert str(passage_html([])) == ""
    assert parse("") == ((), ())


def test_emphasis_needs_a_closing_mark_and_underscores_inside_words_are_letters():
    html = render("2 * 3 * 4 and a*b and snake_case_name and **open")
    assert visible(html) == "2 * 3 * 4 and a*b and snake_case_name and **open"
    assert "md-em" not in html and "md-strong" not in html


def test_a_long_line_of_lone_marks_is_left_as_text():
    text = "*a " * 5000
    _blocks, pieces = parse(text)
    assert "".join(text[p.start : p.end] for p in pieces) == text
    assert all(p.style != HIDE for p in pieces)


def test_a_whole_document_too_long_to_render_is_shown_as_plain_text(monkeypatch):
    monkeypatch.setattr("labelling.passage_html.RENDERED_CHARS", 40)
    text = "# Title\n\nA **long** document, its lines kept as they are."
    html = render(text)
    assert blocks_of(html) == [("md-block md-plain", text)]
    assert "md-hide" not in html
    assert render("# Short").count("md-syntax") == 1
