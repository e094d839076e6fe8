"""Statistical power of a gold set: what difference it can detect, and how many questions a
difference needs.

Sakai's topic-set-size design for the paired two-sided t-test (T. Sakai, "Topic set size design",
Information Retrieval Journal 19(3), 2016): with α the significance level, 1 − β the power and
σ_d the standard deviation of the per-question differences between two systems,

- the questions needed for a difference Δ start from the normal approximation
  n ≈ ((z_{α/2} + z_β) σ_d / Δ)² + z_{α/2}² / 2, then the exact power of the paired t-test on n
  questions (Student's noncentral t with n − 1 degrees of freedom and noncentrality
  λ = √n Δ / σ_d) refines it: n is the smallest count whose power reaches 1 − β;
- the smallest detectable difference of a gold set of n questions is the Δ whose power on n
  questions is exactly 1 − β.

σ_d comes from the gold set's own runs: with m ≥ 2 runs scored on the same n questions, σ_d² =
2 V_E, V_E the residual variance of the two-way ANOVA without replication (questions × runs),
Sakai's estimate; with two runs it is the sample variance of their per-question differences.

Discriminative power (Sakai 2006): the share of run pairs that the paired randomization test
separates at α, with each pair's achieved significance level (ASL, the p-value).

Django-free: ``python -m goldeval power`` and the app's Evaluation page both use it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Protocol

# scipy is imported inside the functions that use it: it costs every CLI run (which imports
# this module through its gates) about 0.3-0.5 s of start-up, more than scoring a million run
# lines, and only the power figures need it.
from goldeval.scoring.compare import PERMUTATIONS, Comparison, paired_randomization_p_values

# numpy is imported where it is used, not here: a CLI run that scores one run never needs it,
# and importing it is a tenth of a million-line evaluation's whole process (issue 37).
if TYPE_CHECKING:
    import numpy as np


ALPHA = 0.05
POWER = 0.8
# Bounds that keep every computation finite: a difference is a change of a score in [0, 1] (a
# larger Δ or σ_d is accepted, but nothing beyond these can mean anything for a mean of scores).
MAX_QUESTIONS = 10_000_000
NOT_DETECTABLE = "not detectable with this gold set"


class Scored(Protocol):
    """A run scored question by question: a retrieval run's `RunEvaluation` or an answer
    run's `AnswerEvaluation` (None where a figure is undefined for a question)."""

    per_question: dict[str, dict[str, float | None]]


class PowerInputError(ValueError):
    """A power computation asked with a value that cannot be used; the message names it."""


def _check(*, alpha: float, power: float) -> None:
    if not (isinstance(alpha, int | float) and 0 < alpha < 1):
        raise PowerInputError("alpha must be a number between 0 and 1 (exclusive)")
    if not (isinstance(power, int | float) and alpha < power < 1):
        raise PowerInputError("power must be a number between alpha and 1 (exclusive)")


def _positive(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise PowerInputError(f"{name} must be a positive finite number")


def _two_sided_power(critical: float, freedom: int, noncentrality: float) -> float:
    """P(|T| > critical) for T noncentral t. scipy's lower tail turns NaN where it is far below
    1e-15 (large noncentrality); it is then 0. An upper tail it cannot give falls back to the
    normal approximation."""
    from scipy import stats

    upper = stats.nct.sf(critical, freedom, noncentrality)
    if math.isnan(upper):
        upper = stats.norm.sf(critical - noncentrality)
    lower = stats.nct.cdf(-critical, freedom, noncentrality)
    return float(upper + (0.0 if math.isnan(lower) else lower))


def paired_t_power(*, questions: int, delta: float, sigma: float, alpha: float = ALPHA) -> float:
    """Power of the paired two-sided t-test on ``questions`` questions to detect a true mean
    difference ``delta`` when the per-question differences have standard deviation ``sigma``."""
    from scipy import stats

    if questions < 2:
        return 0.0
    freedom = questions - 1
    noncentrality = math.sqrt(questions) * delta / sigma
    critical = stats.t.ppf(1 - alpha / 2, freedom)
    return _two_sided_power(critical, freedom, noncentrality)


def normal_approximation(
    *, delta: float, sigma: float, alpha: float = ALPHA, power: float = POWER
) -> float:
    """Sakai's starting point: ((z_{α/2} + z_β) σ / Δ)² + z_{α/2}² / 2."""
    from scipy import stats

    z_alpha = stats.norm.ppf(1 - alpha / 2)
    z_beta = stats.norm.ppf(power)
    return ((z_alpha + z_beta) * sigma / delta) ** 2 + z_alpha**2 / 2


def questions_needed(
    *, delta: float, sigma: float, alpha: float = ALPHA, power: float = POWER
) -> int:
    """The fewest questions whose paired t-test detects ``delta`` with the given power."""
    _positive("the difference (delta)", delta)
    _positive("the standard deviation of the differences (sigma)", sigma)
    _check(alpha=alpha, power=power)
    start = normal_approximation(delta=delta, sigma=sigma, alpha=alpha, power=power)
    if start > MAX_QUESTIONS:
        raise PowerInputError(
            f"a difference of {delta:g} with sigma {sigma:g} needs more than {MAX_QUESTIONS:,} "
            "questions"
        )
    n = max(2, math.ceil(start))
    # The noncentral t refinement: the normal approximation is within a question or two.
    while n > 2 and paired_t_power(questions=n - 1, delta=delta, sigma=sigma, alpha=alpha) >= power:
        n -= 1
    while paired_t_power(questions=n, delta=delta, sigma=sigma, alpha=alpha) < power:
        n += 1
    return n


def minimum_detectable_difference(
    *, questions: int, sigma: float, alpha: float = ALPHA, power: float = POWER
) -> float | None:
    """The smallest true difference a paired t-test on ``questions`` questions detects with the
    given power; None with fewer than two questions. 0 when sigma is 0 (the runs never
    disagree in spread: any difference shows)."""
    from scipy import optimize, stats

    _check(alpha=alpha, power=power)
    if questions < 2:
        return None
    if not (math.isfinite(sigma) and sigma >= 0):
        raise PowerInputError("sigma must be a finite number of at least 0")
    if sigma == 0:
        return 0.0
    freedom = questions - 1
    critical = stats.t.ppf(1 - alpha / 2, freedom)

    def shortfall(noncentrality: float) -> float:
        return _two_sided_power(critical, freedom, noncentrality) - power

    upper = critical + stats.norm.ppf(power) + 1.0
    while shortfall(upper) < 0:
        upper *= 2
    noncentrality = optimize.brentq(shortfall, 0.0, upper, xtol=1e-12)
    return float(noncentrality * sigma / math.sqrt(questions))


def difference_sigma(scores: np.ndarray) -> float | None:
    """σ_d from a (questions × runs) matrix of per-question scores: √(2 V_E), V_E the residual
    mean square of the two-way ANOVA without replication. None with fewer than two runs or two
    questions."""
    questions, runs = scores.shape
    if questions < 2 or runs < 2:
        return None
    residual = (
        scores
        - scores.mean(axis=1, keepdims=True)
        - scores.mean(axis=0, keepdims=True)
        + scores.mean()
    )
    residual_variance = float((residual**2).sum()) / ((questions - 1) * (runs - 1))
    return math.sqrt(2 * residual_variance)


def score_matrix(evaluations: Mapping[str, Scored], *, metric: str) -> tuple[list[str], np.ndarray]:
    """The questions every run scored with a value for ``metric`` (recall@k is undefined on a
    question without units at the threshold, the same in every run), and their scores."""
    import numpy as np

    runs = list(evaluations.values())
    if not runs:
        return [], np.zeros((0, 0))
    question_ids = [
        q
        for q in runs[0].per_question
        if all(
            q in run.per_question and run.per_question[q].get(metric) is not None for run in runs
        )
    ]
    matrix = np.array(
        [[run.per_question[q][metric] for run in runs] for q in question_ids], dtype=np.float64
    ).reshape(len(question_ids), len(runs))
    return question_ids, matrix


@dataclass(frozen=True, slots=True)
class PairSignificance:
    a: str
    b: str
    delta: float
    asl: float  # achieved significance level: the paired randomization test's p-value


@dataclass(slots=True)
class MeasurePower:
    """What a gold set can tell apart on one measure, from the runs scored on it."""

    metric: str
    questions: int
    runs: int
    sigma: float | None  # σ_d; None with fewer than two runs or questions
    minimum_detectable: float | None
    delta: float | None = None  # the difference asked about, if any
    questions_needed: int | None = None
    pairs: list[PairSignificance] = field(default_factory=list)
    alpha: float = ALPHA
    power: float = POWER

    @property
    def discriminative_power(self) -> float | None:
        """Share of run pairs the randomization test separates at α; None without a pair."""
        if not self.pairs:
            return None
        return sum(pair.asl < self.alpha for pair in self.pairs) / len(self.pairs)

    def detectable(self, difference: float | None) -> bool | None:
        """Whether a difference of this size is at least the smallest detectable one (and not
        0); None when that is unknown."""
        if difference is None or self.minimum_detectable is None:
            return None
        # No difference at all is nothing to detect, even where the runs never disagree.
        return difference != 0 and abs(difference) >= self.minimum_detectable

    def as_dict(self, *, pairs: bool = True) -> dict:
        found = {
            "metric": self.metric,
            "questions": self.questions,
            "runs": self.runs,
            "alpha": self.alpha,
            "power": self.power,
            "sigma_d": self.sigma,
            "minimum_detectable_difference": self.minimum_detectable,
            "delta": self.delta,
            "questions_needed": self.questions_needed,
            "discriminative_power": self.discriminative_power,
        }
        if pairs:
            found["pairs"] = [
                {
                    "a": p.a,
                    "b": p.b,
                    "delta": p.delta,
                    "asl": p.asl,
                    "significant": p.asl < self.alpha,
                }
                for p in self.pairs
            ]
        return found


def _sigma_and_minimum(
    evaluations: Mapping[str, Scored], *, metric: str, alpha: float, power: float
) -> tuple[np.ndarray, int, float | None, float | None]:
    question_ids, matrix = score_matrix(evaluations, metric=metric)
    sigma = difference_sigma(matrix)
    minimum = (
        None
        if sigma is None
        else minimum_detectable_difference(
            questions=len(question_ids), sigma=sigma, alpha=alpha, power=power
        )
    )
    return matrix, len(question_ids), sigma, minimum


def detection_limits(
    evaluations: Mapping[str, Scored],
    *,
    metrics: Sequence[str],
    comparisons: Sequence[Comparison],
    alpha: float = ALPHA,
    power: float = POWER,
) -> dict[str, MeasurePower]:
    """Per metric, σ_d and the smallest detectable difference of the runs, with the
    discriminative power of comparisons already made (`goldeval.scoring.compare.compare_runs`'s
    p-values are the ASLs): what ``evaluate``'s report and gates use."""
    _check(alpha=alpha, power=power)
    limits = {}
    for metric in metrics:
        _, questions, sigma, minimum = _sigma_and_minimum(
            evaluations, metric=metric, alpha=alpha, power=power
        )
        pairs = [
            PairSignificance(a=c.a, b=c.b, delta=c.delta, asl=c.p_value)
            for c in comparisons
            if c.metric == metric and c.delta is not None
        ]
        limits[metric] = MeasurePower(
            metric=metric,
            questions=questions,
            runs=len(evaluations),
            sigma=sigma,
            minimum_detectable=minimum,
            pairs=pairs,
            alpha=alpha,
            power=power,
        )
    return limits


def measure_power(
    evaluations: Mapping[str, Scored],
    *,
    metric: str,
    delta: float | None = None,
    alpha: float = ALPHA,
    power: float = POWER,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> MeasurePower:
    """σ_d, the smallest detectable difference, the questions ``delta`` needs, and the
    discriminative power of ``metric`` over the runs given (all scored on one gold set)."""
    _check(alpha=alpha, power=power)
    names = list(evaluations)
    matrix, questions, sigma, minimum = _sigma_and_minimum(
        evaluations, metric=metric, alpha=alpha, power=power
    )
    needed = None
    if delta is not None and sigma is not None and sigma > 0:
        needed = questions_needed(delta=delta, sigma=sigma, alpha=alpha, power=power)
    pairs: list[PairSignificance] = []
    for (i, a), (j, b) in combinations(enumerate(names), 2):
        differences = (matrix[:, i] - matrix[:, j]).reshape(-1, 1)
        asl = paired_randomization_p_values(differences, permutations=permutations, seed=seed)[0]
        mean = float(differences.mean()) if questions else 0.0
        pairs.append(PairSignificance(a=a, b=b, delta=mean, asl=float(asl)))
    return MeasurePower(
        metric=metric,
        questions=questions,
        runs=len(names),
        sigma=sigma,
        minimum_detectable=minimum,
        delta=delta,
        questions_needed=needed,
        pairs=pairs,
        alpha=alpha,
        power=power,
    )


def gold_set_power(
    evaluations: Mapping[str, Scored],
    *,
    metrics: Sequence[str],
    delta: float | None = None,
    alpha: float = ALPHA,
    power: float = POWER,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> dict[str, MeasurePower]:
    """`measure_power` for each metric."""
    return {
        metric: measure_power(
            evaluations,
            metric=metric,
            delta=delta,
            alpha=alpha,
            power=power,
            permutations=permutations,
            seed=seed,
        )
        for metric in metrics
    }
