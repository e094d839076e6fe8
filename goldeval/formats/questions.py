"""Question files read into rows, without Django: CSV, JSONL, or lines pasted into a form.

Every line that cannot become a question is reported with its line number, so the service can
refuse the whole file and name each problem at once. A question's text is kept exactly as given
(case, typos, spacing, trailing punctuation and line breaks inside a quoted CSV cell): that text
is the question labellers grade and runs are scored on.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from goldeval.formats.textfiles import (
    LineProblem,
    NotUTF8Error,
    decode_utf8,
    json_lines,
    text_problem,
)

QUESTION_FORMATS = ("csv", "jsonl", "lines")
MAX_EXTERNAL_ID = 255
MAX_SOURCE = 200
# A question is a sentence or a short paragraph; this much is a pasted document by mistake.
MAX_TEXT = 10_000
MAX_TAG = 100
# Only line breaks end a pasted question: str.splitlines would also split on U+2028 and
# friends, which may sit inside a question copied from a chat tool.
_LINE_BREAK = re.compile(r"\r\n|\n|\r")


class QuestionFileError(ValueError):
    """A question file that cannot be read at all; the message names it and is meant for the
    user."""


@dataclass(frozen=True)
class QuestionRow:
    line: int
    external_id: str | None  # None: the service numbers it
    text: str
    source: str
    tags: tuple[str, ...]


@dataclass
class QuestionFile:
    rows: list[QuestionRow] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)


def read_questions(*, data: bytes | str, format: str, name: str) -> QuestionFile:
    """The rows and per-line problems of a question file in ``format``, one of
    QUESTION_FORMATS. A file that cannot be read at all raises QuestionFileError."""
    reader = _READERS.get(format)
    if reader is None:
        raise ValueError(f"unknown question format {format!r}")
    try:
        # A byte-order mark is dropped: no one typed it into a question.
        text = decode_utf8(data)
    except NotUTF8Error as exc:
        raise QuestionFileError(f"{name} is {exc}; save it as UTF-8.") from exc
    return reader(text, name)


def _row(parsed: QuestionFile, *, line: int, external_id, text, source, tags) -> QuestionRow | None:
    """A row from the values of one record, or None with the reason added to the problems."""

    def reject(error: str) -> None:
        parsed.problems.append(LineProblem(line, error))

    if not isinstance(text, str) or not text.strip():
        return reject("the question text is empty")
    problem = text_problem(text, max_length=MAX_TEXT)
    if problem:
        return reject(f"the question text {problem}")
    if external_id is not None:
        if isinstance(external_id, int) and not isinstance(external_id, bool):
            external_id = str(external_id)
        if not isinstance(external_id, str):
            return reject("the question id must be a string")
        external_id = external_id.strip() or None
        if external_id is not None:
            problem = text_problem(external_id, max_length=MAX_EXTERNAL_ID, identifier=True)
            if problem:
                return reject(f"the question id {problem}")
    if source is None:
        source = ""
    if not isinstance(source, str) or len(source) > MAX_SOURCE:
        return reject(f"the source must be text of at most {MAX_SOURCE} characters")
    problem = text_problem(source)
    if problem:
        return reject(f"the source {problem}")
    if tags is None:
        tags = []
    if isinstance(tags, str):
        tags = re.split(r"[;,]", tags)
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return reject("tags must be a list of strings (or one string separated by ; or ,)")
    for tag in tags:
        problem = text_problem(tag, max_length=MAX_TAG)
        if problem:
            return reject(f"the tag {tag[:40]!r} {problem}")
    row = QuestionRow(
        line=line,
        external_id=external_id,
        text=text,
        source=source.strip(),
        tags=tuple(t.strip() for t in tags if t.strip()),
    )
    parsed.rows.append(row)
    return row


def _csv_rows(text: str, name: str) -> QuestionFile:
    # newline="" keeps line breaks inside quoted cells exactly as written.
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None or not any(cell.strip() for cell in header):
        raise QuestionFileError(f"{name} has no questions.")
    columns = {cell.strip().lower(): position for position, cell in enumerate(header)}
    text_column = next((columns[c] for c in ("question", "text") if c in columns), None)
    if text_column is None:
        raise QuestionFileError(
            f"{name} needs a 'question' (or 'text') column; its header has "
            f"{', '.join(repr(c) for c in header)}. Optional columns: id, source, tags."
        )
    id_column = next((columns[c] for c in ("id", "question_id") if c in columns), None)

    def cell(values: list[str], position: int | None) -> str | None:
        return values[position] if position is not None and position < len(values) else None

    parsed = QuestionFile()
    try:
        for values in reader:
            if not any(values):
                continue
            _row(
                parsed,
                line=reader.line_num,
                external_id=cell(values, id_column),
                text=cell(values, text_column),
                source=cell(values, columns.get("source")),
                tags=cell(values, columns.get("tags")),
            )
    except csv.Error as exc:
        parsed.problems.append(LineProblem(reader.line_num, f"bad CSV: {exc}"))
    return parsed


def _jsonl_rows(text: str, name: str) -> QuestionFile:
    parsed = QuestionFile()
    for line, record in json_lines(text):
        if isinstance(record, LineProblem):
            parsed.problems.append(record)
            continue
        question = record.get("question", record.get("text"))
        if question is None:
            parsed.problems.append(LineProblem(line, "needs a 'question' (or 'text') key"))
            continue
        _row(
            parsed,
            line=line,
            external_id=record.get("id", record.get("_id", record.get("question_id"))),
            text=question,
            source=record.get("source"),
            tags=record.get("tags"),
        )
    return parsed


def _pasted_rows(text: str, name: str) -> QuestionFile:
    parsed = QuestionFile()
    for line, raw in enumerate(_LINE_BREAK.split(text), start=1):
        if raw.strip():
            _row(parsed, line=line, external_id=None, text=raw, source=None, tags=None)
    return parsed


_READERS: dict[str, Callable[[str, str], QuestionFile]] = {
    "csv": _csv_rows,
    "jsonl": _jsonl_rows,
    "lines": _pasted_rows,
}
