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
    faithfulness_graded,
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


def claim(support="full", *grades, together=None, sets=()):
    citations = tuple(GradedCitation(Passage(f"d{i}"), grade) for i, grade in enumerate(grades))
    return GradedClaim(0, 10, support, citations, together, tuple(frozenset(s) for s in sets))


# --- faithfulness -------------------------------------------------------------------------------


def test_faithfulness_is_ragas_a_partly_supported_claim_is_not_supported():
    # Ragas: supported claims / claims = 1 / 3 (the partial claim counts nothing).
    claims = [claim("full"), claim("partial"), claim("none")]
    assert faithfulness(claims) == pytest.approx(1 / 3)
    # faithfulness_graded keeps the half credit: (1 + 0.5 + 0) / 3 = 0.5.
    assert faithfulness_graded(claims) == 0.5
    assert faithfulness([claim("partial"), claim("partial")]) == 0.0
    assert faithfulness_graded([claim("partial"), claim("partial")]) == 0.5
    assert faithfulness([claim("full"), claim("full")]) == faithfulness_graded([claim("full")])


def test_faithfulness_of_an_answer_without_claims_is_none_not_zero():
    assert faithfulness([]) is None
    assert faithfulness_graded([]) is None


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


def test_three_partial_citations_any_two_of_which_support_count_none():
    # ALCE: a citation is irrelevant when it does not support alone and the others still
    # support the claim without it. Any two of the three do: each is irrelevant, 0 / 3.
    any_two = claim("full", 1, 1, 1, together=True, sets=[(0, 1), (0, 2), (1, 2)])
    assert precise_citations(any_two) == 0
    assert citation_scores([any_two]) == (0.0, 1.0)  # the claim is still supported: recall 1
    # Only c0 and c1 together support it: c2 is irrelevant, c0 and c1 are needed, 2 / 3.
    one_pair = claim("full", 1, 1, 1, together=True, sets=[(0, 1)])
    assert precise_citations(one_pair) == 2
    # Only the three together: each is needed, 3 / 3.
    all_three = claim("full", 1, 1, 1, together=True)
    assert precise_citations(all_three) == 3
    # A recorded group is a joint support even without citations_support.
    assert claim("full", 1, 1, sets=[(0, 1)]).cited_support


def test_a_citation_graded_zero_beside_supporting_ones_is_irrelevant():
    # c0 and c1 partly support and together support; c2 does not support at all: removing it
    # leaves the claim supported. 2 precise of 3 citations.
    assert citation_scores([claim("full", 1, 1, 0, together=True)]) == (pytest.approx(2 / 3), 1.0)
    # One citation that supports (with the grades given): it counts, as ALCE's single case.
    assert precise_citations(claim("full", 1, together=True)) == 1
    assert precise_citations(claim("full", 0)) == 0


def _alce_precision(claim_):
    """ALCE's compute_autoais loop, transcribed, with the grades as the entailment oracle."""
    every = frozenset(range(len(claim_.citations)))
    joint = claim_.supported_by(every)
    if not (joint and len(every) > 1):
        return int(joint) if every else 0
    precise = 0
    for i in every:
        alone = claim_.supported_by(frozenset({i}))
        if alone or not claim_.supported_by(every - {i}):
            precise += 1
    return precise


@pytest.mark.parametrize(
    "grades", [(2,), (1,), (0,), (2, 2), (2, 1), (1, 1), (1, 0), (2, 1, 0), (1, 1, 1), (1, 1, 1, 1)]
)
@pytest.mark.parametrize("together", [None, True, False])
@pytest.mark.parametrize("sets", [(), [(0,)], [(0, 1)], [(0, 1), (1, 2)], [(1, 2), (0, 2)]])
def test_precision_matches_alces_loop_on_every_small_claim(grades, together, sets):
    sets = [s for s in sets if max(s) < len(grades)]
    graded = claim("full", *grades, together=together, sets=sets)
    assert precise_citations(graded) == _alce_precision(graded)


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


def test_nugget_scores_all_vital_strict_and_strict_vital():
    # f1 yes, f2 partly, f3 no, f4 not graded (absent).
    result = correctness(FACTS, {"f1": "yes", "f2": "partly", "f3": "no"})
    assert result.correctness == (1 + 0.5) / 4  # All: 0.375
    assert result.vital == (1 + 0.5) / 2  # Vital: 0.75
    assert result.strict == 1 / 4  # Strict All: partly counts nothing
    assert result.strict_vital == 1 / 2  # Strict Vital: f1 of f1, f2


def test_a_question_without_vital_facts_scores_zero_on_the_vital_scores():
    # The TREC 2024 RAG scorer: `... / len(vital_nuggets) if vital_nuggets else 0.0`.
    okay_only = (ReferenceFact("f", "x", vital=False),)
    result = correctness(okay_only, {"f": "yes"})
    assert (result.correctness, result.vital, result.strict, result.strict_vital) == (
        1.0,
        0.0,
        1.0,
        0.0,
    )
    # Without any reference fact, no correctness at all (no reference answer was written).
    assert correctness((), {}) == correctness((), {"f": "yes"})
    assert correctness((), {}).correctness is None and correctness((), {}).strict_vital is None


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
    # Every gold question counts, as in evaluate: answerable q1, q2 (refused), q5 (missing: not
    # refused); unanswerable q3 (refused), q4.
    assert scores["over_refusal"] == pytest.approx(1 / 3)
    assert scores["refusal_recall"] == 0.5
    assert scores["refusal_precision"] == 0.5
    assert scores["over_refusal_evidence_in_context"] == 0.5  # q1 answered, q2 refused
    # q5 is missing: no context was sent, and it did not refuse.
    assert scores["over_refusal_evidence_not_in_context"] == 0.0
    # Evidence: q1 at rank 2 of 3 (middle), q2 at rank 1 of 1 (first and last).
    assert scores["evidence_in_context"] == 1.0
    assert scores["evidence_mean_rank"] == 1.5
    assert scores["evidence_first_third"] == 0.5
    assert scores["evidence_last_third"] == 0.5
    # No judgements: no human score.
    assert all(scores[name] is None for name in ("faithfulness", "correctness"))
    assert evaluation.counts["missing"] == 1 and evaluation.coverage is None
    assert evaluation.missing_questions == ["q5"]


def test_a_missing_unanswerable_question_counts_as_not_refused():
    # 4 unanswerable questions: 2 refused, 1 answered, 1 missing: refusal recall 2 / 4 (as
    # evaluate's refusal accuracy), not 2 / 3.
    gold = Gold(
        questions={f"u{i}": GoldQuestion(f"u{i}", "", False, ()) for i in range(4)}
        | {"a": GoldQuestion("a", "", True, (GoldSpan("x", 0, 5, 1),))}
    )
    answers = {
        "u0": _answer("u0", refused=True, text=""),
        "u1": _answer("u1", refused=True, text=""),
        "u2": _answer("u2"),
        "a": _answer("a"),
    }
    evaluation = evaluate_answers(gold=gold, answers=answers, name="rag")
    assert evaluation.scores["refusal_recall"] == 2 / 4
    assert evaluation.scores["refusal_precision"] == 1.0
    assert evaluation.per_question["u3"]["refusal_recall"] == 0.0
    assert evaluation.missing_questions == ["u3"]


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
    assert scores["faithfulness"] == 0.5  # Ragas: 1 full of 2 claims
    assert scores["faithfulness_graded"] == 0.75  # (1 + 0.5) / 2
    # q1: precision 1/2, recall 1/2; q5 missing scores 0.
    assert scores["citation_precision"] == 0.25
    assert scores["citation_recall"] == 0.25
    # q1: (1 + 0.5) / 2 = 0.75; q2 refused and q5 missing: 0 each.
    assert scores["correctness"] == 0.25
    assert scores["correctness_vital"] == pytest.approx(1 / 3)  # q1 1.0, q2 0, q5 0
    assert scores["correctness_strict"] == pytest.approx(0.5 / 3)
    assert scores["correctness_strict_vital"] == pytest.approx(1 / 3)  # q1 f1 present

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
    # over_refusal per answerable question: a (q1 0, q2 1, q5 missing 0), b (0, 0, 0).
    assert comparisons["over_refusal"].delta == pytest.approx(1 / 3)
    # gold citation precision paired on q1 and q5 only (q2 refused in a): equal.
    assert comparisons["gold_citation_precision"].delta == 0.0
    assert comparisons["gold_citation_precision"].p_value == 1.0
    assert "faithfulness" not in comparisons  # no judgements, nothing to pair
