"""Bring in judgements made elsewhere, so agreement and gold resolution work on them too."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from corpus.models import Document, Membership, Project, Role
from corpus.sources import RecordError
from corpus.visibility import check_doc_ids
from goldeval.formats.textfiles import (
    LineProblem,
    NotUTF8Error,
    decode_utf8,
    json_lines,
    text_problem,
)
from goldset.errors import ServiceError
from labelling.models import Assignment, Candidate, Judgement, Pool, PoolState, Question, Span
from labelling.services import gold_state

IMPORTED_POOL = "imported"


@dataclass(frozen=True)
class ImportedVote:
    line: int
    question: Question
    labeller: str
    document: Document
    start: int
    end: int
    grade: int


@dataclass
class JudgementImportResult:
    judgements: int = 0
    labellers_created: list[str] = field(default_factory=list)
    errors: list[RecordError] = field(default_factory=list)
    # Unknown document ids whose lines were left out, counted and named ("" when none).
    warning: str = ""


def import_judgements(
    *, project: Project, name: str, data: bytes, set_name: str = ""
) -> JudgementImportResult:
    """JSONL `{"question_id", "labeller", "doc_id", "start"?, "end"?, "grade"}` (document level
    without offsets). Every line is checked first; with any bad line nothing is written. Lines
    naming an unknown document id are left out and counted in ``warning``; a file naming no
    known document is refused (`corpus.visibility.check_doc_ids`)."""
    result = JudgementImportResult()
    questions = Question.objects.filter(question_set__project=project).select_related(
        "question_set"
    )
    if set_name:
        questions = questions.filter(question_set__name=set_name)
    by_id: dict[str, list[Question]] = {}
    for question in questions:
        by_id.setdefault(question.external_id, []).append(question)
    documents = {
        d.doc_id: d
        for d in Document.objects.filter(project=project).select_related("latest_version")
    }
    votes: list[ImportedVote] = []
    seen: dict[tuple, int] = {}
    try:
        text = decode_utf8(data)
    except NotUTF8Error as exc:
        raise ServiceError(f"{name}: {exc}.") from None
    records = list(json_lines(text))
    # Ids a column can hold are checked as document ids; any other value is its line's error.
    named = [
        record["doc_id"]
        for _, record in records
        if isinstance(record, dict)
        and isinstance(record.get("doc_id"), str)
        and not text_problem(record["doc_id"])
    ]
    check = check_doc_ids(project=project, doc_ids=named)
    if check.none_known:
        raise ServiceError(f"{check.refusal(name)}. Nothing was imported.")
    result.warning = check.warning(name)
    for number, record in records:
        doc_id = record.get("doc_id") if isinstance(record, dict) else None
        if isinstance(doc_id, str) and check.is_unknown(doc_id):
            continue
        vote = _parse(
            record, number, by_id=by_id, documents=documents, name=name, errors=result.errors
        )
        if vote is None:
            continue
        key = (vote.question.pk, vote.labeller, vote.document.pk, vote.start, vote.end)
        if key in seen:
            result.errors.append(
                RecordError(
                    source=name,
                    line=number,
                    error=(
                        f"{vote.labeller} judges the same item twice (first on line {seen[key]})"
                    ),
                )
            )
            continue
        seen[key] = number
        votes.append(vote)
    if result.errors:
        return result
    if not votes:
        raise ServiceError(f"{name} has no judgements.")
    with transaction.atomic():
        _write(project, votes, result)
    return result


def _parse(obj, number, *, by_id, documents, name, errors) -> ImportedVote | None:
    def fail(message: str) -> None:
        errors.append(RecordError(source=name, line=number, error=message))

    if isinstance(obj, LineProblem):
        return fail(obj.message)
    qid, labeller, doc_id, grade = (
        obj.get(k) for k in ("question_id", "labeller", "doc_id", "grade")
    )
    matches = by_id.get(str(qid), []) if qid is not None else []
    if not matches:
        return fail(f"unknown question_id {qid!r}")
    if len(matches) > 1:
        return fail(f"question_id {qid!r} is in several question sets; pass --set")
    if not isinstance(labeller, str) or not labeller.strip() or len(labeller) > 150:
        return fail("labeller must be a user name")
    problem = text_problem(labeller.strip(), identifier=True)
    if problem:
        return fail(f"the labeller's name {problem}")
    document = documents.get(str(doc_id)) if doc_id is not None else None
    if document is None or document.latest_version is None:
        return fail(f"unknown doc_id {doc_id!r}")
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 2:
        return fail(f"grade must be 0, 1 or 2, not {grade!r}")
    length = len(document.latest_version.text)
    start, end = obj.get("start"), obj.get("end")
    if start is None and end is None:
        start, end = 0, length
    elif (
        not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end))
        or not 0 <= start < end <= length
    ):
        return fail(f"offsets {start!r}–{end!r} are not inside {doc_id} (0–{length})")
    return ImportedVote(
        line=number,
        question=matches[0],
        labeller=labeller.strip(),
        document=document,
        start=start,
        end=end,
        grade=grade,
    )


def _write(project: Project, votes: list[ImportedVote], result: JudgementImportResult) -> None:
    User = get_user_model()
    users = {}
    for username in dict.fromkeys(v.labeller for v in votes):
        user, created = User.objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            result.labellers_created.append(username)
        Membership.objects.get_or_create(
            project=project, user=user, defaults={"role": Role.LABELLER}
        )
        users[username] = user
    now = timezone.now()
    pools: dict[int, Pool] = {}
    for vote in votes:
        question_set = vote.question.question_set
        pool = pools.get(question_set.pk)
        if pool is None:
            pool, _ = Pool.objects.get_or_create(
                question_set=question_set,
                name=IMPORTED_POOL,
                defaults={"depth": 0, "state": PoolState.READY},
            )
            pools[question_set.pk] = pool
        version = vote.document.latest_version
        candidate, _ = Candidate.objects.get_or_create(
            pool=pool,
            question=vote.question,
            version=version,
            start=vote.start,
            end=vote.end,
            defaults={
                "shuffle_rank": Candidate.objects.filter(pool=pool, question=vote.question).count()
            },
        )
        assignment = (
            Assignment.objects.work()
            .filter(pool=pool, question=vote.question, labeller=users[vote.labeller])
            .first()
        )
        if assignment is None:
            slot = Assignment.objects.work().filter(pool=pool, question=vote.question).count() + 1
            assignment = Assignment.objects.create(
                pool=pool,
                question=vote.question,
                slot=slot,
                labeller=users[vote.labeller],
                assigned_at=now,
                completed_at=now,
            )
        judgement, created = Judgement.objects.update_or_create(
            assignment=assignment, candidate=candidate, defaults={"grade": vote.grade}
        )
        gold_state.mark_stale(pool_id=pool.pk, question_id=vote.question.pk)
        judgement.spans.all().delete()
        if vote.grade >= 1:
            Span.objects.create(
                judgement=judgement,
                version=version,
                start=vote.start,
                end=vote.end,
                quote=version.text[vote.start : vote.end],
            )
        result.judgements += 1
