"""The trace format (goldeval/formats/traces.py), Django-free."""

import json
from datetime import UTC, datetime

from goldeval.formats.traces import read_trace, read_trace_lines, read_trace_stream

TRACE = {
    "trace_id": "t-1",
    "occurred_at": "2026-11-30T09:15:00Z",
    "user": {"id": "u-7", "groups": ["hr"]},
    "question": "  how many days  can i carry over?? ",
    "retrieved": [
        {"doc_id": "leave", "start": 0, "end": 120, "rank": 2, "score": 0.4},
        {"doc_id": "salaries", "rank": 1, "score": 0.9},
    ],
    "answer": "Five days.",
    "citations": [{"doc_id": "leave", "start": 0, "end": 40}],
    "refused": False,
    "feedback": {"thumb": "down", "comment": "wrong"},
    "system_version": "rag-2.3",
    "index_manifest": {"model": "minilm"},
}


def test_a_full_trace_reads_with_the_question_kept_byte_for_byte():
    record = read_trace(TRACE)
    assert record.trace_id == "t-1"
    assert record.occurred_at == datetime(2026, 11, 30, 9, 15, tzinfo=UTC)
    assert record.question == "  how many days  can i carry over?? "
    assert [p.doc_id for p in record.retrieved] == ["salaries", "leave"]  # by rank
    assert record.retrieved[1].start == 0 and record.retrieved[1].end == 120
    assert record.user == "u-7" and record.user_groups == ("hr",)
    assert record.thumb == "down" and record.comment == "wrong"
    assert record.refused is False and record.top_score == 0.9
    assert record.system_version == "rag-2.3"


def test_openinference_names_are_accepted():
    span = {
        "context": {"trace_id": "abc123"},
        "start_time": "2026-11-30T09:15:00+01:00",
        "attributes": {
            "input.value": "What is HR-F-112?",
            "output.value": "A form.",
            "user.id": "u-1",
            "retrieval.documents": [
                {"document.id": "leave", "document.score": 0.5},
                {"document.id": "salaries", "document.score": 0.2},
            ],
            "metadata": {"system_version": "v9"},
        },
    }
    record = read_trace(span)
    assert record.trace_id == "abc123"
    assert record.question == "What is HR-F-112?" and record.answer == "A form."
    assert [(p.doc_id, p.rank) for p in record.retrieved] == [("leave", 1), ("salaries", 2)]
    assert record.user == "u-1" and record.system_version == "v9"
    assert record.occurred_at == datetime(2026, 11, 30, 8, 15, tzinfo=UTC)


def test_openinference_flattened_documents_are_read_in_index_order():
    span = {
        "context.trace_id": "flat-1",
        "start_time": 1764579600_000_000_000,  # nanoseconds, as OpenTelemetry counts
        "attributes": {
            "input.value": "vpn?",
            "retrieval.documents.1.document.id": "vpn",
            "retrieval.documents.1.document.score": 0.2,
            "retrieval.documents.0.document.id": "leave",
            "retrieval.documents.0.document.score": 0.9,
        },
    }
    record = read_trace(span)
    assert [(p.doc_id, p.rank, p.score) for p in record.retrieved] == [
        ("leave", 1, 0.9),
        ("vpn", 2, 0.2),
    ]
    assert record.occurred_at == datetime(2025, 12, 1, 9, 0, tzinfo=UTC)


def test_every_problem_of_an_item_is_named():
    problems = read_trace({"retrieved": [{"rank": 0}], "feedback": {"thumb": "meh"}})
    text = "; ".join(problems)
    assert "trace_id is missing" in text
    assert "occurred_at is missing" in text
    assert "question is missing" in text
    assert "retrieved[0].doc_id is missing" in text
    assert "feedback.thumb 'meh' is not up or down" in text
    assert read_trace([1]) == ["expected a JSON object"]
    bad_time = read_trace({**TRACE, "occurred_at": "last tuesday"})
    assert bad_time == ["occurred_at 'last tuesday' is not an ISO 8601 time"]
    assert read_trace({**TRACE, "question": "a\x00b"}) == [
        "question contains a NUL character (U+0000)"
    ]
    half = {**TRACE, "retrieved": [{"doc_id": "x", "start": 5}]}
    assert "start and end must both be offsets" in read_trace(half)[0]


def test_lines_report_their_number():
    data = (json.dumps(TRACE) + "\n\n{not json\n" + json.dumps({"trace_id": "x"}) + "\n").encode()
    lines = list(read_trace_lines(data))
    assert lines[0][0] == 1 and lines[0][1].trace_id == "t-1"
    assert lines[1][0] == 3 and "not valid JSON" in lines[1][1].message
    assert lines[2][0] == 4 and "occurred_at is missing" in lines[2][1].message


def test_a_stream_reads_like_the_whole_file():
    data = (json.dumps(TRACE) + "\n\n{not json\n").encode()
    streamed = list(read_trace_stream(data.splitlines(keepends=True)))
    assert [(n, type(v).__name__) for n, v in streamed] == [
        (n, type(v).__name__) for n, v in read_trace_lines(data)
    ]
    assert "not UTF-8" in list(read_trace_stream([b"\xff\n"]))[0][1].message


def test_a_passage_may_name_the_document_version_its_offsets_are_in():
    retrieved = [{"doc_id": "leave", "start": 0, "end": 9, "version": 3, "rank": 1}]
    record = read_trace({**TRACE, "retrieved": retrieved})
    assert record.retrieved[0].version == 3
    assert read_trace({**TRACE, "retrieved": [{"doc_id": "leave"}]}).retrieved[0].version is None
    problems = read_trace({**TRACE, "retrieved": [{"doc_id": "leave", "version": "v3"}]})
    assert problems == ["retrieved[0].version must be a whole number from 1"]
