"""Pool bias (issue 34): leave-one-retriever-out, worked by hand."""

import pytest

from goldeval.formats.gold import Gold, GoldSpan
from goldeval.scoring.reusability import leave_one_out
from tests.goldeval.scoring.test_incomplete import question, run_of

# Relevant A (2), B (1), C (1); judged not relevant N1, N2. At depth 2, r1 pools A and N1, r2
# pools A and B; nobody pooled C or N2 (they came from elsewhere, and stay).
GOLD = Gold(
    questions={
        "q": question(
            "q",
            GoldSpan("A", None, None, 2),
            GoldSpan("B", None, None, 1),
            GoldSpan("C", None, None, 1),
            judged=["A", "B", "C", "N1", "N2"],
        )
    }
)
POOLED = {"r1": run_of({"q": ["A", "N1", "C"]}), "r2": run_of({"q": ["A", "B", "N2"]})}


def report(**extra):
    return leave_one_out(gold=GOLD, pooled=POOLED, depth=2, **extra)


def test_leave_one_out_by_hand():
    r1, r2 = report().retrievers
    # r1 alone contributed N1 (not relevant); r2 alone B (relevant): its span and its candidate.
    assert (r1.unique_items, r1.unique_units) == (1, [])
    assert r2.unique_items == 2
    assert [(u.question_id, u.span.doc_id) for u in r2.unique_units] == [("q", "B")]
    # Without B, r2 finds 1 of 2 relevant units (A of A, C) instead of 2 of 3.
    assert r2.with_own["recall@10"] == pytest.approx(2 / 3)
    assert r2.without_own["recall@10"] == pytest.approx(1 / 2)
    assert r2.difference["recall@10"] == pytest.approx(1 / 2 - 2 / 3)
    assert r2.difference["precision@10"] == pytest.approx(-0.1)
    # Without N1, r1's recall is unchanged; bpref rises: N1 is no longer a judged non-relevant
    # passage above C. With: (1 + (1 - 1/2)) / 3; without: (1 + 1) / 3.
    assert r1.difference["recall@10"] == 0.0
    assert r1.with_own["bpref"] == pytest.approx(0.5)
    assert r1.without_own["bpref"] == pytest.approx(2 / 3)


def test_a_run_outside_the_pool_is_warned_with_its_condensed_figures():
    new = run_of({"q": ["X", "Y", "A", "Z"]})
    (coverage,) = report(runs=[new]).runs
    assert coverage.unjudged == pytest.approx(0.3)
    assert coverage.warning.startswith("30.0% of its top 10 passages were never judged")
    assert coverage.plain["mrr@10"] == pytest.approx(1 / 3)
    assert coverage.condensed["condensed_mrr@10"] == 1.0
    judged = run_of({"q": ["A", "B", "C"]})
    (coverage,) = report(runs=[judged]).runs
    assert coverage.unjudged == 0.0 and coverage.warning is None
    # The bar is "above 10 %": one unjudged passage in ten is not warned about, two are.
    at_the_bar = run_of({"q": ["A", "B", "C", "N1", "N2", "A", "B", "C", "N1", "X"]})
    (coverage,) = report(runs=[at_the_bar]).runs
    assert coverage.unjudged == pytest.approx(0.1) and coverage.warning is None


def test_spans_count_by_overlap():
    gold = Gold(
        questions={
            "q": question(
                "q",
                GoldSpan("D", 0, 50, 2),
                GoldSpan("D", 100, 150, 1),
                judged=[("D", 0, 60), ("D", 90, 160)],
            )
        }
    )
    pooled = {
        "r1": run_of({"q": [("D", 40, 70)]}),  # overlaps the first span and its candidate
        "r2": run_of({"q": [("D", 0, 10), ("D", 140, 200)]}),  # both spans and candidates
    }
    r1, r2 = leave_one_out(gold=gold, pooled=pooled, depth=5).retrievers
    assert r1.unique_items == 0
    assert r2.unique_items == 2  # the second span and its candidate
    assert [u.span.start for u in r2.unique_units] == [100]
    # With min_overlap 15, r1's 10 characters into the first span no longer reach it (nor do
    # r2's), but its 20 characters of the first candidate do: that candidate is r1's alone.
    r1, _ = leave_one_out(gold=gold, pooled=pooled, depth=5, min_overlap=15).retrievers
    assert r1.unique_items == 1 and r1.unique_units == []
    assert r1.with_own["recall@10"] == 0.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [({"depth": 0}, "depth must be at least 1"), ({"pooled": {"r1": POOLED["r1"]}}, "two")],
)
def test_bad_input_is_refused(extra, message):
    arguments = {"gold": GOLD, "pooled": POOLED, "depth": 2, **extra}
    with pytest.raises(ValueError, match=message):
        leave_one_out(**arguments)
