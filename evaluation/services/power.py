"""The Evaluation page's power calculator: how many questions a difference needs, and the
smallest difference the gold set detects, from the σ_d of the figures shown (or one a lead
gives). Reads only: the arithmetic is `goldeval.scoring.power`'s, as ``python -m goldeval
power`` prints it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from goldeval.scoring.power import (
    ALPHA,
    POWER,
    minimum_detectable_difference,
    questions_needed,
)


@dataclass(frozen=True)
class PowerAnswer:
    metric: str
    delta: float
    sigma: float
    sigma_given: bool  # a lead's σ_d, not the runs'
    questions: int  # the gold set's questions with a value for the metric
    questions_needed: int
    minimum_detectable: float | None
    detectable: bool | None  # whether this gold set detects delta (None: unknown)
    alpha: float = ALPHA
    power: float = POWER


def stored_power(content: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The calculator's figures: per metric, its stored power (σ_d, questions, limit); every
    metric of the table, without one, where the figures have none (a single run, or figures
    stored before power was computed): the lead then gives σ_d."""
    figures = (content or {}).get("power") or []
    found = {f["metric"]: f for f in figures if isinstance(f, dict) and "metric" in f}
    if found:
        return found
    rows = (content or {}).get("metric_rows") or []
    return {row["name"]: {} for row in rows if isinstance(row, dict) and "name" in row}


def calculate_power(
    *, content: dict[str, Any] | None, measure: str, delta: float, sigma: float | None = None
) -> PowerAnswer:
    """Questions ``delta`` needs with ``sigma`` (default: the stored σ_d of ``measure``), and
    the smallest difference the gold set's own questions detect with it. The caller checks
    that one of the two σ_d exists (`evaluation.forms.PowerForm`)."""
    figure = stored_power(content).get(measure, {})
    chosen = sigma if sigma is not None else figure["sigma_d"]
    questions = int(figure.get("questions") or (content or {}).get("questions") or 0)
    minimum = minimum_detectable_difference(questions=questions, sigma=chosen)
    return PowerAnswer(
        metric=measure,
        delta=delta,
        sigma=chosen,
        sigma_given=sigma is not None,
        questions=questions,
        questions_needed=questions_needed(delta=delta, sigma=chosen),
        minimum_detectable=minimum,
        detectable=None if minimum is None else delta >= minimum,
    )
