"""The index manifest format: what the team's index holds, read here and nowhere else.

Django-free, so ``python -m goldeval health`` in a team's CI and the app's manifest import
read a file alike: the same rows and the same problems, each with its line. The CLI stops at
the first problem; the app lists them all and stores nothing.

One row per indexed chunk (or per document when ``start``/``end`` are absent):

====================  =========  ================================================================
column                required   meaning
====================  =========  ================================================================
doc_id                yes        the document's stable id, as in Goldset
version               no         the Goldset version number the chunk was cut from
content_sha256        no         SHA-256 of the indexed text (Goldset's ``content_hash``)
start, end            no         the chunk's offsets in that version (both or neither)
indexed_at            yes        ISO 8601 time; a time without offset is read as UTC
embedding_model       yes        the model's name
embedding_revision    see below  its revision (commit, version); may be blank only when the
                                 whole manifest uses one model, else two models cannot be told
                                 from two revisions of one
dimension             yes        the vector's length, a positive integer
====================  =========  ================================================================

Two layouts, told by the first non-blank line: ``{`` starts JSONL (one object a line),
anything else is CSV with a header row naming the columns (any order, extra columns ignored).
"""

from __future__ import annotations

import csv
import datetime
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from goldeval.formats.bounds import number_problem, shown, time_problem
from goldeval.formats.textfiles import (
    LineProblem,
    decode_utf8,
    first_line,
    json_lines,
    text_problem,
)

REQUIRED = ("doc_id", "indexed_at", "embedding_model", "dimension")
OPTIONAL = ("version", "content_sha256", "start", "end", "embedding_revision")
COLUMNS = (
    "doc_id",
    "version",
    "content_sha256",
    "start",
    "end",
    "indexed_at",
    "embedding_model",
    "embedding_revision",
    "dimension",
)
MAX_PROBLEMS = 50  # listed per file; the count says how many more there were
_SHA256 = re.compile(r"[0-9a-f]{64}")
_INTEGER = re.compile(r"\s*[+-]?\d{1,18}\s*")


@dataclass(frozen=True, slots=True)
class ManifestRow:
    line: int
    doc_id: str
    indexed_at: datetime.datetime  # aware, UTC
    embedding_model: str
    dimension: int
    embedding_revision: str = ""
    version: int | None = None
    content_sha256: str | None = None
    start: int | None = None
    end: int | None = None

    @property
    def model_key(self) -> tuple[str, str, int]:
        """What must be one value across an index: vectors of two keys do not compare."""
        return (self.embedding_model, self.embedding_revision, self.dimension)


@dataclass(slots=True)
class ManifestFile:
    """What a manifest holds. Its rows are only the whole file when ``problems`` is empty."""

    format: str  # "csv", "jsonl" or "" (empty file)
    rows: list[ManifestRow] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    more_problems: int = 0  # beyond MAX_PROBLEMS

    @property
    def models(self) -> list[tuple[str, str, int]]:
        return sorted({row.model_key for row in self.rows})


def describe_model(key: tuple[str, str, int]) -> str:
    model, revision, dimension = key
    name = f"{model}@{revision}" if revision else model
    return f"{name} ({dimension} dimensions)" if dimension else name


def read_manifest(data: bytes | str) -> ManifestFile:
    """Every row of a manifest and every problem, by line (raises `NotUTF8Error`)."""
    text = decode_utf8(data)
    head = first_line(text)
    if not head.strip():
        return ManifestFile(format="", problems=[LineProblem(1, "the manifest is empty")])
    if head.lstrip().startswith("{"):
        manifest = ManifestFile(format="jsonl")
        records: Iterator[tuple[int, dict[str, Any] | LineProblem]] = json_lines(text)
    else:
        manifest = ManifestFile(format="csv")
        records = _csv_records(text, manifest)
    for number, record in records:
        if isinstance(record, LineProblem):
            _add_problem(manifest, record)
            continue
        row = _row(record, line=number)
        if isinstance(row, LineProblem):
            _add_problem(manifest, row)
        else:
            manifest.rows.append(row)
    if not manifest.rows and not manifest.problems:
        _add_problem(manifest, LineProblem(1, "the manifest has a header but no rows"))
    _check_revisions(manifest)
    return manifest


def _add_problem(manifest: ManifestFile, problem: LineProblem) -> None:
    if len(manifest.problems) < MAX_PROBLEMS:
        manifest.problems.append(problem)
    else:
        manifest.more_problems += 1


def _csv_records(text: str, manifest: ManifestFile) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    header_line = 0
    for cells in _csv_rows(reader, manifest):
        number = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue
        if header is None:
            header = [cell.strip().lower() for cell in cells]
            header_line = number
            missing = [name for name in REQUIRED if name not in header]
            if missing:
                _add_problem(
                    manifest,
                    LineProblem(
                        number,
                        f"the header lacks the column(s) {', '.join(missing)}; expected "
                        f"{', '.join(COLUMNS)}",
                    ),
                )
                return
            continue
        if len(cells) > len(header):
            _add_problem(
                manifest,
                LineProblem(
                    number,
                    f"{len(cells)} cells, but the header on line {header_line} names "
                    f"{len(header)} columns",
                ),
            )
            continue
        yield (
            number,
            {name: cell for name, cell in zip(header, cells, strict=False) if cell.strip() != ""},
        )


def _csv_rows(reader, manifest: ManifestFile) -> Iterator[list[str]]:
    """The reader's rows; a line the csv module cannot read (a cell over its 128 KiB field
    limit) is that line's problem, not an exception that fails the whole import."""
    while True:
        before = reader.line_num
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            _add_problem(
                manifest, LineProblem(max(reader.line_num, 1), f"not readable CSV ({error})")
            )
            if reader.line_num == before:  # no progress: stop rather than loop
                return


def _row(record: dict[str, Any], *, line: int) -> ManifestRow | LineProblem:
    missing = [name for name in REQUIRED if record.get(name) in (None, "")]
    if missing:
        return LineProblem(line, f"missing {', '.join(missing)}")
    doc_id = record["doc_id"]
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id.strip():
        return LineProblem(line, "doc_id must be a non-empty string")
    doc_id = doc_id.strip()
    problem = text_problem(doc_id, max_length=255, identifier=True)
    if problem:
        return LineProblem(line, f"doc_id {problem}")
    indexed_at = parse_time(record["indexed_at"])
    if indexed_at is None:
        return LineProblem(
            line,
            f"indexed_at {shown(record['indexed_at'])} is not an ISO 8601 time "
            "(e.g. 2026-11-30T08:15:00Z)",
        )
    if problem := time_problem(indexed_at):
        return LineProblem(line, f"indexed_at {shown(record['indexed_at'])} {problem}")
    model = record["embedding_model"]
    revision = record.get("embedding_revision") or ""
    if not isinstance(model, str) or not isinstance(revision, str):
        return LineProblem(line, "embedding_model and embedding_revision must be text")
    model, revision = model.strip(), revision.strip()
    for name, value in (("embedding_model", model), ("embedding_revision", revision)):
        problem = text_problem(value, max_length=200)
        if problem:
            return LineProblem(line, f"{name} {problem}")
    numbers: dict[str, int | None] = {}
    for name in ("dimension", "version", "start", "end"):
        value = _integer(record.get(name))
        if value is False:
            return LineProblem(line, f"{name} {shown(record.get(name))} is not an integer")
        if value is not None and (problem := number_problem(value)):
            return LineProblem(line, f"{name} {problem}")
        numbers[name] = value  # type: ignore[assignment]
    if numbers["dimension"] is None or numbers["dimension"] < 1:
        return LineProblem(line, "dimension must be a positive integer")
    if numbers["version"] is not None and numbers["version"] < 1:
        return LineProblem(line, "version must be a positive integer")
    start, end = numbers["start"], numbers["end"]
    if (start is None) != (end is None):
        return LineProblem(line, "give both start and end, or neither")
    if start is not None and end is not None and not 0 <= start < end:
        return LineProblem(line, f"empty or negative range [{start}, {end})")
    digest = record.get("content_sha256")
    if digest is not None:
        digest = str(digest).strip().lower()
        if not _SHA256.fullmatch(digest):
            return LineProblem(line, "content_sha256 must be 64 hexadecimal digits")
    return ManifestRow(
        line=line,
        doc_id=doc_id,
        indexed_at=indexed_at,
        embedding_model=model,
        embedding_revision=revision,
        dimension=numbers["dimension"],
        version=numbers["version"],
        content_sha256=digest or None,
        start=start,
        end=end,
    )


def _integer(value: Any) -> int | None | bool:
    """The integer a cell or JSON value holds, None when absent, False when it holds another
    thing (CSV cells are text; JSON may give 3 or "3", never 3.5 or true)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    return False


def parse_time(value: Any) -> datetime.datetime | None:
    """An ISO 8601 time as an aware UTC datetime (no offset: UTC), or None. A time may still be
    one Goldset does not store (`goldeval.formats.bounds.time_problem`)."""
    if not isinstance(value, str) or not value.strip() or len(value) > 100:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    try:
        return moment.astimezone(datetime.UTC)
    except OverflowError:  # 0001-01-01T00:00:00+14:00 is in the year 0: `time_problem` says so
        return moment


def _check_revisions(manifest: ManifestFile) -> None:
    """Several models and a blank revision: a swap of same-named weights would hide there."""
    names = {row.embedding_model for row in manifest.rows}
    if len(names) < 2:
        return
    blank = [row for row in manifest.rows if not row.embedding_revision]
    if blank:
        _add_problem(
            manifest,
            LineProblem(
                blank[0].line,
                f"embedding_revision is blank ({len(blank):,} row(s), the first here) while the "
                f"manifest names {len(names)} models ({', '.join(sorted(names)[:5])}): give "
                "each row its revision",
            ),
        )
