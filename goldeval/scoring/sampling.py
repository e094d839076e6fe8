"""Drawing a sample of production traces, and estimating production quality from it without
bias. Django-free: units in, draws (with inclusion probabilities) out.

Every design here is stratified simple random sampling without replacement, so each unit's
inclusion probability is exact: `n_h / N_h` in its stratum h.

- **uniform**: one stratum, `n` of `N`.
- **stratified**: strata by a field; quotas per stratum (a stratum without a quota gets none),
  or, without quotas, `size` shared in proportion to the strata (largest remainder).
- **negative first**: every trace with negative feedback, up to four fifths of `size` (a random
  subset when there are more), the rest of `size` uniformly from the others; a fifth is kept
  for the others so that no stratum is left undrawn and the estimates stay unbiased.
- **disagreement** (two-phase): a uniform first phase of `first_phase` units (the built-in
  retrievers cannot search a million questions per draw), scored by how much the production
  retrieval and the built-in retrievers disagree; then "negative first" with disagreement in
  place of negative feedback. A unit's probability is the product of both phases'.

Estimates are Hájek weighted means (weights 1/π) with a stratified linearisation variance and a
finite-population correction; a unit outside the estimate's domain (an unanswerable question for
recall) weighs nothing in the mean and still counts in its stratum's variance, as domain
estimation requires. The two-phase variance leaves out the first phase's share (it is small
while the first phase is large next to the sample): its intervals are slightly too narrow.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

STRATEGIES = ("uniform", "stratified", "negative_first", "disagreement")
NEGATIVE, OTHER = "negative feedback", "other"
DISAGREE, AGREE = "disagrees", "agrees"
Z95 = 1.959963984540054
RESERVE = 0.2  # the share of a "first" design kept for the other traces


@dataclass(frozen=True)
class Unit:
    """A trace of the population: `key` names it, `stratum` is its value of the stratifying
    field, `negative` whether its user gave negative feedback."""

    key: int
    stratum: str = ""
    negative: bool = False


@dataclass(frozen=True)
class Draw:
    key: int
    stratum: str
    probability: float


@dataclass
class SampleDraw:
    draws: list[Draw]
    strata: dict[str, dict[str, int]] = field(default_factory=dict)  # {h: {population, drawn}}
    population: int = 0

    @property
    def empty(self) -> bool:
        return not self.draws


class SamplingError(ValueError):
    """The rule cannot be drawn as given; the message is for the person who wrote it."""


def _srs(keys: Sequence, n: int, rng: random.Random) -> list:
    return rng.sample(list(keys), min(n, len(keys)))


def allocate(counts: dict[str, int], size: int) -> dict[str, int]:
    """`size` shared in proportion to the stratum counts (largest remainder; ties by name)."""
    total = sum(counts.values())
    if not total:
        return dict.fromkeys(counts, 0)
    size = min(size, total)
    exact = {h: size * c / total for h, c in counts.items()}
    shares = {h: min(counts[h], math.floor(x)) for h, x in exact.items()}
    left = size - sum(shares.values())
    for h in sorted(exact, key=lambda h: (-(exact[h] - math.floor(exact[h])), h)):
        if left <= 0:
            break
        if shares[h] < counts[h]:
            shares[h] += 1
            left -= 1
    return shares


def _stratified(groups: dict[str, list[int]], quotas: dict[str, int], rng) -> SampleDraw:
    draws, strata = [], {}
    for h in sorted(groups):
        keys = sorted(groups[h])
        chosen = _srs(keys, max(0, int(quotas.get(h, 0))), rng)
        strata[h] = {"population": len(keys), "drawn": len(chosen)}
        draws += [Draw(key, h, len(chosen) / len(keys)) for key in sorted(chosen)]
    return SampleDraw(draws, strata, sum(len(g) for g in groups.values()))


def _two_groups(first: list[int], rest: list[int], size: int, names, rng) -> SampleDraw:
    # A fifth of the sample (at least one) stays for the rest while there is a rest: a stratum
    # left without draws would drop out of every estimate, and the sample would stop speaking
    # for the whole population.
    reserve = min(len(rest), max(1, math.ceil(size * RESERVE)))
    take = min(len(first), size - reserve if size > reserve else size)
    quotas = {names[0]: take, names[1]: size - take}
    groups = {h: keys for h, keys in zip(names, (first, rest), strict=True) if keys}
    return _stratified(groups, quotas, rng)


def group_units(units: Iterable[Unit], strategy: str) -> dict[str, list[int]]:
    """The keys of `units` by the groups `strategy` draws from: strata (stratified), negative
    feedback and the rest (negative first), or one group."""
    groups: dict[str, list[int]] = defaultdict(list)
    for unit in units:
        if strategy == "stratified":
            groups[unit.stratum].append(unit.key)
        elif strategy == "negative_first":
            groups[NEGATIVE if unit.negative else OTHER].append(unit.key)
        else:
            groups[""].append(unit.key)
    return dict(groups)


def draw(
    units: Iterable[Unit] | None = None,
    *,
    strategy: str,
    size: int,
    seed: int,
    groups: dict[str, Sequence[int]] | None = None,
    quotas: dict[str, int] | None = None,
    disagreement: Callable[[list[int]], dict[int, float]] | None = None,
    threshold: float = 0.5,
    first_phase: int | None = None,
) -> SampleDraw:
    """The sample a rule draws from `units` (or from their keys already grouped as
    `group_units` groups them, which a million traces need: no object per trace): the same
    population and seed always give the same draw.

    `disagreement` (for that strategy) scores a list of unit keys in [0, 1]; a unit scoring at
    least `threshold` is a disagreement."""
    if strategy not in STRATEGIES:
        raise SamplingError(
            f"Unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}."
        )
    if size < 1:
        raise SamplingError("The sample size must be at least 1.")
    if groups is None:
        groups = group_units(units or (), strategy)
    groups = {h: keys for h, keys in groups.items() if len(keys)}
    rng = random.Random(seed)
    if strategy == "uniform":
        return _stratified(groups, {"": size}, rng)
    if strategy == "stratified":
        if quotas:
            bad = [h for h, n in quotas.items() if not isinstance(n, int) or n < 0]
            if bad:
                raise SamplingError(f"Quotas are whole numbers from 0 (see {', '.join(bad)}).")
            wanted = quotas
        else:
            wanted = allocate({h: len(k) for h, k in groups.items()}, size)
        return _stratified(groups, wanted, rng)
    if strategy == "negative_first":
        negative, other = list(groups.get(NEGATIVE, ())), list(groups.get(OTHER, ()))
        return _two_groups(negative, other, size, (NEGATIVE, OTHER), rng)
    if disagreement is None:
        raise SamplingError("The disagreement strategy needs the built-in retrievers' scores.")
    population = sorted(groups.get("", ()))
    phase_size = max(size, first_phase or 4 * size)
    phase = sorted(_srs(population, phase_size, rng))
    first_probability = len(phase) / len(population) if population else 1.0
    scores = disagreement(phase) if phase else {}
    high = [key for key in phase if scores.get(key, 0.0) >= threshold]
    low = [key for key in phase if scores.get(key, 0.0) < threshold]
    second = _two_groups(high, low, size, (DISAGREE, AGREE), rng)
    draws = [Draw(d.key, d.stratum, d.probability * first_probability) for d in second.draws]
    strata = {
        h: {**counts, "first_phase": counts["population"]} for h, counts in second.strata.items()
    }
    for counts in strata.values():  # estimated stratum size in the whole population
        counts["population"] = round(counts["first_phase"] / first_probability)
    return SampleDraw(draws, strata, len(population))


def disagreement_of(production: Sequence[str], built_in: Iterable[Sequence[str]]) -> float:
    """1 − Jaccard overlap of the documents the production system retrieved and those any
    built-in retriever retrieved for the same question (0: the same documents; 1: none
    shared). Two empty lists agree."""
    ours = set(production)
    theirs = {doc for ranking in built_in for doc in ranking}
    union = ours | theirs
    return 1.0 - len(ours & theirs) / len(union) if union else 0.0


# Estimation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    mean: float | None
    low: float | None
    high: float | None
    n: int  # sampled units in the domain

    @property
    def defined(self) -> bool:
        return self.mean is not None


@dataclass(frozen=True)
class Observation:
    value: float | None  # None: outside the estimate's domain
    probability: float
    stratum: str = ""


def weighted_mean(observations: Sequence[Observation]) -> Estimate:
    """The Hájek estimate of the population mean and its 95% interval (normal approximation,
    stratified linearisation variance with finite-population correction)."""
    domain = [o for o in observations if o.value is not None]
    if not domain:
        return Estimate(None, None, None, 0)
    total_weight = sum(1 / o.probability for o in domain)
    mean = sum(o.value / o.probability for o in domain) / total_weight
    by_stratum: dict[str, list[Observation]] = defaultdict(list)
    for o in observations:
        by_stratum[o.stratum].append(o)
    variance = 0.0
    for members in by_stratum.values():
        n = len(members)
        if n < 2:
            continue
        z = [
            (o.value - mean) / o.probability / total_weight if o.value is not None else 0.0
            for o in members
        ]
        z_bar = sum(z) / n
        fpc = 1 - sum(o.probability for o in members) / n  # 1 − n_h/N_h
        variance += fpc * n / (n - 1) * sum((x - z_bar) ** 2 for x in z)
    half = Z95 * math.sqrt(max(variance, 0.0))
    return Estimate(mean, mean - half, mean + half, len(domain))
