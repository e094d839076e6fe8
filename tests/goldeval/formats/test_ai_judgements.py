"""``ai-judgements.jsonl`` (issue 35, 5b): the reader takes good lines, refuses bad ones with the
line, bounds what it keeps, and reads back exactly what `record` writes."""

import json

import pytest

from goldeval.formats import ai_judgements as module
from goldeval.formats.ai_judgements import (
    AIJudgement,
    AIJudgementsError,
    load_ai_judgements,
    read_ai_judgements,
    record,
)
from goldeval.formats.runfiles import Passage

GOOD = {
    "question_id": "q1",
    "doc_id": "handbook",
    "version": 3,
    "start": 10,
    "end": 40,
    "grade": 2,
    "judge": "qwen",
    "model": "qwen2.5",
    "prompt_version": 2,
}


def lines(*records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_a_good_file_reads_every_field():
    whole = {"question_id": 7, "doc_id": "faq", "grade": 0, "judge": "j"}
    read = read_ai_judgements(lines(GOOD, whole))
    first, second = read.judgements
    assert first == AIJudgement("q1", Passage("handbook", 10, 40), 2, "qwen", "qwen2.5", 2, 3)
    # A whole number id is read as its digits; without offsets it is the whole document.
    assert second == AIJudgement("7", Passage("faq", None, None), 0, "j")
    assert read.judges == ["j", "qwen"]
    assert read.of_judge("j") == [second]


def test_what_record_writes_reads_back_exactly():
    judgements = [
        AIJudgement("q1", Passage("a", 0, 5), 1, "j", "m", 1, 2),
        AIJudgement("q2", Passage("b", None, None), 0, "j"),
    ]
    assert read_ai_judgements(lines(*map(record, judgements))).judgements == judgements


def test_a_repeated_line_counts_once_and_a_conflict_is_refused():
    read = read_ai_judgements(lines(GOOD, GOOD))
    assert len(read.judgements) == 1 and "1 repeated" in read.warnings[0]
    with pytest.raises(AIJudgementsError) as error:
        read_ai_judgements(lines(GOOD, {**GOOD, "grade": 1}))
    assert error.value.line == 2 and "line 1 grades it 2" in str(error.value)
    # Another judge may grade the same passage otherwise.
    assert (
        len(read_ai_judgements(lines(GOOD, {**GOOD, "judge": "other", "grade": 0})).judgements) == 2
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"grade": 3}, "grade must be 0, 1 or 2, not 3"),
        ({"grade": 1.0}, "grade must be 0, 1 or 2"),
        ({"grade": True}, "grade must be 0, 1 or 2"),
        ({"grade": None}, "grade must be 0, 1 or 2"),
        ({"question_id": ""}, "question_id must be a non-empty string"),
        ({"doc_id": None}, "doc_id must be a non-empty string"),
        ({"judge": ""}, "judge must be a non-empty string"),
        ({"judge": 5}, "judge must be a non-empty string"),
        ({"model": ["m"]}, "model must be a string"),
        ({"start": 5, "end": None}, "give both start and end"),
        ({"start": 9, "end": 3}, "empty or negative range"),
        ({"start": "0"}, "start and end must be integers"),
        ({"end": 2**40}, "end must be from 1 to 2,147,483,647"),
        ({"prompt_version": 0}, "prompt_version must be from 1"),
        ({"version": "3"}, "version must be a whole number"),
        ({"judge": "j" * 201}, "judge is longer than 200 characters"),
        ({"doc_id": "d" * 1001}, "doc_id is longer than 1,000 characters"),
        ({"judge": "a\x00b"}, "judge contains a NUL character"),
    ],
)
def test_a_bad_line_is_refused_with_its_line(change, message):
    with pytest.raises(AIJudgementsError) as error:
        read_ai_judgements(
            lines(GOOD, {**GOOD, **change, "question_id": change.get("question_id", "q2")})
        )
    assert error.value.line == 2
    assert message in str(error.value)


def test_not_json_not_utf8_and_too_many_lines_are_refused(monkeypatch, tmp_path):
    with pytest.raises(AIJudgementsError, match="not valid JSON"):
        read_ai_judgements(b'{"question_id": \n')
    with pytest.raises(AIJudgementsError, match="expected a JSON object"):
        read_ai_judgements(b"[1, 2]\n")
    with pytest.raises(AIJudgementsError, match="not UTF-8"):
        read_ai_judgements(b"\xff\xfe{}\n")
    monkeypatch.setattr(module, "MAX_JUDGEMENTS", 2)
    records = [{**GOOD, "question_id": f"q{i}"} for i in range(3)]
    with pytest.raises(AIJudgementsError, match="more than 2 judgements"):
        read_ai_judgements(lines(*records))
    with pytest.raises(AIJudgementsError, match="no such file"):
        load_ai_judgements(tmp_path / "missing.jsonl")
    # A folder is read as a bundle folder.
    (tmp_path / "ai-judgements.jsonl").write_bytes(lines(GOOD))
    assert len(load_ai_judgements(tmp_path).judgements) == 1
