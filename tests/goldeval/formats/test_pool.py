"""pool.jsonl (issue 34): read back into each pooled retriever's run; a bad line names itself."""

import pytest

from goldeval.formats.pool import PoolFormatError, read_pool
from goldeval.formats.runfiles import Passage

GOOD = (
    b'{"question_id": "q1", "retriever": "bm25", "passages": ['
    b'{"doc_id": "b", "start": 0, "end": 5, "rank": 2}, {"doc_id": "a", "rank": 1}]}\n'
    b'{"question_id": "q1", "retriever": "dense", "passages": [{"doc_id": "c", "rank": 3}]}\n'
)


def test_runs_by_rank_and_the_deepest_rank():
    pooled = read_pool(GOOD)
    assert set(pooled.runs) == {"bm25", "dense"}
    assert pooled.runs["bm25"].rankings["q1"].passages == [Passage("a"), Passage("b", 0, 5)]
    assert pooled.depth == 3


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"question_id": "q1", "retriever": "r", "passages": [{"doc_id": "a"}]}', "rank"),
        (
            b'{"question_id": "q1", "retriever": "r", "passages": [{"doc_id": "a", "rank": 0}]}',
            "rank",
        ),
        (b'{"question_id": "q1", "retriever": "", "passages": []}', "retriever"),
        (b'{"question_id": 7, "retriever": "r", "passages": []}', "question_id"),
        (b'{"question_id": "q1", "retriever": "r", "passages": {}}', "passages must be a list"),
        (b'{"question_id": "q1", "retriever": "r", "passages": [{"rank": 1}]}', "doc_id"),
        (
            b'{"question_id": "q1", "retriever": "r", "passages": '
            b'[{"doc_id": "a", "start": 5, "end": 2, "rank": 1}]}',
            "range",
        ),
        (b'{"question_id": "q1", ', "not valid JSON"),
        (b"\xff\xfe", "UTF-8"),
    ],
)
def test_a_bad_line_is_named(line, message):
    with pytest.raises(PoolFormatError) as error:
        read_pool(GOOD + line + b"\n", path="pool.jsonl")
    assert message in str(error.value)
    if message != "UTF-8":
        assert error.value.line == 3
