"""Argument types shared by every ``python -m goldeval`` subcommand (Django-free)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Collection
from pathlib import Path


class UsageError(Exception):
    """A command-line value that cannot be used."""


def ks_argument(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not ks or any(k < 1 for k in ks):
        raise argparse.ArgumentTypeError("every k must be a positive integer")
    return ks


def positive_argument(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


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
