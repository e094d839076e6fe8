"""Writes to question sets and judgements."""

from __future__ import annotations

import re
import secrets
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from corpus import jobs
from corpus.models import Document, Job, JobState, Project
from corpus.services.canaries import SOURCE as CANARY_SOURCE
from corpus.services.canaries import PlantedCanary, plant_canary_documents
from corpus.services.documents import Importer, IngestResult, ingest_batch
from corpus.sources import RecordError, read_beir
from goldeval.formats.questions import (
    MAX_SOURCE,
    QUESTION_FORMATS,
    QuestionFileError,
    QuestionRow,
    read_questions,
)
from goldeval.formats.textfiles import text_problem
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
    documents = ingest_batch(
        project=project, batch=collection.corpus, importer=Importer.command_line()
    )
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


def canary_set_problem(*, project: Project, set_name: str) -> str:
    """Why canary questions cannot go to the set ``set_name`` ("" when they can): its name is
    a slug, and it is new or a canary set already, never a set of the team's questions."""
    if not set_name or slugify(set_name) != set_name:
        return f"A question set name is a slug (letters, digits, - and _), not {set_name!r}."
    if QuestionSet.objects.filter(project=project, name=set_name, is_canary=False).exists():
        return (
            f"{set_name} is a question set of the team's questions: canary questions go to "
            "a set of their own, which only admins and permission replays see."
        )
    return ""


def plant_canaries(
    *, project: Project, group: str, count: int, set_name: str
) -> list[PlantedCanary]:
    """Canary documents restricted to ``group`` and one question matching each, in the
    question set ``set_name`` (source "canary"): what a permission replay asks, besides the
    gold set's questions, to prove the canaries never reach anyone outside the group."""
    problem = canary_set_problem(project=project, set_name=set_name)
    if problem:
        raise ServiceError(problem)
    with transaction.atomic():
        question_set, _ = QuestionSet.objects.get_or_create(
            project=project,
            name=set_name,
            defaults={"description": "Canary questions for permission replays.", "is_canary": True},
        )
        if not question_set.is_canary:  # made a moment ago, elsewhere
            raise ServiceError(canary_set_problem(project=project, set_name=set_name))
        canaries = plant_canary_documents(project=project, group=group, count=count)
        # Ids of their own and no group tag: a question names neither its canary nor its group.
        Question.objects.bulk_create(
            [
                Question(
                    question_set=question_set,
                    external_id=f"q-{secrets.token_hex(6)}",
                    text=c.question,
                    source=CANARY_SOURCE,
                    tags=["canary"],
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

    def fail(self, job: Job, *, again: str) -> None:
        """Finish the import ``job`` as failed with every problem listed on it: nothing was
        imported; the file is to be corrected and then ``again`` ("upload it again")."""
        job.errors = [problem.as_dict() for problem in self.problems]
        count = len(self.problems)
        jobs.finish(
            job,
            JobState.FAILED,
            f"Nothing was imported: {count} line{'s' if count != 1 else ''} to fix (listed "
            f"below); correct the file and {again}.",
        )


@dataclass
class QuestionImportResult:
    question_set: QuestionSet
    created: int = 0
    unchanged: int = 0
    duplicates: int = 0

    def describe(self) -> str:
        return (
            f"{self.created} new question{'s' if self.created != 1 else ''}, "
            f"{self.unchanged} already there, {self.duplicates} flagged as duplicates."
        )


# Files longer than this are imported by a job with a progress bar rather than in the request.
LARGE_IMPORT_LINES = 2_000
CREATE_BATCH = 2_000
# How often the job's progress is written while rows are checked.
PROGRESS_EVERY = 5_000

ImportProgress = Callable[[int, int], None]  # (rows done, rows in all)


def import_questions(
    *,
    project: Project,
    set_name: str,
    data: bytes | str,
    format: str,
    source: str = "",
    name: str = "",
    progress: ImportProgress | None = None,
) -> QuestionImportResult:
    """Add questions to a set (created if needed): all of them, or none when any line is bad.

    Text is stored exactly as given: case, typos, spacing and trailing punctuation are the
    question. A question whose text matches an earlier one of the set (ignoring case and
    spacing) is kept and flagged with ``duplicate_of``. Importing the same file again changes
    nothing: a row with an id is the question with that id; a row without one (pasted lines)
    is an existing question with exactly its text not matched by another row, so a file that
    repeats a line keeps both copies once, and never adds them again. ``source`` applies to
    rows that do not name their own.
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
    if len(source) > MAX_SOURCE:
        raise ServiceError(f"A source is at most {MAX_SOURCE} characters.")
    if text_problem(source):
        raise ServiceError(f"The source {text_problem(source)}.")
    try:
        parsed = read_questions(data=data, format=format, name=name)
    except QuestionFileError as exc:
        raise ServiceError(str(exc)) from exc
    rows = parsed.rows
    problems = [RecordError(source=name, line=p.line, error=p.message) for p in parsed.problems]
    if not rows and not problems:
        raise ServiceError(f"{name} has no questions.")
    total = len(rows)
    with transaction.atomic():
        question_set, _ = QuestionSet.objects.get_or_create(project=project, name=set_name)
        if question_set.is_canary:
            # Said as for a name the project cannot take, whoever asks (a lead never sees it).
            raise ServiceError(f"The question set name {set_name!r} is taken; choose another.")
        existing = list(
            question_set.questions.order_by("pk").values_list("pk", "external_id", "text")
        )
        planned = _plan(rows, existing, problems, name=name, set_name=set_name, progress=progress)
        if problems:
            transaction.set_rollback(True)
            raise InputRejected(sorted(problems, key=lambda p: p.line or 0))
        result = QuestionImportResult(question_set=question_set, unchanged=total - len(planned))
        _create(question_set, planned, existing, source=source, result=result)
    if progress:
        progress(total, total)
    return result


def _plan(
    rows: list[QuestionRow],
    existing: list[tuple[int, str, str]],
    problems: list[RecordError],
    *,
    name: str,
    set_name: str,
    progress: ImportProgress | None,
) -> list[tuple[QuestionRow, str]]:
    """The rows to create, each with its id; rows already in the set are matched, not planned.

    Rows with an id first, so a row without one never takes a question another row names.
    """
    by_id = {external_id: (pk, text) for pk, external_id, text in existing}
    matched: set[int] = set()
    seen_ids: dict[str, int] = {}
    for row in rows:
        if row.external_id is None:
            continue
        if row.external_id in seen_ids:
            problems.append(
                _line(
                    name,
                    row,
                    f"question id {row.external_id!r} already used on "
                    f"line {seen_ids[row.external_id]}",
                )
            )
            continue
        seen_ids[row.external_id] = row.line
        known = by_id.get(row.external_id)
        if known is not None and known[1] != row.text:
            problems.append(
                _line(
                    name,
                    row,
                    f"question id {row.external_id!r} is already in {set_name} with different text",
                )
            )
        elif known is not None:
            matched.add(known[0])
    same_text: dict[str, deque[int]] = defaultdict(deque)
    for pk, _, text in existing:
        if pk not in matched:
            same_text[text].append(pk)
    taken = set(by_id) | set(seen_ids)
    next_number = len(existing) + 1
    planned: list[tuple[QuestionRow, str]] = []
    for done, row in enumerate(rows, start=1):
        if progress and done % PROGRESS_EVERY == 0:
            progress(done, len(rows))
        if row.external_id is not None:
            if row.external_id not in by_id:
                planned.append((row, row.external_id))
            continue
        if same_text[row.text]:
            same_text[row.text].popleft()  # this very question is already in the set
            continue
        while f"q{next_number:03d}" in taken:
            next_number += 1
        external_id = f"q{next_number:03d}"
        taken.add(external_id)
        planned.append((row, external_id))
    return planned


def _create(
    question_set: QuestionSet,
    planned: list[tuple[QuestionRow, str]],
    existing: list[tuple[int, str, str]],
    *,
    source: str,
    result: QuestionImportResult,
) -> None:
    """Insert the planned questions in file order, in batches, each flagged as the duplicate of
    the set's first question with the same comparable text."""
    first_with_text: dict[str, int | Question] = {}
    for pk, _, text in existing:
        first_with_text.setdefault(_comparable(text), pk)
    questions: list[Question] = []
    pending: list[tuple[Question, Question]] = []  # duplicates of questions created here
    for row, external_id in planned:
        comparable = _comparable(row.text)
        original = first_with_text.get(comparable)
        question = Question(
            question_set=question_set,
            external_id=external_id,
            text=row.text,
            source=row.source or source,
            tags=list(row.tags),
            duplicate_of_id=original if isinstance(original, int) else None,
        )
        if isinstance(original, Question):
            pending.append((question, original))
        first_with_text.setdefault(comparable, question)
        questions.append(question)
        result.duplicates += original is not None
    Question.objects.bulk_create(questions, batch_size=CREATE_BATCH)
    for question, original in pending:
        question.duplicate_of_id = original.pk
    Question.objects.bulk_update([q for q, _ in pending], ["duplicate_of"], batch_size=500)
    result.created = len(questions)


def _line(name: str, row: QuestionRow, error: str) -> RecordError:
    return RecordError(source=name, line=row.line, error=error)


def start_question_import(
    *,
    project: Project,
    set_name: str,
    data: bytes,
    format: str,
    source: str = "",
    name: str = "",
    user=None,
) -> Job:
    """Queue the import of a large question file as a job (the file kept with it); the job
    page shows its progress and, at the end, each bad line or a link to the set."""
    with transaction.atomic():
        job = jobs.start(
            project=project,
            task="labelling.tasks.import_questions",
            kind="import_questions",
            user=user,
            params={"set_name": set_name, "format": format, "source": source, "name": name},
            total=data.count(b"\n") + (not data.endswith(b"\n")),
            description=f"Import questions into {set_name} from {name or 'pasted lines'}",
        )
        jobs.keep_upload(job=job, name=name or "pasted questions", data=data)
    return job


def run_question_import(job: Job) -> None:
    """The job of `start_question_import`; idempotent, so a retried job adds nothing twice."""
    params = job.params
    upload = job.uploads.order_by("pk").first()
    if upload is None:
        raise ServiceError("The file of this import is gone; upload it again.")

    def advance(done: int, total: int) -> None:
        Job.objects.filter(pk=job.pk).update(
            done=done, total=max(total, done), heartbeat_at=timezone.now()
        )
        job.done, job.total = done, max(total, done)

    try:
        result = import_questions(
            project=job.project,
            set_name=params["set_name"],
            data=bytes(upload.content),
            format=params["format"],
            source=params.get("source", ""),
            name=params.get("name", ""),
            progress=advance,
        )
    except InputRejected as exc:
        exc.fail(job, again="import it again")
        return
    job.result = {
        "created": result.created,
        "unchanged": result.unchanged,
        "duplicates": result.duplicates,
        "question_set_id": result.question_set.pk,
        "link": {
            "url": reverse(
                "labelling:show-question-set", args=[job.project.slug, result.question_set.pk]
            ),
            "text": f"Open the question set {result.question_set.name}",
        },
    }
    jobs.finish(job, JobState.SUCCEEDED, result.describe())


def _comparable(text: str) -> str:
    """What counts as the same question: equal ignoring case and spacing."""
    return _SPACE.sub(" ", text).strip().casefold()
