import json

import pytest

from corpus.sources import SourceError, read_beir, read_csv, read_folder, read_jsonl, read_source


def jsonl(*objects) -> bytes:
    return "\n".join(o if isinstance(o, str) else json.dumps(o) for o in objects).encode()


def test_jsonl_broken_line_is_reported_with_its_number_and_the_rest_imports():
    batch = read_jsonl(
        name="docs.jsonl",
        data=jsonl(
            {"doc_id": "a", "title": "A", "text": "Annual leave is 25 days."},
            '{"doc_id": "b", "text": ',
            {
                "doc_id": "c",
                "text": "Sick leave needs a note after 3 days.",
                "access_groups": ["hr"],
            },
        ),
    )
    assert [r.doc_id for r in batch.records] == ["a", "c"]
    assert [(e.line, "not valid JSON" in e.error) for e in batch.errors] == [(2, True)]
    assert batch.records[1].access_groups == ("hr",)


def test_jsonl_repeated_doc_id_keeps_the_first_and_reports_the_repeat():
    batch = read_jsonl(
        name="d.jsonl",
        data=jsonl({"doc_id": "a", "text": "first"}, {"doc_id": "a", "text": "second"}),
    )
    assert [r.text for r in batch.records] == ["first"]
    assert batch.errors[0].line == 2 and "repeats line 1" in batch.errors[0].error


def test_jsonl_text_may_hold_line_separators_inside_its_strings():
    # Raw U+2028 and U+0085 are valid inside a JSON string; they do not end the record.
    text = "first\u2028second\u0085third"
    line = json.dumps({"doc_id": "a", "text": text}, ensure_ascii=False)
    data = (line + "\n" + json.dumps({"doc_id": "b", "text": "next"}) + "\n").encode()
    batch = read_jsonl(name="d.jsonl", data=data)
    assert batch.errors == []
    assert [r.doc_id for r in batch.records] == ["a", "b"]
    assert "second" in batch.records[0].text and "third" in batch.records[0].text


@pytest.mark.parametrize(
    "obj, message",
    [
        ({"text": "no id"}, "doc_id is missing"),
        ({"doc_id": "x"}, "text is missing"),
        ({"doc_id": "x", "text": "   "}, "text is empty"),
        ({"doc_id": "x", "text": "t", "modified_at": "last tuesday"}, "not an ISO 8601"),
        ({"doc_id": "x", "text": "t", "access_groups": [1]}, "access_groups"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_jsonl_bad_lines_get_clear_messages(obj, message):
    batch = read_jsonl(name="d.jsonl", data=jsonl(obj))
    assert batch.records == []
    assert message in batch.errors[0].error and batch.errors[0].line == 1


def test_jsonl_text_is_normalised_to_nfc_and_times_parsed():
    batch = read_jsonl(
        name="d.jsonl",
        data=jsonl(
            {"doc_id": "a", "text": "Cafe\u0301\r\nline", "modified_at": "2026-03-14T09:00:00Z"}
        ),
    )
    record = batch.records[0]
    assert record.text == "Caf\u00e9\nline"
    assert record.modified_at.isoformat() == "2026-03-14T09:00:00+00:00"


def test_csv_reads_groups_separated_by_semicolons():
    data = (
        b"doc_id,title,text,access_groups,modified_at\n"
        b'p1,Policy,"Multi-line\ntext, with comma",hr;legal,2026-01-02\n'
    )
    batch = read_csv(name="d.csv", data=data)
    assert batch.errors == []
    assert batch.records[0].text == "Multi-line\ntext, with comma"
    assert batch.records[0].access_groups == ("hr", "legal")


def test_csv_missing_column_rejects_the_whole_file_with_its_name():
    with pytest.raises(SourceError, match="no 'text' column"):
        read_csv(name="d.csv", data=b"doc_id,title\np1,Policy\n")


def test_structured_file_that_is_not_utf8_is_a_clear_error():
    with pytest.raises(SourceError, match="not UTF-8"):
        read_jsonl(name="d.jsonl", data='{"doc_id": "é"}'.encode("latin-1"))


def test_single_file_errors_become_batch_errors_not_exceptions():
    batch = read_source(name="empty.txt", data=b"")
    assert batch.records == [] and "empty" in batch.errors[0].error


def test_folder_doc_ids_are_relative_paths(tmp_path):
    (tmp_path / "hr").mkdir()
    (tmp_path / "hr" / "leave.md").write_text(
        "# Leave\n\nAnnual leave is twenty-five working days a year."
    )
    (tmp_path / "notes.bin").write_bytes(b"\x00\x01")
    batches = list(read_folder(tmp_path))
    assert [b.records[0].doc_id for _, b in batches] == ["hr/leave.md"]
    assert batches[0][1].records[0].title == "Leave"


def test_beir_folder(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "Wings", "text": "Lift on wings."})
        + "\n"
        + json.dumps({"_id": "d2", "title": "", "text": "Drag."})
        + "\n"
    )
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "what is lift"}) + "\n"
    )
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\tx\n"
    )
    beir = read_beir(tmp_path)
    assert [r.text for r in beir.corpus.records] == ["Wings\n\nLift on wings.", "Drag."]
    assert [(q.question_id, q.text) for q in beir.queries] == [("q1", "what is lift")]
    assert [(r.doc_id, r.grade, r.source) for r in beir.qrels] == [("d1", 2, "qrels/test.tsv")]
    assert beir.errors[0].line == 3


def test_beir_folder_without_corpus_is_a_clear_error(tmp_path):
    with pytest.raises(SourceError, match="corpus.jsonl is missing"):
        read_beir(tmp_path)
