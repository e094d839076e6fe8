"""Agreement statistics, pinned against sklearn and the krippendorff package as oracles."""

import json
import math
import subprocess
import sys
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from labelling.agreement import (
    GRADES,
    GUIDELINE_ALPHA_THRESHOLD,
    VERDICTS,
    AgreementInputError,
    GradedSpans,
    Statistic,
    cohen_kappa,
    confusion_matrix,
    krippendorff_alpha,
    landis_koch_band,
    mean_span_f1,
    merge_spans,
    needs_guideline_rewrite,
    pairwise_report,
    percent_agreement,
    span_f1,
    verdict_report,
)

TOLERANCE = 1e-9
PROPERTY_SETTINGS = settings(max_examples=200, deadline=None)

grades = st.sampled_from(GRADES)
grade_pairs = st.lists(st.tuples(grades, grades), min_size=2, max_size=40)


def _sklearn_kappa(pairs, weighting):
    first, second = zip(*pairs, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohen_kappa_score(first, second, labels=list(GRADES), weights=weighting)


def _oracle_alpha(reliability_data, level):
    """krippendorff.alpha, or None where it refuses or returns nan."""
    matrix = np.array(
        [[np.nan if value is None else value for value in row] for row in reliability_data],
        dtype=float,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = krippendorff.alpha(
                reliability_data=matrix, level_of_measurement=level, value_domain=list(GRADES)
            )
        except ValueError:
            return None
    return None if math.isnan(value) else float(value)


# A realistic double-labelled sample: mostly agreeing, some near misses, a few far misses.
SAMPLE = (
    [(0, 0)] * 12 + [(1, 1)] * 8 + [(2, 2)] * 10 + [(0, 1)] * 3 + [(1, 2)] * 4 + [(2, 1)] * 2
) + [(0, 2), (1, 0)]


# --- Cohen's kappa ---------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(pairs=grade_pairs, weighting=st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_matches_sklearn(pairs, weighting):
    ours = cohen_kappa(pairs, weighting=weighting, n_boot=0)
    expected = _sklearn_kappa(pairs, weighting)
    if math.isnan(expected):
        assert not ours.defined
        assert ours.reason
    else:
        assert ours.defined
        assert abs(ours.value - expected) < TOLERANCE


def test_kappa_unweighted_by_hand():
    # Observed agreement 0.75; marginals (2, 2) and (2, 2) give chance 0.5; kappa 0.5.
    pairs = [(0, 0), (2, 2), (0, 0), (2, 0)]
    assert cohen_kappa(pairs, n_boot=0).value == pytest.approx(0.5)


def test_kappa_weights_use_the_full_label_set():
    # Grade 1 never appears; the confusion matrix still has its row and column.
    pairs = [(0, 0), (2, 2), (0, 2), (2, 2)]
    assert confusion_matrix(pairs) == [[1, 0, 1], [0, 0, 0], [0, 0, 2]]
    for weighting in (None, "linear", "quadratic"):
        ours = cohen_kappa(pairs, weighting=weighting, n_boot=0)
        assert abs(ours.value - _sklearn_kappa(pairs, weighting)) < TOLERANCE


def test_kappa_rejects_unknown_weighting():
    with pytest.raises(AgreementInputError, match="weighting"):
        cohen_kappa(SAMPLE, weighting="cubic")


# --- Krippendorff's alpha ----------------------------------------------------------------------


@st.composite
def reliability_matrices(draw):
    labellers = draw(st.integers(min_value=2, max_value=5))
    items = draw(st.integers(min_value=1, max_value=15))
    cell = st.one_of(st.none(), grades)
    return [[draw(cell) for _ in range(items)] for _ in range(labellers)]


def _pairable_items(reliability_data):
    return sum(
        sum(row[item] is not None for row in reliability_data) >= 2
        for item in range(len(reliability_data[0]))
    )


@PROPERTY_SETTINGS
@given(reliability_data=reliability_matrices(), level=st.sampled_from(["ordinal", "nominal"]))
def test_alpha_matches_krippendorff_package(reliability_data, level):
    ours = krippendorff_alpha(reliability_data, level=level, n_boot=0)
    expected = _oracle_alpha(reliability_data, level)
    if _pairable_items(reliability_data) < 2 or expected is None:
        # Our one deliberate difference: a single pairable item is undefined, not 0 or 1.
        assert not ours.defined
        assert ours.reason
    else:
        assert ours.defined
        assert abs(ours.value - expected) < TOLERANCE


def test_alpha_reproduces_krippendorffs_published_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 observers, 12 units.
    reliability_data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    values = (1, 2, 3, 4, 5)
    nominal = krippendorff_alpha(reliability_data, level="nominal", values=values, n_boot=0)
    ordinal = krippendorff_alpha(reliability_data, level="ordinal", values=values, n_boot=0)
    assert round(nominal.value, 3) == 0.743
    assert round(ordinal.value, 3) == 0.815


def test_alpha_of_two_labellers_matches_the_oracle_on_the_sample():
    reliability_data = [[a for a, _ in SAMPLE], [b for _, b in SAMPLE]]
    for level in ("ordinal", "nominal"):
        ours = krippendorff_alpha(reliability_data, level=level, n_boot=0)
        assert abs(ours.value - _oracle_alpha(reliability_data, level)) < TOLERANCE


def test_alpha_rejects_bad_reliability_data():
    with pytest.raises(AgreementInputError, match="same items"):
        krippendorff_alpha([[0, 1], [0]], level="ordinal")
    with pytest.raises(AgreementInputError, match="labeller 1, item 0"):
        krippendorff_alpha([[0, 1], [3, 1]], level="ordinal")
    with pytest.raises(AgreementInputError, match="level"):
        krippendorff_alpha([[0, 1], [0, 1]], level="interval")


# --- degenerate inputs -----------------------------------------------------------------------


@pytest.mark.parametrize("weighting", [None, "linear", "quadratic"])
def test_kappa_degenerate_inputs_are_undefined_with_a_reason(weighting):
    no_items = cohen_kappa([], weighting=weighting)
    single = cohen_kappa([(0, 2)], weighting=weighting)
    one_category = cohen_kappa([(1, 1)] * 5, weighting=weighting)
    assert "no items" in no_items.reason
    assert "single item" in single.reason
    assert "expected disagreement is 0" in one_category.reason
    for statistic in (no_items, single, one_category):
        assert statistic.value is None
        assert not statistic.defined


def test_alpha_degenerate_inputs_are_undefined_with_a_reason():
    cases = {
        "no item": [],
        "two or more": [[0, None, 1], [None, 2, None]],
        "single item": [[0, None], [2, 1]],
        "expected disagreement is 0": [[1, 1, None], [1, 1, 1]],
    }
    for fragment, reliability_data in cases.items():
        for level in ("ordinal", "nominal"):
            alpha = krippendorff_alpha(reliability_data, level=level)
            assert not alpha.defined
            assert fragment in alpha.reason
            assert not needs_guideline_rewrite(alpha)


def test_percent_agreement_needs_items_but_not_two():
    assert "no items" in percent_agreement([]).reason
    single = percent_agreement([(1, 1)])
    assert single.value == 1.0
    assert not single.has_interval
    assert "single item" in single.reason


def test_statistic_never_holds_nan():
    with pytest.raises(ValueError, match="finite"):
        Statistic(value=float("nan"))
    with pytest.raises(ValueError, match="reason"):
        Statistic(value=None)


def test_report_of_no_items_is_json_with_reasons():
    report = pairwise_report([])
    json.dumps(report, allow_nan=False)
    assert report["items"] == 0
    for name in ("percent", "kappa", "kappa_linear", "kappa_quadratic"):
        assert report[name] is None
        assert report[f"{name}_ci"] is None
        assert report["reasons"][name]
    assert report["alpha_ordinal"] is None
    assert report["kappa_band"] is None
    assert report["guideline_needs_rewrite"] is False
    assert report["confusion"] == [[0, 0, 0], [0, 0, 0], [0, 0, 0]]


def test_grades_outside_the_label_set_are_rejected():
    with pytest.raises(AgreementInputError, match="item 1: 3 is not one of 0, 1, 2"):
        cohen_kappa([(0, 0), (3, 1)])
    with pytest.raises(AgreementInputError, match="pair"):
        percent_agreement([(0, 0, 1)])


# --- bootstrap -------------------------------------------------------------------------------


def _sample_statistics(seed):
    reliability_data = [[a for a, _ in SAMPLE], [b for _, b in SAMPLE]]
    return [
        percent_agreement(SAMPLE, seed=seed),
        cohen_kappa(SAMPLE, seed=seed),
        cohen_kappa(SAMPLE, weighting="linear", seed=seed),
        cohen_kappa(SAMPLE, weighting="quadratic", seed=seed),
        krippendorff_alpha(reliability_data, level="ordinal", seed=seed),
        krippendorff_alpha(reliability_data, level="nominal", seed=seed),
    ]


def test_bootstrap_interval_contains_the_point_estimate():
    for statistic in _sample_statistics(seed=7):
        assert statistic.has_interval
        assert statistic.low <= statistic.value <= statistic.high
        assert statistic.low < statistic.high


def test_bootstrap_is_deterministic_for_a_seed():
    assert _sample_statistics(seed=3) == _sample_statistics(seed=3)
    assert _sample_statistics(seed=3) != _sample_statistics(seed=4)


def test_bootstrap_with_missing_grades_and_three_labellers():
    reliability_data = [
        [0, 1, 2, 2, None, 0, 1, 2, 0, 1],
        [0, 1, 2, 1, 2, None, 1, 2, 0, 0],
        [None, 1, 2, 2, 2, 0, 0, 2, None, 1],
    ]
    alpha = krippendorff_alpha(reliability_data, level="ordinal", seed=1)
    assert alpha.low <= alpha.value <= alpha.high <= 1.0


def test_no_bootstrap_when_n_boot_is_zero():
    statistic = cohen_kappa(SAMPLE, n_boot=0)
    assert statistic.defined
    assert not statistic.has_interval
    with pytest.raises(AgreementInputError, match="n_boot"):
        cohen_kappa(SAMPLE, n_boot=-1)


# --- span agreement --------------------------------------------------------------------------


def test_span_f1_hand_checked_cases():
    assert span_f1([(0, 10)], [(0, 10)]).value == 1.0
    assert span_f1([(0, 10)], [(10, 20)]).value == 0.0
    # Half of each span overlaps: 5 shared characters of 10 + 10.
    assert span_f1([(0, 10)], [(5, 15)]).value == pytest.approx(0.5)
    # 4 shared characters of 10 + 4.
    assert span_f1([(0, 10)], [(0, 4)]).value == pytest.approx(8 / 14)
    # Two spans against one: 2 + 2 shared characters of 15 + 9.
    assert span_f1([(0, 5), (10, 20)], [(3, 12)]).value == pytest.approx(8 / 24)
    # One labeller marked evidence, the other none.
    assert span_f1([(0, 10)], []).value == 0.0


def test_span_f1_unions_overlapping_spans_within_one_labeller():
    # Without the union the first labeller would count 12 characters, not 10.
    assert span_f1([(0, 6), (4, 10)], [(0, 10)]).value == 1.0
    assert span_f1([(0, 5), (5, 10)], [(0, 10)]).value == 1.0
    assert span_f1([(2, 8), (0, 10), (3, 4)], [(5, 15)]).value == pytest.approx(0.5)


def test_span_f1_without_spans_is_undefined_and_bad_spans_are_rejected():
    assert "neither" in span_f1([], []).reason
    with pytest.raises(AgreementInputError, match=r"\(5, 5\)"):
        span_f1([(5, 5)], [(0, 10)])
    with pytest.raises(AgreementInputError, match=r"\(-1, 4\)"):
        span_f1([(-1, 4)], [(0, 10)])


def test_mean_span_f1_covers_items_both_graded_relevant():
    judgements = [
        (GradedSpans(2, ((0, 10),)), GradedSpans(1, ((5, 15),))),  # 0.5
        (GradedSpans(1, ((0, 10),)), GradedSpans(2, ((0, 10),))),  # 1.0
        (GradedSpans(0, ()), GradedSpans(2, ((0, 10),))),  # a 0: left out
        (GradedSpans(2, ((0, 10),)), GradedSpans(0, ((0, 10),))),  # a 0: left out
        (GradedSpans(1, ()), GradedSpans(1, ())),  # no spans: no F1
    ]
    mean = mean_span_f1(judgements, seed=1)
    assert mean.value == pytest.approx(0.75)
    assert mean.low <= mean.value <= mean.high
    assert "no item" in mean_span_f1(judgements[2:]).reason


# --- verdicts --------------------------------------------------------------------------------


def test_verdict_agreement_matches_sklearn():
    pairs = [
        ("answerable", "answerable"),
        ("answerable", "cant_tell"),
        ("unanswerable", "unanswerable"),
        ("cant_tell", "cant_tell"),
        ("answerable", "answerable"),
        ("unanswerable", "answerable"),
    ]
    report = verdict_report(pairs, seed=2)
    first, second = zip(*pairs, strict=True)
    expected = cohen_kappa_score(first, second, labels=list(VERDICTS))
    assert report["items"] == 6
    assert report["percent"] == pytest.approx(4 / 6)
    assert abs(report["kappa"] - expected) < TOLERANCE
    assert report["confusion"] == [[2, 0, 1], [1, 1, 0], [0, 0, 1]]
    assert report["labels"] == list(VERDICTS)
    json.dumps(report, allow_nan=False)


def test_verdict_agreement_degenerate_and_bad_input():
    report = verdict_report([("unanswerable", "unanswerable")] * 3)
    assert report["percent"] == 1.0
    assert report["kappa"] is None
    assert "expected disagreement is 0" in report["reasons"]["kappa"]
    with pytest.raises(AgreementInputError, match="'maybe'"):
        verdict_report([("answerable", "maybe")])


# --- report, thresholds ------------------------------------------------------------------------


def test_pairwise_report_gathers_every_statistic():
    report = pairwise_report(SAMPLE, seed=5)
    json.dumps(report, allow_nan=False)
    assert report["items"] == len(SAMPLE)
    assert report["percent"] == pytest.approx(30 / 41)
    first, second = zip(*SAMPLE, strict=True)
    assert abs(report["kappa_quadratic"] - _sklearn_kappa(SAMPLE, "quadratic")) < TOLERANCE
    reliability_data = [list(first), list(second)]
    assert abs(report["alpha_ordinal"] - _oracle_alpha(reliability_data, "ordinal")) < TOLERANCE
    low, high = report["kappa_ci"]
    assert low <= report["kappa"] <= high
    assert report["kappa_band"] == landis_koch_band(report["kappa"])
    assert report["guideline_needs_rewrite"] == (report["alpha_ordinal"] < 0.667)
    assert report["confusion"] == [[12, 3, 1], [1, 8, 4], [0, 2, 10]]
    assert report["reasons"] == {}


@pytest.mark.parametrize(
    ("kappa", "band"),
    [
        (-1.0, "poor"),
        (-0.01, "poor"),
        (0.0, "slight"),
        (0.20, "slight"),
        (0.21, "fair"),
        (0.40, "fair"),
        (0.41, "moderate"),
        (0.60, "moderate"),
        (0.61, "substantial"),
        (0.80, "substantial"),
        (0.81, "almost perfect"),
        (1.0, "almost perfect"),
    ],
)
def test_landis_koch_bands_at_the_boundaries(kappa, band):
    assert landis_koch_band(kappa) == band


@pytest.mark.parametrize("kappa", [1.01, -1.01, float("nan")])
def test_landis_koch_rejects_impossible_kappa(kappa):
    with pytest.raises(AgreementInputError):
        landis_koch_band(kappa)


def test_guideline_rewrite_threshold():
    assert GUIDELINE_ALPHA_THRESHOLD == 0.667
    assert needs_guideline_rewrite(Statistic(value=0.666))
    assert not needs_guideline_rewrite(Statistic(value=0.667))
    assert not needs_guideline_rewrite(Statistic(value=0.9))
    assert not needs_guideline_rewrite(Statistic.undefined("one category only"))


def test_module_does_not_import_django():
    code = (
        "import sys, labelling.agreement; "
        "sys.exit(any(name.split('.')[0] == 'django' for name in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_one_labellers_spans_merge_by_the_one_rule_with_the_same_coverage():
    assert merge_spans([(5, 10), (0, 5)]) == [(0, 5), (5, 10)]  # touching: two units
    assert merge_spans([(4, 10), (0, 5)]) == [(0, 10)]  # one shared character: one
    assert span_f1([(0, 5), (5, 10)], [(0, 10)]).value == span_f1([(0, 10)], [(0, 10)]).value
