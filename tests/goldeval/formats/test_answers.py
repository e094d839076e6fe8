"""The answer-run format: what a line becomes, and every bad line named with its number."""

import json

import pytest

from goldeval.formats.answers import (
    Sentence,
    answer_key,
    check_answers,
    read_answer_file,
    split_sentences,
)
from goldeval.formats.runfiles import Passage
from goldeval.formats.textfiles import NotUTF8Error


def jsonl(*records):
    return "".join(json.dumps(record) + "\n" for record in records)


def line(**fields):
    return {"question_id": "q1", "answer": "Staff get 25 days.", "refused": False, **fields}


def problems_of(text):
    return [(p.line, p.message) for p in read_answer_file(text).problems]


def test_a_full_line_is_read_with_sentences_citations_context_and_labels():
    text = "Staff get 25 days. Ask HR."
    read = read_answer_file(
        jsonl(
            {
                "question_id": "q1",
                "answer": text,
                "refused": False,
                "sentences": [
                    {
                        "start": 0,
                        "end": 18,
                        "citations": [{"doc_id": "leave", "start": 0, "end": 34}],
                    },
                    {"start": 19, "end": 26},
                ],
                "context": [{"doc_id": "leave", "start": 0, "end": 34}, {"doc_id": 7}],
                "system": "rag",
                "version": 3,
            }
        )
    )
    assert read.problems == []
    answer = read.answers["q1"]
    assert answer.sentences == (
        Sentence(0, 18, (Passage("leave", 0, 34),)),
        Sentence(19, 26, ()),
    )
    assert answer.context == (Passage("leave", 0, 34), Passage("7"))
    assert (answer.system, answer.version, answer.line) == ("rag", "3", 1)
    assert answer.sentences_given and answer.citations == 1


def test_sentences_left_out_are_split_from_the_answer():
    text = "Staff get 25 days, e.g. full-time staff. Part-timers get less!\nAsk HR"
    answer = read_answer_file(jsonl(line(answer=text))).answers["q1"]
    assert not answer.sentences_given
    assert [text[s.start : s.end] for s in answer.sentences] == [
        "Staff get 25 days, e.g. full-time staff.",
        "Part-timers get less!",
        "Ask HR",
    ]
    assert all(s.citations == () for s in answer.sentences)


@pytest.mark.parametrize(
    "text", ["I don't know.", "No idea. Ask HR!", "I cannot answer that from the documents"]
)
def test_a_refusal_left_unsplit_has_no_sentences_to_grade_as_claims(text):
    # Issue 33: splitting a refusal made reviewers grade "I don't know." as a claim.
    answer = read_answer_file(jsonl(line(answer=text, refused=True))).answers["q1"]
    assert answer.refused and answer.sentences == () and not answer.sentences_given


def test_a_refusal_keeps_the_sentences_it_was_given():
    given = [{"start": 0, "end": 13}]
    answer = read_answer_file(
        jsonl(line(answer="I don't know.", refused=True, sentences=given))
    ).answers["q1"]
    assert answer.sentences_given and [(s.start, s.end) for s in answer.sentences] == [(0, 13)]


def test_split_sentences_trims_white_space_and_keeps_closing_quotes():
    text = '  He said "stop." Then he left...   '
    assert [text[a:b] for a, b in split_sentences(text)] == ['He said "stop."', "Then he left..."]
    assert split_sentences("") == [] and split_sentences(" \n ") == []


def test_refused_is_required_and_must_be_a_boolean():
    record = line()
    del record["refused"]
    assert problems_of(jsonl(record)) == [(1, "question 'q1': refused is required (true or false)")]
    assert problems_of(jsonl(line(refused="no"))) == [
        (1, "question 'q1': refused must be true or false")
    ]


def test_a_refusal_may_have_an_empty_answer():
    answer = read_answer_file(jsonl(line(answer="", refused=True))).answers["q1"]
    assert answer.refused and answer.sentences == ()


def test_sentences_outside_the_answer_or_overlapping_are_refused_with_the_line():
    text = jsonl(
        line(question_id="ok"),
        line(sentences=[{"start": 0, "end": 40}]),
        line(question_id="q2", sentences=[{"start": 0, "end": 10}, {"start": 5, "end": 18}]),
        line(question_id="q3", sentences=[{"start": 3, "end": 3}]),
        line(question_id="q4", sentences=[{"start": "0", "end": 3}]),
    )
    assert problems_of(text) == [
        (2, "question 'q1': sentence 1 [0, 40) is outside the answer (18 characters)"),
        (
            3,
            "question 'q2': sentence 2 [5, 18) overlaps or comes before sentence 1; "
            "give sentences in order, without overlaps",
        ),
        (4, "question 'q3': sentence 1 has an empty or negative range [3, 3)"),
        (
            5,
            "question 'q4': sentence 1 needs whole-number start and end (offsets into the answer)",
        ),
    ]
    assert list(read_answer_file(text).answers) == ["ok"]


def test_bad_citations_and_context_passages_name_their_place():
    text = jsonl(
        line(sentences=[{"start": 0, "end": 5, "citations": [{"doc_id": "d", "start": 3}]}]),
        line(question_id="q2", context=[{"doc_id": "d"}, {"start": 0, "end": 3}]),
        line(question_id="q3", context={"doc_id": "d"}),
    )
    assert problems_of(text) == [
        (1, "question 'q1': sentence 1, citation 1 (d) needs both start and end, or neither"),
        (2, "question 'q2': context passage 2 needs a doc_id"),
        (3, "question 'q3': context must be a list of passages"),
    ]


def test_duplicate_questions_bad_json_and_missing_ids():
    text = jsonl(line(), line()) + "{not json\n" + jsonl({"answer": "x", "refused": False})
    assert problems_of(text) == [
        (2, "question 'q1' already given on line 1"),
        (3, "not valid JSON (Expecting property name enclosed in double quotes)"),
        (4, "question_id must be a non-empty string"),
    ]


def test_an_empty_file_is_a_problem_of_its_own():
    assert problems_of("") == [(1, "the file holds no answers (one JSON object a line)")]
    assert problems_of("# only a comment\n\n") == [
        (1, "the file holds no answers (one JSON object a line)")
    ]


def test_bytes_that_are_not_utf8_raise():
    with pytest.raises(NotUTF8Error):
        read_answer_file(b'{"question_id": "q\xff"}')


def test_unknown_questions_documents_and_passages_past_the_end():
    answers = read_answer_file(
        jsonl(
            line(question_id="stranger"),
            line(context=[{"doc_id": "leave", "start": 0, "end": 500}]),
            line(
                question_id="q2",
                sentences=[{"start": 0, "end": 5, "citations": [{"doc_id": "nowhere"}]}],
            ),
            line(question_id="q3", context=[{"doc_id": "leave"}]),
        )
    ).answers
    problems = check_answers(
        answers, question_ids={"q1", "q2", "q3"}, document_lengths={"leave": 100}
    )
    assert [(p.line, p.message) for p in problems] == [
        (1, "question 'stranger' is not in the question set"),
        (
            2,
            "question 'q1': context passage 1 [0, 500) is outside document 'leave' "
            "(100 characters)",
        ),
        (
            3,
            "question 'q2': sentence 1, citation 1 names document 'nowhere', which is not in "
            "the corpus",
        ),
    ]
    # Without the corpus only the questions can be checked.
    assert len(check_answers(answers, question_ids={"q1", "q2", "q3"})) == 1


def test_the_key_changes_with_what_the_answer_says_and_only_with_that():
    one = read_answer_file(jsonl(line(system="a"))).answers["q1"]
    same = read_answer_file(jsonl(line(system="b", version="2"))).answers["q1"]
    cited = read_answer_file(
        jsonl(line(sentences=[{"start": 0, "end": 18, "citations": [{"doc_id": "d"}]}]))
    ).answers["q1"]
    assert answer_key(one) == answer_key(same) == one.key()
    assert answer_key(one) != answer_key(cited)
