"""The sampling core (goldeval/scoring/sampling.py): every strategy's inclusion probabilities are
what the draws do, and weighted estimates find the population mean within their intervals."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from goldeval.scoring.sampling import (
    Observation,
    SamplingError,
    Unit,
    allocate,
    disagreement_of,
    draw,
    weighted_mean,
)


def population(n=2000, seed=1):
    """Synthetic traces: three strata of very different sizes and quality, negatives worse."""
    rng = random.Random(seed)
    units, values = [], {}
    for key in range(n):
        stratum = "a" if key % 10 < 7 else "b" if key % 10 < 9 else "c"
        negative = rng.random() < {"a": 0.05, "b": 0.2, "c": 0.6}[stratum]
        quality = {"a": 0.9, "b": 0.6, "c": 0.2}[stratum] - (0.3 if negative else 0)
        values[key] = 1.0 if rng.random() < quality else 0.0
        units.append(Unit(key, stratum, negative))
    return units, values


def test_uniform_gives_n_over_n_to_everyone_and_repeats_with_its_seed():
    units, _ = population(100)
    sample = draw(units, strategy="uniform", size=10, seed=7)
    assert len(sample.draws) == 10 and {d.probability for d in sample.draws} == {0.1}
    assert sample == draw(list(reversed(units)), strategy="uniform", size=10, seed=7)
    assert sample != draw(units, strategy="uniform", size=10, seed=8)
    everyone = draw(units[:5], strategy="uniform", size=10, seed=7)
    assert len(everyone.draws) == 5 and {d.probability for d in everyone.draws} == {1.0}


def test_empty_population_draws_nothing():
    assert draw([], strategy="uniform", size=10, seed=1).empty
    assert draw([], strategy="negative_first", size=10, seed=1).empty


def test_stratified_quotas_and_proportional_allocation():
    units, _ = population(1000)
    sample = draw(units, strategy="stratified", size=30, seed=3, quotas={"a": 10, "b": 10, "c": 10})
    counts = Counter(d.stratum for d in sample.draws)
    assert counts == {"a": 10, "b": 10, "c": 10}
    assert sample.strata["a"] == {"population": 700, "drawn": 10}
    assert {d.probability for d in sample.draws if d.stratum == "c"} == {10 / 100}
    proportional = draw(units, strategy="stratified", size=30, seed=3)
    assert Counter(d.stratum for d in proportional.draws) == {"a": 21, "b": 6, "c": 3}
    assert allocate({"x": 1, "y": 1, "z": 1}, 2) == {"x": 1, "y": 1, "z": 0}
    with pytest.raises(SamplingError, match="whole numbers"):
        draw(units, strategy="stratified", size=3, seed=1, quotas={"a": -1})


def test_negative_first_takes_every_negative_then_fills_uniformly():
    units, _ = population(1000)
    negatives = [u.key for u in units if u.negative]
    sample = draw(units, strategy="negative_first", size=len(negatives) + 50, seed=5)
    drawn = {d.key: d for d in sample.draws}
    assert set(negatives) <= set(drawn)
    assert {drawn[k].probability for k in negatives} == {1.0}
    others = [d for d in sample.draws if d.stratum == "other"]
    assert len(others) == 50
    assert {d.probability for d in others} == {50 / (1000 - len(negatives))}
    # More negatives than room: four fifths negatives, a fifth kept for the others.
    few = draw(units, strategy="negative_first", size=10, seed=5)
    assert Counter(d.stratum for d in few.draws) == {"negative feedback": 8, "other": 2}
    only_negatives = [u for u in units if u.negative][:20]
    alone = draw(only_negatives, strategy="negative_first", size=10, seed=5)
    assert len(alone.draws) == 10


@pytest.mark.parametrize("strategy", ["uniform", "stratified", "negative_first", "disagreement"])
def test_inclusion_probabilities_match_how_often_units_are_drawn(strategy):
    units, _ = population(40, seed=2)
    scores = {u.key: (1.0 if u.key % 3 == 0 else 0.0) for u in units}
    options = {"quotas": {"a": 4, "b": 2, "c": 2}} if strategy == "stratified" else {}
    if strategy == "disagreement":
        options = {"disagreement": lambda keys: {k: scores[k] for k in keys}, "first_phase": 20}
    seen, stated, runs = Counter(), {}, 4000
    for seed in range(runs):
        for d in draw(units, strategy=strategy, size=8, seed=seed, **options).draws:
            seen[d.key] += 1
            stated.setdefault(d.key, []).append(d.probability)
    for key, probabilities in stated.items():
        # The design's probability of a unit, averaged where it depends on the first phase.
        expected = sum(probabilities) / len(probabilities) if strategy != "disagreement" else None
        if expected is not None:
            assert abs(seen[key] / runs - expected) < 0.03, (key, seen[key] / runs, expected)
    if strategy == "disagreement":
        # Horvitz–Thompson: the weights of the draws estimate the population size unbiasedly.
        total = sum(1 / p for ps in stated.values() for p in ps) / runs
        assert abs(total - len(units)) / len(units) < 0.05


@pytest.mark.parametrize(
    "strategy,options",
    [
        ("uniform", {}),
        ("stratified", {"quotas": {"a": 40, "b": 40, "c": 40}}),
        ("negative_first", {}),
    ],
)
def test_the_weighted_mean_finds_the_population_mean_within_its_interval(strategy, options):
    units, values = population()
    truth = sum(values.values()) / len(values)
    by_key = {u.key: u for u in units}
    covered, biases = 0, []
    runs = 200
    for seed in range(runs):
        sample = draw(units, strategy=strategy, size=120, seed=seed, **options)
        estimate = weighted_mean(
            [Observation(values[d.key], d.probability, d.stratum) for d in sample.draws]
        )
        covered += estimate.low <= truth <= estimate.high
        biases.append(estimate.mean - truth)
        assert by_key[sample.draws[0].key]
    assert covered / runs >= 0.9, covered / runs  # nominal 95%
    assert abs(sum(biases) / runs) < 0.01
    # The unweighted mean of a design that over-draws negatives is far off: weights matter.
    if strategy == "negative_first":
        sample = draw(units, strategy=strategy, size=120, seed=0)
        naive = sum(values[d.key] for d in sample.draws) / len(sample.draws)
        assert truth - naive > 0.1


def test_a_domain_estimate_leaves_undefined_values_out_of_the_mean():
    observations = [Observation(1.0, 0.5), Observation(None, 0.5), Observation(0.0, 0.25)]
    estimate = weighted_mean(observations)
    assert estimate.mean == pytest.approx((1 / 0.5) / (1 / 0.5 + 1 / 0.25))
    assert estimate.n == 2
    assert not weighted_mean([Observation(None, 1.0)]).defined


def test_disagreement_is_one_minus_the_overlap():
    assert disagreement_of(["a", "b"], [["a", "b"]]) == 0.0
    assert disagreement_of(["a"], [["b"], ["c"]]) == 1.0
    assert disagreement_of(["a", "b"], [["b", "c"]]) == pytest.approx(1 - 1 / 3)
    assert disagreement_of([], [[]]) == 0.0
