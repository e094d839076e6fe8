"""An id that no exported file can carry exactly (a tab, a line break of any kind) is refused
where it comes in, with its line and a message naming the character, whatever brings it:
an uploaded file's name, a JSONL or CSV line, a BEIR folder, a question, answer, manifest or
trace file. The other lines still import; ids with spaces, accents or a formula do too."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from corpus.forms import UploadForm
from corpus.sources import read_beir, read_source
from goldeval.formats.answers import read_answer_file
from goldeval.formats.manifests import read_manifest
from goldeval.formats.questions import read_questions
from goldeval.formats.traces import read_trace_lines
from tests.goldeval.formats.test_traces import TRACE

BREAKING = {
    "\t": "U+0009 (TAB)",
    "\n": "U+000A (LINE FEED)",
    "\r": "U+000D (CARRIAGE RETURN)",
    "\x0b": "U+000B (LINE TABULATION)",
    "\x0c": "U+000C (FORM FEED)",
    "\x1e": "U+001E (RECORD SEPARATOR)",
    "\x85": "U+0085 (NEXT LINE)",
    "\u2028": "U+2028 (LINE SEPARATOR)",
    "\u2029": "U+2029 (PARAGRAPH SEPARATOR)",
}
FINE = ["HR policy.txt", "Überstunden 規程.pdf", "=cmd()", "+1", "d" * 255]


def jsonl(*records):
    return "".join(json.dumps(record) + "\n" for record in records).encode()


@pytest.mark.parametrize("character", BREAKING, ids=BREAKING.values())
def test_a_document_line_with_such_an_id_is_refused_and_the_others_import(character):
    bad = f"HR{character}policy"
    data = jsonl(*({"doc_id": d, "text": "some text"} for d in [FINE[0], bad, *FINE[1:]]))
    batch = read_source(name="docs.jsonl", data=data)
    assert [(e.line, e.error) for e in batch.errors] == [
        (
            2,
            f"doc_id contains {BREAKING[character]}, which ends a line or a tab-separated cell "
            "in the exported files",
        )
    ]
    assert [r.doc_id for r in batch.records] == FINE


@pytest.mark.parametrize("character", BREAKING, ids=BREAKING.values())
def test_a_csv_line_with_such_an_id_is_refused(character):
    quoted = '"HR' + character + 'policy"'
    data = f"doc_id,text\nok,text\n{quoted},text\n".encode()
    batch = read_source(name="docs.csv", data=data)
    assert len(batch.errors) == 1 and BREAKING[character] in batch.errors[0].error
    assert [r.doc_id for r in batch.records] == ["ok"]


@pytest.mark.parametrize("character", ["\t", "\x0b", "\x85", "\u2028"])
def test_an_uploaded_file_named_so_is_refused_by_the_form_and_the_reader(character, db):
    name = f"HR{character}policy.txt"
    form = UploadForm(files={"files": [SimpleUploadedFile(name, b"text")]})
    assert not form.is_valid()
    assert "rename the file" in str(form.errors)
    batch = read_source(name=name, data=b"text")
    assert batch.records == [] and "the file name (its doc id) contains" in batch.errors[0].error


def test_a_beir_folder_with_such_ids_names_each_line(tmp_path):
    (tmp_path / "corpus.jsonl").write_bytes(
        jsonl({"_id": "ok doc", "text": "t"}, {"_id": "bad\u2028doc", "text": "t"})
    )
    (tmp_path / "queries.jsonl").write_bytes(
        jsonl({"_id": "q 1", "text": "?"}, {"_id": "q\x0b2", "text": "?"})
    )
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq 1\tok doc\t1\n")
    collection = read_beir(tmp_path)
    assert sorted((e.source, e.line) for e in collection.errors) == [
        ("corpus.jsonl", 2),
        ("queries.jsonl", 2),
    ]
    assert [r.doc_id for r in collection.corpus.records] == ["ok doc"]
    assert [q.question_id for q in collection.queries] == ["q 1"]
    assert [(q.question_id, q.doc_id) for q in collection.qrels] == [("q 1", "ok doc")]


@pytest.mark.parametrize("character", ["\t", "\r", "\u2028"])
def test_questions_answers_manifests_and_traces_refuse_such_ids_with_their_line(character):
    bad = f"x{character}y"
    questions = read_questions(
        data=jsonl({"id": "q 1", "question": "?"}, {"id": bad, "question": "?"}),
        format="jsonl",
        name="q.jsonl",
    )
    assert [p.line for p in questions.problems] == [2]
    assert [r.external_id for r in questions.rows] == ["q 1"]
    answers = read_answer_file(
        jsonl(
            {"question_id": "q 1", "answer": "a", "refused": False},
            {"question_id": bad, "answer": "a", "refused": False},
        )
    )
    assert [p.line for p in answers.problems] == [2]
    row = {
        "version": 1,
        "indexed_at": "2026-11-30T08:15:00Z",
        "embedding_model": "m",
        "dimension": 3,
    }
    manifest = read_manifest(jsonl({**row, "doc_id": "ok"}, {**row, "doc_id": bad}))
    assert [p.line for p in manifest.problems] == [2]
    retrieved = [{"doc_id": bad, "rank": 1}]
    traces = list(read_trace_lines(jsonl(TRACE, {**TRACE, "retrieved": retrieved})))
    assert [type(value).__name__ for _, value in traces] == ["TraceRecord", "LineProblem"]
