"""The CI gates every ``python -m goldeval`` subcommand shares: ``--fail-under`` bars and
``--require-significant``, each saying when a difference is smaller than the gold set can
detect (`goldeval.scoring.power`). Django-free."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from goldeval.scoring.compare import Comparison
from goldeval.scoring.power import ALPHA, NOT_DETECTABLE, MeasurePower


def detectability(limit: MeasurePower | None, difference: float) -> str:
    """ "; not detectable with this gold set (…)" when ``difference`` is below the smallest
    difference the gold set detects; "" when it is not, or when that is unknown."""
    if limit is None or limit.detectable(difference) is not False:
        return ""
    return (
        f"; {NOT_DETECTABLE} (smallest detectable difference {limit.minimum_detectable:.4f} "
        f"over {limit.questions} questions)"
    )


def missed_bars(
    values: Mapping[str, Mapping[str, float | None]],
    bars: Mapping[str, float],
    *,
    skip: set[str] = frozenset(),
    limits: Mapping[str, MeasurePower],
    what: str = "no answerable question",
) -> tuple[list[str], list[str]]:
    """(misses, notes) of each run's figures (``values``: run -> figure -> mean) against the
    bars: a bar missed fails the gate whatever its size, and says when the gap is smaller than
    the gold set can detect; a bar passed by such a margin is noted."""
    misses, notes = [], []
    for name, figures in values.items():
        if name in skip:
            continue
        for metric, bar in bars.items():
            value = figures[metric]
            if value is None:
                misses.append(f"{name}: {metric} has no value ({what}), bar {bar}")
                continue
            said = detectability(limits.get(metric), value - bar)
            if value < bar:
                misses.append(f"{name}: {metric} = {value:.4f} is below {bar}{said}")
            elif said:
                notes.append(f"{name}: {metric} = {value:.4f} passes {bar}{said}")
    return misses, notes


def not_significant(
    comparisons: Sequence[Comparison],
    metrics: Sequence[str],
    *,
    candidate: str,
    limits: Mapping[str, MeasurePower],
) -> list[str]:
    """The --require-significant gate: the candidate must beat each other run on each metric
    with a paired randomization p-value below α; what fails it, one line each."""
    failures = []
    for metric in metrics:
        for c in comparisons:
            if c.metric != metric or candidate not in (c.a, c.b):
                continue
            other = c.b if c.a == candidate else c.a
            delta = None if c.delta is None else (c.delta if c.a == candidate else -c.delta)
            if delta is None:
                failures.append(f"{candidate}: {metric} against {other} has no value")
            elif delta <= 0 or c.p_value >= ALPHA:
                failures.append(
                    f"{candidate}: {metric} improvement over {other} = {delta:+.4f} is not "
                    f"significant (p = {c.p_value:.4f}, needs < {ALPHA})"
                    + detectability(limits.get(metric), delta)
                )
    return failures
