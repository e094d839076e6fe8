"""Half-open character ranges ``[start, end)`` of one document version's text, and the one rule
for merging them.

Two ranges overlap when they share at least one character. Touching ranges, ``[0, 5)`` and
``[5, 10)``, share none and stay two units: that is how the metrics see spans (a passage reaches
a span by at least ``min_overlap`` characters, 1 by default), so pooling, the gold's units and
agreement's character coverage must not merge what the metrics keep apart. Merging is
transitive: a–b and b–c overlapping make one range a..c even when a and c share nothing.

Django-free, and in corpus because offsets into ``DocumentVersion.text`` are corpus' own: every
floor above merges with this one rule instead of its own copy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

Range = tuple[int, int]
T = TypeVar("T")


def overlaps(first: Range, second: Range) -> bool:
    """Whether two ranges share at least one character (touching ones do not)."""
    return first[0] < second[1] and second[0] < first[1]


def merge_overlapping(
    items: Iterable[T], *, offsets: Callable[[T], Range]
) -> list[tuple[int, int, list[T]]]:
    """Items whose ranges overlap, transitively, grouped: ``(start, end, members)`` per group.

    Groups come by start; each group's members in ``(start, end)`` order, items with equal
    offsets in the order given.
    """
    groups: list[tuple[int, int, list[T]]] = []
    for item in sorted(items, key=offsets):
        start, end = offsets(item)
        # Sorted by start, a range overlaps the growing group iff it starts before the group's
        # end (half-open), which also chains a-b-c into one group.
        if groups and start < groups[-1][1]:
            first, last, members = groups[-1]
            members.append(item)
            if end > last:
                groups[-1] = (first, end, members)
        else:
            groups.append((start, end, [item]))
    return groups


def merge_ranges(ranges: Iterable[Range]) -> list[Range]:
    """Sorted ranges with every overlapping run merged into one; touching ones stay apart."""
    return [(start, end) for start, end, _ in merge_overlapping(ranges, offsets=_itself)]


def _itself(value: Range) -> Range:
    return value
