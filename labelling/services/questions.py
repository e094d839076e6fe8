"""Writes to question sets and judgements."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils.text import slugify

from corpus.models import Document, Project
from corpus.services.documents import IngestResult, ingest_batch
from corpus.sources import RecordError, read_beir
from goldset.errors import ServiceError
from labelling.models import ImportedJudgement, Question, QuestionSet


@dataclass
class BeirImportResult:
    documents: IngestResult
    question_set: QuestionSet | None = None
    questions: int = 0
    judgements: int = 0
    errors: list[RecordError] = field(default_factory=list)


def import_beir(*, project: Project, path: Path, set_name: str) -> BeirImportResult:
    """A BEIR folder: its corpus as documents, its queries as a question set, its qrels as
    document-level imported judgements.

    Questions and judgements are written together, or not at all.
    """
    collection = read_beir(path)
    documents = ingest_batch(project=project, batch=collection.corpus)
    result = BeirImportResult(documents=documents, errors=list(documents.errors))
    with transaction.atomic():
        question_set, _ = QuestionSet.objects.get_or_create(project=project, name=set_name)
        existing = dict(question_set.questions.values_list("external_id", "pk"))
        new_questions = [
            Question(
                question_set=question_set, external_id=q.question_id, text=q.text, source="beir"
            )
            for q in collection.queries
            if q.question_id not in existing
        ]
        Question.objects.bulk_create(new_questions, batch_size=2000)
        result.questions = len(new_questions)
        question_ids = dict(question_set.questions.values_list("external_id", "pk"))
        doc_ids = dict(Document.objects.filter(project=project).values_list("doc_id", "pk"))
        judgements = []
        for qrel in collection.qrels:
            if qrel.question_id not in question_ids:
                result.errors.append(
                    RecordError(source=qrel.source, error=f"unknown query id {qrel.question_id!r}")
                )
            elif qrel.doc_id not in doc_ids:
                result.errors.append(
                    RecordError(
                        source=qrel.source,
                        doc_id=qrel.doc_id,
                        error=f"unknown corpus id {qrel.doc_id!r}",
                    )
                )
            else:
                judgements.append(
                    ImportedJudgement(
                        question_id=question_ids[qrel.question_id],
                        document_id=doc_ids[qrel.doc_id],
                        grade=qrel.grade,
                        source=qrel.source,
                    )
                )
        created = ImportedJudgement.objects.bulk_create(
            judgements,
            batch_size=2000,
            update_conflicts=True,
            unique_fields=["question", "document", "source"],
            update_fields=["grade"],
        )
        result.judgements = len(created)
    result.question_set = question_set
    return result


def get_question_set(*, project: Project, name: str) -> QuestionSet:
    question_set = QuestionSet.objects.filter(project=project, name=name).first()
    if question_set is None:
        raise ServiceError(f"No question set named {name!r} in {project.slug}.")
    return question_set


# Question import -------------------------------------------------------------------------

QUESTION_FORMATS = ("csv", "jsonl", "lines")
MAX_EXTERNAL_ID = 255
MAX_SOURCE = 200
# Only line breaks end a pasted question: str.splitlines would also split on U+2028 and
# friends, which may sit inside a question copied from a chat tool.
_LINE_BREAK = re.compile(r"\r\n|\n|\r")
_SPACE = re.compile(r"\s+")


class InputRejected(ServiceError):
    """A file that cannot be imported as a whole; every problem found, with its line."""

    def __init__(self, problems: list[RecordError]):
        self.problems = problems
        shown = "; ".join(str(p) for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"Nothing was imported: {shown}{more}")


@dataclass(frozen=True)
class QuestionRow:
    line: int
    external_id: str | None
    text: str
    source: str
    tags: tuple[str, ...]


@dataclass
class QuestionImportResult:
    question_set: QuestionSet
    created: int = 0
    unchanged: int = 0
    duplicates: int = 0


def import_questions(
    *,
    project: Project,
    set_name: str,
    data: bytes | str,
    format: str,
    source: str = "",
    name: str = "",
) -> QuestionImportResult:
    """Add questions to a set (created if needed): all of them, or none when any line is bad.

    Text is stored exactly as given: case, typos, spacing and trailing punctuation are the
    question. A question whose text matches an earlier one of the set (ignoring case and
    spacing) is kept and flagged with ``duplicate_of``. Importing the same file again changes
    nothing. ``source`` applies to rows that do not name their own.
    """
    name = name or {"lines": "pasted questions"}.get(format, f"questions.{format}")
    if format not in QUESTION_FORMATS:
        raise ServiceError(
            f"Unknown question format {format!r}; choose one of {', '.join(QUESTION_FORMATS)}."
        )
    if not set_name or slugify(set_name) != set_name:
        raise ServiceError(
            f"A question set name is a slug (lower-case letters, digits, - and _): {set_name!r}."
        )
    text = _decode(data, name)
    rows, problems = {"csv": _csv_rows, "jsonl": _jsonl_rows, "lines": _pasted_rows}[format](
        text, name
    )
    if not rows and not problems:
        raise ServiceError(f"{name} has no questions.")
    if len(source) > MAX_SOURCE:
        raise ServiceError(f"A source is at most {MAX_SOURCE} characters.")
    with transaction.atomic():
        question_set, _ = QuestionSet.objects.get_or_create(project=project, name=set_name)
        existing = list(question_set.questions.order_by("pk"))
        by_id = {q.external_id: q for q in existing}
        first_with_text = {}
        for question in existing:
            first_with_text.setdefault(_comparable(question.text), question)
        result = QuestionImportResult(question_set=question_set)
        planned: list[tuple[QuestionRow, str]] = []
        seen_ids: dict[str, int] = {}
        taken = set(by_id)
        next_number = len(existing) + 1
        for row in rows:
            external_id = row.external_id
            if external_id is None:
                while f"q{next_number:03d}" in taken or f"q{next_number:03d}" in seen_ids:
                    next_number += 1
                external_id = f"q{next_number:03d}"
            if external_id in seen_ids:
                problems.append(
                    RecordError(
                        source=name,
                        line=row.line,
                        error=f"question id {external_id!r} already used on line "
                        f"{seen_ids[external_id]}",
                    )
                )
                continue
            seen_ids[external_id] = row.line
            known = by_id.get(external_id)
            if known is not None and known.text != row.text:
                problems.append(
                    RecordError(
                        source=name,
                        line=row.line,
                        error=f"question id {external_id!r} is already in {set_name} with "
                        "different text",
                    )
                )
            elif known is not None:
                result.unchanged += 1
            else:
                planned.append((row, external_id))
        if problems:
            transaction.set_rollback(True)
            raise InputRejected(sorted(problems, key=lambda p: p.line or 0))
        for row, external_id in planned:
            comparable = _comparable(row.text)
            original = first_with_text.get(comparable)
            question = Question.objects.create(
                question_set=question_set,
                external_id=external_id,
                text=row.text,
                source=row.source or source,
                tags=list(row.tags),
                duplicate_of=original,
            )
            first_with_text.setdefault(comparable, question)
            result.created += 1
            result.duplicates += original is not None
    return result


def _comparable(text: str) -> str:
    """What counts as the same question: equal ignoring case and spacing."""
    return _SPACE.sub(" ", text).strip().casefold()


def _decode(data: bytes | str, name: str) -> str:
    if isinstance(data, str):
        return data
    try:
        # utf-8-sig drops only a byte-order mark, which no one typed into a question.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ServiceError(
            f"{name} is not UTF-8 text (byte {exc.start} is not valid); save it as UTF-8."
        ) from exc


def _row(
    *, name: str, line: int, external_id, text, source, tags, problems: list[RecordError]
) -> QuestionRow | None:
    def reject(error: str) -> None:
        problems.append(RecordError(source=name, line=line, error=error))

    if not isinstance(text, str) or not text.strip():
        return reject("the question text is empty")
    if external_id is not None:
        if isinstance(external_id, int) and not isinstance(external_id, bool):
            external_id = str(external_id)
        if not isinstance(external_id, str):
            return reject("the question id must be a string")
        external_id = external_id.strip() or None
        if external_id is not None and len(external_id) > MAX_EXTERNAL_ID:
            return reject(f"the question id is longer than {MAX_EXTERNAL_ID} characters")
    if source is None:
        source = ""
    if not isinstance(source, str) or len(source) > MAX_SOURCE:
        return reject(f"the source must be text of at most {MAX_SOURCE} characters")
    if tags is None:
        tags = []
    if isinstance(tags, str):
        tags = re.split(r"[;,]", tags)
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return reject("tags must be a list of strings (or one string separated by ; or ,)")
    return QuestionRow(
        line=line,
        external_id=external_id,
        text=text,
        source=source.strip(),
        tags=tuple(t.strip() for t in tags if t.strip()),
    )


def _csv_rows(text: str, name: str) -> tuple[list[QuestionRow], list[RecordError]]:
    # newline="" keeps line breaks inside quoted cells exactly as written.
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None or not any(cell.strip() for cell in header):
        raise ServiceError(f"{name} has no questions.")
    columns = {cell.strip().lower(): position for position, cell in enumerate(header)}
    text_column = next((columns[c] for c in ("question", "text") if c in columns), None)
    if text_column is None:
        raise ServiceError(
            f"{name} needs a 'question' (or 'text') column; its header has "
            f"{', '.join(repr(c) for c in header)}. Optional columns: id, source, tags."
        )
    id_column = next((columns[c] for c in ("id", "question_id") if c in columns), None)

    def cell(values: list[str], position: int | None) -> str | None:
        return values[position] if position is not None and position < len(values) else None

    rows: list[QuestionRow] = []
    problems: list[RecordError] = []
    try:
        for values in reader:
            if not any(values):
                continue
            row = _row(
                name=name,
                line=reader.line_num,
                external_id=cell(values, id_column),
                text=cell(values, text_column),
                source=cell(values, columns.get("source")),
                tags=cell(values, columns.get("tags")),
                problems=problems,
            )
            if row is not None:
                rows.append(row)
    except csv.Error as exc:
        problems.append(RecordError(source=name, line=reader.line_num, error=f"bad CSV: {exc}"))
    return rows, problems


def _jsonl_rows(text: str, name: str) -> tuple[list[QuestionRow], list[RecordError]]:
    rows: list[QuestionRow] = []
    problems: list[RecordError] = []
    for line, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(
                RecordError(source=name, line=line, error=f"not valid JSON ({exc.msg})")
            )
            continue
        if not isinstance(record, dict):
            problems.append(RecordError(source=name, line=line, error="expected a JSON object"))
            continue
        question = record.get("question", record.get("text"))
        if question is None:
            problems.append(
                RecordError(source=name, line=line, error="needs a 'question' (or 'text') key")
            )
            continue
        row = _row(
            name=name,
            line=line,
            external_id=record.get("id", record.get("_id", record.get("question_id"))),
            text=question,
            source=record.get("source"),
            tags=record.get("tags"),
            problems=problems,
        )
        if row is not None:
            rows.append(row)
    return rows, problems


def _pasted_rows(text: str, name: str) -> tuple[list[QuestionRow], list[RecordError]]:
    rows = [
        QuestionRow(line=line, external_id=None, text=raw, source="", tags=())
        for line, raw in enumerate(_LINE_BREAK.split(text), start=1)
        if raw.strip()
    ]
    return rows, []
