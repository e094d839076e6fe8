"""Calibration statistics of an LLM judge against adjudicated human gold, the ones agreement
statistics between two people do not already give.

Django-free. Percent agreement, Cohen's kappa (unweighted and quadratic) with their bootstrap
intervals and the confusion matrix are the agreement module's (`labelling.agreement`), the same
figures the labellers' agreement page shows; here:

- `bias`: the share of items the judge graded above the gold, below it, and the mean step;
- `kappa_z`: the z statistic of the judge's kappa against the labellers' own kappa, each
  standard error read from its 95 % bootstrap interval (width / 3.92). ``|z| < 1``: the judge
  agrees with the gold about as a second person does;
- `items_needed`: how many items a kappa needs for a 95 % interval of ± ``half_width`` (the
  large-sample standard error of kappa, sqrt(p_o (1 − p_o) / n) / (1 − p_e)): about 250 at
  kappa 0.6 with chance agreement 0.5;
- `system_scores`: each system's mean nDCG@10 (`goldeval.scoring.metrics`, the figure the
  Evaluation page shows) over the same pool, once with the human grades and once with the
  judge's; `kendall_tau` (scipy's tau-b) and `tau_ap` (Yilmaz, Aslam & Robertson 2008: errors
  near the top of the ranking weigh more) compare the two system rankings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy.stats import kendalltau

from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan
from goldeval.formats.runfiles import Passage
from goldeval.formats.runs import Ranking, Run
from goldeval.scoring.metrics import MetricOptions, evaluate_run

Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Bias:
    above: float  # share of items the judge graded higher than the gold
    below: float
    mean_step: float  # mean of (judge − gold)
    items: int


def bias(pairs: Sequence[tuple[int, int]]) -> Bias | None:
    """``pairs`` are (gold, judge) grades; None without items."""
    if not pairs:
        return None
    n = len(pairs)
    return Bias(
        above=sum(1 for gold, judge in pairs if judge > gold) / n,
        below=sum(1 for gold, judge in pairs if judge < gold) / n,
        mean_step=sum(judge - gold for gold, judge in pairs) / n,
        items=n,
    )


def standard_error(low: float | None, high: float | None) -> float | None:
    """The standard error a 95 % interval implies, when it has width."""
    if low is None or high is None or high <= low:
        return None
    return (high - low) / (2 * Z_95)


def kappa_z(
    judge: tuple[float | None, float | None, float | None],
    humans: tuple[float | None, float | None, float | None],
) -> float | None:
    """z of the judge's kappa against the humans': each argument is (value, low, high) of a
    kappa with its 95 % interval. None when either is missing or has no interval."""
    (k_judge, *judge_interval), (k_humans, *human_interval) = judge, humans
    se_judge, se_humans = standard_error(*judge_interval), standard_error(*human_interval)
    if None in (k_judge, k_humans, se_judge, se_humans):
        return None
    return (k_judge - k_humans) / math.sqrt(se_judge**2 + se_humans**2)


def items_needed(kappa: float, *, chance: float = 0.5, half_width: float = 0.10) -> int:
    """Items for a 95 % interval of ± ``half_width`` around ``kappa``, with chance agreement
    ``chance`` (p_e)."""
    if not 0 <= chance < 1 or half_width <= 0:
        raise ValueError("chance must be in [0, 1) and half_width positive")
    kappa = min(max(kappa, -1.0), 1.0)
    observed = kappa * (1 - chance) + chance
    spread = max(observed * (1 - observed), 0.0) / (1 - chance) ** 2
    return max(2, math.ceil((Z_95 / half_width) ** 2 * spread))


def kendall_tau(truth: Mapping[str, float], estimate: Mapping[str, float]) -> float | None:
    """Kendall's tau-b between two scorings of the same systems (scipy's)."""
    systems = sorted(set(truth) & set(estimate))
    if len(systems) < 2:
        return None
    value = kendalltau([truth[s] for s in systems], [estimate[s] for s in systems]).statistic
    return None if value is None or math.isnan(value) else float(value)


def tau_ap(truth: Mapping[str, float], estimate: Mapping[str, float]) -> float | None:
    """AP correlation of the ``estimate`` ranking against the ``truth`` one (higher score ranks
    first; ties in the estimate broken by name): 1 identical, -1 reversed."""
    systems = sorted(set(truth) & set(estimate))
    if len(systems) < 2:
        return None
    ranked = sorted(systems, key=lambda s: (-estimate[s], s))
    total = 0.0
    for i in range(1, len(ranked)):
        above = ranked[:i]
        correct = sum(1 for other in above if truth[other] > truth[ranked[i]])
        total += correct / i
    return 2 * total / (len(ranked) - 1) - 1


def system_scores(
    rankings: Mapping[str, Mapping[str, Sequence[Passage]]],
    grades: Mapping[str, Mapping[Passage, int]],
    *,
    k: int = 10,
) -> dict[str, float]:
    """Each system's mean nDCG@k when ``grades`` (question -> passage -> 0..2) are the gold:
    ``rankings`` is system -> question -> passages in rank order. Only the questions with
    grades count; a graded passage of grade >= 1 is a gold unit of that grade."""
    gold = Gold(
        questions={
            question: GoldQuestion(
                question_id=question,
                question="",
                answerable=True,
                spans=tuple(
                    GoldSpan(p.doc_id, p.start, p.end, grade)
                    for p, grade in graded.items()
                    if grade >= 1
                ),
                judged=tuple(graded),
            )
            for question, graded in grades.items()
        }
    )
    options = MetricOptions(ks=(k,))
    scores = {}
    for system, per_question in rankings.items():
        run = Run(
            name=system,
            rankings={
                q: Ranking(passages=list(ps)) for q, ps in per_question.items() if q in grades
            },
        )
        scores[system] = evaluate_run(gold=gold, run=run, options=options).metrics[f"ndcg@{k}"]
    return scores
