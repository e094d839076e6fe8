"""Argument types shared by every ``python -m goldeval`` subcommand (Django-free)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Collection
from pathlib import Path

from goldeval.formats.qrels import GRADES

# The deepest cut-off (a k, the MRR cut-off) and the largest count (a minimum overlap in
# characters) a command takes: far deeper than any ranking a retriever returns (trec_eval's
# default depth is 1,000). The scoring costs what the run holds, whatever the cut-off; a value
# past this is a typo, refused as one (exit 2) rather than read.
MAX_CUTOFF = 100_000
# The highest relevance threshold: the highest grade a gold set may hold
# (`goldeval.formats.qrels.GRADES`).
MAX_THRESHOLD = GRADES[-1]
# What numpy's generator takes as a seed, and a sensible end to it.
MAX_SEED = 2**63 - 1


class UsageError(Exception):
    """A command-line value that cannot be used."""


def _whole_number(text: str, *, low: int, high: int) -> int:
    """``text`` as a whole number in ``[low, high]``, else argparse's error (exit 2)."""
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be from {low:,} to {high:,}, got {text.strip()}")
    return value


def ks_argument(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not ks or any(k < 1 for k in ks):
        raise argparse.ArgumentTypeError("every k must be a positive integer")
    if any(k > MAX_CUTOFF for k in ks):
        raise argparse.ArgumentTypeError(f"every k must be at most {MAX_CUTOFF:,}, got {text!r}")
    return ks


def positive_argument(text: str) -> int:
    """A cut-off or a count: from 1 to `MAX_CUTOFF`."""
    return _whole_number(text, low=1, high=MAX_CUTOFF)


def threshold_argument(text: str) -> int:
    """A relevance threshold: a grade from 1 to `MAX_THRESHOLD`."""
    return _whole_number(text, low=1, high=MAX_THRESHOLD)


def seed_argument(text: str) -> int:
    """A seed of the randomization test: numpy's generator takes 0 to 2**63 - 1."""
    return _whole_number(text, low=0, high=MAX_SEED)


def persistences_argument(text: str) -> tuple[float, ...]:
    """RBP persistences: comma-separated numbers strictly between 0 and 1."""
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    if not values or any(not (0 < value < 1) for value in values):
        raise argparse.ArgumentTypeError("every persistence must lie strictly between 0 and 1")
    return tuple(dict.fromkeys(values))


def run_arguments(values: list[str]) -> list[tuple[str, Path]]:
    runs: list[tuple[str, Path]] = []
    for value in values:
        name, separator, rest = value.partition("=")
        # "NAME=PATH", unless the whole value is itself an existing file with "=" in its name.
        if separator and name and "/" not in name and not Path(value).exists():
            runs.append((name, Path(rest)))
        else:
            runs.append((Path(value).stem, Path(value)))
    names = [name for name, _ in runs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise UsageError(f"two runs are named {duplicates[0]!r}; name them with --run NAME=PATH")
    return runs


def share_argument(text: str) -> float:
    """A share (a threshold on a fraction): a number from 0 to 1."""
    value = finite_argument(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share from 0 to 1, got {text!r}")
    return value


def non_negative_argument(text: str) -> float:
    """A finite number of at least 0 (a number of days)."""
    value = finite_argument(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of at least 0, got {text!r}")
    return value


def finite_argument(text: str) -> float:
    """A threshold: a finite number (a NaN one is never crossed, an infinite one always)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def fail_under_bars(
    values: list[str],
    *,
    allowed: Collection[str],
    what: str,
    not_allowed: Callable[[str], str],
) -> dict[str, float]:
    """``--fail-under NAME=VALUE`` options as {name: bar}: each name in ``allowed`` (else
    `UsageError` with ``not_allowed(name)``), each bar a finite number (a NaN bar would never
    fail, an infinite one always)."""
    bars: dict[str, float] = {}
    for value in values:
        name, separator, number = value.partition("=")
        name = name.strip()
        if not separator:
            raise UsageError(f"--fail-under expects {what.upper()}=VALUE, got {value!r}")
        if name not in allowed:
            raise UsageError(f"--fail-under: {not_allowed(name)}")
        try:
            bars[name] = float(number)
        except ValueError:
            raise UsageError(f"--fail-under: {number!r} is not a number (in {value!r})") from None
        if not math.isfinite(bars[name]):
            raise UsageError(f"--fail-under: {number!r} is not a finite number (in {value!r})")
    return bars
