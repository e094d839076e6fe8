"""Depth-k pooling (DESIGN.md §3): the candidates labellers judge for one question.

Each retriever's top ``depth`` passages are unioned; passages that overlap in the same document
version become one candidate, so a labeller never grades the same text twice because two
retrievers chunked it differently. Every (retriever, rank, score) is kept as provenance for
reporting, while the order shown to labellers comes from ``shuffled_order`` and carries none of it.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from goldeval.text.spans import merge_overlapping


class PoolingError(ValueError):
    """A hit or a pooling parameter that cannot be pooled."""


@dataclass(frozen=True)
class Passage:
    """Characters ``[start, end)`` of one document version's text."""

    version_id: int
    start: int
    end: int

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.end:
            raise PoolingError(
                f"A passage needs 0 <= start < end, got [{self.start}, {self.end}) "
                f"in version {self.version_id}."
            )


@dataclass(frozen=True)
class Hit:
    """One retriever's result for a question; ``rank`` is 1-based, ``score`` optional (runs)."""

    retriever: str
    rank: int
    score: float | None
    passage: Passage

    def __post_init__(self) -> None:
        if self.rank < 1:
            raise PoolingError(f"Ranks start at 1; {self.retriever} gave rank {self.rank}.")


@dataclass
class PooledCandidate:
    version_id: int
    start: int
    end: int
    provenance: list[Hit] = field(default_factory=list)

    @property
    def retrievers(self) -> frozenset[str]:
        return frozenset(hit.retriever for hit in self.provenance)


def pool_question(hits: Iterable[Hit], *, depth: int) -> list[PooledCandidate]:
    """The pool of one question: each retriever's hits ranked <= depth, overlaps merged.

    Passages of one version merge by `goldeval.text.spans`' rule: sharing at least one character,
    touching ones apart, transitively (a-b and b-c overlapping make one candidate a..c). Candidates
    come in
    (version_id, start) order and their provenance in (retriever, rank) order, whatever the
    order of ``hits``.
    """
    if depth < 1:
        raise PoolingError(f"Pool depth must be at least 1, got {depth}.")
    by_version: dict[int, list[Hit]] = defaultdict(list)
    for hit in hits:
        if hit.rank <= depth:
            by_version[hit.passage.version_id].append(hit)

    candidates = [
        PooledCandidate(version_id=version_id, start=start, end=end, provenance=group)
        for version_id in sorted(by_version)
        for start, end, group in merge_overlapping(by_version[version_id], offsets=_offsets)
    ]
    for candidate in candidates:
        candidate.provenance.sort(key=_provenance_order)
    return candidates


def _offsets(hit: Hit) -> tuple[int, int]:
    return hit.passage.start, hit.passage.end


def _provenance_order(hit: Hit) -> tuple:
    passage = hit.passage
    return (hit.retriever, hit.rank, passage.start, passage.end, hit.score is None, hit.score or 0)


def shuffled_order(keys: Sequence[Hashable], *, seed: str) -> list[int]:
    """A permutation of ``range(len(keys))`` that depends only on the seed and the keys.

    Each key is placed by sha256(seed, repr(key)), so the order is the same in every process and
    on every reload, and never reflects retriever, rank or score. Use keys with a stable repr
    (ints, strings, tuples of them), e.g. (version_id, start, end) of each candidate.
    """

    def place(position: int) -> tuple[bytes, int]:
        text = f"{seed}\x00{keys[position]!r}".encode()
        return hashlib.sha256(text).digest(), position

    return sorted(range(len(keys)), key=place)


@dataclass(frozen=True)
class PoolStats:
    size: int
    per_retriever: dict[str, int]  # candidates each retriever contributed to
    unique: dict[str, int]  # candidates found by that retriever alone
    overlap: dict[tuple[str, str], int]  # candidates found by both of a pair (names sorted)


def pool_stats(candidates: Sequence[PooledCandidate]) -> PoolStats:
    per_retriever: dict[str, int] = defaultdict(int)
    unique: dict[str, int] = defaultdict(int)
    overlap: dict[tuple[str, str], int] = defaultdict(int)
    for candidate in candidates:
        found_by = sorted(candidate.retrievers)
        for retriever in found_by:
            per_retriever[retriever] += 1
        if len(found_by) == 1:
            unique[found_by[0]] += 1
        for pair in combinations(found_by, 2):
            overlap[pair] += 1
    names = sorted(per_retriever)
    # Every retriever and pair is listed, zeros included, so a report can show a full table.
    return PoolStats(
        size=len(candidates),
        per_retriever={name: per_retriever[name] for name in names},
        unique={name: unique[name] for name in names},
        overlap={pair: overlap[pair] for pair in combinations(names, 2)},
    )
