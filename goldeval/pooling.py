"""The order in which a question's pooled candidates are judged, and when judging may stop.

A depth-k pool asks for every candidate any retriever ranked within k. Judging the likely
relevant ones first finds most of the relevant passages with a fraction of the judgements
(Cormack, Palmer and Clarke 1998, "move-to-front"; Losada, Parapar and Barreiro 2016-2017,
multi-armed bandits over the pooled runs; Cormack and Grossman 2014-2016, continuous active
learning). Four strategies, each a pure function of the retrievers' rankings, the judgements
made so far and (``cal``) the candidates' texts, so that the app's pools and the simulation in
``benchmarks/adaptive_pooling.py`` call the same code:

- ``depth``: by best rank across the retrievers (then by how many retrievers found it, then by
  the first retriever's order); judgements change nothing. The depth-k order, judged whole.
- ``mtf``: move-to-front. The retrievers stand in a priority order; judging takes the next
  unjudged candidate of the retriever in front, and a retriever whose candidate was judged not
  relevant moves to the back. With nothing known yet the retrievers stand in the order of
  their earlier precision (``prior``), else as given. The remaining order after the last
  judgement is the front retriever's next candidate, then one from each retriever after it in
  priority order, round by round.
- ``bandit``: each retriever is an arm with a Beta posterior over the chance that its next
  candidate is relevant (from this question's judgements of candidates it ranked, plus its
  record on earlier questions, ``prior``, weighed as at most ``PRIOR_WEIGHT`` judgements).
  Picks are shared among the arms in proportion to their posterior means (stride
  scheduling), each arm giving its candidates in rank order: the best arm is drawn from most,
  a weaker one still now and then, which is what the bandit's exploration buys.
- ``cal``: continuous active learning. With nothing judged yet, by reciprocal-rank fusion of
  the retrievers' ranks (``RRF_K``); after each judgement, by a model of relevance learned
  from the question's judgements over the candidates' own texts (Rocchio feedback: toward the
  relevant ones, a little away from the others; ``goldeval.relevance_feedback``), plus
  ``RANK_WEIGHT`` times the fused rank score. Ties keep
  the depth order. It learns most from a relevant judgement: the app's page re-orders what is
  left after each one.

A candidate found by several retrievers is judged once; its judgement counts for every
retriever that ranked it. Relevant means a grade of 1 or more.

The stopping rule (``StoppingRule``): judging a question may stop once its last ``misses``
judgements found nothing relevant, or once ``budget`` candidates of it are judged. The
candidates not judged then stay in the pool for a full pass.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from goldeval.relevance_feedback import feedback_scores, text_vectors

K = TypeVar("K", bound=Hashable)

# How many judgements a retriever's record on earlier questions counts for at most: enough to
# start a question with the better retrievers first, few enough that this question's own
# judgements overrule it after a handful.
PRIOR_WEIGHT = 10.0

# ``cal``: the constant of reciprocal-rank fusion, and how much the fused rank counts beside
# the relevance feedback's score (a mean cosine, mostly between 0 and 0.5).
RRF_K = 10
RANK_WEIGHT = 0.05


class Strategy(StrEnum):
    DEPTH = "depth"
    MTF = "mtf"
    BANDIT = "bandit"
    CAL = "cal"

    @property
    def label(self) -> str:
        return STRATEGY_LABELS[self]


STRATEGY_LABELS = {
    Strategy.DEPTH: "Depth-k: every candidate",
    Strategy.MTF: "Adaptive: move-to-front across the retrievers",
    Strategy.BANDIT: "Adaptive: Bayesian bandit over the retrievers",
    Strategy.CAL: "Adaptive: continuous active learning from the passages' text",
}


@dataclass(frozen=True)
class RunRecord:
    """A retriever's judged candidates on earlier questions: how many, how many relevant."""

    judged: int = 0
    relevant: int = 0

    def plus(self, relevant: bool) -> RunRecord:
        return RunRecord(self.judged + 1, self.relevant + int(relevant))


@dataclass(frozen=True)
class StoppingRule:
    """Stop a question after ``misses`` judgements in a row found nothing relevant, or after
    ``budget`` judgements of it; None turns a part off (both None: judge everything)."""

    misses: int | None = None
    budget: int | None = None

    def __post_init__(self) -> None:
        for name in ("misses", "budget"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"the stopping rule's {name} is at least 1, not {value}")

    @property
    def active(self) -> bool:
        """Whether the rule can ever stop a question (it has a part turned on)."""
        return self.misses is not None or self.budget is not None

    def reached(self, relevances: Sequence[bool]) -> bool:
        """Whether judgements with these outcomes, in the order they were made, may stop."""
        if self.budget is not None and len(relevances) >= self.budget:
            return True
        if self.misses is None or len(relevances) < self.misses:
            return False
        return not any(relevances[-self.misses :])

    def describe(self) -> str:
        parts = []
        if self.misses is not None:
            parts.append(f"after {self.misses} not relevant in a row")
        if self.budget is not None:
            parts.append(f"after {self.budget} judgements of a question")
        return " or ".join(parts) if parts else "never (every candidate is judged)"


def judging_order(
    rankings: Sequence[Sequence[K]],
    judged: Sequence[tuple[K, bool]],
    strategy: Strategy | str,
    *,
    prior: Sequence[RunRecord] | None = None,
    texts: Mapping[K, str] | None = None,
) -> list[K]:
    """The question's candidates not judged yet, in the order to judge them.

    ``rankings``: each retriever's candidates, best first (the pool's own depth-k cut; a
    candidate may appear in several). ``judged``: the candidates judged so far, in the order
    they were judged, each with whether it is relevant. ``prior``: each retriever's record on
    earlier questions (same order as ``rankings``), or None. ``texts``: each candidate's text
    (``cal`` learns from it; the other strategies ignore it; a candidate without one is known by
    its ranks alone).
    """
    strategy = Strategy(strategy)
    if prior is not None and len(prior) != len(rankings):
        raise ValueError("one prior record per ranking")
    done = {candidate for candidate, _ in judged}
    if strategy is Strategy.DEPTH:
        return _by_best_rank(rankings, done)
    remaining = [[c for c in _unique(ranking) if c not in done] for ranking in rankings]
    if strategy is Strategy.MTF:
        return _move_to_front(rankings, judged, remaining, prior)
    if strategy is Strategy.CAL:
        return _cal(rankings, judged, done, texts or {})
    return _bandit(rankings, judged, remaining, prior)


def _unique(ranking: Sequence[K]) -> list[K]:
    return list(dict.fromkeys(ranking))


def _by_best_rank(rankings: Sequence[Sequence[K]], done: set) -> list[K]:
    best: dict = {}
    for run, ranking in enumerate(rankings):
        for rank, candidate in enumerate(_unique(ranking)):
            if candidate in done:
                continue
            found = best.get(candidate)
            if found is None:
                best[candidate] = [rank, -1, run]
            else:
                found[0] = min(found[0], rank)
                found[1] -= 1  # found by one more retriever
    return sorted(best, key=best.__getitem__)


def _outcomes_by_run(
    rankings: Sequence[Sequence[K]], judged: Sequence[tuple[K, bool]]
) -> list[list[bool]]:
    """Each retriever's judged candidates' outcomes, in the order they were judged."""
    where = [set(ranking) for ranking in rankings]
    return [[relevant for candidate, relevant in judged if candidate in ranked] for ranked in where]


def _prior_order(count: int, prior: Sequence[RunRecord] | None) -> list[int]:
    """Retrievers by earlier precision (Laplace-smoothed), best first; ties keep their order."""
    if prior is None:
        return list(range(count))
    return sorted(
        range(count), key=lambda run: -(prior[run].relevant + 1) / (prior[run].judged + 2)
    )


def _move_to_front(rankings, judged, remaining, prior) -> list:
    order = _prior_order(len(rankings), prior)
    where = [set(ranking) for ranking in rankings]
    for candidate, relevant in judged:
        if relevant:
            continue
        # Every retriever that ranked a candidate judged not relevant moves to the back.
        missed = [run for run in order if candidate in where[run]]
        order = [run for run in order if candidate not in where[run]] + missed
    result: list = []
    taken: set = set()
    cursors = dict.fromkeys(order, 0)
    while True:
        progressed = False
        for run in order:
            queue = remaining[run]
            cursor = cursors[run]
            while cursor < len(queue) and queue[cursor] in taken:
                cursor += 1
            if cursor < len(queue):
                taken.add(queue[cursor])
                result.append(queue[cursor])
                cursor += 1
                progressed = True
            cursors[run] = cursor
        if not progressed:
            return result


def _posterior_means(rankings, judged, prior) -> list[float]:
    means = []
    for run, outcomes in enumerate(_outcomes_by_run(rankings, judged)):
        alpha = beta = 1.0
        if prior is not None and prior[run].judged:
            record = prior[run]
            scale = min(1.0, PRIOR_WEIGHT / record.judged)
            alpha += record.relevant * scale
            beta += (record.judged - record.relevant) * scale
        hits = sum(outcomes)
        alpha += hits
        beta += len(outcomes) - hits
        means.append(alpha / (alpha + beta))
    return means


def _bandit(rankings, judged, remaining, prior) -> list:
    means = _posterior_means(rankings, judged, prior)
    # Stride scheduling: the arm with the least "virtual time" (picks so far + 1, divided by
    # its mean) gives the next candidate; ties go to the better mean, then the earlier arm.
    picks = [0] * len(rankings)
    cursors = [0] * len(rankings)
    result: list = []
    taken: set = set()
    live = {run for run in range(len(rankings)) if remaining[run]}
    while live:
        run = min(live, key=lambda r: ((picks[r] + 1) / means[r], -means[r], r))
        queue = remaining[run]
        cursor = cursors[run]
        while cursor < len(queue) and queue[cursor] in taken:
            cursor += 1
        if cursor == len(queue):
            live.discard(run)
            cursors[run] = cursor
            continue
        taken.add(queue[cursor])
        result.append(queue[cursor])
        cursors[run] = cursor + 1
        picks[run] += 1
    return result


def _fused(rankings: Sequence[Sequence[K]]) -> dict:
    """Reciprocal-rank fusion (Cormack, Clarke and Buettcher 2009) over the retrievers, scaled
    so that the best candidate scores 1."""
    fused: dict = {}
    for ranking in rankings:
        for rank, candidate in enumerate(_unique(ranking), start=1):
            fused[candidate] = fused.get(candidate, 0.0) + 1.0 / (RRF_K + rank)
    best = max(fused.values(), default=1.0)
    return {candidate: score / best for candidate, score in fused.items()}


def _cal(rankings, judged, done: set, texts: Mapping) -> list:
    fused = _fused(rankings)
    pooled = [c for c in fused if c in texts]
    learned = feedback_scores(*text_vectors({c: texts[c] for c in pooled}), judged)
    order = _by_best_rank(rankings, done)
    place = {candidate: index for index, candidate in enumerate(order)}
    return sorted(
        order,
        key=lambda c: (-(RANK_WEIGHT * fused[c] + learned.get(c, 0.0)), place[c]),
    )


def simulate_question(
    rankings: Sequence[Sequence[K]],
    relevant: set,
    strategy: Strategy | str,
    *,
    rule: StoppingRule,
    prior: Sequence[RunRecord] | None = None,
    per_judgement: bool = True,
    after_relevant: bool = False,
    texts: Mapping[K, str] | None = None,
) -> list[tuple[K, bool]]:
    """The judgements a labeller makes on one question, the collection's qrels standing in for
    the labeller (``relevant``: the candidates that are relevant). With ``per_judgement`` the
    order is asked again after every judgement (a page that re-orders as it learns); with
    ``after_relevant`` instead, after each judgement found relevant only; with neither, once
    when the question opens (a page whose order is fixed while it is open)."""
    judged: list[tuple[K, bool]] = []
    order = judging_order(rankings, judged, strategy, prior=prior, texts=texts)
    while order and not rule.reached([r for _, r in judged]):
        candidate = order.pop(0)
        judged.append((candidate, candidate in relevant))
        if per_judgement or (after_relevant and candidate in relevant):
            order = judging_order(rankings, judged, strategy, prior=prior, texts=texts)
    return judged


def updated_records(
    records: Sequence[RunRecord], rankings: Sequence[Sequence[K]], judged: Sequence[tuple[K, bool]]
) -> list[RunRecord]:
    """The retrievers' records after one more question's judgements."""
    new = list(records)
    for run, outcomes in enumerate(_outcomes_by_run(rankings, judged)):
        for relevant in outcomes:
            new[run] = new[run].plus(relevant)
    return new


def run_priors(records: Mapping[int, RunRecord], runs: Sequence[int]) -> list[RunRecord]:
    """The records of ``runs`` (retriever ids) in that order; a retriever with none starts empty."""
    return [records.get(run, RunRecord()) for run in runs]
