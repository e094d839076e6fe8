"""Every answer score on hand-worked examples; the arithmetic is written out in each test."""

import pytest

from goldeval.formats.answer_gold import (
    AnswerGold,
    AnswerGrades,
    GradedCitation,
    GradedClaim,
    ReferenceFact,
)
from goldeval.formats.answers import Answer, Sentence
from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan
from goldeval.formats.runfiles import Passage
from goldeval.scoring.answers import (
    SCORE_NAMES,
    RefusalOutcome,
    citation_scores,
    compare_answer_runs,
    correctness,
    evaluate_answers,
    evidence_rank,
    faithfulness,
    gold_citation_precision,
    position_thirds,
    precise_citations,
    refusal_scores,
)

LEAVE = GoldQuestion(
    question_id="q1",
    question="how many days of leave",
    answerable=True,
    spans=(GoldSpan("leave", 0, 34, 2), GoldSpan("handbook", 100, 150, 1)),
)


def claim(support="full", *grades, together=None):
    citations = tuple(GradedCitation(Passage(f"d{i}"), grade) for i, grade in enumerate(grades))
    return GradedClaim(0, 10, support, citations, together)


# --- faithfulness -------------------------------------------------------------------------------


def test_faithfulness_full_partial_none_is_a_half():
    # (1 + 0.5 + 0) / 3 = 0.5
    assert faithfulness([claim("full"), claim("partial"), claim("none")]) == 0.5


def test_faithfulness_of_an_answer_without_claims_is_none_not_zero():
    assert faithfulness([]) is None


# --- citations (ALCE) ---------------------------------------------------------------------------


def test_two_citations_where_one_is_enough_the_other_is_not_precise():
    # c0 supports alone (2), c1 partly (1): together they support (recall 1), but c1 is not
    # needed, since removing it leaves a supported claim: precision 1 / 2.
    one_is_enough = claim("full", 2, 1)
    assert precise_citations(one_is_enough) == 1
    assert citation_scores([one_is_enough]) == (0.5, 1.0)
    # The same with an irrelevant second citation (0).
    assert citation_scores([claim("full", 2, 0)]) == (0.5, 1.0)
    # Both support alone: both count.
    assert citation_scores([claim("full", 2, 2)]) == (1.0, 1.0)


def test_two_partial_citations_that_support_together_are_both_needed():
    together = claim("full", 1, 1, together=True)
    assert citation_scores([together]) == (1.0, 1.0)
    # Not together: the claim is unsupported by its citations; nothing is precise.
    apart = claim("full", 1, 1, together=False)
    assert citation_scores([apart]) == (0.0, 0.0)
    # Left out, "together" means one citation alone supports it.
    assert citation_scores([claim("full", 1, 1)]) == (0.0, 0.0)


def test_citation_recall_is_the_share_of_claims_whose_citations_support_them():
    # claims: supported by c (2); unsupported (0); without citations.
    # recall = 1 / 3; precision = 1 precise / 2 citations.
    claims = [claim("full", 2), claim("full", 0), claim("full")]
    precision, recall = citation_scores(claims)
    assert precision == 0.5
    assert recall == pytest.approx(1 / 3)


def test_an_answer_without_citations_scores_zero_on_both():
    assert citation_scores([claim("full"), claim("partial")]) == (0.0, 0.0)
    assert citation_scores([]) == (0.0, 0.0)


def test_gold_citation_precision_needs_only_the_gold_spans():
    citations = [
        Passage("leave", 20, 60),  # overlaps the grade-2 span [0, 34)
        Passage("leave", 34, 80),  # starts where the span ends: no overlap
        Passage("handbook"),  # the whole document reaches [100, 150)
        Passage("parking", 0, 10),  # another document
    ]
    # 2 of 4 reach gold.
    assert gold_citation_precision(citations, LEAVE) == 0.5
    assert gold_citation_precision([], LEAVE) == 0.0
    # With a minimum overlap of 20 characters, [20, 60) shares only 14 with [0, 34).
    assert gold_citation_precision(citations, LEAVE, min_overlap=20) == 0.25


def test_grade_zero_spans_are_not_gold_evidence():
    question = GoldQuestion("q", "", True, (GoldSpan("leave", 0, 34, 0), GoldSpan("x", 0, 5, 1)))
    assert gold_citation_precision([Passage("leave", 0, 10)], question) == 0.0


# --- correctness (nuggets) ----------------------------------------------------------------------

FACTS = (
    ReferenceFact("f1", "25 days", vital=True),
    ReferenceFact("f2", "pro rata for part-timers", vital=True),
    ReferenceFact("f3", "carry over with approval", vital=False),
    ReferenceFact("f4", "ask HR", vital=False),
)


def test_nugget_recall_all_vital_and_strict():
    # f1 yes, f2 partly, f3 no, f4 not graded (absent).
    result = correctness(FACTS, {"f1": "yes", "f2": "partly", "f3": "no"})
    assert result.correctness == (1 + 0.5) / 4  # 0.375
    assert result.vital == (1 + 0.5) / 2  # 0.75
    assert result.strict == 1 / 4  # partly counts nothing


def test_correctness_without_reference_facts_or_vital_facts():
    assert correctness((), {}).correctness is None
    okay_only = (ReferenceFact("f", "x", vital=False),)
    result = correctness(okay_only, {"f": "yes"})
    assert (result.correctness, result.vital, result.strict) == (1.0, None, 1.0)


# --- refusals -----------------------------------------------------------------------------------


def test_refusal_shares_and_the_split_by_evidence_in_context():
    outcomes = [
        # 3 unanswerable: 2 refused
        RefusalOutcome(answerable=False, refused=True),
        RefusalOutcome(answerable=False, refused=True),
        RefusalOutcome(answerable=False, refused=False),
        # 4 answerable: evidence in context for 2 (1 refused), not for 2 (1 refused)
        RefusalOutcome(answerable=True, refused=True, evidence_in_context=True),
        RefusalOutcome(answerable=True, refused=False, evidence_in_context=True),
        RefusalOutcome(answerable=True, refused=True, evidence_in_context=False),
        RefusalOutcome(answerable=True, refused=False, evidence_in_context=False),
    ]
    scores = refusal_scores(outcomes)
    assert scores["refusal_recall"] == pytest.approx(2 / 3)
    assert scores["over_refusal"] == 2 / 4
    assert scores["refusal_precision"] == 2 / 4  # 4 refusals, 2 of unanswerable questions
    assert scores["over_refusal_evidence_in_context"] == 1 / 2
    assert scores["over_refusal_evidence_not_in_context"] == 1 / 2


def test_refusal_shares_are_none_without_their_questions():
    scores = refusal_scores([RefusalOutcome(answerable=True, refused=False)])
    assert scores["refusal_recall"] is None and scores["refusal_precision"] is None
    assert scores["over_refusal"] == 0.0


# --- evidence position --------------------------------------------------------------------------


def test_evidence_rank_is_the_first_context_passage_reaching_gold():
    context = [Passage("parking"), Passage("leave", 40, 90), Passage("handbook", 120, 130)]
    assert evidence_rank(context, LEAVE) == 3
    assert evidence_rank([], LEAVE) is None
    assert evidence_rank([Passage("parking")], LEAVE) is None


def test_thirds_of_the_context():
    # 6 passages: ranks 1-2 first third, 3-4 middle, 5-6 last third.
    assert [position_thirds(rank, 6) for rank in range(1, 7)] == [
        (True, False),
        (True, False),
        (False, False),
        (False, False),
        (False, True),
        (False, True),
    ]
    assert position_thirds(1, 1) == (True, True)  # a single passage is both
    assert position_thirds(2, 3) == (False, False)


# --- a whole run --------------------------------------------------------------------------------


def _answer(question_id, *, refused=False, citations=(), context=(), text="Staff get 25 days."):
    sentences = (Sentence(0, len(text), tuple(citations)),) if text else ()
    return Answer(question_id, text, refused, sentences, tuple(context), line=1)


def _gold():
    return Gold(
        questions={
            "q1": LEAVE,
            "q2": GoldQuestion("q2", "pension", True, (GoldSpan("pension", 0, 20, 2),)),
            "q3": GoldQuestion("q3", "gym", False, ()),
            "q4": GoldQuestion("q4", "canteen", False, ()),
            "q5": GoldQuestion("q5", "bikes", True, (GoldSpan("bikes", 0, 10, 1),)),
        }
    )


def _answers():
    return {
        # Cites the gold passage and the wrong one; gold in context at rank 2 of 3.
        "q1": _answer(
            "q1",
            citations=[Passage("leave", 0, 34), Passage("parking")],
            context=[Passage("parking"), Passage("leave", 0, 34), Passage("pension")],
        ),
        # Refused although its evidence was sent (rank 1 of 1).
        "q2": _answer("q2", refused=True, text="", context=[Passage("pension")]),
        # Rightly refused; q4 wrongly answered; q5 missing.
        "q3": _answer("q3", refused=True, text=""),
        "q4": _answer("q4", context=[Passage("parking")]),
    }


def test_automatic_scores_of_a_run_from_the_gold_alone():
    evaluation = evaluate_answers(gold=_gold(), answers=_answers(), name="rag")
    scores = evaluation.scores
    assert list(scores) == list(SCORE_NAMES)
    # q1: 1 of 2 citations reaches gold; q2 refused (left out); q5 missing (0): (0.5 + 0) / 2.
    assert scores["gold_citation_precision"] == 0.25
    # Answered or refused: answerable q1, q2 (q2 refused); unanswerable q3 (refused), q4.
    assert scores["over_refusal"] == 0.5
    assert scores["refusal_recall"] == 0.5
    assert scores["refusal_precision"] == 0.5
    assert scores["over_refusal_evidence_in_context"] == 0.5  # q1 answered, q2 refused
    assert scores["over_refusal_evidence_not_in_context"] is None
    # Evidence: q1 at rank 2 of 3 (middle), q2 at rank 1 of 1 (first and last).
    assert scores["evidence_in_context"] == 1.0
    assert scores["evidence_mean_rank"] == 1.5
    assert scores["evidence_first_third"] == 0.5
    assert scores["evidence_last_third"] == 0.5
    # No judgements: no human score.
    assert all(scores[name] is None for name in ("faithfulness", "correctness"))
    assert evaluation.counts["missing"] == 1 and evaluation.coverage is None


def test_human_scores_come_from_grades_matching_the_answer_exactly():
    answers = _answers()
    facts = (ReferenceFact("f1", "25 days", vital=True), ReferenceFact("f2", "HR", vital=False))
    grades = AnswerGrades(
        question_id="q1",
        answer_key=answers["q1"].key(),
        claims=(
            GradedClaim(0, 9, "full", (GradedCitation(Passage("leave", 0, 34), 2),)),
            GradedClaim(10, 18, "partial", (GradedCitation(Passage("parking"), 0),)),
        ),
        facts={"f1": "yes", "f2": "partly"},
    )
    answer_gold = AnswerGold(
        references={"q1": facts, "q2": facts, "q5": facts},
        grades={("q1", grades.answer_key): grades},
    )
    evaluation = evaluate_answers(
        gold=_gold(), answers=answers, name="rag", answer_gold=answer_gold
    )
    scores = evaluation.scores
    # q1 is the only answer to grade (q2 refused, q5 missing) and it is graded.
    assert evaluation.coverage == 1.0
    assert scores["faithfulness"] == 0.75  # (1 + 0.5) / 2
    # q1: precision 1/2, recall 1/2; q5 missing scores 0.
    assert scores["citation_precision"] == 0.25
    assert scores["citation_recall"] == 0.25
    # q1: (1 + 0.5) / 2 = 0.75; q2 refused and q5 missing: 0 each.
    assert scores["correctness"] == 0.25
    assert scores["correctness_vital"] == pytest.approx(1 / 3)  # q1 1.0, q2 0, q5 0
    assert scores["correctness_strict"] == pytest.approx(0.5 / 3)

    # The same grades do not cover an answer that cites something else.
    changed = dict(answers, q1=_answer("q1", citations=[Passage("leave", 0, 34)]))
    other = evaluate_answers(gold=_gold(), answers=changed, name="b", answer_gold=answer_gold)
    assert other.coverage == 0.0
    assert other.scores["faithfulness"] is None


def test_an_answer_graded_without_claims_is_counted_apart():
    answers = {"q1": _answer("q1", text="")}
    grades = AnswerGrades("q1", answers["q1"].key(), claims=(), facts={})
    answer_gold = AnswerGold(grades={("q1", grades.answer_key): grades})
    evaluation = evaluate_answers(
        gold=_gold(), answers=answers, name="rag", answer_gold=answer_gold
    )
    assert evaluation.scores["faithfulness"] is None
    assert evaluation.counts["answers_without_claims"] == 1


def test_two_runs_are_compared_question_by_question():
    gold = _gold()
    a = evaluate_answers(gold=gold, answers=_answers(), name="a")
    b_answers = dict(_answers(), q2=_answer("q2", citations=[Passage("pension", 0, 20)]))
    b = evaluate_answers(gold=gold, answers=b_answers, name="b")
    comparisons = {c.metric: c for c in compare_answer_runs({"a": a, "b": b}, permutations=200)}
    # over_refusal per answerable answered question: a (q1 0, q2 1), b (q1 0, q2 0).
    assert comparisons["over_refusal"].delta == 0.5
    # gold citation precision paired on q1 and q5 only (q2 refused in a): equal.
    assert comparisons["gold_citation_precision"].delta == 0.0
    assert comparisons["gold_citation_precision"].p_value == 1.0
    assert "faithfulness" not in comparisons  # no judgements, nothing to pair
