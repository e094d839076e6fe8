"""Document text cut into segments for display: one cutter for the grading page (the passage
and its evidence) and the adjudication page (each labeller's spans and the resolution).

Every offset is one of the document version's text, so a segment can carry its exact position
(the page turns a selection back into offsets from it). Free of Django, tested directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    """A stretch of text with one look: inside the passage or not, and which span layers
    cover it."""

    start: int  # offset of its first character in the version text
    text: str
    passage: bool = False
    layers: str = ""  # the covering layers' names, sorted and joined: "", "a", "ab", ...

    @property
    def kind(self) -> str:
        return "passage" if self.passage else "context"

    @property
    def evidence(self) -> bool:
        return bool(self.layers)


def highlight(
    text: str,
    *,
    offset: int = 0,
    window: tuple[int, int] | None = None,
    passage: tuple[int, int] | None = None,
    layers: Mapping[str, Sequence[tuple[int, int]]] | None = None,
) -> list[Segment]:
    """Cut ``text`` (which starts at ``offset`` of the version text) wherever the passage or a
    span begins or ends, keeping only ``window`` (all of ``text`` by default).

    ``layers`` names sets of spans; give one-letter names, since a segment covered by several
    joins them (the pages use them as CSS class suffixes). Spans may reach outside the window:
    only the part inside it is shown.
    """
    end_of_text = offset + len(text)
    start, end = window if window is not None else (offset, end_of_text)
    start, end = max(start, offset), min(end, end_of_text)
    if start >= end:
        return []
    layers = layers or {}
    edges = [passage] if passage is not None else []
    edges += [span for spans in layers.values() for span in spans]
    cuts = {start, end}
    for a, b in edges:
        cuts.update(c for c in (a, b) if start < c < end)
    points = sorted(cuts)
    return [
        Segment(
            start=left,
            text=text[left - offset : right - offset],
            passage=passage is not None and passage[0] <= left < passage[1],
            # No edge lies inside a segment, so a span covers all of it or none of it.
            layers="".join(
                sorted(
                    name for name, spans in layers.items() if any(s <= left < e for s, e in spans)
                )
            ),
        )
        for left, right in zip(points, points[1:], strict=False)
    ]


def whole_words(
    text: str, *, offset: int, passage: tuple[int, int], context_chars: int
) -> tuple[str, int]:
    """A context window (``text`` from ``offset``: the passage with up to ``context_chars``
    characters each side) cut back to whole words, with the offset of its first character.

    The window was cut at a character count, so a word may be split at either end; an end that
    is the document's own start or end is kept.
    """
    head = passage[0] - offset
    if offset > 0:
        cut = next((i + 1 for i in range(head) if text[i].isspace()), 0)
        text, offset, head = text[cut:], offset + cut, head - cut
    tail = head + (passage[1] - passage[0])
    if len(text) - tail >= context_chars:  # cut before the document's end
        cut = next((i for i in range(len(text) - 1, tail - 1, -1) if text[i].isspace()), len(text))
        text = text[:cut]
    return text, offset
