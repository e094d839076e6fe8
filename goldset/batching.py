"""Ids in batches small enough for one query's bound parameters.

SQLite refuses a statement with more bound parameters than its build allows (999 in the
oldest builds still shipped), so a filter on a long list of ids is asked one batch at a time.
The batch leaves room for the few other parameters a query binds beside the ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

ID_BATCH = 900


def in_batches(ids: Iterable[T], *, size: int = ID_BATCH) -> Iterator[list[T]]:
    """``ids`` in order, as lists of at most ``size`` (none for no ids)."""
    if size < 1:
        raise ValueError("A batch holds at least one id.")
    batch: list[T] = []
    for value in ids:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
