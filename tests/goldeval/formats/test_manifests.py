"""The index manifest format (goldeval/formats/manifests.py): rows, and every problem with its
line."""

import datetime

from goldeval.formats.manifests import COLUMNS, describe_model, parse_time, read_manifest

HASH = "a" * 64
HEADER = ",".join(COLUMNS) + "\n"


def test_csv_rows_are_read_with_every_column():
    manifest = read_manifest(
        HEADER + f"policy,2,{HASH},0,120,2026-11-30T08:15:00Z,minilm,r1,384\n"
        "vpn,,,,,2026-11-29 10:00:00,minilm,r1,384\n"
    )
    assert manifest.format == "csv" and manifest.problems == []
    first, second = manifest.rows
    assert (first.doc_id, first.version, first.content_sha256, first.start, first.end) == (
        "policy",
        2,
        HASH,
        0,
        120,
    )
    assert first.indexed_at == datetime.datetime(2026, 11, 30, 8, 15, tzinfo=datetime.UTC)
    assert second.version is None and second.start is None and second.line == 3
    assert second.indexed_at.tzinfo is datetime.UTC  # no offset: UTC
    assert manifest.models == [("minilm", "r1", 384)]
    assert describe_model(first.model_key) == "minilm@r1 (384 dimensions)"


def test_jsonl_rows_are_read_and_columns_may_come_in_any_order():
    manifest = read_manifest(
        b'{"dimension": 384, "embedding_model": "m", "indexed_at": "2026-11-30T08:15:00+01:00",'
        b' "doc_id": 7, "version": "3"}\n'
    )
    assert manifest.format == "jsonl" and manifest.problems == []
    (row,) = manifest.rows
    assert row.doc_id == "7" and row.version == 3 and row.embedding_revision == ""
    assert row.indexed_at == datetime.datetime(2026, 11, 30, 7, 15, tzinfo=datetime.UTC)


def test_an_empty_file_and_a_header_alone_say_so():
    assert [p.message for p in read_manifest(b"").problems] == ["the manifest is empty"]
    assert [p.message for p in read_manifest(b"\n  \n").problems] == ["the manifest is empty"]
    assert [p.message for p in read_manifest(HEADER).problems] == [
        "the manifest has a header but no rows"
    ]


def test_missing_columns_are_named_with_the_header_line():
    manifest = read_manifest("\ndoc_id,indexed_at\npolicy,2026-11-30T08:15:00Z\n")
    (problem,) = manifest.problems
    assert problem.line == 2
    assert "lacks the column(s) embedding_model, dimension" in problem.message
    assert manifest.rows == []


def test_bad_values_are_reported_by_line_and_good_rows_still_read():
    manifest = read_manifest(
        HEADER + "a,,,,,yesterday,m,r,384\n"  # line 2
        "b,,,,,2026-11-30,m,r,0\n"  # line 3
        "c,,,5,,2026-11-30,m,r,384\n"  # line 4
        "d,x,,,,2026-11-30,m,r,384\n"  # line 5
        "e,,nothex,,,2026-11-30,m,r,384\n"  # line 6
        ",,,,,2026-11-30,m,r,384\n"  # line 7
        "f,,,,,2026-11-30,m,r,384\n"  # line 8: fine
    )
    assert [(p.line, p.message) for p in manifest.problems] == [
        (2, "indexed_at 'yesterday' is not an ISO 8601 time (e.g. 2026-11-30T08:15:00Z)"),
        (3, "dimension must be a positive integer"),
        (4, "give both start and end, or neither"),
        (5, "version 'x' is not an integer"),
        (6, "content_sha256 must be 64 hexadecimal digits"),
        (7, "missing doc_id"),
    ]
    assert [row.doc_id for row in manifest.rows] == ["f"]


def test_jsonl_lines_that_are_not_objects_or_lack_fields_are_reported():
    manifest = read_manifest(b'{"doc_id": "a"}\nnot json\n[1]\n')
    assert [(p.line, p.message.split(" (")[0]) for p in manifest.problems] == [
        (1, "missing indexed_at, embedding_model, dimension"),
        (2, "not valid JSON"),
        (3, "expected a JSON object"),
    ]


def test_several_models_without_revisions_are_refused_at_the_first_blank_row():
    manifest = read_manifest(
        HEADER + "a,,,,,2026-11-30,minilm,r1,384\n"
        "b,,,,,2026-11-30,e5-small,,384\n"
        "c,,,,,2026-11-30,e5-small,,384\n"
    )
    (problem,) = manifest.problems
    assert problem.line == 3
    assert "embedding_revision is blank (2 row(s), the first here)" in problem.message
    assert "names 2 models (e5-small, minilm)" in problem.message


def test_one_model_may_leave_its_revision_blank():
    manifest = read_manifest(
        HEADER + "a,,,,,2026-11-30,minilm,,384\nb,,,,,2026-11-30,minilm,,384\n"
    )
    assert manifest.problems == [] and manifest.models == [("minilm", "", 384)]


def test_parse_time():
    assert parse_time("2026-11-30T08:15:00Z") == datetime.datetime(
        2026, 11, 30, 8, 15, tzinfo=datetime.UTC
    )
    assert parse_time("30/11/2026") is None and parse_time(12) is None and parse_time("") is None
