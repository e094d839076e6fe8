"""Compare runs question by question with a paired randomization test.

Under the null hypothesis the two runs are exchangeable on every question, so each per-question
difference is equally likely to have either sign. The p-value is the share of random sign flips
whose mean difference is at least as far from zero as the observed one (two-sided), counting the
observed assignment itself so it is never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from goldeval.scoring.metrics import RunEvaluation

# numpy is imported where it is used, not here: a CLI run that scores one run never needs it,
# and importing it is a tenth of a million-line evaluation's whole process (issue 37).
if TYPE_CHECKING:
    import numpy as np


PERMUTATIONS = 10_000
# Bounds the sign matrix (permutations x questions) held in memory at once.
_CELLS_PER_BATCH = 4_000_000
# Float sums of the same numbers in another order differ in the last bits; such a sum must still
# count as "as extreme as observed".
_TOLERANCE = 1e-12


@dataclass(frozen=True, slots=True)
class Comparison:
    a: str
    b: str
    metric: str
    delta: float | None  # metric of a minus metric of b; None without answerable questions
    p_value: float


def paired_randomization_p_values(
    differences: np.ndarray, *, permutations: int = PERMUTATIONS, seed: int = 0
) -> np.ndarray:
    """Two-sided p-value per column of a (questions x metrics) matrix of paired differences."""
    import numpy as np

    questions, metrics = differences.shape
    if questions == 0:
        return np.ones(metrics)
    observed = np.abs(differences.mean(axis=0))
    rng = np.random.default_rng(seed)
    as_extreme = np.zeros(metrics, dtype=np.int64)
    batch = max(1, _CELLS_PER_BATCH // questions)
    done = 0
    while done < permutations:
        size = min(batch, permutations - done)
        signs = rng.integers(0, 2, size=(size, questions), dtype=np.int8) * 2 - 1
        means = np.abs(signs.astype(np.float64) @ differences) / questions
        as_extreme += (means >= observed - _TOLERANCE).sum(axis=0)
        done += size
    return (as_extreme + 1) / (permutations + 1)


def compare_runs(
    evaluations: dict[str, RunEvaluation],
    *,
    metric_names: list[str],
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> list[Comparison]:
    """Deltas and p-values for every pair of runs (in the given order) and every metric."""
    import numpy as np

    comparisons: list[Comparison] = []
    for name_a, name_b in combinations(evaluations, 2):
        a, b = evaluations[name_a], evaluations[name_b]
        # Both runs are scored on the same gold set, so by default they cover the same answerable
        # questions; under --compat trec_eval each covers the questions it answered, and the
        # pair is compared on those both did.
        question_ids = [q for q in a.per_question if q in b.per_question]
        values_a = np.array(
            [[a.per_question[q][m] for m in metric_names] for q in question_ids], dtype=np.float64
        ).reshape(len(question_ids), len(metric_names))
        values_b = np.array(
            [[b.per_question[q][m] for m in metric_names] for q in question_ids], dtype=np.float64
        ).reshape(len(question_ids), len(metric_names))
        # recall@k is undefined (None, so NaN here) for a question without units at the
        # threshold, the same question in both runs: no difference.
        differences = np.nan_to_num(values_a - values_b, nan=0.0)
        p_values = paired_randomization_p_values(differences, permutations=permutations, seed=seed)
        for index, metric in enumerate(metric_names):
            mean_a, mean_b = a.metrics[metric], b.metrics[metric]
            delta = None if mean_a is None or mean_b is None else mean_a - mean_b
            comparisons.append(
                Comparison(
                    a=name_a, b=name_b, metric=metric, delta=delta, p_value=float(p_values[index])
                )
            )
    return comparisons
