"""answers-gold.jsonl: reference facts and answer grades read back, bad lines named."""

import json

import pytest

from goldeval.formats.answer_gold import AnswerGoldError, read_answer_gold
from goldeval.formats.runfiles import Passage


def jsonl(*records):
    return "".join(json.dumps(record) + "\n" for record in records)


REFERENCE = {
    "kind": "reference",
    "question_id": "q1",
    "version": 2,
    "facts": [
        {
            "fact_id": "f1",
            "text": "25 days",
            "importance": "vital",
            "spans": [{"doc_id": "leave", "start": 0, "end": 34}],
        },
        {"fact_id": "f2", "text": "ask HR", "importance": "okay"},
    ],
}
GRADES = {
    "kind": "answer",
    "question_id": "q1",
    "answer_key": "abc",
    "run": "rag",
    "claims": [
        {
            "start": 0,
            "end": 18,
            "support": "partial",
            "citations": [{"doc_id": "leave", "grade": 1}, {"doc_id": "hb", "grade": 1}],
            "citations_support": True,
        }
    ],
    "facts": [{"fact_id": "f1", "present": "partly"}],
}


def test_references_and_grades_are_read():
    gold = read_answer_gold(jsonl(REFERENCE, GRADES))
    facts = gold.references["q1"]
    assert [(f.fact_id, f.vital, f.spans) for f in facts] == [
        ("f1", True, (Passage("leave", 0, 34),)),
        ("f2", False, ()),
    ]
    assert gold.reference_versions == {"q1": 2}
    grades = gold.grades_for("q1", "abc")
    assert grades.facts == {"f1": "partly"} and grades.run == "rag"
    (claim,) = grades.claims
    assert claim.support == "partial" and claim.cited_support
    assert [c.grade for c in claim.citations] == [1, 1]


@pytest.mark.parametrize(
    "record, message",
    [
        ({"kind": "other"}, 'kind must be "reference" or "answer"'),
        (
            {**GRADES, "claims": [{"start": 0, "end": 5, "support": "mostly"}]},
            'claim 1: support must be "full", "partial" or "none"',
        ),
        (
            {
                **GRADES,
                "claims": [
                    {
                        "start": 0,
                        "end": 5,
                        "support": "full",
                        "citations": [{"doc_id": "d", "grade": 3}],
                    }
                ],
            },
            "claim 1: a citation grade must be 2, 1 or 0",
        ),
        ({**GRADES, "facts": [{"fact_id": "f1", "present": "maybe"}]}, "present must be"),
        (
            {**REFERENCE, "facts": [{"fact_id": "f", "text": "x", "importance": "key"}]},
            "importance",
        ),
    ],
)
def test_bad_lines_name_the_file_and_line(record, message):
    with pytest.raises(AnswerGoldError) as error:
        read_answer_gold(
            jsonl(REFERENCE | {"question_id": "q0"}, record), source="answers-gold.jsonl"
        )
    assert error.value.line == 2
    assert message in str(error.value)
    assert str(error.value).startswith("answers-gold.jsonl:2: ")


def test_grades_of_an_unknown_fact_are_refused():
    with pytest.raises(AnswerGoldError, match="graded fact 'f9' is not one of its reference facts"):
        read_answer_gold(
            jsonl(REFERENCE, {**GRADES, "facts": [{"fact_id": "f9", "present": "yes"}]})
        )


def _with_claim(**changes):
    claim = {**GRADES["claims"][0], **changes}
    return {**GRADES, "claims": [claim]}


def test_supporting_sets_are_read_as_groups_of_citation_positions():
    gold = read_answer_gold(jsonl(REFERENCE, _with_claim(supporting_sets=[[0], [1, 0]])))
    (claim,) = gold.grades_for("q1", "abc").claims
    assert claim.supporting_sets == (frozenset({0}), frozenset({0, 1}))
    assert claim.supported_by(frozenset({0})) and not claim.supported_by(frozenset({1}))


@pytest.mark.parametrize(
    "groups",
    [
        [[2]],  # only two citations: positions 0 and 1
        [[-1]],
        [[]],
        [[0, 0]],
        [["0"]],
        [[True]],
        [0],
        "0,1",
        [[0]] * 65,  # bounded
    ],
)
def test_bad_supporting_sets_are_refused_with_the_claim_and_line(groups):
    with pytest.raises(AnswerGoldError) as raised:
        read_answer_gold(jsonl(REFERENCE, _with_claim(supporting_sets=groups)))
    assert "answers-gold.jsonl:2: " in str(raised.value)
    assert "supporting_sets" in str(raised.value)


def test_supporting_sets_of_a_claim_without_citations_are_refused():
    with pytest.raises(AnswerGoldError, match="no citations"):
        read_answer_gold(jsonl(REFERENCE, _with_claim(citations=[], supporting_sets=[[0]])))
