"""The judging order of a pool's candidates (`goldeval.pooling`)."""

import random

import pytest

from goldeval.pooling import (
    RunRecord,
    StoppingRule,
    Strategy,
    judging_order,
    simulate_question,
    updated_records,
)


def test_depth_orders_by_best_rank_then_by_how_many_retrievers_found_it():
    rankings = [["a", "b", "c"], ["d", "b", "e"]]
    assert judging_order(rankings, [], "depth") == ["a", "d", "b", "c", "e"]
    # Judged candidates leave the order; judgements change nothing else.
    assert judging_order(rankings, [("a", False)], "depth") == ["d", "b", "c", "e"]


def test_move_to_front_stays_with_a_retriever_while_it_finds_and_moves_it_back_on_a_miss():
    rankings = [["a1", "a2", "a3"], ["b1", "b2", "b3"]]
    assert judging_order(rankings, [], "mtf")[0] == "a1"
    assert judging_order(rankings, [("a1", True)], "mtf")[0] == "a2"
    after_miss = judging_order(rankings, [("a1", True), ("a2", False)], "mtf")
    assert after_miss[0] == "b1"
    # Round by round, in priority order: the retriever that missed comes last.
    assert after_miss == ["b1", "a3", "b2", "b3"]


def test_move_to_front_starts_with_the_retriever_whose_record_is_better():
    rankings = [["a1", "a2"], ["b1", "b2"]]
    prior = [RunRecord(judged=10, relevant=1), RunRecord(judged=10, relevant=8)]
    assert judging_order(rankings, [], "mtf", prior=prior)[0] == "b1"


def test_the_bandit_draws_more_from_the_retriever_that_finds_relevant_passages():
    good = [f"g{i}" for i in range(20)]
    poor = [f"p{i}" for i in range(20)]
    judged = [("g0", True), ("g1", True), ("g2", True), ("p0", False), ("p1", False)]
    order = judging_order([good, poor], judged, "bandit")
    first_ten = order[:10]
    assert sum(c.startswith("g") for c in first_ten) > sum(c.startswith("p") for c in first_ten)
    assert order[0] == "g3"
    # Each retriever still gives its candidates best first.
    assert [c for c in order if c.startswith("p")] == poor[2:]


@pytest.mark.parametrize("strategy", list(Strategy))
def test_every_strategy_orders_each_unjudged_candidate_once(strategy):
    rng = random.Random(5)
    for _ in range(200):
        universe = [f"d{i}" for i in range(rng.randint(1, 25))]
        rankings = [
            rng.sample(universe, rng.randint(0, len(universe))) for _ in range(rng.randint(1, 4))
        ]
        pooled = {c for ranking in rankings for c in ranking}
        judged = [(c, rng.random() < 0.3) for c in rng.sample(sorted(pooled), len(pooled) // 2)]
        prior = [RunRecord(rng.randint(0, 9), 0) for _ in rankings] if rng.random() < 0.5 else None
        order = judging_order(rankings, judged, strategy, prior=prior)
        assert sorted(order) == sorted(pooled - {c for c, _ in judged})


def test_a_candidate_found_twice_by_one_retriever_is_ordered_once():
    for strategy in Strategy:
        assert judging_order([["a", "a", "b"]], [], strategy) == ["a", "b"]


def test_the_stopping_rule():
    rule = StoppingRule(misses=2)
    assert not rule.reached([])
    assert not rule.reached([True, False])
    assert rule.reached([True, False, False])
    assert StoppingRule(budget=3).reached([True, True, True])
    assert not StoppingRule().reached([False] * 100)
    assert StoppingRule(misses=2, budget=5).describe() == (
        "after 2 not relevant in a row or after 5 judgements of a question"
    )
    with pytest.raises(ValueError, match="misses is at least 1"):
        StoppingRule(misses=0)


def test_a_simulated_labeller_stops_by_the_rule_and_the_records_carry_to_the_next_question():
    rankings = [["r1", "x1", "x2", "x3"], ["r2", "y1", "y2"]]
    judged = simulate_question(
        rankings, {"r1", "r2"}, "depth", rule=StoppingRule(misses=2), per_judgement=False
    )
    assert judged == [("r1", True), ("r2", True), ("x1", False), ("y1", False)]
    records = updated_records([RunRecord(), RunRecord()], rankings, judged)
    assert records == [RunRecord(judged=2, relevant=1), RunRecord(judged=2, relevant=1)]


def test_an_unknown_strategy_or_a_prior_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError):
        judging_order([["a"]], [], "random")
    with pytest.raises(ValueError, match="one prior record per ranking"):
        judging_order([["a"]], [], "mtf", prior=[])


# ``cal``: a question's candidates' own texts; "a*" and "b*" are two retrievers' rankings.
CAL_RANKINGS = [["a1", "a2", "a3"], ["b1", "b2", "b3"]]
CAL_TEXTS = {
    "a1": "supersonic flutter of thin wing panels",
    "a2": "boundary layer transition on cones",
    "a3": "heat transfer in hypersonic flow",
    "b1": "stress analysis of cylindrical shells",
    "b2": "viscous drag of slender bodies",
    "b3": "flutter of wing panels at supersonic speed",
}


def test_cal_with_nothing_judged_follows_the_fused_ranks():
    assert judging_order(CAL_RANKINGS, [], "cal", texts=CAL_TEXTS) == [
        "a1",
        "b1",
        "a2",
        "b2",
        "a3",
        "b3",
    ]
    # Without texts it knows the ranks alone.
    assert judging_order(CAL_RANKINGS, [], "cal") == ["a1", "b1", "a2", "b2", "a3", "b3"]


def test_cal_brings_forward_what_reads_like_the_passages_judged_relevant():
    order = judging_order(CAL_RANKINGS, [("a1", True)], "cal", texts=CAL_TEXTS)
    assert order == ["b3", "b1", "a2", "b2", "a3"]  # b3 was last by its ranks
    # Judged not relevant instead: b3, like it, goes to the back.
    order = judging_order(CAL_RANKINGS, [("a1", False)], "cal", texts=CAL_TEXTS)
    assert order[-1] == "b3" and order[:-1] == ["b1", "a2", "b2", "a3"]


def test_cal_never_orders_a_judged_candidate_again_and_is_deterministic():
    judged = [("b1", False), ("a1", True), ("a3", False)]
    first = judging_order(CAL_RANKINGS, judged, "cal", texts=CAL_TEXTS)
    assert not set(first) & {"a1", "b1", "a3"}
    assert sorted(first) == ["a2", "b2", "b3"]
    shuffled = dict(reversed(list(CAL_TEXTS.items())))
    for texts in (CAL_TEXTS, shuffled, dict(CAL_TEXTS)):
        assert judging_order(CAL_RANKINGS, judged, "cal", texts=texts) == first


def test_a_simulated_labeller_judging_by_cal_learns_after_each_judgement_and_stops_by_the_rule():
    judged = simulate_question(
        CAL_RANKINGS, {"a1", "b3"}, "cal", rule=StoppingRule(misses=2), texts=CAL_TEXTS
    )
    # b3 comes second once a1 is judged relevant; then two misses in a row stop the question.
    assert judged == [("a1", True), ("b3", True), ("b1", False), ("a2", False)]
    asked_once = simulate_question(
        CAL_RANKINGS,
        {"a1", "b3"},
        "cal",
        rule=StoppingRule(misses=2),
        texts=CAL_TEXTS,
        per_judgement=False,
    )
    assert asked_once == [("a1", True), ("b1", False), ("a2", False)]
    after_relevant = simulate_question(
        CAL_RANKINGS,
        {"a1", "b3"},
        "cal",
        rule=StoppingRule(misses=2),
        texts=CAL_TEXTS,
        per_judgement=False,
        after_relevant=True,
    )
    assert after_relevant == judged
    assert len(simulate_question(CAL_RANKINGS, set(), "cal", rule=StoppingRule(budget=4))) == 4
