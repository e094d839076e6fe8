"""Answer runs imported into a question set, and the leads' reference answers.

The file is read by `labelling.answerfiles` (the one reader of the answer-run format, shared
with ``python -m evaluation answers``); what is checked here needs the database: the ids must
name the set's questions and documents the importer may see, and offsets must stay inside the
newest version of a document. All or nothing: any problem, and nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models.functions import Length
from django.utils.text import slugify

from corpus.models import Document, DocumentVersion
from corpus.sources import RecordError
from corpus.textfiles import LineProblem, NotUTF8Error
from goldset.errors import ServiceError
from labelling.answerfiles import Answer as ReadAnswer
from labelling.answerfiles import check_answers, read_answer_file
from labelling.models import (
    Answer,
    AnswerPassage,
    AnswerRun,
    AnswerSentence,
    Question,
    QuestionSet,
    ReferenceAnswer,
    ReferenceFact,
)
from labelling.services.questions import InputRejected

ID_BATCH = 900  # SQLite caps the bound parameters of one query
BULK_BATCH = 2000
MAX_FACTS = 30
MAX_FACT = 1_000


@dataclass
class AnswerImportResult:
    run: AnswerRun
    answers: int
    refused: int
    sentences: int
    citations: int
    split: int  # answers Goldset split into sentences itself


def import_answers(
    *,
    question_set: QuestionSet,
    data: bytes | str,
    run_name: str,
    source: str = "answers.jsonl",
    user=None,
) -> AnswerImportResult:
    """A new answer run named ``run_name`` in the question set, from an answer-run file.

    Unknown question ids (or excluded questions), unknown documents, citations or context
    passages outside a document, sentences outside the answer, a missing ``refused``, a
    question given twice and an empty file are each reported with their line, and nothing is
    written. With a ``user`` (an upload in the app), a document an access group hides from them
    is an unknown document, word for word, as if it did not exist.
    """
    name = slugify(run_name)[:100]
    if not name:
        raise ServiceError("Give the answer run a name (letters, digits, - or _).")
    if AnswerRun.objects.filter(question_set=question_set, name=name).exists():
        raise ServiceError(
            f"{question_set.name} already has an answer run named {name!r}; choose another name."
        )
    try:
        read = read_answer_file(data)
    except NotUTF8Error as error:
        raise ServiceError(f"{source} is {error}.") from None
    questions = dict(question_set.questions.included().values_list("external_id", "pk"))
    doc_ids = {passage.doc_id for answer in read.answers.values() for passage in _passages(answer)}
    documents = _newest_versions(question_set, doc_ids, user=user)
    problems: list[LineProblem] = list(read.problems)
    problems += check_answers(
        read.answers,
        question_ids=questions,
        document_lengths={doc_id: length for doc_id, (_, length) in documents.items()},
    )
    if problems:
        raise InputRejected(
            [
                RecordError(source=source, line=problem.line, error=problem.message)
                for problem in sorted(problems, key=lambda p: p.line)
            ]
        )
    answers = sorted(read.answers.values(), key=lambda answer: answer.line)
    # The run's system is the one its lines name, when they name only one.
    systems = {(a.system, a.version) for a in answers if a.system or a.version}
    system, version = systems.pop() if len(systems) == 1 else ("", "")
    with transaction.atomic():
        run = AnswerRun.objects.create(
            project_id=question_set.project_id,
            question_set=question_set,
            name=name,
            system=system,
            system_version=version,
            created_by=user if user is not None and user.is_authenticated else None,
        )
        rows = Answer.objects.bulk_create(
            [
                Answer(
                    run=run,
                    question_id=questions[answer.question_id],
                    text=answer.text,
                    refused=answer.refused,
                    sentences_given=answer.sentences_given,
                    key=answer.key(),
                    line=answer.line,
                )
                for answer in answers
            ],
            batch_size=BULK_BATCH,
        )
        sentence_rows = AnswerSentence.objects.bulk_create(
            [
                AnswerSentence(answer=row, position=position, start=s.start, end=s.end)
                for row, answer in zip(rows, answers, strict=True)
                for position, s in enumerate(answer.sentences)
            ],
            batch_size=BULK_BATCH,
        )
        sentence_of = iter(sentence_rows)
        passages = []
        for row, answer in zip(rows, answers, strict=True):
            for position, passage in enumerate(answer.context):
                passages.append(
                    _passage(row, passage, documents, role="context", position=position)
                )
            for sentence in answer.sentences:
                sentence_row = next(sentence_of)
                for position, passage in enumerate(sentence.citations):
                    passages.append(
                        _passage(
                            row,
                            passage,
                            documents,
                            role="citation",
                            position=position,
                            sentence=sentence_row,
                        )
                    )
        AnswerPassage.objects.bulk_create(passages, batch_size=BULK_BATCH)
    return AnswerImportResult(
        run=run,
        answers=len(answers),
        refused=sum(answer.refused for answer in answers),
        sentences=len(sentence_rows),
        citations=sum(answer.citations for answer in answers),
        split=sum(not answer.sentences_given and bool(answer.sentences) for answer in answers),
    )


def _passages(answer: ReadAnswer):
    yield from answer.context
    for sentence in answer.sentences:
        yield from sentence.citations


def _passage(row, passage, documents, *, role, position, sentence=None) -> AnswerPassage:
    return AnswerPassage(
        answer=row,
        role=role,
        sentence=sentence,
        position=position,
        version_id=documents[passage.doc_id][0],
        start=passage.start,
        end=passage.end,
    )


def _newest_versions(
    question_set: QuestionSet, doc_ids: set[str], *, user=None
) -> dict[str, tuple[int, int]]:
    """doc_id -> (newest version id, its length) of the named documents of the project (with a
    user, of those they may see)."""
    found: dict[str, tuple[int, int]] = {}
    ordered = sorted(doc_ids)
    for first in range(0, len(ordered), ID_BATCH):
        documents = Document.objects.filter(
            project_id=question_set.project_id,
            doc_id__in=ordered[first : first + ID_BATCH],
            latest_version__isnull=False,
        )
        if user is not None:
            documents = documents.exclude(pk__in=Document.objects.hidden_from(user).values("pk"))
        versions = dict(documents.values_list("doc_id", "latest_version_id"))
        lengths = dict(
            DocumentVersion.objects.filter(pk__in=list(versions.values()))
            .annotate(length=Length("text"))
            .values_list("pk", "length")
        )
        found.update({doc_id: (pk, lengths[pk]) for doc_id, pk in versions.items()})
    return found


# --- reference answers --------------------------------------------------------------------------


@dataclass(frozen=True)
class FactInput:
    text: str
    vital: bool = True
    spans: tuple[dict, ...] = ()


def current_reference(question: Question) -> ReferenceAnswer | None:
    return question.reference_answers.order_by("-version").first()


def record_reference_answer(*, question: Question, facts: list[FactInput], user) -> ReferenceAnswer:
    """Save the question's reference facts as a new version (the old ones stay, as grades
    point at them). Saving the same facts again makes no new version."""
    cleaned = [
        FactInput(text=fact.text.strip(), vital=fact.vital, spans=tuple(fact.spans))
        for fact in facts
        if fact.text.strip()
    ]
    if len(cleaned) > MAX_FACTS:
        raise ServiceError(f"A reference answer holds at most {MAX_FACTS} facts.")
    for fact in cleaned:
        if len(fact.text) > MAX_FACT:
            raise ServiceError(f"A fact is at most {MAX_FACT:,} characters; split it.")
    with transaction.atomic():
        # Locks the question's row so two leads saving at once get two versions, not a clash.
        Question.objects.select_for_update().filter(pk=question.pk).first()
        current = current_reference(question)
        if current is not None and _same(current, cleaned):
            return current
        reference = ReferenceAnswer.objects.create(
            question=question,
            version=(current.version + 1) if current is not None else 1,
            created_by=user,
        )
        ReferenceFact.objects.bulk_create(
            ReferenceFact(
                reference=reference,
                position=position,
                text=fact.text,
                vital=fact.vital,
                spans=list(fact.spans),
            )
            for position, fact in enumerate(cleaned)
        )
    return reference


def _same(reference: ReferenceAnswer, facts: list[FactInput]) -> bool:
    stored = [(f.text, f.vital, list(f.spans)) for f in reference.facts.all()]
    return stored == [(f.text, f.vital, list(f.spans)) for f in facts]
