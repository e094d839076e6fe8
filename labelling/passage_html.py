"""Passage text shown as Markdown: the one renderer of document text cut into segments, for the
grading page, the adjudication page, the re-check page and the answer review's context.

Documents are stored as their text, Markdown syntax and all (``# Leave``, ``- item``,
``**must**``). The pages show it rendered: headings, list items, block quotes, code, rules as
structure; emphasis, code spans and link text styled; a hard line break inside a paragraph
joined with a space (CSS ``white-space: normal``) while a blank line makes a new paragraph.

Every character of the text stays in the page exactly once, inside a segment that carries its
offset (``data-start``): the syntax (``# ``, ``**``, ``- ``, ``](url)``) and the blank lines
between blocks sit in segments the page hides (class ``md-hide``; syntax also ``md-syntax``).
So the segments still spell the stored text, and static/goldset/selection.js turns a selection
back into exact offsets of it, as before; it only keeps hidden syntax from starting or ending
a span.

Why a small renderer of our own instead of a library: we need the source offset of every
character shown, and the Markdown libraries (markdown-it-py, which renders the guidelines, and
others) give tokens with source *line* maps only, after unescaping and joining, so a selection
could not be turned back into exact offsets. This one covers what documents use (ATX and setext
headings, bullet and numbered lists, block quotes, fenced code, rules, tables kept line by line,
``*em*``/``_em_``, ``**strong**``, code spans, ``[links](…)`` as text, backslash escapes) and
leaves anything else as the text it is. A passage is parsed as the window the page shows, so a
window that starts inside a code block may show its rest differently than the whole document
would; the offsets are exact either way.

Safety: document text is untrusted. Nothing of it is ever markup: every character goes through
``escape``, raw HTML (``<script>``, ``<img onerror=…>``) stays text, and a link is shown as its
text without an ``href`` (a ``javascript:`` target is text that is hidden).

Cheap: parsing is one pass over the lines and cached per text (a chunk's text is parsed once
per process, whatever its offset); each request only cuts the cached pieces at its segments'
edges (the passage, the evidence) and joins escaped strings. A whole document over
``RENDERED_CHARS`` is shown as plain text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import escape

from django.utils import safestring

from labelling.highlight import Segment

# Block-level syntax at the start of a line (CommonMark's shapes, simplified).
HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+|$)")
FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
RULE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
ITEM = re.compile(r"([ \t]*)([-*+]|(\d{1,9})[.)])(?:[ \t]+|$)")
QUOTE = re.compile(r" {0,3}>[ \t]?")
TABLE = re.compile(r"[ \t]*\|")
LINK = re.compile(r"!?\[([^\[\]\n]{1,500})\]\([^()\s]{0,2000}(?:[ \t]+\"[^\"\n]{0,500}\")?\)")
ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# How far an emphasis may reach for its closing delimiter: keeps a line full of lone `*` cheap.
REACH = 2000
TRIES = 32  # and how many candidate closers it looks at
NESTING = 3
HIDE = "md-hide md-syntax"
# A whole document longer than this is shown as plain text (as before Markdown was rendered):
# rendering it would multiply its HTML several times over for a page that shows a screenful.
RENDERED_CHARS = 200_000
JOINED = ("p", "li", "quote")  # blocks whose line breaks are joined with a space


@dataclass(frozen=True)
class Block:
    kind: str  # p, h, li, quote, code, table, hr; plain: a text too long to render
    level: int = 0  # a heading's level; a list item's indent (0-3)
    marker: str = ""  # a list item's bullet or number, shown by CSS, not part of the text


@dataclass(frozen=True)
class Piece:
    start: int  # offsets into the parsed text
    end: int
    block: int  # index into the blocks, or -1: between blocks (hidden white space)
    style: str  # CSS classes: "", "md-em", "md-strong md-em", "md-code", "md-link", HIDE


def _plain(text: str) -> tuple[tuple[Block, ...], tuple[Piece, ...]]:
    """Text too long to render as Markdown on a page: one block, shown line by line."""
    return (Block("plain"),), (Piece(0, len(text), 0, ""),)


@lru_cache(maxsize=256)
def parse(text: str) -> tuple[tuple[Block, ...], tuple[Piece, ...]]:
    """The blocks of ``text`` and its pieces: contiguous, covering every character once."""
    parser = _Parser(text)
    parser.run()
    return tuple(parser.blocks), tuple(parser.pieces)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.blocks: list[Block] = []
        self.pieces: list[Piece] = []
        self.open: int | None = None  # the block a following line may continue
        self.fence: str | None = None  # the opening fence of a code block we are inside
        self.newline: tuple[int, int, int | None] | None = None  # the last line's break

    def run(self) -> None:
        text = self.text
        position = 0
        for line in text.splitlines(keepends=True):
            body = line.rstrip("\r\n")
            end = position + len(body)
            self.line(position, end)
            self.newline = (end, position + len(line), self.open)
            position += len(line)
        self.close_line_break(None)

    # Pieces ---------------------------------------------------------------------------------

    def add(self, start: int, end: int, block: int, style: str = "") -> None:
        if end > start:
            self.pieces.append(Piece(start, end, block, style))

    def new_block(self, block: Block) -> int:
        self.blocks.append(block)
        return len(self.blocks) - 1

    def close_line_break(self, block: int | None, style: str = "") -> None:
        """Give the last line's break to ``block`` if the line continues it, else hide it."""
        if self.newline is None:
            return
        start, end, previous = self.newline
        self.newline = None
        joined = block is not None and block == previous
        self.add(start, end, block if joined else -1, style if joined else "md-hide")

    # Lines ----------------------------------------------------------------------------------

    def line(self, start: int, end: int) -> None:
        text = self.text
        body = text[start:end]
        if self.fence is not None:
            self.code_line(start, end, body)
            return
        open_kind = self.blocks[self.open].kind if self.open is not None else None
        if not body.strip():
            self.close_line_break(None)
            self.add(start, end, -1, "md-hide")
            self.open = None
            return
        if match := FENCE.match(body):
            block = self.new_block(Block("code"))
            self.close_line_break(None)
            self.add(start, end, block, HIDE)
            self.fence = match.group(1)
            self.open = block
            return
        if match := HEADING.match(body):
            block = self.new_block(Block("h", level=len(match.group(1))))
            self.close_line_break(None)
            self.add(start, start + match.end(), block, HIDE)
            self.inline(start + match.end(), end, block)
            self.open = None
            return
        if open_kind == "p" and (match := SETEXT.match(body)):
            # The paragraph above was a heading: "Title\n=====".
            block = self.open
            self.blocks[block] = Block("h", level=1 if match.group(1)[0] == "=" else 2)
            self.close_line_break(block, HIDE)
            self.add(start, end, block, HIDE)
            self.open = None
            return
        if RULE.match(body):
            block = self.new_block(Block("hr"))
            self.close_line_break(None)
            self.add(start, end, block, HIDE)
            self.open = None
            return
        item = ITEM.match(body)
        if item and not (item.group(3) and open_kind == "p" and item.group(3) != "1"):
            indent = len(item.group(1).expandtabs(4))
            number = item.group(3)
            block = self.new_block(
                Block("li", level=min(indent // 2, 3), marker=f"{int(number)}." if number else "•")
            )
            self.close_line_break(None)
            self.add(start, start + item.end(), block, HIDE)
            self.inline(start + item.end(), end, block)
            self.open = block
            return
        if match := QUOTE.match(body):
            block = self.open if open_kind == "quote" else self.new_block(Block("quote"))
            self.close_line_break(block)
            self.add(start, start + match.end(), block, HIDE)
            self.inline(start + match.end(), end, block)
            self.open = block
            return
        if TABLE.match(body):
            block = self.open if open_kind == "table" else self.new_block(Block("table"))
            self.close_line_break(block)
            self.add(start, end, block)
            self.open = block
            return
        block = self.open if open_kind in JOINED else self.new_block(Block("p"))
        self.close_line_break(block)
        self.inline(start, end, block)
        self.open = block

    def code_line(self, start: int, end: int, body: str) -> None:
        block = self.open
        stripped = body.strip()
        closing = (
            stripped.startswith(self.fence)
            and not stripped.strip(self.fence[0])
            and len(body) - len(body.lstrip(" ")) <= 3
        )
        # The breaks next to the fences would be empty lines of the code: hidden with them.
        after_fence = self.pieces and self.pieces[-1].style == HIDE
        self.close_line_break(block, HIDE if closing or after_fence else "")
        if closing:
            self.add(start, end, block, HIDE)
            self.fence = None
            self.open = None
            # The break after the closing fence belongs to no block.
            return
        self.add(start, end, block)

    # Inline ---------------------------------------------------------------------------------

    def inline(self, start: int, end: int, block: int, style: str = "", depth: int = 0) -> None:
        """Emphasis, code spans, links and escapes in ``text[start:end]`` (one line)."""
        text = self.text
        run = start  # the start of plain text not yet added
        i = start
        while i < end:
            char = text[i]
            if char == "\\" and i + 1 < end and text[i + 1] in ESCAPABLE:
                self.add(run, i, block, style)
                self.add(i, i + 1, block, HIDE)
                run, i = i + 1, i + 2
                continue
            if char == "`":
                width = _run_length(text, i, end, "`")
                close = _closing_run(text, i + width, end, "`", width)
                if close is not None:
                    self.add(run, i, block, style)
                    self.add(i, i + width, block, HIDE)
                    self.add(i + width, close, block, _join(style, "md-code"))
                    self.add(close, close + width, block, HIDE)
                    run = i = close + width
                else:
                    i += width
                continue
            if char in "*_":
                width = _run_length(text, i, end, char)
                close = None
                if width <= 2 and depth < NESTING and _opens(text, i, width, end, char):
                    close = _closing_emphasis(text, i + width, min(end, i + REACH), char, width)
                if close is not None:
                    self.add(run, i, block, style)
                    self.add(i, i + width, block, HIDE)
                    inner = _join(style, "md-strong" if width == 2 else "md-em")
                    self.inline(i + width, close, block, inner, depth + 1)
                    self.add(close, close + width, block, HIDE)
                    run = i = close + width
                else:
                    i += width
                continue
            if char in "[!" and (link := LINK.match(text, i, end)):
                self.add(run, i, block, style)
                self.add(i, link.start(1), block, HIDE)
                self.add(link.start(1), link.end(1), block, _join(style, "md-link"))
                self.add(link.end(1), link.end(), block, HIDE)
                run = i = link.end()
                continue
            i += 1
        self.add(run, end, block, style)


def _join(style: str, name: str) -> str:
    return f"{style} {name}" if style else name


def _run_length(text: str, i: int, end: int, char: str) -> int:
    j = i
    while j < end and text[j] == char:
        j += 1
    return j - i


def _closing_run(text: str, start: int, end: int, char: str, width: int) -> int | None:
    """The next run of exactly ``width`` ``char`` in text[start:end], after some text."""
    j = text.find(char, start, end)
    while j != -1:
        length = _run_length(text, j, end, char)
        if length == width and j > start:
            return j
        j = text.find(char, j + length, end)
    return None


def _opens(text: str, i: int, width: int, end: int, char: str) -> bool:
    after = i + width
    if after >= end or text[after].isspace():
        return False
    # `_` inside a word (snake_case, FIN_PROC) is a letter, not emphasis.
    return not (char == "_" and i > 0 and text[i - 1].isalnum())


def _closing_emphasis(text: str, start: int, end: int, char: str, width: int) -> int | None:
    j = text.find(char, start, end)
    tries = 0
    while j != -1 and tries < TRIES:
        tries += 1
        length = _run_length(text, j, end, char)
        closes = (
            length == width
            and j > start
            and not text[j - 1].isspace()
            and not (char == "_" and j + length < len(text) and text[j + length].isalnum())
        )
        if closes:
            return j
        j = text.find(char, j + length, end)
    return None


# HTML -----------------------------------------------------------------------------------------


def passage_html(
    segments: Sequence[Segment], *, context: bool = True, layer_marks: bool = False
) -> str:
    """The segments (contiguous, as `labelling.highlight.highlight` cuts them) rendered as
    Markdown, each visible character in a ``span.seg`` with its ``data-start``.

    A segment's look comes with it: ``passage``, and ``context`` unless ``context=False`` (the
    pages that show a whole text have no hidden context); its layers as the class ``evidence``
    or, with ``layer_marks``, as ``<mark class="layer-ab">`` (the adjudication page's colours).
    A block holding only context is marked ``context`` too, so the page hides it with the
    context around the passage.

    The HTML is built here rather than in a template: a passage can be hundreds of segments
    and a card's render is on the grading page's budget (a template loop, or format_html per
    segment, costs several times more). Every piece of document text, and every attribute
    value, goes through ``escape`` (the standard library's, which Django's ``escape`` calls);
    the only markup is this function's own fixed tags. tests/labelling/test_passage_html.py
    and tests/test_xss.py check hostile text stays text.
    """
    base = segments[0].start if segments else 0
    text = "".join(s.text for s in segments)
    blocks, pieces = parse(text) if len(text) <= RENDERED_CHARS else _plain(text)
    html: list[str] = []
    open_block = -1
    shown_passage = shown_context = False
    opened_at = 0
    for block, start, end, style, segment in _cut(segments, pieces, base):
        if block != open_block:
            if open_block != -1:
                html.append("</div>")
                _mark_context(html, opened_at, context and shown_context and not shown_passage)
            open_block = block
            if block != -1:
                opened_at = len(html)
                html.append(_opening(blocks[block]))
                shown_passage = shown_context = False
        if style != HIDE and block != -1:
            shown_passage = shown_passage or segment.passage
            shown_context = shown_context or not segment.passage
        html.append(_span(start, end, style, segment, context, layer_marks))
    if open_block != -1:
        html.append("</div>")
        _mark_context(html, opened_at, context and shown_context and not shown_passage)
    # Safe: built only of escape()d text and this module's own tags (see the docstring).
    return safestring.mark_safe("".join(html))  # noqa: S308


def _opening(block: Block) -> str:
    classes = f"md-block md-{block.kind}"
    if block.kind == "h":
        classes += f" md-h{block.level}"
    if block.kind == "li" and block.level:
        classes += f" md-indent-{block.level}"
    marker = f' data-marker="{escape(block.marker)}"' if block.marker else ""
    return f'<div class="{classes}"{marker}>'


def _mark_context(html: list[str], at: int, only_context: bool) -> None:
    """A block that shows only context hides with the context (class ``context``)."""
    if only_context:
        html[at] = html[at].replace('class="md-block ', 'class="md-block context ', 1)


def _cut(segments: Sequence[Segment], pieces: Sequence[Piece], base: int):
    """Pieces (offsets from ``base``) cut at the segments' edges: (block, start, end, style,
    segment), in order, with absolute offsets."""
    which = 0
    for piece in pieces:
        start, end = piece.start + base, piece.end + base
        while start < end:
            while segments[which].start + len(segments[which].text) <= start:
                which += 1
            segment = segments[which]
            stop = min(end, segment.start + len(segment.text))
            yield piece.block, start, stop, piece.style, segment
            start = stop


def _span(start: int, end: int, style: str, segment: Segment, context: bool, marks: bool) -> str:
    classes = "seg"
    if segment.passage:
        classes += " passage"
    elif context:
        classes += " context"
    if segment.layers and not marks:
        classes += " evidence"
    if style:
        classes += f" {style}"
    chars = escape(segment.text[start - segment.start : end - segment.start])
    if marks and segment.layers:
        chars = f'<mark class="layer-{escape(segment.layers)}">{chars}</mark>'
    return f'<span class="{classes}" data-start="{int(start)}">{chars}</span>'
