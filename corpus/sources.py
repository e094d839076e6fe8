"""Reading import sources into document records, without Django.

A source is one uploaded file, one file of a folder, a JSONL or CSV of documents, or a BEIR
folder. Each source becomes a `SourceBatch`: the records that are good and, for every line that
is not, an error naming the line. The app writes a batch atomically, so a file is either fully
imported (minus its reported bad lines) or not at all.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from corpus.extraction import (
    SUPPORTED_SUFFIXES,
    ExtractionError,
    ExtractionReport,
    assess_quality,
    normalise_text,
)
from corpus.sandbox import extract_isolated
from corpus.textfiles import LineProblem, NotUTF8Error, decode_utf8, json_lines

RECORD_SUFFIXES = (".jsonl", ".csv")
MAX_DOC_ID_LENGTH = 255
MAX_TITLE_LENGTH = 500


class SourceError(Exception):
    """A whole source cannot be read; the message is meant for the user."""


@dataclass(frozen=True)
class DocumentRecord:
    doc_id: str
    title: str
    text: str
    report: ExtractionReport
    access_groups: tuple[str, ...] = ()
    modified_at: datetime | None = None
    source_name: str = ""


@dataclass(frozen=True)
class RecordError:
    source: str
    error: str
    line: int | None = None
    doc_id: str | None = None

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "line": self.line,
            "doc_id": self.doc_id,
            "error": self.error,
        }

    def __str__(self) -> str:
        where = f"{self.source}, line {self.line}" if self.line else self.source
        return f"{where}: {self.error}"


@dataclass
class SourceBatch:
    source: str
    records: list[DocumentRecord] = field(default_factory=list)
    errors: list[RecordError] = field(default_factory=list)


@dataclass(frozen=True)
class QueryRecord:
    question_id: str
    text: str


@dataclass(frozen=True)
class QrelRecord:
    question_id: str
    doc_id: str
    grade: int
    source: str


@dataclass
class BeirCollection:
    corpus: SourceBatch
    queries: list[QueryRecord]
    qrels: list[QrelRecord]
    errors: list[RecordError]


def read_source(*, name: str, data: bytes, doc_id: str | None = None) -> SourceBatch:
    """One file: JSONL/CSV of many documents, or a single document file."""
    suffix = Path(name).suffix.lower()
    if suffix == ".jsonl":
        return read_jsonl(name=name, data=data)
    if suffix == ".csv":
        return read_csv(name=name, data=data)
    batch = SourceBatch(source=name)
    try:
        extracted = extract_isolated(filename=name, data=data)
    except ExtractionError as exc:
        batch.errors.append(RecordError(source=name, error=str(exc)))
        return batch
    batch.records.append(
        DocumentRecord(
            doc_id=(doc_id or Path(name).name)[:MAX_DOC_ID_LENGTH],
            title=extracted.title[:MAX_TITLE_LENGTH],
            text=extracted.text,
            report=extracted.report,
            source_name=name,
        )
    )
    return batch


def read_folder(path: Path) -> Iterator[tuple[Path, SourceBatch]]:
    """Every supported file below `path`; its doc_id is its path relative to the folder."""
    files = sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES + RECORD_SUFFIXES
    )
    for file in files:
        relative = file.relative_to(path).as_posix()
        yield file, read_source(name=relative, data=file.read_bytes(), doc_id=relative)


def read_jsonl(*, name: str, data: bytes) -> SourceBatch:
    batch = SourceBatch(source=name)
    seen: dict[str, int] = {}
    for number, obj in json_lines(_decode_structured(name, data)):
        if isinstance(obj, LineProblem):
            batch.errors.append(RecordError(source=name, line=number, error=obj.message))
        else:
            _add_record(batch, obj, line=number, seen=seen)
    return batch


def read_csv(*, name: str, data: bytes) -> SourceBatch:
    batch = SourceBatch(source=name)
    text = _decode_structured(name, data)
    csv.field_size_limit(64 * 2**20)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = [c.strip() for c in (reader.fieldnames or [])]
    missing = [c for c in ("doc_id", "text") if c not in columns]
    if missing:
        raise SourceError(
            f"{name}: the CSV has no {' or '.join(repr(c) for c in missing)} column "
            f"(found: {', '.join(columns) or 'nothing'}); "
            "expected doc_id,title,text,access_groups,modified_at"
        )
    reader.fieldnames = columns
    seen: dict[str, int] = {}
    try:
        for row in reader:
            # DictReader counts physical lines; a quoted text may span several.
            _add_record(batch, row, line=reader.line_num, seen=seen)
    except csv.Error as exc:
        batch.errors.append(
            RecordError(source=name, line=reader.line_num, error=f"broken CSV ({exc})")
        )
    return batch


def read_beir(path: Path) -> BeirCollection:
    """A BEIR folder: corpus.jsonl, queries.jsonl and qrels/*.tsv (or a single qrels.tsv).

    Ids may be under `_id` (BEIR) or `id`; a BEIR title is kept as the document title and also
    starts the stored text, as BEIR evaluations index title and body together.
    """
    corpus_file, queries_file = path / "corpus.jsonl", path / "queries.jsonl"
    for required in (corpus_file, queries_file):
        if not required.is_file():
            raise SourceError(f"{path} is not a BEIR folder: {required.name} is missing")
    errors: list[RecordError] = []
    corpus = SourceBatch(source="corpus.jsonl")
    seen: dict[str, int] = {}
    for number, obj in _json_lines(corpus_file, errors):
        title = str(obj.get("title") or "")
        body = str(obj.get("text") or "")
        text = f"{title}\n\n{body}" if title and not body.startswith(title) else body
        _add_record(
            corpus,
            {"doc_id": obj.get("_id", obj.get("id")), "title": title, "text": text},
            line=number,
            seen=seen,
        )
    queries: list[QueryRecord] = []
    for number, obj in _json_lines(queries_file, errors):
        qid, text = obj.get("_id", obj.get("id")), obj.get("text")
        if qid in (None, "") or not isinstance(text, str) or not text:
            errors.append(
                RecordError(source="queries.jsonl", line=number, error="needs an id and a text")
            )
            continue
        queries.append(QueryRecord(question_id=str(qid), text=text))
    qrel_files = sorted((path / "qrels").glob("*.tsv")) if (path / "qrels").is_dir() else []
    if not qrel_files and (path / "qrels.tsv").is_file():
        qrel_files = [path / "qrels.tsv"]
    qrels: list[QrelRecord] = []
    for file in qrel_files:
        source = file.relative_to(path).as_posix()
        text = _decode_utf8(source, file.read_bytes())
        for number, line in enumerate(text.splitlines(), start=1):
            cells = line.split("\t") if "\t" in line else line.split()
            if not cells or not line.strip():
                continue
            if number == 1 and not cells[-1].lstrip("-").isdigit():
                continue  # header
            if len(cells) == 4:
                cells = [cells[0], cells[2], cells[3]]  # TREC qrels: qid iter docid grade
            if len(cells) != 3 or not cells[2].lstrip("-").isdigit():
                errors.append(
                    RecordError(
                        source=source,
                        line=number,
                        error="expected query-id, corpus-id and an integer score",
                    )
                )
                continue
            qrels.append(
                QrelRecord(
                    question_id=cells[0], doc_id=cells[1], grade=int(cells[2]), source=source
                )
            )
    corpus.errors.extend(errors)
    return BeirCollection(corpus=corpus, queries=queries, qrels=qrels, errors=corpus.errors)


def _json_lines(file: Path, errors: list[RecordError]) -> Iterator[tuple[int, dict]]:
    for number, obj in json_lines(_decode_utf8(file.name, file.read_bytes())):
        if isinstance(obj, LineProblem):
            errors.append(RecordError(source=file.name, line=number, error=obj.message))
        else:
            yield number, obj


def _add_record(batch: SourceBatch, obj: dict, *, line: int, seen: dict[str, int]) -> None:
    def fail(message: str, doc_id: str | None = None) -> None:
        batch.errors.append(
            RecordError(source=batch.source, line=line, doc_id=doc_id, error=message)
        )

    raw_id = obj.get("doc_id")
    doc_id = str(raw_id).strip() if raw_id is not None else ""
    if not doc_id:
        return fail("doc_id is missing or empty")
    if len(doc_id) > MAX_DOC_ID_LENGTH:
        return fail(f"doc_id is longer than {MAX_DOC_ID_LENGTH} characters", doc_id[:40] + "…")
    if doc_id in seen:
        return fail(f"doc_id {doc_id!r} repeats line {seen[doc_id]}; the first one is kept", doc_id)
    raw_text = obj.get("text")
    if not isinstance(raw_text, str):
        return fail("text is missing or not a string", doc_id)
    text = normalise_text(raw_text)
    if not text.strip():
        return fail("text is empty", doc_id)
    groups = obj.get("access_groups") or ()
    if isinstance(groups, str):
        groups = [g for g in (p.strip() for p in groups.replace(";", ",").split(",")) if g]
    if not isinstance(groups, list | tuple) or not all(
        isinstance(g, str) and g.strip() for g in groups
    ):
        return fail("access_groups must be a list of names or a ';'-separated string", doc_id)
    try:
        modified_at = _parse_time(obj.get("modified_at"))
    except ValueError:
        return fail(
            f"modified_at {obj.get('modified_at')!r} is not an ISO 8601 date or time", doc_id
        )
    seen[doc_id] = line
    title = str(obj.get("title") or "").strip()
    batch.records.append(
        DocumentRecord(
            doc_id=doc_id,
            title=(title or doc_id)[:MAX_TITLE_LENGTH],
            text=text,
            report=assess_quality(text),
            access_groups=tuple(sorted({g.strip() for g in groups})),
            modified_at=modified_at,
            source_name=batch.source,
        )
    )


def _parse_time(value: object) -> datetime | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise ValueError(value)
    parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _decode_structured(name: str, data: bytes) -> str:
    # Spreadsheet tools save "Unicode text" as UTF-16 with a byte-order mark.
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    return _decode_utf8(name, data)


def _decode_utf8(name: str, data: bytes) -> str:
    try:
        return decode_utf8(data)
    except NotUTF8Error as exc:
        raise SourceError(f"{name}: {exc}; save the file as UTF-8 and import it again") from None
