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


# The AI judge's vote, where a lead has the gold rule count it ---------------------------------

AI = Vote("AI judge (m, prompt v1)", 2, ((0, 100),))


def test_a_counted_ai_vote_that_agrees_settles_a_single_labelled_item_as_agreed():
    # The gold's spans stay the labeller's: the judge's quote is evidence for the lead only.
    decision = resolve_item([Vote("a", 2, ((10, 90),))], planned_votes=1, machine=AI)
    assert decision == Decision(grade=2, spans=((10, 90),), source="agreed")


def test_a_counted_ai_vote_that_disagrees_sends_the_item_to_a_lead():
    decision = resolve_item([Vote("a", 1, ((0, 100),))], planned_votes=1, machine=AI)
    assert decision == Pending("grades differ (1 vs the AI judge's 2)")
    assert decision.needs_lead
    # Two agreeing labellers and a dissenting judge: a lead decides too.
    both = [Vote("a", 0), Vote("b", 0)]
    assert resolve_item(both, planned_votes=2, machine=AI) == Pending(
        "grades differ (0 vs 0 vs the AI judge's 2)"
    )


def test_the_ai_quote_is_never_held_against_the_labellers_spans():
    far = Vote("AI", 2, ((500, 600),))
    decision = resolve_item([Vote("a", 2, ((0, 100),))], planned_votes=1, machine=far)
    assert decision == Decision(grade=2, spans=((0, 100),), source="agreed")
    # Two labellers' spans must still overlap enough between themselves.
    apart = [Vote("a", 2, ((0, 100),)), Vote("b", 2, ((300, 400),))]
    assert resolve_item(apart, planned_votes=2, machine=far) == Pending(
        "spans overlap too little (F1 0.00 < 0.50)"
    )
    agreeing = [Vote("a", 2, ((0, 100),)), Vote("b", 2, ((50, 120),))]
    assert resolve_item(agreeing, planned_votes=2, machine=far) == Decision(
        grade=2, spans=((0, 120),), source="agreed"
    )


def test_the_ai_vote_never_stands_in_for_a_labeller_nor_beats_a_lead():
    waiting = resolve_item([Vote("a", 2, ((0, 100),))], planned_votes=2, machine=AI)
    assert waiting.kind == "waiting"
    assert resolve_item([], planned_votes=1, machine=AI).kind == "waiting"
    assert resolve_item([], planned_votes=0, machine=AI).kind == "unreachable"
    assert resolve_item([Vote("a", 2)], planned_votes=1, unreachable="gone", machine=AI).kind == (
        "unreachable"
    )
    lead = Decision(grade=0, spans=(), source="resolved")
    assert resolve_item([Vote("a", 1)], planned_votes=1, resolution=lead, machine=AI) == lead


def test_without_a_counted_ai_vote_the_rule_is_the_humans_alone():
    votes = [Vote("a", 1, ((0, 10),)), Vote("b", 1, ((0, 10),))]
    assert resolve_item(votes, planned_votes=2) == resolve_item(
        votes, planned_votes=2, machine=None
    )
    assert resolve_item([Vote("a", 0)], planned_votes=1).source == "single"
