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
from goldeval.formats.qrels import read_qrels
from goldeval.formats.textfiles import (
    LineProblem,
    NotUTF8Error,
    decode_utf8,
    json_lines,
    text_problem,
)

RECORD_SUFFIXES = (".jsonl", ".csv")
# The columns the app stores these in (corpus.models): checked here, so a long value is a line's
# problem, never a database error that fails the whole file.
MAX_DOC_ID_LENGTH = 255
MAX_TITLE_LENGTH = 500
MAX_GROUP_NAME_LENGTH = 100


class SourceError(Exception):
    """A whole source cannot be read; the message is meant for the user."""

    def without(self, name: str) -> str:
        """The message without the source's name in front (for a report that shows it)."""
        message = str(self)
        return message.removeprefix(f"{name}: ")


@dataclass(frozen=True)
class DocumentRecord:
    doc_id: str
    title: str
    text: str
    report: ExtractionReport
    # The groups the source names; empty when it names none. An import never uses an empty
    # list to lift a restriction: it keeps the document's groups (corpus.services.documents).
    access_groups: tuple[str, ...] = ()
    modified_at: datetime | None = None
    source_name: str = ""
    line: int | None = None


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
    doc_id = doc_id or Path(name).name
    problem = text_problem(doc_id, max_length=MAX_DOC_ID_LENGTH, identifier=True)
    if problem:
        # The file's name is its doc id: never cut or cleaned silently, or two files could
        # become one document.
        batch.errors.append(
            RecordError(source=name, error=f"the file name (its doc id) {problem}; rename it")
        )
        return batch
    try:
        extracted = extract_isolated(filename=name, data=data)
    except ExtractionError as exc:
        batch.errors.append(RecordError(source=name, error=str(exc)))
        return batch
    for field_name, value in (("text", extracted.text), ("title", extracted.title)):
        problem = text_problem(value)
        if problem:
            batch.errors.append(
                RecordError(source=name, error=f"the extracted {field_name} {problem}")
            )
            return batch
    batch.records.append(
        DocumentRecord(
            doc_id=doc_id,
            title=extracted.title[:MAX_TITLE_LENGTH],
            text=extracted.text,
            report=extracted.report,
            source_name=name,
        )
    )
    return batch


def list_import_files(path: Path) -> list[tuple[Path, str]]:
    """The files an import of ``path`` reads, each with its name: for a folder, every supported
    file below it by its path relative to the folder (its doc id); else the file itself."""
    if not path.is_dir():
        return [(path, path.name)]
    files = sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES + RECORD_SUFFIXES
    )
    return [(file, file.relative_to(path).as_posix()) for file in files]


def read_file_source(*, file: Path, name: str, doc_id: str | None = None) -> SourceBatch:
    """One file from disk, as `read_source` reads it; a file that cannot be read (gone, no
    permission) or a whole-file problem is the batch's error, so the other files still import."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        return SourceBatch(
            source=name, errors=[RecordError(source=name, error=f"cannot be read ({exc.strerror})")]
        )
    try:
        return read_source(name=name, data=data, doc_id=doc_id)
    except SourceError as exc:
        return SourceBatch(source=name, errors=[RecordError(source=name, error=exc.without(name))])


def read_folder(path: Path) -> Iterator[tuple[Path, SourceBatch]]:
    """Every supported file below `path`; its doc_id is its path relative to the folder."""
    for file, relative in list_import_files(path):
        yield file, read_file_source(file=file, name=relative, doc_id=relative)


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
        if (
            qid in (None, "")
            or isinstance(qid, bool)
            or not isinstance(qid, str | int)
            or not isinstance(text, str)
            or not text.strip()
        ):
            errors.append(
                RecordError(source="queries.jsonl", line=number, error="needs an id and a text")
            )
            continue
        problem = next(
            (
                f"{name} {found}"
                for name, found in (
                    ("the id", text_problem(str(qid), max_length=255, identifier=True)),
                    ("the text", text_problem(text)),
                )
                if found
            ),
            "",
        )
        if problem:
            errors.append(RecordError(source="queries.jsonl", line=number, error=problem))
            continue
        queries.append(QueryRecord(question_id=str(qid), text=text))
    qrel_files = sorted((path / "qrels").glob("*.tsv")) if (path / "qrels").is_dir() else []
    if not qrel_files and (path / "qrels.tsv").is_file():
        qrel_files = [path / "qrels.tsv"]
    qrels: list[QrelRecord] = []
    for file in qrel_files:
        source = file.relative_to(path).as_posix()
        # The one qrels reader (goldeval.formats.qrels): identical repeats count once, conflicting
        # grades are refused naming both lines, grades are ASCII whole numbers.
        read = read_qrels(_decode_utf8(source, file.read_bytes()))
        errors.extend(
            RecordError(source=source, line=problem.line, error=problem.message)
            for problem in read.problems
        )
        for qrel in read.qrels:
            problem = text_problem(qrel.question_id + qrel.doc_id, identifier=True)
            if problem:
                errors.append(RecordError(source=source, line=qrel.line, error=f"an id {problem}"))
                continue
            qrels.append(
                QrelRecord(
                    question_id=qrel.question_id,
                    doc_id=qrel.doc_id,
                    grade=qrel.grade,
                    source=source,
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
    """Check every field of one JSONL/CSV record before anything is written: a record with a
    problem is reported with its line and field, and the other records still import."""

    def fail(message: str, doc_id: str | None = None) -> None:
        batch.errors.append(
            RecordError(source=batch.source, line=line, doc_id=doc_id, error=message)
        )

    raw_id = obj.get("doc_id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, str | int)):
        return fail("doc_id must be a string")
    doc_id = str(raw_id).strip() if raw_id is not None else ""
    if not doc_id:
        return fail("doc_id is missing or empty")
    problem = text_problem(doc_id, max_length=MAX_DOC_ID_LENGTH, identifier=True)
    if problem:
        # Quoting a broken id could break the message itself: show its harmless start only.
        shown = doc_id[:40].encode("utf-8", "backslashreplace").decode("utf-8")
        return fail(f"doc_id {problem}", repr(shown)[1:-1] + ("…" if len(doc_id) > 40 else ""))
    if doc_id in seen:
        return fail(f"doc_id {doc_id!r} repeats line {seen[doc_id]}; the first one is kept", doc_id)
    raw_text = obj.get("text")
    if not isinstance(raw_text, str):
        return fail("text is missing or not a string", doc_id)
    problem = text_problem(raw_text.replace("\x00", ""))
    if problem:
        return fail(f"text {problem}", doc_id)
    text = normalise_text(raw_text)  # drops NUL and other control characters
    if not text.strip():
        return fail("text is empty", doc_id)
    raw_title = obj.get("title")
    if raw_title is not None and not isinstance(raw_title, str | int | float):
        return fail("title must be a string", doc_id)
    title = str(raw_title or "").strip()
    problem = text_problem(title)
    if problem:
        return fail(f"title {problem}", doc_id)
    groups = obj.get("access_groups") or ()
    if isinstance(groups, str):
        groups = [g for g in (p.strip() for p in groups.replace(";", ",").split(",")) if g]
    if not isinstance(groups, list | tuple) or not all(
        isinstance(g, str) and g.strip() for g in groups
    ):
        return fail("access_groups must be a list of names or a ';'-separated string", doc_id)
    for group in groups:
        problem = text_problem(group.strip(), max_length=MAX_GROUP_NAME_LENGTH, identifier=True)
        if problem:
            return fail(f"the access group name {group.strip()[:40]!r} {problem}", doc_id)
    try:
        modified_at = _parse_time(obj.get("modified_at"))
    except ValueError:
        shown = str(obj.get("modified_at"))[:40]
        return fail(f"modified_at {shown!r} is not an ISO 8601 date or time", doc_id)
    seen[doc_id] = line
    batch.records.append(
        DocumentRecord(
            doc_id=doc_id,
            title=(title or doc_id)[:MAX_TITLE_LENGTH],
            text=text,
            report=assess_quality(text),
            access_groups=tuple(sorted({g.strip() for g in groups})),
            modified_at=modified_at,
            source_name=batch.source,
            line=line,
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
