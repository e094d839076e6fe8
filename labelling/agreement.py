"""Inter-labeller agreement: the statistics a lead reads before trusting a gold set.

Django-free on purpose: the app calls it per labeller pair, per question and per guideline
version, and tests pin it against `sklearn.metrics.cohen_kappa_score` and the `krippendorff`
package. Every statistic comes back as a `Statistic`; a statistic that cannot be computed
(no items, a single item, one category only) is *undefined with a reason*, never NaN, so the
page can say why instead of printing "nan".

Input shapes:
- paired grades: a sequence of `(first, second)` tuples, one per item both labellers graded;
- reliability data (Krippendorff): one row per labeller, one column per item, `None` where
  that labeller did not grade the item;
- spans: `(start, end)` half-open character offsets into one document version.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from goldeval.text.spans import merge_ranges

GRADES: tuple[int, ...] = (0, 1, 2)
VERDICTS: tuple[str, ...] = ("answerable", "unanswerable", "cant_tell")

# Krippendorff (2004): below 0.667 even tentative conclusions are not warranted.
GUIDELINE_ALPHA_THRESHOLD = 0.667

DEFAULT_N_BOOT = 1000
DEFAULT_SEED = 0
CONFIDENCE_LEVEL = 0.95

Weighting = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal"]
Span = tuple[int, int]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
# Turns per-resample sums of per-item rows, shape (n_boot, width), into values and defined flags.
BatchStatistic = Callable[[FloatArray], tuple[FloatArray, BoolArray]]


class AgreementInputError(ValueError):
    """Input that agreement cannot be computed on (a grade outside the label set, a bad span)."""


@dataclass(frozen=True)
class Statistic:
    """A point estimate with an optional 95% bootstrap interval.

    `value` is None when the statistic is undefined; `reason` then says why. `reason` may also
    be set on a defined value to explain a missing interval.
    """

    value: float | None
    reason: str | None = None
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        for name in ("value", "low", "high"):
            number = getattr(self, name)
            if number is not None and not math.isfinite(number):
                raise ValueError(f"Statistic.{name} must be finite or None, got {number!r}")
        if self.value is None and not self.reason:
            raise ValueError("an undefined Statistic needs a reason")

    @classmethod
    def undefined(cls, reason: str) -> Statistic:
        return cls(value=None, reason=reason)

    @property
    def defined(self) -> bool:
        return self.value is not None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def as_dict(self) -> dict[str, float | str | None]:
        return {"value": self.value, "low": self.low, "high": self.high, "reason": self.reason}


# --- validation ----------------------------------------------------------------------------


def _label_indices(labels: Sequence[object]) -> dict[object, int]:
    if len(set(labels)) != len(labels) or len(labels) < 2:
        raise AgreementInputError(
            f"labels must be at least two distinct values, got {list(labels)!r}"
        )
    return {label: index for index, label in enumerate(labels)}


def _encode_pairs(
    pairs: Sequence[tuple[object, object]], labels: Sequence[object]
) -> tuple[IntArray, IntArray]:
    """Turn `(first, second)` labels into two arrays of indices into `labels`."""
    index_of = _label_indices(labels)
    try:  # the common case in one pass; anything amiss is found and named by the loop below
        first = np.fromiter((index_of[a] for a, _ in pairs), dtype=np.int64, count=len(pairs))
        second = np.fromiter((index_of[b] for _, b in pairs), dtype=np.int64, count=len(pairs))
    except (KeyError, TypeError, ValueError):
        pass
    else:
        return first, second
    first = np.empty(len(pairs), dtype=np.int64)
    second = np.empty(len(pairs), dtype=np.int64)
    for position, pair in enumerate(pairs):
        if len(pair) != 2:
            raise AgreementInputError(
                f"item {position}: expected a (first, second) pair, got {pair!r}"
            )
        for array, value in zip((first, second), pair, strict=True):
            if value not in index_of:
                raise AgreementInputError(
                    f"item {position}: {value!r} is not one of {', '.join(map(str, labels))}"
                )
            array[position] = index_of[value]
    return first, second


def _encode_reliability_data(
    reliability_data: Sequence[Sequence[object | None]], values: Sequence[object]
) -> IntArray:
    """Per-item value counts, shape (items, values), from a labellers × items matrix."""
    index_of = _label_indices(values)
    widths = {len(row) for row in reliability_data}
    if len(widths) > 1:
        raise AgreementInputError(
            f"every labeller's row must cover the same items; got row lengths {sorted(widths)}"
        )
    n_items = widths.pop() if widths else 0
    counts = np.zeros((n_items, len(values)), dtype=np.int64)
    for labeller, row in enumerate(reliability_data):
        for item, value in enumerate(row):
            if value is None:
                continue
            if value not in index_of:
                raise AgreementInputError(
                    f"labeller {labeller}, item {item}: {value!r} is not one of "
                    f"{', '.join(map(str, values))} (use None for a missing grade)"
                )
            counts[item, index_of[value]] += 1
    return counts


def _check_bootstrap(n_boot: int) -> None:
    if n_boot < 0:
        raise AgreementInputError(f"n_boot must be 0 (no interval) or positive, got {n_boot}")


# --- bootstrap -------------------------------------------------------------------------------


# Bounds the (resamples × items) count matrix held at once to about 16 MB, so an overall report
# over thousands of items does not allocate hundreds of megabytes.
_RESAMPLE_CELLS_PER_BLOCK = 2_000_000


def _resample_counts(rng: np.random.Generator, n_items: int, n_boot: int) -> IntArray:
    """How often each item is drawn in each resample, shape (n_boot, n_items).

    Counts rather than index lists make every statistic one matrix product per block.
    """
    drawn = rng.integers(0, n_items, size=(n_boot, n_items))
    offsets = (np.arange(n_boot) * n_items)[:, None]
    flat = np.bincount((drawn + offsets).ravel(), minlength=n_boot * n_items)
    return flat.reshape(n_boot, n_items)


# Within `shared_resamples`, the resample counts drawn for one (seed, items, resamples) are kept
# and handed to every later statistic asking for the same: they are what a fresh generator with
# that seed draws again, so the figures are the same, without drawing them once per statistic.
_SHARED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("resamples", default=None)


@contextlib.contextmanager
def shared_resamples() -> Iterator[None]:
    """Draw each (seed, items, resamples) bootstrap once inside the block: a report computing
    several statistics over the same items (`pairwise_report`, the agreement page) resamples
    them once instead of once per statistic. The figures do not change."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def _resample_blocks(n_items: int, n_boot: int, seed: int) -> list[FloatArray]:
    """The bootstrap's resample counts, block by block (`_RESAMPLE_CELLS_PER_BLOCK`), as a
    generator seeded with ``seed`` draws them. They depend on nothing else, so one block's
    worth (the common page: up to 2,000 items at 1,000 resamples, 16 MB) is also kept for
    the process's next reports (`_one_block`, the four last asked for: a report asks for three)."""
    if n_boot * n_items <= _RESAMPLE_CELLS_PER_BLOCK:
        return [_one_block(n_items, n_boot, seed)]
    shared = _SHARED.get()
    key = (seed, n_items, n_boot)
    if shared is not None and key in shared:
        return shared[key]
    rng = np.random.default_rng(seed)
    block = max(1, _RESAMPLE_CELLS_PER_BLOCK // n_items)
    blocks = [
        _resample_counts(rng, n_items, min(block, n_boot - done)).astype(np.float64)
        for done in range(0, n_boot, block)
    ]
    if shared is not None:
        shared[key] = blocks
    return blocks


@functools.lru_cache(maxsize=4)
def _one_block(n_items: int, n_boot: int, seed: int) -> FloatArray:
    counts = _resample_counts(np.random.default_rng(seed), n_items, n_boot).astype(np.float64)
    counts.flags.writeable = False  # shared by every report that asks for the same
    return counts


def _with_interval(point: Statistic, resampled: FloatArray, defined: BoolArray) -> Statistic:
    """Attach the percentile interval of the resampled values to a point estimate.

    Resamples on which the statistic is undefined (say, all items drawn share one grade) are
    left out rather than counted as 0 or 1.
    """
    usable = resampled[defined]
    if usable.size == 0:
        return Statistic(
            value=point.value, reason="no resample gave a defined value, so no interval"
        )
    tail = (1 - CONFIDENCE_LEVEL) / 2 * 100
    low, high = np.percentile(usable, [tail, 100 - tail])
    return Statistic(value=point.value, reason=point.reason, low=float(low), high=float(high))


def _bootstrap(
    point: Statistic,
    per_item: FloatArray,
    batch: BatchStatistic,
    *,
    n_boot: int,
    seed: int,
) -> Statistic:
    """Percentile bootstrap over items: `per_item` rows are summed per resample, then `batch`
    turns each summed row into a value and a defined flag."""
    _check_bootstrap(n_boot)
    if not point.defined or n_boot == 0:
        return point
    n_items = per_item.shape[0]
    if n_items < 2:
        return Statistic(value=point.value, reason="a single item cannot be resampled")
    rows = per_item.reshape(n_items, -1)
    values, defined = [], []
    for counts in _resample_blocks(n_items, n_boot, seed):
        block_values, block_defined = batch(counts @ rows)
        values.append(block_values)
        defined.append(block_defined)
    return _with_interval(point, np.concatenate(values), np.concatenate(defined))


# --- percent agreement and confusion -----------------------------------------------------------


def confusion_matrix(
    pairs: Sequence[tuple[object, object]], *, labels: Sequence[object] = GRADES
) -> list[list[int]]:
    """Rows: the first labeller (A); columns: the second labeller (B); in `labels` order."""
    first, second = _encode_pairs(pairs, labels)
    k = len(labels)
    flat = np.bincount(first * k + second, minlength=k * k)
    return flat.reshape(k, k).tolist()


def _resampled_mean(totals: FloatArray) -> tuple[FloatArray, BoolArray]:
    """Per-item rows are (value, 1), so each resample's sums give its mean directly."""
    summed, items = totals[:, 0], totals[:, 1]
    return summed / items, items > 0


def percent_agreement(
    pairs: Sequence[tuple[object, object]],
    *,
    labels: Sequence[object] = GRADES,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> Statistic:
    """Share of items on which both labellers gave the same label.

    A single item is a defined (if uninformative) 0 or 1; only chance-corrected statistics
    treat it as undefined.
    """
    first, second = _encode_pairs(pairs, labels)
    if first.size == 0:
        return Statistic.undefined("no items graded by both labellers")
    agreed = (first == second).astype(np.float64)
    point = Statistic(value=float(agreed.mean()))
    per_item = np.column_stack([agreed, np.ones_like(agreed)])
    return _bootstrap(point, per_item, _resampled_mean, n_boot=n_boot, seed=seed)


def mean_difference(
    pairs: Sequence[tuple[int, int]],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> Statistic:
    """The mean of ``second − first`` over `(first, second)` grades, with its bootstrap
    interval: against the gold as ``first``, above 0 a lenient labeller, below 0 a strict one.
    """
    first, second = _encode_pairs(pairs, GRADES)
    if first.size == 0:
        return Statistic.undefined("no items graded against the gold")
    difference = (second - first).astype(np.float64)
    point = Statistic(value=float(difference.mean()))
    per_item = np.column_stack([difference, np.ones_like(difference)])
    return _bootstrap(point, per_item, _resampled_mean, n_boot=n_boot, seed=seed)


# --- Cohen's kappa ---------------------------------------------------------------------------


def _disagreement_weights(k: int, weighting: Weighting) -> FloatArray:
    # Weights come from positions in the full label set, so an unused middle grade still
    # puts 0 and 2 two steps apart.
    positions = np.arange(k, dtype=np.float64)
    distance = np.abs(positions[:, None] - positions[None, :])
    if weighting is None:
        return (distance > 0).astype(np.float64)
    if weighting == "linear":
        return distance
    if weighting == "quadratic":
        return distance**2
    raise AgreementInputError(f"weighting must be None, 'linear' or 'quadratic', got {weighting!r}")


def _kappa_from_confusions(
    confusions: FloatArray, weights: FloatArray
) -> tuple[FloatArray, BoolArray]:
    """Kappa for a batch of confusion matrices, shape (batch, k, k)."""
    items = confusions.sum(axis=(1, 2))
    first_marginal = confusions.sum(axis=2)
    second_marginal = confusions.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = first_marginal[:, :, None] * second_marginal[:, None, :] / items[:, None, None]
        observed_disagreement = (weights * confusions).sum(axis=(1, 2))
        expected_disagreement = (weights * expected).sum(axis=(1, 2))
        # Zero expected disagreement is exact: a sum of non-negative products of counts.
        defined = (items > 0) & (expected_disagreement > 0)
        values = np.where(defined, 1 - observed_disagreement / expected_disagreement, 0.0)
    return values, defined


def cohen_kappa(
    pairs: Sequence[tuple[object, object]],
    *,
    labels: Sequence[object] = GRADES,
    weighting: Weighting = None,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> Statistic:
    """Cohen's kappa, unweighted or with linear/quadratic disagreement weights.

    Matches `sklearn.metrics.cohen_kappa_score(a, b, labels=labels, weights=weighting)`
    wherever that is finite and there are at least two items.
    """
    first, second = _encode_pairs(pairs, labels)
    k = len(labels)
    weights = _disagreement_weights(k, weighting)
    if first.size == 0:
        return Statistic.undefined("no items graded by both labellers")
    if first.size == 1:
        return Statistic.undefined("a single item: agreement cannot be told apart from chance")
    per_item = np.zeros((first.size, k, k))
    per_item[np.arange(first.size), first, second] = 1.0
    values, defined = _kappa_from_confusions(per_item.sum(axis=0)[None], weights)
    if not defined[0]:
        return Statistic.undefined(
            "both labellers used one and the same label only, so expected disagreement is 0"
        )
    point = Statistic(value=float(values[0]))

    def batch(totals: FloatArray) -> tuple[FloatArray, BoolArray]:
        return _kappa_from_confusions(totals.reshape(-1, k, k), weights)

    return _bootstrap(point, per_item, batch, n_boot=n_boot, seed=seed)


# --- Krippendorff's alpha --------------------------------------------------------------------


def _unit_coincidences(value_counts: IntArray) -> FloatArray:
    """Each pairable item's contribution to the coincidence matrix, shape (items, k, k).

    Krippendorff (2011): an item with m values contributes every ordered pair of values from
    different labellers, each weighted 1 / (m - 1), so every pairable value counts once.
    """
    counts = value_counts.astype(np.float64)
    pairs = counts[:, :, None] * counts[:, None, :]
    k = counts.shape[1]
    pairs[:, np.arange(k), np.arange(k)] -= counts
    pairable = counts.sum(axis=1)
    return pairs / (pairable - 1)[:, None, None]


def _alpha_from_coincidences(
    coincidences: FloatArray, level: Level
) -> tuple[FloatArray, BoolArray]:
    """Alpha for a batch of coincidence matrices, shape (batch, k, k)."""
    value_totals = coincidences.sum(axis=2)  # n_c
    total = value_totals.sum(axis=1)  # n
    k = coincidences.shape[1]
    if level == "nominal":
        distance = np.broadcast_to(1.0 - np.eye(k), coincidences.shape)
    elif level == "ordinal":
        # delta²(c, k) = (sum of n_g for g from c to k  -  (n_c + n_k) / 2)²
        cumulative = np.concatenate(
            [np.zeros((value_totals.shape[0], 1)), np.cumsum(value_totals, axis=1)], axis=1
        )
        low = np.minimum.outer(np.arange(k), np.arange(k))
        high = np.maximum.outer(np.arange(k), np.arange(k))
        between = cumulative[:, high + 1] - cumulative[:, low]
        halves = (value_totals[:, :, None] + value_totals[:, None, :]) / 2
        distance = (between - halves) ** 2
    else:
        raise AgreementInputError(f"level must be 'nominal' or 'ordinal', got {level!r}")
    observed = (coincidences * distance).sum(axis=(1, 2))
    expected_pairs = value_totals[:, :, None] * value_totals[:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = (expected_pairs * distance).sum(axis=(1, 2)) / (total - 1)
        defined = (total > 1) & (expected > 0)
        values = np.where(defined, 1 - observed / expected, 0.0)
    return values, defined


def krippendorff_alpha(
    reliability_data: Sequence[Sequence[object | None]],
    *,
    level: Level,
    values: Sequence[object] = GRADES,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> Statistic:
    """Krippendorff's alpha for any number of labellers, with missing grades as None.

    `reliability_data` has one row per labeller and one column per item. `values` is the
    ordered value domain (it matters for ordinal distances only through the counts, but a
    value outside it is an error). The interval resamples pairable items.
    """
    value_counts = _encode_reliability_data(reliability_data, values)
    pairable = value_counts[value_counts.sum(axis=1) >= 2]
    if pairable.shape[0] == 0:
        return Statistic.undefined("no item was graded by two or more labellers")
    if pairable.shape[0] == 1:
        return Statistic.undefined(
            "a single item graded by two or more labellers: agreement cannot be told apart "
            "from chance"
        )
    per_item = _unit_coincidences(pairable)
    alphas, defined = _alpha_from_coincidences(per_item.sum(axis=0)[None], level)
    if not defined[0]:
        return Statistic.undefined("every grade is the same value, so expected disagreement is 0")
    point = Statistic(value=float(alphas[0]))
    k = len(values)

    def batch(totals: FloatArray) -> tuple[FloatArray, BoolArray]:
        return _alpha_from_coincidences(totals.reshape(-1, k, k), level)

    return _bootstrap(point, per_item, batch, n_boot=n_boot, seed=seed)


def paired_reliability_data(
    pairs: Sequence[tuple[object, object]],
) -> list[list[object]]:
    """Two labellers' paired grades as a 2 × items reliability data matrix."""
    return [[first for first, _ in pairs], [second for _, second in pairs]]


# --- span agreement --------------------------------------------------------------------------


def merge_spans(spans: Sequence[Span]) -> list[Span]:
    """Sorted, non-overlapping spans: one labeller's overlapping spans count each character once.

    `goldeval.text.spans`' rule: touching spans stay apart, which covers the same characters."""
    for start, end in spans:
        if start < 0 or end <= start:
            raise AgreementInputError(
                f"span ({start}, {end}) is not a non-empty half-open [start, end) range"
            )
    return merge_ranges(spans)


def _covered(spans: Sequence[Span]) -> int:
    return sum(end - start for start, end in spans)


def _overlap(first: Sequence[Span], second: Sequence[Span]) -> int:
    """Characters covered by both merged span lists (two-pointer sweep)."""
    shared, i, j = 0, 0, 0
    while i < len(first) and j < len(second):
        start = max(first[i][0], second[j][0])
        end = min(first[i][1], second[j][1])
        shared += max(0, end - start)
        if first[i][1] < second[j][1]:
            i += 1
        else:
            j += 1
    return shared


def span_f1(first_spans: Sequence[Span], second_spans: Sequence[Span]) -> Statistic:
    """Character-overlap F1 between two labellers' spans on one item, in one document version.

    Symmetric: 2 · |A ∩ B| / (|A| + |B|) over characters, after unioning each labeller's spans.
    """
    first, second = merge_spans(first_spans), merge_spans(second_spans)
    covered = _covered(first) + _covered(second)
    if covered == 0:
        return Statistic.undefined("neither labeller marked a span")
    return Statistic(value=2 * _overlap(first, second) / covered)


@dataclass(frozen=True)
class GradedSpans:
    """One labeller's judgement of one item: the grade and its evidence spans."""

    grade: int
    spans: tuple[Span, ...] = ()


def mean_span_f1(
    judgements: Sequence[tuple[GradedSpans, GradedSpans]],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> Statistic:
    """Mean span F1 over the items both labellers graded >= 1.

    Items where both graded >= 1 but neither marked a span have no F1 and are left out of the
    mean; grades of 0 carry no evidence to compare.
    """
    scores = []
    for first, second in judgements:
        if first.grade >= 1 and second.grade >= 1:
            score = span_f1(first.spans, second.spans)
            if score.value is not None:
                scores.append(score.value)
    if not scores:
        return Statistic.undefined("no item that both labellers graded 1 or 2 has spans")
    per_item = np.column_stack([scores, np.ones(len(scores))])
    point = Statistic(value=float(np.mean(scores)))
    return _bootstrap(point, per_item, _resampled_mean, n_boot=n_boot, seed=seed)


# --- thresholds ------------------------------------------------------------------------------


def landis_koch_band(kappa: float) -> str:
    """Landis & Koch (1977) label for a kappa value, upper bounds inclusive."""
    if not math.isfinite(kappa) or not -1 <= kappa <= 1:
        raise AgreementInputError(f"kappa must lie in [-1, 1], got {kappa!r}")
    if kappa < 0:
        return "poor"
    for upper, band in (
        (0.20, "slight"),
        (0.40, "fair"),
        (0.60, "moderate"),
        (0.80, "substantial"),
    ):
        if kappa <= upper:
            return band
    return "almost perfect"


def needs_guideline_rewrite(alpha: Statistic) -> bool:
    """True when a defined alpha is below Krippendorff's 0.667.

    An undefined alpha does not flag: the page shows its reason instead of a verdict.
    """
    return alpha.value is not None and alpha.value < GUIDELINE_ALPHA_THRESHOLD


# --- reports ---------------------------------------------------------------------------------


def _flatten(statistics: dict[str, Statistic]) -> dict[str, object]:
    """JSON-able: each name maps to its value (None when undefined) and `<name>_ci` to
    `[low, high]` or None; reasons are gathered under "reasons"."""
    report: dict[str, object] = {}
    reasons: dict[str, str] = {}
    for name, statistic in statistics.items():
        report[name] = statistic.value
        report[f"{name}_ci"] = [statistic.low, statistic.high] if statistic.has_interval else None
        if statistic.reason:
            reasons[name] = statistic.reason
    report["reasons"] = reasons
    return report


def pairwise_report(
    pairs: Sequence[tuple[int, int]],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> dict[str, object]:
    """Every grade statistic for two labellers' paired grades 0..2, as JSON-able data.

    Keys: items, percent, kappa, kappa_linear, kappa_quadratic, alpha_ordinal,
    alpha_nominal (each with `<key>_ci`), kappa_band, guideline_needs_rewrite, confusion,
    reasons. One seed draws the same item resamples for every statistic.
    """
    reliability_data = paired_reliability_data(pairs)
    alpha_ordinal = krippendorff_alpha(reliability_data, level="ordinal", n_boot=n_boot, seed=seed)
    kappa = cohen_kappa(pairs, n_boot=n_boot, seed=seed)
    report: dict[str, object] = {"items": len(pairs)}
    report |= _flatten(
        {
            "percent": percent_agreement(pairs, n_boot=n_boot, seed=seed),
            "kappa": kappa,
            "kappa_linear": cohen_kappa(pairs, weighting="linear", n_boot=n_boot, seed=seed),
            "kappa_quadratic": cohen_kappa(pairs, weighting="quadratic", n_boot=n_boot, seed=seed),
            "alpha_ordinal": alpha_ordinal,
            "alpha_nominal": krippendorff_alpha(
                reliability_data, level="nominal", n_boot=n_boot, seed=seed
            ),
        }
    )
    report["kappa_band"] = landis_koch_band(kappa.value) if kappa.value is not None else None
    report["guideline_needs_rewrite"] = needs_guideline_rewrite(alpha_ordinal)
    report["confusion"] = confusion_matrix(pairs)
    return report


def verdict_report(
    pairs: Sequence[tuple[str, str]],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> dict[str, object]:
    """Agreement on question-level verdicts (nominal): items, percent, kappa, confusion, reasons.

    Confusion rows and columns follow `VERDICTS` order.
    """
    report: dict[str, object] = {"items": len(pairs), "labels": list(VERDICTS)}
    report |= _flatten(
        {
            "percent": percent_agreement(pairs, labels=VERDICTS, n_boot=n_boot, seed=seed),
            "kappa": cohen_kappa(pairs, labels=VERDICTS, n_boot=n_boot, seed=seed),
        }
    )
    report["confusion"] = confusion_matrix(pairs, labels=VERDICTS)
    return report
