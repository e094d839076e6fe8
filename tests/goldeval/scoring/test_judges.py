"""The judge calibration statistics of goldeval, against scipy and hand-computed cases."""

import random

import pytest
from scipy.stats import kendalltau

from goldeval.scoring.judges import bias, items_needed, kappa_z, kendall_tau, standard_error, tau_ap


def test_bias_counts_the_steps_above_and_below_the_gold():
    found = bias([(0, 1), (1, 1), (2, 1), (0, 2)])
    assert found.above == 0.5 and found.below == 0.25
    assert found.mean_step == pytest.approx((1 + 0 - 1 + 2) / 4)
    assert bias([]) is None


def test_items_needed_is_about_250_at_kappa_0_6():
    assert 240 <= items_needed(0.6, chance=0.5) <= 250
    # Worse agreement or a narrower interval needs more items.
    assert items_needed(0.4, chance=0.5) > items_needed(0.6, chance=0.5)
    assert items_needed(0.6, chance=0.5, half_width=0.05) > 4 * 240
    with pytest.raises(ValueError):
        items_needed(0.6, chance=1.0)


def test_kappa_z_is_the_difference_over_the_joint_standard_error():
    judge, humans = (0.5, 0.3, 0.7), (0.7, 0.6, 0.8)
    se_j, se_h = standard_error(0.3, 0.7), standard_error(0.6, 0.8)
    assert se_j == pytest.approx(0.4 / 3.919927969)
    assert kappa_z(judge, humans) == pytest.approx((0.5 - 0.7) / (se_j**2 + se_h**2) ** 0.5)
    assert kappa_z((0.5, None, None), humans) is None
    assert kappa_z((None, None, None), humans) is None


def test_kendall_tau_is_scipys():
    rng = random.Random(3)
    truth = {f"s{i}": rng.random() for i in range(12)}
    estimate = {k: v + rng.gauss(0, 0.2) for k, v in truth.items()}
    systems = sorted(truth)
    expected = kendalltau([truth[s] for s in systems], [estimate[s] for s in systems]).statistic
    assert kendall_tau(truth, estimate) == pytest.approx(expected)
    assert kendall_tau({"a": 1}, {"a": 1}) is None


def test_tau_ap_by_hand():
    truth = {"a": 4, "b": 3, "c": 2, "d": 1}
    assert tau_ap(truth, truth) == 1
    assert tau_ap(truth, {k: -v for k, v in truth.items()}) == -1
    # Swapping the top two costs more than swapping the bottom two (errors at the top weigh
    # more), while Kendall's tau sees both swaps alike.
    top = tau_ap(truth, {"a": 3, "b": 4, "c": 2, "d": 1})
    bottom = tau_ap(truth, {"a": 4, "b": 3, "c": 1, "d": 2})
    # Top swap: ranked b a c d: C(a)=0/1, C(c)=2/2, C(d)=3/3 -> 2/3 * 2 - 1 = 1/3.
    assert top == pytest.approx(1 / 3)
    # Bottom swap: a b d c: 1/1, 2/2, 2/3 -> 2/3 * (8/3) - 1 = 7/9.
    assert bottom == pytest.approx(7 / 9)
    assert kendall_tau(truth, {"a": 3, "b": 4, "c": 2, "d": 1}) == pytest.approx(
        kendall_tau(truth, {"a": 4, "b": 3, "c": 1, "d": 2})
    )
