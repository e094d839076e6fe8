"""Values from outside, checked against what the code downstream can hold. Django-free.

A trace or a manifest row is stored, then read back by pages, the daily purge, the daily index
health check and the evaluation library. A value the intake accepts but a later reader cannot
hold fails that reader for everyone, every time: a time of 9999-12-31T23:59:59-14:00 is in the
year 10000 in UTC, which PostgreSQL stores but neither Python nor psycopg reads back; a year-1
time with a positive offset is in the year 0. So each reader here refuses such a value as the
item's own problem, with its field, before anything is stored:

- **times** (`time_problem`): aware, and from 1970-01-01 to before 3000-01-01 in UTC. No trace
  or index predates the Unix epoch, and the margin above keeps any window, lag or offset
  arithmetic far from Python's year 9999;
- **whole numbers** (`number_problem`): what a PostgreSQL ``integer`` column holds (ranks,
  offsets, versions, dimensions are stored in one, or become one when a trace is promoted);
- **free-form JSON** (`json_problem`): what a PostgreSQL ``jsonb`` column holds (no NUL and no
  lone surrogate in any string or key, no NaN or infinity), within a depth, a size and a
  string length, so one object cannot be a megabyte of nesting.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from goldeval.formats.textfiles import text_problem

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(3000, 1, 1, tzinfo=UTC)  # exclusive
MAX_INTEGER = 2**31 - 1  # PostgreSQL's integer
MAX_JSON_DEPTH = 8
MAX_JSON_ITEMS = 2_000  # values (keys, items, scalars) in one free-form field
MAX_JSON_STRING = 20_000
SHOWN = 60  # characters of a bad value quoted back in a message
_LONGEST_INT = 4_000  # digits; Python refuses to convert more than 4,300 (and the whole text)


def json_int(digits: str) -> int | float:
    """JSON's integer as `json.loads(..., parse_int=json_int)` reads it: a whole number, or
    infinity for one too long for Python to convert. Without this, one item holding a
    5,000-digit number makes the whole document unreadable; with it, that item alone is refused
    (every check here refuses infinity as that value's own problem)."""
    return int(digits) if len(digits) <= _LONGEST_INT else math.inf


def shown(value: Any) -> str:
    """A bad value as a message quotes it: its repr, cut to `SHOWN` characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return "a number of more than 60 digits"
    text = repr(value) if isinstance(value, str) else _short_repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _short_repr(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return repr(value)


def time_problem(moment: datetime) -> str:
    """Why ``moment`` cannot be stored ("" when it can), phrased to follow a field name."""
    if moment.tzinfo is None:
        return "has no time zone"
    try:
        utc = moment.astimezone(UTC)
    except (OverflowError, ValueError):
        return _outside()
    if not EARLIEST <= utc < LATEST:
        return _outside()
    return ""


def _outside() -> str:
    return "is outside the times Goldset stores (from 1970-01-01 to before 3000-01-01, UTC)"


def as_utc(moment: datetime) -> datetime | None:
    """``moment`` in UTC when `time_problem` finds nothing, else None."""
    return None if time_problem(moment) else moment.astimezone(UTC)


def number_problem(value: int, *, least: int = 0) -> str:
    """Why the whole number ``value`` cannot be stored ("" when it can)."""
    if value < least or value > MAX_INTEGER:
        return f"must be from {least} to {MAX_INTEGER:,}"
    return ""


def json_problem(value: Any, *, name: str) -> str:
    """Why the free-form JSON value of the field ``name`` cannot be stored ("" when it can),
    naming where in it: ``citations[2].note contains a NUL character (U+0000)``."""
    budget = [MAX_JSON_ITEMS]
    return _json_problem(value, name, 0, budget)


def _json_problem(value: Any, where: str, depth: int, budget: list[int]) -> str:
    budget[0] -= 1
    if budget[0] < 0:
        return f"{where} holds more than {MAX_JSON_ITEMS:,} values"
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, int):
        if value.bit_length() > 63:
            return f"{where} is a number too large to store"
        return ""
    if isinstance(value, float):
        return "" if math.isfinite(value) else f"{where} is not a finite number"
    if isinstance(value, str):
        problem = text_problem(value, max_length=MAX_JSON_STRING)
        return f"{where} {problem}" if problem else ""
    if depth >= MAX_JSON_DEPTH:
        return f"{where} is nested more than {MAX_JSON_DEPTH} levels deep"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has a key that is not text"
            problem = text_problem(key, max_length=200)
            if problem:
                return f"{where} has a key that {problem}"
            problem = _json_problem(item, f"{where}.{key}", depth + 1, budget)
            if problem:
                return problem
        return ""
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            problem = _json_problem(item, f"{where}[{index}]", depth + 1, budget)
            if problem:
                return problem
        return ""
    return f"{where} is not JSON"
