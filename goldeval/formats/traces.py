"""The trace format: one logged production answer per JSON object (a JSONL line, or an item of
the endpoint's batch), read into a `TraceRecord` or the problems that stop it. Django-free.

A trace holds what the team's system did for one question: `trace_id, occurred_at, user
(and their groups), question (verbatim), retrieved [{doc_id, start?, end?, version?, rank, score}],
answer?, citations?, refused?, feedback? {thumb, comment}, system_version, index_manifest?`.

OpenInference names are accepted too, so a span exported from an OpenInference-instrumented
system reads without a converter: `context.trace_id`, `start_time`, `user.id`, `input.value`
(the question), `output.value` (the answer), `retrieval.documents` with `document.id` and
`document.score`, and `metadata` for the rest. They may sit at the top of the object or in its
`attributes` (dotted keys, as OpenTelemetry exports them, or nested; the document list also in
its flat form, `retrieval.documents.0.document.id`). Our own name wins when both are given.

The question is kept exactly as logged: no stripping, no normalisation (the gold set keeps
real wording, typos included).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from goldeval.formats.bounds import (
    MAX_INTEGER,
    as_utc,
    json_problem,
    number_problem,
    shown,
    time_problem,
)
from goldeval.formats.textfiles import LineProblem, NotUTF8Error, json_lines, text_problem

MAX_TRACE_ID = 200
MAX_QUESTION = 20_000
MAX_ANSWER = 100_000
MAX_RETRIEVED = 1_000
MAX_SHORT = 200  # user, group, system version, doc id
MAX_GROUPS = 200  # the asker's groups
MAX_CITATIONS = 1_000
MAX_PROBLEMS = 20  # named per trace; the rest are counted
FLAT_DOCUMENTS = "retrieval.documents."
THUMBS = {
    "up": "up",
    "down": "down",
    "+1": "up",
    "-1": "down",
    "1": "up",
    "0": "down",
    "true": "up",
    "false": "down",
    "positive": "up",
    "negative": "down",
}


@dataclass(frozen=True)
class RetrievedPassage:
    doc_id: str
    rank: int
    score: float | None = None
    start: int | None = None
    end: int | None = None
    # The document version the offsets are in (Goldset's version number), when the system
    # knows it; else the version current when the trace occurred is meant.
    version: int | None = None


@dataclass(frozen=True)
class TraceRecord:
    trace_id: str
    occurred_at: datetime
    question: str
    retrieved: tuple[RetrievedPassage, ...]
    user: str = ""
    user_groups: tuple[str, ...] = ()
    answer: str = ""
    citations: tuple[Any, ...] = ()
    refused: bool | None = None
    thumb: str = ""  # "up", "down" or "" (no feedback)
    comment: str = ""
    system_version: str = ""
    index_manifest: Any = None

    @property
    def doc_ids(self) -> list[str]:
        return list(dict.fromkeys(p.doc_id for p in self.retrieved))

    @property
    def top_score(self) -> float | None:
        scores = [p.score for p in self.retrieved if p.score is not None]
        return max(scores) if scores else None


@dataclass
class _Reader:
    """Reads one object, collecting every problem rather than stopping at the first."""

    item: dict
    problems: list[str] = field(default_factory=list)

    def get(self, *names: str) -> Any:
        attributes = self.item.get("attributes")
        for name in names:
            for source in (self.item, attributes if isinstance(attributes, dict) else {}):
                value = _lookup(source, name)
                if value is not None:
                    return value
        return None

    def text(self, names: tuple[str, ...], label: str, *, limit: int, required=False, ident=False):
        value = self.get(*names)
        if value is None or value == "":
            if required:
                self.problems.append(f"{label} is missing")
            return ""
        if isinstance(value, int | float) and not isinstance(value, bool) and ident:
            # A number as an id is its digits; infinity (a number too long to read) is none.
            value = str(value) if math.isfinite(value) else None
        if not isinstance(value, str):
            self.problems.append(f"{label} must be a string")
            return ""
        problem = text_problem(value, max_length=limit, identifier=ident)
        if problem:
            self.problems.append(f"{label} {problem}")
            return ""
        return value


def _lookup(source: dict, name: str) -> Any:
    """`name` in `source`: the dotted key itself, or its parts nested ("user.id" → user → id)."""
    if name in source:
        return source[name]
    head, _, rest = name.partition(".")
    if rest and isinstance(source.get(head), dict):
        return _lookup(source[head], rest)
    return None


def parse_time(value: Any) -> datetime | None:
    """ISO 8601 (a trailing Z allowed; a time without offset is UTC), or epoch seconds /
    nanoseconds (OpenTelemetry's unit) as a number. None when it is none of these; a time it
    reads may still be out of range (`goldeval.formats.bounds.time_problem`)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            if not math.isfinite(value):
                return None
            seconds = value / 1e9 if value > 1e12 else value
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or len(value) > 100:
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _offsets_problem(where: str, start, end) -> str | None:
    """What is wrong with a passage's or a citation's (start, end) as read by `_offset`."""
    if "bad" in (start, end) or (start is None) != (end is None):
        return (
            f"{where}: start and end must both be offsets (whole numbers from 0 to {MAX_INTEGER:,})"
        )
    if start is not None and end <= start:
        return f"{where}: end must be after start"
    return None


def _offset(value: Any) -> int | None | str:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or number_problem(value):
        return "bad"
    return value


def _whole(value: Any) -> bool:
    """A whole number from 1 that an integer column holds (a rank, a version)."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not number_problem(value, least=1)
    )


def _score(value: Any) -> float | None | str:
    """A finite number as a float (None when absent, "bad" when not one)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "bad"
    try:
        score = float(value)
    except OverflowError:
        return "bad"
    return score if math.isfinite(score) else "bad"


def _flattened_documents(item: dict) -> list[dict] | None:
    """OpenTelemetry's flat form of OpenInference's list, `retrieval.documents.0.document.id`,
    back into `[{"document.id": …}, …]` in index order (None when there is none)."""
    attributes = item.get("attributes")
    found: dict[int, dict] = {}
    for source in (item, attributes if isinstance(attributes, dict) else {}):
        for key, value in source.items():
            if not key.startswith(FLAT_DOCUMENTS):
                continue
            index, _, field = key[len(FLAT_DOCUMENTS) :].partition(".")
            # ASCII digits, a few: "²".isdigit() holds, and int() of 5,000 digits raises.
            if index.isascii() and index.isdigit() and len(index) <= 6 and field:
                found.setdefault(int(index), {})[field] = value
    return [found[i] for i in sorted(found)] if found else None


def _passages(reader: _Reader) -> tuple[RetrievedPassage, ...]:
    value = reader.get("retrieved", "retrieval.documents")
    if value is None:
        value = _flattened_documents(reader.item)
    if value is None:
        return ()
    if not isinstance(value, list):
        reader.problems.append("retrieved must be a list")
        return ()
    if len(value) > MAX_RETRIEVED:
        reader.problems.append(f"retrieved has more than {MAX_RETRIEVED:,} passages")
        return ()
    passages = []
    for position, entry in enumerate(value, start=1):
        where = f"retrieved[{position - 1}]"
        if isinstance(entry, str):
            entry = {"doc_id": entry}
        if not isinstance(entry, dict):
            reader.problems.append(f"{where} must be an object")
            continue
        doc_id = _first(entry, "doc_id", "document.id", "id")
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not isinstance(doc_id, str) or not doc_id:
            reader.problems.append(f"{where}.doc_id is missing")
            continue
        problem = text_problem(doc_id, max_length=MAX_SHORT, identifier=True)
        if problem:
            reader.problems.append(f"{where}.doc_id {problem}")
            continue
        rank = _first(entry, "rank")
        rank = position if rank is None else rank
        if not _whole(rank):
            reader.problems.append(f"{where}.rank must be a whole number from 1 to {MAX_INTEGER:,}")
            continue
        score = _score(_first(entry, "score", "document.score"))
        if score == "bad":
            reader.problems.append(f"{where}.score must be a finite number")
            continue
        start, end = _offset(_first(entry, "start")), _offset(_first(entry, "end"))
        if problem := _offsets_problem(where, start, end):
            reader.problems.append(problem)
            continue
        version = _first(entry, "version", "document.metadata.version")
        if version is not None and not _whole(version):
            reader.problems.append(f"{where}.version must be a whole number from 1")
            continue
        passages.append(RetrievedPassage(doc_id, rank, score, start, end, version))
    return tuple(sorted(passages, key=lambda p: p.rank))


def _first(entry: dict, *names: str) -> Any:
    for name in names:
        value = _lookup(entry, name)
        if value is not None:
            return value
    return None


def read_trace(item: Any) -> TraceRecord | list[str]:
    """A trace from one JSON value, or every problem it has (phrased for a person)."""
    if not isinstance(item, dict):
        return ["expected a JSON object"]
    reader = _Reader(item)
    trace_id = reader.text(
        ("trace_id", "context.trace_id", "traceId"),
        "trace_id",
        limit=MAX_TRACE_ID,
        required=True,
        ident=True,
    )
    raw_time = reader.get("occurred_at", "start_time", "timestamp")
    occurred_at = parse_time(raw_time)
    if raw_time is None:
        reader.problems.append("occurred_at is missing")
    elif occurred_at is None:
        reader.problems.append(f"occurred_at {shown(raw_time)} is not an ISO 8601 time")
    elif problem := time_problem(occurred_at):
        reader.problems.append(f"occurred_at {shown(raw_time)} {problem}")
    else:
        occurred_at = as_utc(occurred_at)
    question = reader.get("question", "input.value")
    if not isinstance(question, str) or not question.strip():
        reader.problems.append("question is missing" if question is None else "question is empty")
        question = ""
    elif problem := text_problem(question, max_length=MAX_QUESTION):
        reader.problems.append(f"question {problem}")
    user_value = reader.get("user")
    user_id, groups = "", ()
    if isinstance(user_value, dict):
        user_id = user_value.get("id", "")
        groups = user_value.get("groups", ())
    elif user_value is not None:
        user_id = user_value
    user_id = user_id or reader.get("user.id", "user_id") or ""
    groups = groups or reader.get("user_groups", "groups") or ()
    if isinstance(user_id, int) and not isinstance(user_id, bool):
        user_id = str(user_id)
    if not isinstance(user_id, str) or text_problem(user_id, max_length=MAX_SHORT):
        reader.problems.append("user must be a short string (or {id, groups})")
        user_id = ""
    if (
        not isinstance(groups, list | tuple)
        or len(groups) > MAX_GROUPS
        or not all(
            isinstance(g, str) and not text_problem(g, max_length=MAX_SHORT, identifier=True)
            for g in groups
        )
    ):
        reader.problems.append(
            f"the user's groups must be a list of at most {MAX_GROUPS} group names"
        )
        groups = ()
    passages = _passages(reader)
    answer = reader.text(("answer", "output.value"), "answer", limit=MAX_ANSWER)
    citations = _citations(reader)
    refused = reader.get("refused")
    if refused is not None and not isinstance(refused, bool):
        reader.problems.append("refused must be true or false")
        refused = None
    thumb, comment = _feedback(reader)
    system_version = reader.text(
        ("system_version", "metadata.system_version"), "system_version", limit=MAX_SHORT
    )
    index_manifest = reader.get("index_manifest", "metadata.index_manifest")
    if index_manifest is not None:
        problem = (
            json_problem(index_manifest, name="index_manifest")
            if isinstance(index_manifest, dict)
            else "index_manifest must be an object"
        )
        if problem:
            reader.problems.append(problem)
            index_manifest = None
    if len(reader.problems) > MAX_PROBLEMS:  # a thousand bad passages: the answer stays short
        more = len(reader.problems) - MAX_PROBLEMS
        return [*reader.problems[:MAX_PROBLEMS], f"and {more:,} more problems"]
    if reader.problems:
        return reader.problems
    return TraceRecord(
        trace_id=trace_id,
        occurred_at=occurred_at,
        question=question,
        retrieved=passages,
        user=user_id,
        user_groups=tuple(dict.fromkeys(groups)),
        answer=answer,
        citations=tuple(citations or ()),
        refused=refused,
        thumb=thumb,
        comment=comment,
        system_version=system_version,
        index_manifest=index_manifest,
    )


def _citations(reader: _Reader) -> tuple[Any, ...]:
    """The answer's citations: each a `{doc_id, start?, end?, …}` object (or a doc id alone),
    checked as the retrieved passages are; the rest of an object is kept if a column holds it."""
    value = reader.get("citations")
    if value is None:
        return ()
    if not isinstance(value, list):
        reader.problems.append("citations must be a list")
        return ()
    if len(value) > MAX_CITATIONS:
        reader.problems.append(f"citations has more than {MAX_CITATIONS:,} items")
        return ()
    before = len(reader.problems)
    for index, entry in enumerate(value):
        where = f"citations[{index}]"
        if isinstance(entry, str):
            entry = {"doc_id": entry}
        if not isinstance(entry, dict):
            reader.problems.append(f"{where} must be an object")
            continue
        doc_id = entry.get("doc_id")
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if doc_id is not None and not isinstance(doc_id, str):
            reader.problems.append(f"{where}.doc_id must be a string")
            continue
        if doc_id is not None and (
            problem := text_problem(doc_id, max_length=MAX_SHORT, identifier=True)
        ):
            reader.problems.append(f"{where}.doc_id {problem}")
            continue
        start, end = _offset(entry.get("start")), _offset(entry.get("end"))
        if problem := _offsets_problem(where, start, end):
            reader.problems.append(problem)
            continue
        if problem := json_problem(entry, name=where):
            reader.problems.append(problem)
    return tuple(value) if len(reader.problems) == before else ()


def _feedback(reader: _Reader) -> tuple[str, str]:
    value = reader.get("feedback")
    if value is None:
        return "", ""
    if not isinstance(value, dict):
        value = {"thumb": value}
    thumb = value.get("thumb", value.get("score"))
    comment = value.get("comment") or ""
    key = thumb.strip().lower() if isinstance(thumb, str) else ""
    if isinstance(thumb, bool):
        key = "true" if thumb else "false"
    elif isinstance(thumb, int | float) and _score(thumb) != "bad":
        key = "up" if thumb > 0 else "down"
    if thumb is not None and key not in THUMBS:
        reader.problems.append(f"feedback.thumb {shown(thumb)} is not up or down")
        return "", ""
    if not isinstance(comment, str) or text_problem(comment, max_length=MAX_QUESTION):
        reader.problems.append("feedback.comment must be text")
        return "", ""
    return THUMBS.get(key, ""), comment


def read_trace_lines(data: bytes | str) -> Iterator[tuple[int, TraceRecord | LineProblem]]:
    """JSONL traces by line number: the trace, or one `LineProblem` naming all its problems.
    Raises `goldeval.formats.textfiles.NotUTF8Error` for bytes that are not UTF-8."""
    for number, value in json_lines(data):
        if isinstance(value, LineProblem):
            yield number, value
            continue
        record = read_trace(value)
        if isinstance(record, list):
            yield number, LineProblem(number, "; ".join(record))
        else:
            yield number, record


def read_trace_stream(lines: Iterable[bytes]) -> Iterator[tuple[int, TraceRecord | LineProblem]]:
    """Like `read_trace_lines`, over a file opened in binary and read line by line, so a file of
    a million traces is never held whole. The rules are `goldeval.formats.textfiles`' (a line ends
    at "\\n", "\\r\\n" or a lone "\\r"; a BOM on the first line is dropped; bytes must be UTF-8),
    applied per line: a binary file yields lines ending at "\\n" only, so one holding a "\\r" is
    split again and each part counted as its own line."""
    parts = (
        part
        for raw in lines
        for part in (raw.splitlines(keepends=True) if b"\r" in raw else (raw,))
    )
    for number, raw in enumerate(parts, start=1):
        try:
            values = list(json_lines(raw))
        except NotUTF8Error as error:
            yield number, LineProblem(number, f"not UTF-8 text (byte {error.offset} of the line)")
            continue
        for _, value in values:
            if isinstance(value, LineProblem):
                yield number, LineProblem(number, value.message)
                continue
            record = read_trace(value)
            if isinstance(record, list):
                yield number, LineProblem(number, "; ".join(record))
            else:
                yield number, record
