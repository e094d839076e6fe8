"""The order of a question's passages in the question view: random for each labeller, and the
same at every load.

The card view shows a question's passages in the pool's shuffled order (`Candidate.shuffle_rank`),
which every labeller of the question shares. The question view puts them all on one page, where
the eye reads the list top to bottom, so each labeller gets an order of their own: two labellers
of a question do not judge its passages in one sequence, and whatever an early passage does to
the grades after it does not fall on the same passages for both.

The order is a hash of (labeller, pool, question, candidate): nothing is stored, every web
process computes the same order, a reload keeps it, and a passage that becomes visible or
hidden leaves the others' relative order alone. Only ids the page already shows go in, so the
order tells the labeller nothing they did not have. Django-free: the view passes ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from hashlib import blake2b
from typing import TypeVar

T = TypeVar("T")


def labeller_order(
    items: Iterable[T],
    *,
    key: Callable[[T], int],
    labeller_id: int,
    pool_id: int,
    question_id: int,
) -> list[T]:
    """`items` (each with a candidate id `key(item)`) in the labeller's own order of them."""
    seed = f"{labeller_id}:{pool_id}:{question_id}:"

    def rank(item: T) -> tuple[bytes, int]:
        candidate_id = key(item)
        digest = blake2b(f"{seed}{candidate_id}".encode(), digest_size=8).digest()
        return digest, candidate_id  # the id breaks a (vanishingly rare) tie

    return sorted(items, key=rank)
