import numpy as np
import pytest

from goldeval.scoring.compare import compare_runs, paired_randomization_p_values
from goldeval.scoring.metrics import RunEvaluation, UnanswerableReport


def evaluation_of(values):
    per_question = {f"q{i}": {"recall@5": value} for i, value in enumerate(values)}
    return RunEvaluation(
        questions=len(values),
        answerable=len(values),
        missing=0,
        metrics={"recall@5": sum(values) / len(values)},
        unanswerable=UnanswerableReport(questions=0, refusal_accuracy=None, wrongly_refused=None),
        per_question=per_question,
    )


def test_identical_runs_have_p_value_one():
    differences = np.zeros((30, 2))
    assert paired_randomization_p_values(differences, permutations=500).tolist() == [1.0, 1.0]


def test_a_consistent_gain_is_significant():
    differences = np.full((40, 1), 0.2)
    (p_value,) = paired_randomization_p_values(differences, permutations=2000, seed=1)
    # Only the all-positive and all-negative sign patterns are as extreme: p is about 1/2001.
    assert p_value < 0.01


def test_p_value_is_two_sided_and_seeded():
    rng = np.random.default_rng(3)
    differences = rng.normal(0.05, 0.3, size=(50, 1))
    forward = paired_randomization_p_values(differences, permutations=3000, seed=7)
    backward = paired_randomization_p_values(-differences, permutations=3000, seed=7)
    assert forward == pytest.approx(backward)
    assert (forward == paired_randomization_p_values(differences, permutations=3000, seed=7)).all()
    assert 0 < forward[0] <= 1


def test_p_value_close_to_the_exact_test():
    # Exact two-sided sign-flip test over all 2**10 patterns.
    differences = np.array([0.3, 0.1, -0.05, 0.2, 0.0, 0.25, -0.1, 0.15, 0.05, 0.2])
    signs = np.array([[1 if (m >> i) & 1 else -1 for i in range(10)] for m in range(1024)])
    means = np.abs(signs @ differences) / 10
    exact = (means >= abs(differences.mean()) - 1e-12).mean()
    (estimate,) = paired_randomization_p_values(differences[:, None], permutations=20000, seed=0)
    assert estimate == pytest.approx(exact, abs=0.01)


def test_compare_runs_gives_every_pair_in_order():
    evaluations = {
        "a": evaluation_of([1.0, 1.0, 0.5, 1.0]),
        "b": evaluation_of([0.0, 0.5, 0.5, 0.0]),
        "c": evaluation_of([1.0, 1.0, 0.5, 1.0]),
    }
    comparisons = compare_runs(evaluations, metric_names=["recall@5"], permutations=1000)
    assert [(c.a, c.b) for c in comparisons] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert comparisons[0].delta == pytest.approx(0.875 - 0.25)
    assert comparisons[1].delta == 0.0
    assert comparisons[1].p_value == 1.0
