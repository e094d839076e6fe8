"""What a value from outside may be before it is stored (goldeval/formats/bounds.py), and the
CLI files read with the same rules, Django-free."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from goldeval.cli import main
from goldeval.formats.bounds import (
    EARLIEST,
    LATEST,
    MAX_INTEGER,
    json_problem,
    number_problem,
    shown,
    time_problem,
)
from goldeval.formats.manifests import COLUMNS, parse_time, read_manifest
from tests.goldeval.scoring.test_health import bundle  # noqa: F401 - the fixture

PLUS_14 = timezone(timedelta(hours=14))
MINUS_14 = timezone(timedelta(hours=-14))


@pytest.mark.parametrize(
    "moment",
    [
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=MINUS_14),  # the year 10000 in UTC
        datetime(1, 1, 1, tzinfo=PLUS_14),  # the year 0 in UTC
        datetime(1, 1, 1, tzinfo=UTC),
        EARLIEST - timedelta(microseconds=1),
        LATEST,
        datetime(2026, 11, 30),  # no time zone
    ],
)
def test_times_no_reader_can_hold_are_refused(moment):
    assert time_problem(moment)


@pytest.mark.parametrize("moment", [EARLIEST, LATEST - timedelta(microseconds=1)])
def test_times_at_the_edges_are_kept(moment):
    assert time_problem(moment) == ""


def test_numbers_fit_an_integer_column():
    assert number_problem(MAX_INTEGER) == "" and number_problem(0) == ""
    assert number_problem(MAX_INTEGER + 1) and number_problem(-1)
    assert number_problem(0, least=1)


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"a": "x\x00"}, "m.a"),
        ({"a": ["ok", "\ud800"]}, "m.a[1]"),
        ({"\x00": 1}, "m has a key"),
        ({1: 1}, "m has a key that is not text"),
        ({"a": float("nan")}, "m.a is not a finite number"),
        ({"a": float("inf")}, "m.a is not a finite number"),
        ({"a": 2**64}, "m.a is a number too large"),
        ({"a": "x" * 20_001}, "m.a is longer"),
        ({"a": list(range(2_001))}, "holds more than 2,000 values"),
        ({"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}}, "nested more than 8"),
        ({"a": object()}, "m.a is not JSON"),
    ],
)
def test_free_form_json_is_checked_at_every_depth(value, where):
    assert where in json_problem(value, name="m")


def test_ordinary_json_passes():
    value = {
        "model": "minilm",
        "dims": 384,
        "score": 0.5,
        "shards": [{"id": 1, "ok": True}],
        "x": None,
    }
    assert json_problem(value, name="m") == ""


def test_a_bad_value_is_quoted_short():
    assert len(shown("x" * 10_000)) <= 60 and shown(10**400) == "a number of more than 60 digits"
    assert shown({"a": 1}) == "an object" and shown([1]) == "a list"


def test_the_manifest_reader_names_the_line_and_field_of_an_out_of_range_value():
    header = ",".join(COLUMNS) + "\n"
    rows = [
        "a,1,,,,9999-12-31T23:59:59-14:00,m,r,384",
        "b,1,,,,0001-01-01T00:00:00+14:00,m,r,384",
        f"c,{MAX_INTEGER + 1},,,,2026-11-20T00:00:00Z,m,r,384",
        f"d,1,,0,{MAX_INTEGER + 1},2026-11-20T00:00:00Z,m,r,384",
        f"e,1,,,,2026-11-20T00:00:00Z,m,r,{MAX_INTEGER + 1}",
        "f,1,,,,2026-11-20T00:00:00Z,m,r,384",
    ]
    manifest = read_manifest(header + "\n".join(rows) + "\n")
    assert [(p.line, p.message.split(" ")[0]) for p in manifest.problems] == [
        (2, "indexed_at"),
        (3, "indexed_at"),
        (4, "version"),
        (5, "end"),
        (6, "dimension"),
    ]
    assert "outside the times Goldset stores" in manifest.problems[1].message
    assert [row.doc_id for row in manifest.rows] == ["f"]
    assert parse_time("0001-01-01T00:00:00+14:00") is not None  # read, then refused by range


def test_the_cli_exits_2_on_an_out_of_range_time_in_a_manifest_or_now(bundle, tmp_path, capsys):  # noqa: F811
    path = tmp_path / "index.jsonl"
    row = dict(
        zip(
            COLUMNS,
            ["policy", 1, None, None, None, "9999-12-31T23:59:59-14:00", "m", "r", 3],
            strict=True,
        )
    )
    path.write_text(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")
    assert main(["health", "--gold", str(bundle), "--manifest", str(path)]) == 2
    assert f"{path}:1: indexed_at '9999-12-31T23:59:59-14:00' is outside" in capsys.readouterr().err
    row["indexed_at"] = "2026-11-20T00:00:00Z"
    path.write_text(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")
    arguments = ["health", "--gold", str(bundle), "--manifest", str(path)]
    assert main([*arguments, "--now", "0001-01-01T00:00:00+14:00"]) == 2
    assert "--now '0001-01-01T00:00:00+14:00' is outside" in capsys.readouterr().err


@pytest.fixture
def default_csv_field_limit():
    # The limit is process-wide, and the app's CSV document import raises it; this test is about
    # the csv module's own default.
    import csv

    kept = csv.field_size_limit(131_072)
    yield
    csv.field_size_limit(kept)


def test_a_csv_cell_over_the_csv_modules_limit_is_its_lines_problem(default_csv_field_limit):
    header = ",".join(COLUMNS) + "\n"
    text = (
        header
        + "a" * 200_000
        + ",1,,,,2026-11-20T00:00:00Z,m,r,3\nb,1,,,,2026-11-20T00:00:00Z,m,r,3\n"
    )
    manifest = read_manifest(text)
    assert [(p.line, "not readable CSV" in p.message) for p in manifest.problems] == [(2, True)]
    assert [row.doc_id for row in manifest.rows] == ["b"]
