"""Filling holes with an AI judge's grades (issue 35, 5b): the prediction-powered estimate and
interval on a hand-computed example, the three figures of a small gold set worked by hand, and
a simulation where a lenient judge (+1) biases the judge-filled figure while the
prediction-powered interval still covers the true value."""

import math
import random

import pytest

from goldeval.formats.ai_judgements import AIJudgement
from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan
from goldeval.formats.runfiles import Passage
from goldeval.formats.runs import Ranking, Run
from goldeval.scoring.holes import Z_95, fill_holes, ppi_mean
from goldeval.scoring.metrics import MetricOptions, evaluate_run


def test_ppi_mean_by_hand():
    # f over N = 4 items; the first two are labelled: (Y, f) = (0.5, 1.0) and (0.5, 0.5).
    found = ppi_mean([1.0, 0.5, 0.0, 1.0], [(0.5, 1.0), (0.5, 0.5)])
    assert found.judge_only == pytest.approx(0.625)
    assert found.correction == pytest.approx(-0.25)  # mean of Δ = (-0.5, 0)
    assert found.estimate == pytest.approx(0.375)
    # s_f² = 0.6875 / 3; s_Δ² = 0.125; c_fΔ = -0.125:
    # 0.6875 / 12 + 0.125 / 2 + 2 (-0.125) / 4 = 11 / 192.
    assert found.standard_error == pytest.approx(math.sqrt(11 / 192))
    assert found.low == pytest.approx(0.375 - Z_95 * math.sqrt(11 / 192))
    assert found.high == pytest.approx(0.375 + Z_95 * math.sqrt(11 / 192))
    assert (found.questions, found.labelled) == (4, 2)


def test_ppi_mean_without_enough_labelled_items():
    one = ppi_mean([1.0, 0.0], [(0.0, 1.0)])
    assert one.estimate == pytest.approx(-0.5) and one.low is None and one.high is None
    none = ppi_mean([1.0, 0.0], [])
    assert none.estimate is None and none.judge_only == pytest.approx(0.5)


def ranged(doc, start, end):
    return Passage(doc, start, end)


def test_three_figures_of_a_small_gold_set_by_hand():
    # q1: a (grade 2) and b (0) judged by people; q2: c (1) judged, d never judged.
    gold = Gold(
        questions={
            "q1": GoldQuestion(
                "q1", "", True, (GoldSpan("a", 0, 10, 2),), judged=(ranged("b", 0, 10),)
            ),
            "q2": GoldQuestion("q2", "", True, (GoldSpan("c", 0, 10, 1),)),
        }
    )
    run = Run(
        name="r",
        rankings={
            "q1": Ranking([ranged("a", 0, 10), ranged("b", 0, 10)]),
            "q2": Ranking([ranged("d", 0, 10), ranged("c", 0, 10)]),
        },
    )
    judgements = [
        AIJudgement("q1", ranged("a", 0, 10), 2, "j"),
        AIJudgement("q1", ranged("b", 0, 10), 1, "j"),  # lenient on a judged passage
        AIJudgement("q2", ranged("d", 0, 10), 2, "j"),  # fills the hole
        AIJudgement("q2", ranged("c", 0, 10), 1, "j"),
        AIJudgement("elsewhere", ranged("a", 0, 10), 2, "j"),  # not in the gold: ignored
    ]
    options = MetricOptions(ks=(1, 2))
    human = evaluate_run(gold=gold, run=run, options=options)
    filling = fill_holes(
        human, gold=gold, run=run, options=options, judgements=judgements, judge="j"
    )
    assert (filling.holes, filling.filled, filling.questions, filling.labelled) == (1, 1, 2, 1)
    assert "1 of 1 hole(s)" in filling.note
    # Human only: q1 0.5, q2 0.5 (d counts as not relevant). Judge-filled: q2's d is 2: 1.0.
    assert human.metrics["precision@2"] == pytest.approx(0.5)
    assert filling.judge_filled["precision@2"] == pytest.approx(0.75)
    # PPI: the judge alone says 1.0 on both; on q1 (no hole) people say 0.5: correction -0.5.
    ppi = filling.ppi["precision@2"]
    assert (ppi.judge_only, ppi.correction, ppi.estimate) == pytest.approx((1.0, -0.5, 0.5))
    assert ppi.low is None  # one labelled question gives no interval
    assert "judged@2" not in filling.judge_filled and "judged@2" not in filling.ppi
    # The human figures are untouched.
    assert human.metrics == evaluate_run(gold=gold, run=run, options=options).metrics


def simulate(seed, *, questions=300, passages=10, labelled_share=0.3):
    """A gold set where people judged every passage of a random 30 % of the questions and only
    the first half of the others; a lenient judge grades every passage one step up."""
    rng = random.Random(seed)
    truth_q, human_q, rankings, judgements = {}, {}, {}, []
    for q in range(questions):
        qid = f"q{q}"
        grades = [rng.choices((0, 1, 2), weights=(0.6, 0.25, 0.15))[0] for _ in range(passages)]
        spans = [(ranged(qid, i * 100, i * 100 + 100), g) for i, g in enumerate(grades)]
        deep = rng.random() < labelled_share
        judged = spans if deep else spans[: passages // 2]
        truth_q[qid] = GoldQuestion(
            qid,
            "",
            True,
            tuple(GoldSpan(*p, g) for p, g in spans if g),
            judged=tuple(p for p, _ in spans),
        )
        human_q[qid] = GoldQuestion(
            qid,
            "",
            True,
            tuple(GoldSpan(*p, g) for p, g in judged if g),
            judged=tuple(p for p, _ in judged),
        )
        order = [p for p, _ in spans]
        rng.shuffle(order)
        rankings[qid] = Ranking(order)
        judgements += [AIJudgement(qid, p, min(g + 1, 2), "lenient") for p, g in spans]
    run = Run(name="r", rankings=rankings)
    options = MetricOptions(ks=(5, 10))
    truth = evaluate_run(gold=Gold(questions=truth_q), run=run, options=options)
    gold = Gold(questions=human_q)
    human = evaluate_run(gold=gold, run=run, options=options)
    filling = fill_holes(
        human, gold=gold, run=run, options=options, judgements=judgements, judge="lenient"
    )
    return truth, human, filling


@pytest.mark.parametrize("metric", ["precision@5", "ndcg@10"])
def test_a_lenient_judge_biases_the_filled_figure_and_ppi_still_covers_the_truth(metric):
    seeds = range(20)
    covered = biased = 0
    for seed in seeds:
        truth, human, filling = simulate(seed)
        true_value = truth.metrics[metric]
        ppi = filling.ppi[metric]
        assert filling.holes > 0 and filling.filled == filling.holes
        assert 0 < filling.labelled < filling.questions
        covered += ppi.low <= true_value <= ppi.high
        # The naive figure sits above the truth by more than the PPI interval's half-width.
        biased += filling.judge_filled[metric] - true_value > (ppi.high - ppi.low) / 2
        # The human-only figure counts the holes as not relevant: it is low.
        assert human.metrics[metric] < true_value
    assert covered >= 17  # a 95 % interval: 19 of 20 expected
    assert biased == len(seeds)


def test_document_level_gold_and_judgements_fill_whole_documents():
    # Qrels-like: A relevant (2), N judged not relevant; X never judged; the judge grades X 1.
    whole = Passage
    gold = Gold(
        questions={
            "q": GoldQuestion(
                "q", "", True, (GoldSpan("A", None, None, 2),), judged=(whole("N", None, None),)
            )
        }
    )
    run = Run(name="r", rankings={"q": Ranking([whole("X", None, None), whole("A", None, None)])})
    options = MetricOptions(ks=(2,))
    human = evaluate_run(gold=gold, run=run, options=options)
    judgements = [
        AIJudgement("q", whole("X", None, None), 1, "j"),
        AIJudgement("q", whole("A", None, None), 2, "j"),  # judged by people: no hole
    ]
    filling = fill_holes(
        human, gold=gold, run=run, options=options, judgements=judgements, judge="j"
    )
    assert (filling.holes, filling.filled, filling.labelled) == (1, 1, 0)
    assert human.metrics["precision@2"] == pytest.approx(0.5)
    assert filling.judge_filled["precision@2"] == pytest.approx(1.0)
    # No question is complete: no prediction-powered figure, rather than an unfounded one.
    assert filling.ppi["precision@2"].estimate is None
