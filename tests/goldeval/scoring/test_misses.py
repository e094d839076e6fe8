"""The misses core (goldeval/scoring/misses.py), on hand-made questions."""

import pytest

from goldeval.formats.gold import GoldSpan
from goldeval.formats.runfiles import Passage
from goldeval.scoring.misses import SampledQuestion, misses_report


def question(
    qid,
    *,
    spans=(),
    production=(),
    probability=0.5,
    stratum="",
    answerable=True,
    answered=True,
    built_in=None,
):
    return SampledQuestion(
        question_id=qid,
        text=f"text of {qid}",
        trace_id=f"t-{qid}",
        probability=probability,
        stratum=stratum,
        answerable=answerable,
        spans=tuple(spans),
        production=tuple(production),
        refused=not answered,
        answered=answered,
        built_in=built_in or {},
    )


A = GoldSpan("leave", 0, 50, 2)
B = GoldSpan("travel", 10, 20, 1)


def test_misses_name_the_span_and_where_a_built_in_retriever_found_it():
    q1 = question(
        "q1",
        spans=[A, B],
        production=[Passage("x", 0, 10), Passage("leave", 0, 40), Passage("other", 0, 5)],
        built_in={"bm25": [Passage("y", 0, 1), Passage("travel", 0, 30)], "dense": []},
    )
    q2 = question("q2", spans=[A], production=[Passage("leave", 20, 60)], probability=0.25)
    report = misses_report([q1, q2], k=2)
    assert report.decided == report.answerable == 2
    first = report.per_question[0]
    assert first.recall == 0.5 and first.reciprocal_rank == 0.5
    (miss,) = first.misses
    assert miss.span == B and miss.production_rank is None
    assert miss.found_by == (("bm25", 2),)
    assert report.missed == [first]
    # Weighted by 1/π: q2 (π 0.25) counts twice as much as q1 (π 0.5).
    assert report.recall.mean == pytest.approx((0.5 * 2 + 1.0 * 4) / 6)
    assert report.mrr.mean == pytest.approx((0.5 * 2 + 1.0 * 4) / 6)


def test_a_span_reached_below_k_is_a_miss_with_its_rank():
    q = question(
        "q", spans=[A], production=[Passage("x", 0, 1), Passage("y", 0, 1), Passage("leave", 0, 9)]
    )
    (row,) = misses_report([q], k=2).per_question
    assert row.misses[0].production_rank == 3 and row.recall == 0.0


def test_unanswerable_questions_answered_and_undecided_ones_apart():
    refused = question("r", answerable=False, answered=False)
    answered = question("a", answerable=False, answered=True)
    pending = question("p", answerable=None, spans=[A])
    report = misses_report([refused, answered, pending], k=5)
    assert report.unanswerable == 2 and report.decided == 2 and report.answerable == 0
    assert [q.question_id for q in report.answered_unanswerable] == ["a"]
    assert not report.recall.defined


def test_a_passage_is_placed_on_another_version_by_its_text():
    from goldeval.scoring.misses import place_on

    old = "Travel costs are paid back monthly after the trip report is filed."
    new = "A new preface. " + old.replace("monthly", "each month")
    start = old.index("are paid")
    moved = place_on(Passage("travel", start, start + 20), text=old, onto="Intro. " + old)
    assert moved == Passage("travel", start + 7, start + 27)
    fuzzy = place_on(Passage("travel", 0, len(old)), text=old, onto=new)
    assert fuzzy.start == len("A new preface. ") and new[fuzzy.start : fuzzy.end].endswith("filed.")
    assert place_on(Passage("travel", 0, 14), text=old, onto="Nothing alike here at all") is None
    assert place_on(Passage("travel"), text=old, onto=new) == Passage("travel")
