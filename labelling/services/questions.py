"""Writes to question sets and judgements."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from corpus.models import Document, Project
from corpus.services import IngestResult, ServiceError, ingest_batch
from corpus.sources import RecordError, read_beir
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
