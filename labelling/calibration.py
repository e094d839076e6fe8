"""A labeller measured against the gold: the figures of their calibration answers.

Django-free, like `labelling.agreement`, whose statistics it uses (the agreement page's): each
item is one passage a lead decided (the gold) that the labeller graded on a calibration
question, with the grade they gave, the seconds it took and when they finished the question.

- **agreement**: percent, Cohen's kappa unweighted (with its Landis & Koch band, the agreement
  page's headline) and quadratic, each with a 95 % bootstrap interval; the 3×3 confusion
  (rows: gold, columns: the labeller);
- **bias**: the mean of (grade − gold) with its interval: above 0 lenient, below 0 strict; a
  lean whose interval holds 0 is not told apart from chance (`clear` is False);
- **drift**: the same agreement over the first and the second half of the items in the order
  they were answered, and per ISO week;
- **speed**: the median seconds per judgement.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from labelling.agreement import (
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    Statistic,
    cohen_kappa,
    confusion_matrix,
    landis_koch_band,
    mean_difference,
    percent_agreement,
)

# Fewer items than this per half say nothing about drift.
MIN_ITEMS_PER_HALF = 2


@dataclass(frozen=True)
class CalibrationItem:
    gold: int
    grade: int
    seconds: float
    answered_at: datetime


@dataclass(frozen=True)
class Period:
    label: str
    items: int
    percent: Statistic
    kappa: Statistic


@dataclass(frozen=True)
class Bias:
    mean: Statistic  # grade − gold

    @property
    def leaning(self) -> str:
        """ "lenient", "strict" or "even" (no item, or a mean of exactly 0)."""
        value = self.mean.value
        if not value:
            return "even"
        return "lenient" if value > 0 else "strict"

    @property
    def clear(self) -> bool:
        """Whether the interval leaves 0 out, so the lean is more than chance."""
        low, high = self.mean.low, self.mean.high
        return low is not None and high is not None and (low > 0 or high < 0)


@dataclass(frozen=True)
class Figures:
    items: int
    percent: Statistic
    kappa: Statistic
    kappa_quadratic: Statistic
    bias: Bias
    confusion: list[list[int]]
    median_seconds: float | None
    halves: list[Period] = field(default_factory=list)
    weeks: list[Period] = field(default_factory=list)

    @property
    def kappa_band(self) -> str | None:
        return landis_koch_band(self.kappa.value) if self.kappa.value is not None else None


def _period(label: str, items: Sequence[CalibrationItem], *, n_boot: int, seed: int) -> Period:
    pairs = [(item.gold, item.grade) for item in items]
    return Period(
        label=label,
        items=len(pairs),
        percent=percent_agreement(pairs, n_boot=n_boot, seed=seed),
        kappa=cohen_kappa(pairs, n_boot=n_boot, seed=seed),
    )


def figures(
    items: Sequence[CalibrationItem], *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED
) -> Figures:
    """Every figure of one labeller's calibration items (any order)."""
    ordered = sorted(items, key=lambda item: item.answered_at)
    pairs = [(item.gold, item.grade) for item in ordered]
    seconds = [item.seconds for item in ordered]
    halves: list[Period] = []
    half = len(ordered) // 2
    if half >= MIN_ITEMS_PER_HALF:
        halves = [
            _period("first half", ordered[:half], n_boot=0, seed=seed),
            _period("second half", ordered[half:], n_boot=0, seed=seed),
        ]
    by_week: dict[tuple[int, int], list[CalibrationItem]] = {}
    for item in ordered:
        year, week, _ = item.answered_at.isocalendar()
        by_week.setdefault((year, week), []).append(item)
    weeks = [
        _period(f"{year}-W{week:02d}", rows, n_boot=0, seed=seed)
        for (year, week), rows in sorted(by_week.items())
    ]
    return Figures(
        items=len(pairs),
        percent=percent_agreement(pairs, n_boot=n_boot, seed=seed),
        kappa=cohen_kappa(pairs, n_boot=n_boot, seed=seed),
        kappa_quadratic=cohen_kappa(pairs, weighting="quadratic", n_boot=n_boot, seed=seed),
        bias=Bias(mean=mean_difference(pairs, n_boot=n_boot, seed=seed)),
        confusion=confusion_matrix(pairs),
        median_seconds=statistics.median(seconds) if seconds else None,
        halves=halves,
        weeks=weeks,
    )
