"""Cut a document version's text into passages (chunks).

A chunk is a half-open ``(start, end)`` pair of Python ``str`` offsets into
``DocumentVersion.text``; the text itself is never copied, so labels (spans) and
chunks of different schemes can always be compared by offset.

Every span returned here starts and ends on a non-whitespace character, so
``text[start:end] == text[start:end].strip()`` holds for all strategies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, get_args

Strategy = Literal["fixed", "paragraph", "document"]
Unit = Literal["words", "chars"]
Span = tuple[int, int]

STRATEGIES: tuple[str, ...] = get_args(Strategy)
UNITS: tuple[str, ...] = get_args(Unit)

_WORD = re.compile(r"\S+")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_LEADING_SPACE = re.compile(r"\s*")
_NEXT_WORD = re.compile(r"\s+\S")


class ChunkingError(ValueError):
    """A chunking scheme that cannot be applied; the message is meant for users."""


@dataclass(frozen=True)
class ChunkSpec:
    strategy: Strategy
    unit: Unit = "words"
    size: int = 200
    overlap: int = 50

    def validate(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ChunkingError(
                f"Unknown chunking strategy {self.strategy!r}; "
                f"choose one of {', '.join(STRATEGIES)}."
            )
        if self.unit not in UNITS:
            raise ChunkingError(
                f"Unknown chunk size unit {self.unit!r}; choose one of {', '.join(UNITS)}."
            )
        if not _is_int(self.size) or self.size < 1:
            raise ChunkingError(
                f"Chunk size must be a whole number of at least 1, not {self.size!r}."
            )
        if not _is_int(self.overlap) or not 0 <= self.overlap < self.size:
            raise ChunkingError(
                f"Chunk overlap must be a whole number from 0 to {self.size - 1} "
                f"(less than the chunk size {self.size}), not {self.overlap!r}."
            )


def chunk_spans(text: str, spec: ChunkSpec) -> list[Span]:
    spec.validate()
    if spec.strategy == "document":
        return _document_span(text)
    if spec.strategy == "fixed":
        return _fixed_spans(text, 0, len(text), spec)
    return _paragraph_spans(text, spec)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _document_span(text: str) -> list[Span]:
    # Trimmed like every other strategy; normalised text has no trailing
    # whitespace, so this is (0, len(text)) unless the text starts with blanks.
    start, end = _trim(text, 0, len(text))
    return [(start, end)] if start < end else []


def _trim(text: str, start: int, end: int) -> Span:
    """Shrink [start, end) to its first and last non-whitespace characters."""
    start = _LEADING_SPACE.match(text, start, end).end()
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _fixed_spans(text: str, start: int, end: int, spec: ChunkSpec) -> list[Span]:
    """Fixed-size windows over text[start:end]."""
    if spec.unit == "chars":
        return _char_windows(text, start, end, spec.size, spec.size - spec.overlap)
    return _word_windows(text, start, end, spec.size, spec.size - spec.overlap)


def _char_windows(text: str, start: int, end: int, size: int, step: int) -> list[Span]:
    spans: list[Span] = []
    window_start = start
    while window_start < end:
        window_end = min(window_start + size, end)
        span_start, span_end = _trim(text, window_start, window_end)
        # Trimming can leave a window that adds nothing beyond the previous one
        # (its new characters were all whitespace); such a window is dropped.
        if span_start < span_end and (not spans or span_end > spans[-1][1]):
            spans.append((span_start, span_end))
        if window_end == end:
            break
        window_start += step
    return spans


@lru_cache(maxsize=64)
def _word_window_patterns(size: int, step: int) -> tuple[re.Pattern[str], re.Pattern[str]]:
    # Walking windows with counted regex repetitions keeps the per-word work
    # inside the regex engine: collecting every word's offsets in Python costs
    # about ten times more on typical documents.
    window = re.compile(rf"\S+(?:\s+\S+){{0,{size - 1}}}")
    skip = re.compile(rf"(?:\S+\s+){{{step}}}")
    return window, skip


def _word_windows(text: str, start: int, end: int, size: int, step: int) -> list[Span]:
    """Windows of ``size`` words (``\\S+`` runs) stepping ``step`` words."""
    first_word = _WORD.search(text, start, end)
    if first_word is None:
        return []
    window, skip = _word_window_patterns(size, step)
    spans: list[Span] = []
    position = first_word.start()
    while True:
        match = window.match(text, position, end)
        spans.append(match.span())
        if _NEXT_WORD.match(text, match.end(), end) is None:
            return spans
        # More words follow, so this window held `size` >= `step` words.
        position = skip.match(text, position, end).end()


def _paragraphs(text: str) -> list[Span]:
    paragraphs: list[Span] = []
    start = 0
    for separator in _PARAGRAPH_BREAK.finditer(text):
        paragraphs.append(_trim(text, start, separator.start()))
        start = separator.end()
    paragraphs.append(_trim(text, start, len(text)))
    return [(start, end) for start, end in paragraphs if start < end]


def _paragraph_spans(text: str, spec: ChunkSpec) -> list[Span]:
    """Greedily pack whole paragraphs into chunks of at most ``spec.size``.

    Overlap does not apply between packed chunks: their boundaries are
    paragraph boundaries, which already keep related text together, and
    repeating a paragraph would only duplicate candidates. A paragraph longer
    than ``size`` on its own is cut with the fixed strategy, overlap included.
    """
    spans: list[Span] = []
    pack: Span | None = None
    pack_words = 0
    for start, end in _paragraphs(text):
        words = len(text[start:end].split()) if spec.unit == "words" else 0
        length = words if spec.unit == "words" else end - start
        if length > spec.size:
            if pack is not None:
                spans.append(pack)
                pack = None
            spans.extend(_fixed_spans(text, start, end, spec))
            continue
        if pack is not None:
            packed_length = pack_words + words if spec.unit == "words" else end - pack[0]
            if packed_length <= spec.size:
                pack = (pack[0], end)
                pack_words += words
                continue
            spans.append(pack)
        pack = (start, end)
        pack_words = words
    if pack is not None:
        spans.append(pack)
    return spans
