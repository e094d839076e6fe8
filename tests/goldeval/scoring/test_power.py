"""Power of a gold set: Sakai's topic-set-size design for the paired t-test, σ_d from the runs,
discriminative power."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from goldeval.scoring.compare import compare_runs
from goldeval.scoring.metrics import RunEvaluation, UnanswerableReport
from goldeval.scoring.power import (
    PowerInputError,
    detection_limits,
    difference_sigma,
    measure_power,
    minimum_detectable_difference,
    normal_approximation,
    paired_t_power,
    questions_needed,
    score_matrix,
)


def evaluation_of(values, metric="ndcg@10"):
    per_question = {f"q{i}": {metric: value} for i, value in enumerate(values)}
    present = [v for v in values if v is not None]
    return RunEvaluation(
        questions=len(values),
        answerable=len(values),
        missing=0,
        metrics={metric: sum(present) / len(present)},
        unanswerable=UnanswerableReport(questions=0, refusal_accuracy=None, wrongly_refused=None),
        per_question=per_question,
    )


@pytest.mark.parametrize(("delta", "needed"), [(0.05, 34), (0.03, 90), (0.02, 199)])
def test_reference_values_with_sigma_ten_hundredths(delta, needed):
    assert questions_needed(delta=delta, sigma=0.10) == needed
    # The smallest count: one question fewer falls short of power 0.8 (the noncentral t).
    assert paired_t_power(questions=needed, delta=delta, sigma=0.10) >= 0.8
    assert paired_t_power(questions=needed - 1, delta=delta, sigma=0.10) < 0.8


def test_normal_approximation_is_sakais_starting_point():
    z_alpha, z_beta = stats.norm.ppf(0.975), stats.norm.ppf(0.8)
    expected = ((z_alpha + z_beta) * 0.1 / 0.05) ** 2 + z_alpha**2 / 2
    assert normal_approximation(delta=0.05, sigma=0.1) == pytest.approx(expected)
    assert math.ceil(expected) == 34


def test_power_is_the_noncentral_t_tail_mass_beyond_the_critical_values():
    n, delta, sigma = 20, 0.05, 0.1
    critical = stats.t.ppf(0.975, n - 1)
    noncentrality = math.sqrt(n) * delta / sigma
    expected = stats.nct.sf(critical, n - 1, noncentrality) + stats.nct.cdf(
        -critical, n - 1, noncentrality
    )
    assert paired_t_power(questions=n, delta=delta, sigma=sigma) == pytest.approx(expected)


@pytest.mark.parametrize("questions", [3, 10, 34, 60, 90, 199, 1000])
@pytest.mark.parametrize("sigma", [0.05, 0.1, 0.25])
def test_smallest_detectable_difference_inverts_questions_needed(questions, sigma):
    minimum = minimum_detectable_difference(questions=questions, sigma=sigma)
    assert paired_t_power(questions=questions, delta=minimum, sigma=sigma) == pytest.approx(0.8)
    # The set of that size is exactly the one the difference needs.
    assert questions_needed(delta=minimum * 1.000001, sigma=sigma) <= questions
    assert questions_needed(delta=minimum * 0.99, sigma=sigma) > questions


def test_smallest_detectable_difference_of_sixty_questions():
    # The example: 60 questions, σ_d 0.10, cannot tell 0.62 from 0.64.
    minimum = minimum_detectable_difference(questions=60, sigma=0.10)
    assert minimum == pytest.approx(0.0368, abs=5e-4)
    assert minimum > 0.02


@pytest.mark.parametrize("questions", range(2, 12))
def test_tiny_gold_sets_give_a_finite_figure(questions):
    # scipy's lower noncentral-t tail is NaN for large noncentrality at few degrees of freedom.
    minimum = minimum_detectable_difference(questions=questions, sigma=0.3)
    assert math.isfinite(minimum) and minimum > 0


def test_no_figure_without_two_questions_and_zero_with_no_spread():
    assert minimum_detectable_difference(questions=1, sigma=0.1) is None
    assert minimum_detectable_difference(questions=30, sigma=0.0) == 0.0


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"delta": 0, "sigma": 0.1}, "delta"),
        ({"delta": -0.1, "sigma": 0.1}, "delta"),
        ({"delta": float("nan"), "sigma": 0.1}, "delta"),
        ({"delta": float("inf"), "sigma": 0.1}, "delta"),
        ({"delta": 0.05, "sigma": 0}, "sigma"),
        ({"delta": 0.05, "sigma": float("nan")}, "sigma"),
        ({"delta": 0.05, "sigma": 0.1, "alpha": 0}, "alpha"),
        ({"delta": 0.05, "sigma": 0.1, "alpha": 1.5}, "alpha"),
        ({"delta": 0.05, "sigma": 0.1, "power": 1}, "power"),
        ({"delta": 0.05, "sigma": 0.1, "power": 0.01}, "power"),
        ({"delta": 1e-6, "sigma": 1.0}, "questions"),
    ],
)
def test_unusable_values_are_refused_by_name(arguments, named):
    with pytest.raises(PowerInputError, match=named):
        questions_needed(**arguments)


def test_sigma_of_two_runs_is_the_spread_of_their_differences():
    rng = np.random.default_rng(0)
    scores = rng.random((40, 2))
    expected = np.std(scores[:, 0] - scores[:, 1], ddof=1)
    assert difference_sigma(scores) == pytest.approx(expected)


def test_sigma_of_several_runs_is_twice_the_anova_residual_variance():
    rng = np.random.default_rng(1)
    scores = rng.random((25, 4))
    n, m = scores.shape
    grand = scores.mean()
    total = ((scores - grand) ** 2).sum()
    questions = m * ((scores.mean(axis=1) - grand) ** 2).sum()
    runs = n * ((scores.mean(axis=0) - grand) ** 2).sum()
    residual_variance = (total - questions - runs) / ((n - 1) * (m - 1))
    assert difference_sigma(scores) == pytest.approx(math.sqrt(2 * residual_variance))


def test_sigma_needs_two_runs_and_two_questions():
    assert difference_sigma(np.ones((10, 1))) is None
    assert difference_sigma(np.ones((1, 3))) is None


def test_questions_without_a_value_in_some_run_are_left_out():
    # recall@k is undefined (None) on a question without units at the threshold.
    a = evaluation_of([0.5, None, 1.0], metric="recall@5")
    b = evaluation_of([0.0, None, 1.0], metric="recall@5")
    ids, matrix = score_matrix({"a": a, "b": b}, metric="recall@5")
    assert ids == ["q0", "q2"]
    assert matrix.tolist() == [[0.5, 0.0], [1.0, 1.0]]


def test_measure_power_of_runs_on_a_gold_set():
    rng = np.random.default_rng(2)
    base = rng.random(50)
    evaluations = {
        "strong": evaluation_of(list(np.clip(base + 0.3, 0, 1))),
        "same": evaluation_of(list(base)),
        "twin": evaluation_of(list(np.clip(base + rng.normal(0, 0.01, 50), 0, 1))),
    }
    figure = measure_power(evaluations, metric="ndcg@10", delta=0.05, permutations=2000)
    matrix = np.array(
        [[evaluations[r].per_question[f"q{i}"]["ndcg@10"] for r in evaluations] for i in range(50)]
    )
    assert figure.questions == 50 and figure.runs == 3
    assert figure.sigma == pytest.approx(difference_sigma(matrix))
    assert figure.minimum_detectable == pytest.approx(
        minimum_detectable_difference(questions=50, sigma=figure.sigma)
    )
    assert figure.questions_needed == questions_needed(delta=0.05, sigma=figure.sigma)
    significant = {(p.a, p.b): p.asl < 0.05 for p in figure.pairs}
    # strong beats both; same and twin cannot be told apart.
    assert significant == {
        ("strong", "same"): True,
        ("strong", "twin"): True,
        ("same", "twin"): False,
    }
    assert figure.discriminative_power == pytest.approx(2 / 3)
    report = figure.as_dict()
    assert report["discriminative_power"] == pytest.approx(2 / 3)
    assert [pair["significant"] for pair in report["pairs"]] == [True, True, False]
    assert figure.detectable(figure.minimum_detectable / 2) is False
    assert figure.detectable(-figure.minimum_detectable * 2) is True


def test_detection_limits_reuse_the_comparisons_p_values():
    rng = np.random.default_rng(4)
    base = rng.random(30)
    evaluations = {"a": evaluation_of(list(base)), "b": evaluation_of(list(base * 0.5))}
    comparisons = compare_runs(evaluations, metric_names=["ndcg@10"], permutations=500)
    limits = detection_limits(evaluations, metrics=["ndcg@10"], comparisons=comparisons)
    (pair,) = limits["ndcg@10"].pairs
    assert pair.asl == comparisons[0].p_value and pair.delta == comparisons[0].delta
    assert limits["ndcg@10"].discriminative_power == 1.0


def test_one_run_has_no_sigma_and_no_limit():
    figure = measure_power({"only": evaluation_of([0.1, 0.5, 0.9])}, metric="ndcg@10")
    assert figure.sigma is None and figure.minimum_detectable is None
    assert figure.pairs == [] and figure.discriminative_power is None
    assert figure.detectable(0.5) is None


@settings(max_examples=150, deadline=None)
@given(
    delta=st.floats(min_value=0.005, max_value=0.5),
    sigma=st.floats(min_value=0.01, max_value=0.5),
)
def test_questions_needed_is_the_smallest_count_reaching_the_power(delta, sigma):
    needed = questions_needed(delta=delta, sigma=sigma)
    assert paired_t_power(questions=needed, delta=delta, sigma=sigma) >= 0.8
    if needed > 2:
        assert paired_t_power(questions=needed - 1, delta=delta, sigma=sigma) < 0.8
    # A larger difference never needs more questions; a larger spread never fewer.
    assert questions_needed(delta=delta * 1.5, sigma=sigma) <= needed
    assert questions_needed(delta=delta, sigma=sigma * 1.5) >= needed


@settings(max_examples=100, deadline=None)
@given(questions=st.integers(min_value=2, max_value=5000), sigma=st.floats(0.001, 1.0))
def test_the_smallest_detectable_difference_has_exactly_the_power(questions, sigma):
    minimum = minimum_detectable_difference(questions=questions, sigma=sigma)
    assert math.isfinite(minimum) and minimum > 0
    assert paired_t_power(questions=questions, delta=minimum, sigma=sigma) == pytest.approx(
        0.8, abs=1e-6
    )
