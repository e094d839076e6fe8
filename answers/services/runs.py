"""Answer runs imported into a question set, and the leads' reference answers.

The file is read by `goldeval.formats.answers` (the one reader of the answer-run format, shared
with ``python -m goldeval answers``); what is checked here needs the database: the ids must
name the set's questions and documents the importer may see, and offsets must stay inside the
newest version of a document. All or nothing: any problem, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from answers.models import (
    Answer,
    AnswerPassage,
    AnswerPassageRole,
    AnswerRun,
    AnswerSentence,
    ReferenceAnswer,
    ReferenceFact,
)
from corpus import jobs
from corpus.models import Job, JobState
from corpus.services.documents import newest_versions
from corpus.sources import RecordError
from corpus.visibility import check_doc_ids
from goldeval.formats.answers import answer_doc_ids, check_answers, read_answer_file
from goldeval.formats.textfiles import LineProblem, NotUTF8Error
from goldset.errors import ServiceError
from labelling.models import Question, QuestionSet
from labelling.services.gold import GoldSpanRow, question_gold_spans
from labelling.services.questions import InputRejected

BULK_BATCH = 2000
MAX_FACTS = 30
MAX_FACT = 1_000


# An import, in stages a job page can show: what each one does.
IMPORT_STAGES = (
    "Reading the file",
    "Checking every line against the set's questions and documents",
    "Writing the answers, their sentences and passages",
)


@dataclass
class AnswerImportResult:
    run: AnswerRun
    answers: int
    refused: int
    sentences: int
    citations: int
    split: int  # answers Goldset split into sentences itself
    # Unknown document ids whose passages were left out, counted and named ("" when none).
    warning: str = ""


def import_answers(
    *,
    question_set: QuestionSet,
    data: bytes | str,
    run_name: str,
    source: str = "answers.jsonl",
    user=None,
    progress: Callable[[int, str], None] | None = None,
) -> AnswerImportResult:
    """A new answer run named ``run_name`` in the question set, from an answer-run file.

    Unknown question ids (or excluded questions), citations or context passages outside a
    document, sentences outside the answer, a missing ``refused``, a question given twice and
    an empty file are each reported with their line, and nothing is written. Passages naming
    an unknown document id are left out, counted and named in ``warning``; a file naming no
    known document is refused (`corpus.visibility.check_doc_ids`). With a ``user`` (an upload
    in the app), a document an access group hides from them is an unknown document, word for
    word, as if it did not exist.
    """
    name = run_name_for(question_set=question_set, run_name=run_name)
    stage = progress or (lambda done, message: None)
    stage(0, IMPORT_STAGES[0])
    try:
        read = read_answer_file(data)
    except NotUTF8Error as error:
        raise ServiceError(f"{source} is {error}.") from None
    stage(1, IMPORT_STAGES[1])
    questions = dict(question_set.questions.included().values_list("external_id", "pk"))
    check = check_doc_ids(
        project=question_set.project, doc_ids=answer_doc_ids(read.answers), user=user
    )
    if check.none_known:
        raise ServiceError(f"{check.refusal(source)}. Nothing was imported.")
    documents = newest_versions(
        project_id=question_set.project_id,
        doc_ids=set(answer_doc_ids(read.answers)) - check.unknown_set,
        user=user,
    )
    problems: list[LineProblem] = list(read.problems)
    problems += check_answers(
        read.answers,
        question_ids=questions,
        document_lengths={doc_id: length for doc_id, (_, length) in documents.items()},
        unknown_documents=check.unknown_set,
    )
    if problems:
        raise InputRejected(
            [
                RecordError(source=source, line=problem.line, error=problem.message)
                for problem in sorted(problems, key=lambda p: p.line)
            ]
        )
    stage(2, IMPORT_STAGES[2])
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
            context = [p for p in answer.context if not check.is_unknown(p.doc_id)]
            for position, passage in enumerate(context):
                passages.append(
                    _passage(row, passage, documents, role="context", position=position)
                )
            for sentence in answer.sentences:
                sentence_row = next(sentence_of)
                citations = [p for p in sentence.citations if not check.is_unknown(p.doc_id)]
                for position, passage in enumerate(citations):
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
    stage(len(IMPORT_STAGES), "Done")
    return AnswerImportResult(
        run=run,
        answers=len(answers),
        refused=sum(answer.refused for answer in answers),
        sentences=len(sentence_rows),
        citations=sum(p.role == AnswerPassageRole.CITATION for p in passages),
        split=sum(not answer.sentences_given and bool(answer.sentences) for answer in answers),
        warning=check.warning(source, outcome="left out with their citations and context"),
    )


def run_name_for(*, question_set: QuestionSet, run_name: str) -> str:
    """The run's name as stored, refused when empty or taken in the set."""
    name = slugify(run_name)[:100]
    if not name:
        raise ServiceError("Give the answer run a name (letters, digits, - or _).")
    if AnswerRun.objects.filter(question_set=question_set, name=name).exists():
        raise ServiceError(
            f"{question_set.name} already has an answer run named {name!r}; choose another name."
        )
    return name


def start_answer_import(
    *, question_set: QuestionSet, data: bytes, run_name: str, source: str, user=None
) -> Job:
    """Queue an uploaded answer run's import as a job (the file kept with it): its page shows
    each stage and, at the end, every bad line or a link to the set's answer runs. The name is
    checked now, so a taken one is said at once."""
    name = run_name_for(question_set=question_set, run_name=run_name)
    with transaction.atomic():
        job = jobs.start(
            project=question_set.project,
            task="answers.tasks.import_answers",
            kind="import_answers",
            user=user,
            params={"question_set_id": question_set.pk, "run_name": name, "source": source},
            total=len(IMPORT_STAGES),
            description=f"Import the answer run {name} into {question_set.name} from {source}",
        )
        jobs.keep_upload(job=job, name=source, data=data)
    return job


def run_answer_import(job: Job) -> None:
    """The job of `start_answer_import`. All or nothing, so a retried job whose run is there
    (made after the job was started) finds its work done."""
    params = job.params
    question_set = QuestionSet.objects.get(pk=params["question_set_id"], project=job.project)
    link = {
        "url": reverse("answers:list-answer-runs", args=[job.project.slug, question_set.pk]),
        "text": f"Open the answer runs of {question_set.name}",
    }
    done = AnswerRun.objects.filter(
        question_set=question_set, name=params["run_name"], created_at__gte=job.created_at
    ).first()
    if done is not None:
        job.result, job.done = {"run_id": done.pk, "link": link}, job.total
        jobs.finish(job, JobState.SUCCEEDED, f"Answer run {done.name} imported.")
        return
    upload = job.uploads.order_by("pk").first()
    if upload is None:
        raise ServiceError("The file of this import is gone; upload it again.")

    def advance(done: int, message: str) -> None:
        Job.objects.filter(pk=job.pk).update(
            done=done, message=message, heartbeat_at=timezone.now()
        )
        job.done = done

    try:
        result = import_answers(
            question_set=question_set,
            data=bytes(upload.content),
            run_name=params["run_name"],
            source=params["source"],
            user=job.created_by,
            progress=advance,
        )
    except InputRejected as exc:
        exc.fail(job, again="upload it again")
        return
    job.result = {"run_id": result.run.pk, "link": link}
    if result.warning:
        job.errors = [{"source": params["source"], "error": result.warning}]
    # Its citations of restricted documents are counted only for those who may see them.
    cited = (
        AnswerPassage.objects.filter(
            answer__run=result.run,
            role=AnswerPassageRole.CITATION,
            version__document__access_groups__isnull=False,
        )
        .order_by()
        .values("version__document")
        .annotate(n=Count("pk", distinct=True))
        .values_list("version__document", "n")
    )
    jobs.add_shares(job, {document: {"citations": n} for document, n in cited})
    jobs.finish(
        job,
        JobState.SUCCEEDED,
        [
            "Answer run {run}: {answers} answers ({refused} refused), {citations} citations.",
            (" {unknown}.", "unknown"),
        ],
        figures={
            "run": result.run.name,
            "answers": result.answers,
            "refused": result.refused,
            "citations": result.citations,
            "unknown": result.warning,
        },
    )


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


# --- reference answers --------------------------------------------------------------------------


@dataclass(frozen=True)
class FactInput:
    text: str
    vital: bool = True
    spans: tuple[dict, ...] = ()


def current_reference(question: Question) -> ReferenceAnswer | None:
    return question.reference_answers.order_by("-version").first()


def reference_rows(*, question_set: QuestionSet) -> list[dict]:
    """Each included question of the set (its ``pk``, ``external_id`` and ``text``) with its
    current reference answer (`current_reference`: its ``version`` and number of ``facts``;
    None without one), in question order, as plain values: the questions with their
    prefetched answers, as model objects, held one another in reference cycles that only a
    full garbage collection frees (~6,000 objects a request at 300 questions)."""
    questions = question_set.questions.included()
    current: dict[int, dict] = {}
    for reference in (
        ReferenceAnswer.objects.filter(question__in=questions)
        .values("question_id", "version")
        .annotate(facts=Count("facts"))
        .order_by("question_id", "version")
    ):
        current[reference["question_id"]] = reference  # the newest version last
    return [
        {"question": question, "reference": current.get(question["pk"])}
        for question in questions.order_by("pk").values("pk", "external_id", "text")
    ]


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


def fact_span_choices(*, question: Question, viewer) -> dict[str, GoldSpanRow]:
    """The question's gold spans a lead may link its reference facts to, by `span_key`."""
    return {span_key(s): s for s in question_gold_spans(question=question, viewer=viewer)}


def describe_span(span: GoldSpanRow) -> str:
    where = f"{span.doc_id} v{span.version} {span.start}–{span.end} (grade {span.grade})"
    return f"{where}: “{span.quote}”"


def span_key(span: GoldSpanRow | dict) -> str:
    """A gold span as a form value: doc_id|version|start|end (a doc_id may hold a |)."""
    if isinstance(span, dict):
        return f"{span.get('doc_id')}|{span.get('version')}|{span.get('start')}|{span.get('end')}"
    return f"{span.doc_id}|{span.version}|{span.start}|{span.end}"


def span_of(span: GoldSpanRow) -> dict:
    return {"doc_id": span.doc_id, "version": span.version, "start": span.start, "end": span.end}
