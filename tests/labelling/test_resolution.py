from labelling.resolution import (
    Decision,
    Pending,
    VerdictDecision,
    Vote,
    resolve_item,
    resolve_verdict,
    union,
)


def test_union_coalesces_overlapping_spans_and_keeps_touching_ones_apart():
    # [40, 50) and [50, 55) share no character: two units, as the metrics see them.
    assert union([(10, 20), (40, 50)], [(15, 30), (50, 55), (70, 80)]) == (
        (10, 30),
        (40, 50),
        (50, 55),
        (70, 80),
    )
    assert union([(0, 5)], [(4, 10)]) == ((0, 10),)
    assert union() == ()


def test_single_labelled_item_takes_the_judgement():
    decision = resolve_item([Vote("a", 2, ((0, 10),))], planned_votes=1)
    assert decision == Decision(grade=2, spans=((0, 10),), source="single")


def test_grade_zero_keeps_no_spans():
    assert resolve_item([Vote("a", 0, ((0, 10),))], planned_votes=1).spans == ()


def test_agreeing_pair_takes_the_shared_grade_and_the_union_of_spans():
    votes = [Vote("a", 1, ((0, 100),)), Vote("b", 1, ((20, 120),))]
    assert resolve_item(votes, planned_votes=2) == Decision(
        grade=1, spans=((0, 120),), source="agreed"
    )


def test_disagreeing_grades_are_pending_until_resolved():
    votes = [Vote("a", 2, ((0, 10),)), Vote("b", 0)]
    pending = resolve_item(votes, planned_votes=2)
    assert isinstance(pending, Pending) and "grades differ (2 vs 0)" in pending.reason
    resolution = Decision(grade=1, spans=((0, 8),), source="resolved")
    assert resolve_item(votes, planned_votes=2, resolution=resolution) == resolution


def test_same_grade_with_far_apart_spans_needs_a_lead():
    votes = [Vote("a", 2, ((0, 100),)), Vote("b", 2, ((90, 400),))]
    pending = resolve_item(votes, planned_votes=2, min_span_f1=0.5)
    assert isinstance(pending, Pending) and "F1 0.05" in pending.reason
    assert isinstance(resolve_item(votes, planned_votes=2, min_span_f1=0.0), Decision)


def test_missing_second_vote_is_pending():
    pending = resolve_item([Vote("a", 1, ((0, 5),))], planned_votes=2)
    assert pending == Pending("waiting for 1 more vote")


def test_verdicts():
    assert resolve_verdict(["unanswerable"], planned_votes=1) == VerdictDecision(
        "unanswerable", "single"
    )
    assert resolve_verdict(["answerable", "answerable"], planned_votes=2).source == "agreed"
    assert isinstance(resolve_verdict(["answerable", "unanswerable"], planned_votes=2), Pending)
    assert isinstance(resolve_verdict(["cant_tell"], planned_votes=1), Pending)
    assert isinstance(resolve_verdict(["answerable"], planned_votes=2), Pending)
    resolved = resolve_verdict(
        ["answerable", "unanswerable"], planned_votes=2, resolution="unanswerable"
    )
    assert resolved == VerdictDecision("unanswerable", "resolved")
