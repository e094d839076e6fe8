"""Writes to question sets and judgements."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils.text import slugify

from corpus.models import Document, Project
from corpus.services.canaries import SOURCE as CANARY_SOURCE
from corpus.services.canaries import PlantedCanary, plant_canary_documents
from corpus.services.documents import IngestResult, ingest_batch
from corpus.sources import RecordError, read_beir
from goldset.errors import ServiceError
from labelling.models import ImportedJudgement, Question, QuestionSet
from labelling.sources import (
    MAX_SOURCE,
    QUESTION_FORMATS,
    QuestionFileError,
    QuestionRow,
    read_questions,
)


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


def plant_canaries(
    *, project: Project, group: str, count: int, set_name: str
) -> list[PlantedCanary]:
    """Canary documents restricted to ``group`` and one question matching each, in the
    question set ``set_name`` (source "canary"): what a permission replay asks, besides the
    gold set's questions, to prove the canaries never reach anyone outside the group."""
    if not set_name or slugify(set_name) != set_name:
        raise ServiceError(f"A question set name is a slug, not {set_name!r}.")
    with transaction.atomic():
        canaries = plant_canary_documents(project=project, group=group, count=count)
        question_set, _ = QuestionSet.objects.get_or_create(
            project=project,
            name=set_name,
            defaults={"description": "Canary questions for permission replays."},
        )
        Question.objects.bulk_create(
            [
                Question(
                    question_set=question_set,
                    external_id=c.doc_id,
                    text=c.question,
                    source=CANARY_SOURCE,
                    tags=["canary", f"group:{group}"],
                )
                for c in canaries
            ]
        )
    return canaries


# Question import -------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


class InputRejected(ServiceError):
    """A file that cannot be imported as a whole; every problem found, with its line."""

    def __init__(self, problems: list[RecordError]):
        self.problems = problems
        shown = "; ".join(str(p) for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"Nothing was imported: {shown}{more}")


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
    try:
        parsed = read_questions(data=data, format=format, name=name)
    except QuestionFileError as exc:
        raise ServiceError(str(exc)) from exc
    rows = parsed.rows
    problems = [RecordError(source=name, line=p.line, error=p.message) for p in parsed.problems]
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
