"""Gold sets: finalise (freeze what `labelling.services.gold` says into the next numbered set),
read back, verify, download as a zip, write to a folder.

A gold set is its bundle: the files `goldeval.formats.bundle` writes from the data gathered here,
stored once and never changed. Everything that reads a gold set reads those files through
`goldeval.formats.gold.read_bundle`, exactly as ``python -m goldeval`` reads a downloaded bundle.
"""

from __future__ import annotations

import io
import json
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from django.db import transaction
from django.db.models import Max, Q
from django.urls import reverse
from django.utils import timezone

from answers.services.fact_links import changed_fact_links
from answers.services.gold import answers_gold_records
from corpus import jobs
from corpus.models import ChunkingScheme, Document, DocumentVersion, Job, JobState, Project
from evaluation.models import GoldSet, GoldSetFile
from evaluation.services import pool_bias
from evaluation.services.corpus_state import document_pks, document_states
from goldeval.formats.ai_judgements import AI_JUDGEMENTS_FILE, AIJudgement, read_ai_judgements
from goldeval.formats.answer_gold import ANSWERS_GOLD_FILE, read_answer_gold
from goldeval.formats.bundle import (
    Bundle,
    BundleError,
    BundleInfo,
    CorpusVersion,
    Vote,
    build_bundle,
    sha256,
)
from goldeval.formats.gold import (
    MANIFEST_FILE,
    READ_FILES,
    EvaluationInputError,
    Gold,
    read_bundle,
)
from goldeval.text.chunking import ChunkSpec
from goldset.batching import in_batches
from goldset.errors import ServiceError
from judges.services.export import bundle_ai_judgements
from labelling.models import (
    Assignment,
    Judgement,
    Question,
    QuestionSet,
    Resolution,
    Verdict,
    VerdictOutcome,
    work_q,
)
from labelling.resolution import DEFAULT_MIN_SPAN_F1
from labelling.services.gold import (
    FrozenQuestion,
    UnresolvedItem,
    changed_counts,
    freeze_gold,
)
from labelling.services.machine_votes import MachineVote, machine_counting


class GoldSetError(ServiceError):
    """A gold set or run request that cannot be carried out; the message is for users."""


class FinaliseBlocked(GoldSetError):
    """Unresolved items stop a question set from being frozen; each one is listed."""

    def __init__(self, unresolved: list[UnresolvedItem]):
        self.unresolved = unresolved
        count = len(unresolved)
        super().__init__(
            f"Cannot finalise: {count} item{'s' if count != 1 else ''} "
            f"{'are' if count != 1 else 'is'} unresolved."
        )


# Finalising, in stages a job page can show: what each one does.
FINALISE_STAGES = (
    "Applying the gold rule to every item",
    "Writing the bundle's files",
    "Reading the bundle back as the CLI does (spans re-anchored onto newer versions)",
    "Storing the gold set",
)
StageProgress = Callable[[int, str], None]  # (stages done, what comes next)


def finalise_gold_set(
    *,
    question_set: QuestionSet,
    user=None,
    min_span_f1: float = DEFAULT_MIN_SPAN_F1,
    progress: StageProgress | None = None,
    on_stored: Callable[[GoldSet], None] | None = None,
) -> GoldSet:
    """Freeze the set's resolved labels into the next numbered gold set (v1, v2, …).

    Refused, with every unresolved item listed, while anything blocks the gold rule. Who may
    finalise (admins) is the caller's check; ``user`` is recorded as the creator. The bundle is
    read back with ``goldeval.formats.gold.read_bundle`` before it is stored, so a stored gold set
    always loads in the CLI. That and the gold rule take their time on a large set (a long span
    re-anchored onto an edited version), so they run before the short transaction that stores
    the result, and report each stage to ``progress``; ``on_stored`` runs inside that
    transaction (a job records the new gold set on its row there, so a retry never makes two).
    """
    if not 0.0 <= min_span_f1 <= 1.0:
        raise GoldSetError(f"The minimum span F1 must be between 0 and 1, not {min_span_f1}.")

    def stage(done: int) -> None:
        if progress:
            progress(done, FINALISE_STAGES[done] if done < len(FINALISE_STAGES) else "Done")

    stage(0)
    counting = machine_counting(question_set=question_set)
    frozen = freeze_gold(question_set=question_set, min_span_f1=min_span_f1)
    if _counted_judge(machine_counting(question_set=question_set)) != _counted_judge(counting):
        raise GoldSetError(
            "A lead switched the AI judge's vote in the gold rule while this gold set was being "
            "made; finalise again."
        )
    questions, unresolved = frozen.questions, frozen.unresolved
    if unresolved:
        raise FinaliseBlocked(unresolved)
    if not questions:
        raise GoldSetError(f"The question set {question_set.name} has no questions.")
    for _ in range(3):  # another finalise may take the number meanwhile: build again
        number = _next_number(question_set)
        created_at = timezone.now()
        stage(1)
        bundle, document_ids = _bundle(
            question_set=question_set,
            questions=questions,
            number=number,
            created_by=_username(user) or None,
            created_at=created_at,
            min_span_f1=min_span_f1,
            ai_judge_vote=_ai_judge_vote(counting, frozen.machine_votes),
        )
        stage(2)
        _check_loads(bundle)
        stage(3)
        with transaction.atomic():
            # One finalise at a time per question set, so numbers never collide.
            QuestionSet.objects.select_for_update().filter(pk=question_set.pk).first()
            if _next_number(question_set) != number:
                continue
            gold_set = _store(question_set, bundle, number, created_at, user, document_ids)
            if on_stored:
                on_stored(gold_set)
        stage(len(FINALISE_STAGES))
        return gold_set
    raise GoldSetError("Other gold sets of this question set kept being finalised; try again.")


def _next_number(question_set: QuestionSet) -> int:
    latest = GoldSet.objects.filter(question_set=question_set).aggregate(Max("number"))
    return (latest["number__max"] or 0) + 1


def _store(question_set, bundle, number, created_at, user, document_ids) -> GoldSet:
    gold_set = GoldSet.objects.create(
        question_set=question_set,
        number=number,
        created_by=user,
        created_at=created_at,
        manifest=bundle.manifest,
        checksum=bundle.checksum,
        document_count=len(document_ids),
    )
    GoldSetFile.objects.bulk_create(
        [
            GoldSetFile(
                gold_set=gold_set,
                name=name,
                content=content,
                size=len(content),
                sha256=sha256(content),
            )
            for name, content in sorted(bundle.files.items())
        ]
    )
    gold_set.documents.set(document_ids)
    return gold_set


def start_finalise(
    *, question_set: QuestionSet, user=None, min_span_f1: float = DEFAULT_MIN_SPAN_F1
) -> Job:
    """Queue finalising as a job (its page shows each stage); one at a time per question set:
    asking again while one waits or runs gives that one."""
    if not 0.0 <= min_span_f1 <= 1.0:
        raise GoldSetError(f"The minimum span F1 must be between 0 and 1, not {min_span_f1}.")
    project = question_set.project
    running = (
        Job.objects.unfinished()
        .filter(project=project, kind="finalise_gold_set", params__question_set_id=question_set.pk)
        .order_by("pk")
        .first()
    )
    if running is not None:
        return running
    return jobs.start(
        project=project,
        task="evaluation.tasks.finalise_gold_set",
        kind="finalise_gold_set",
        user=user,
        params={"question_set_id": question_set.pk, "min_span_f1": min_span_f1},
        total=len(FINALISE_STAGES),
        description=f"Finalise {question_set.name} as a new gold set",
    )


def run_finalise(job: Job, *, then: Callable[[GoldSet], object] | None = None) -> None:
    """The job of `start_finalise`; ``then`` runs on the new gold set before the job ends
    (the evaluation page's first figures, `evaluation.services.reports.run_finalise`)."""
    if then is not None and job.total == len(FINALISE_STAGES):
        job.total += 1
        Job.objects.filter(pk=job.pk).update(total=job.total)
    result = job.result if isinstance(job.result, dict) else {}
    done = GoldSet.objects.filter(pk=result.get("gold_set_id")).first()
    if done is None:
        question_set = QuestionSet.objects.get(
            pk=job.params["question_set_id"], project=job.project
        )

        def progress(stage: int, message: str) -> None:
            Job.objects.filter(pk=job.pk).update(
                done=stage,
                message=f"{message}…" if stage < len(FINALISE_STAGES) else "",
                heartbeat_at=timezone.now(),
            )
            job.done = stage

        def remember(gold_set: GoldSet) -> None:
            Job.objects.filter(pk=job.pk).update(result={"gold_set_id": gold_set.pk})

        try:
            done = finalise_gold_set(
                question_set=question_set,
                user=job.created_by,
                min_span_f1=job.params.get("min_span_f1", DEFAULT_MIN_SPAN_F1),
                progress=progress,
                on_stored=remember,
            )
        except FinaliseBlocked as blocked:
            job.errors = [
                # document_id: the job page shows an item only to those who may see its document.
                {
                    "source": item.pool or "",
                    "line": None,
                    "doc_id": None,
                    "document_id": item.document,
                    "error": item.describe(),
                }
                for item in blocked.unresolved
            ]
            job.result = {
                "link": {
                    "url": reverse(
                        "labelling:list-adjudication", args=[job.project.slug, question_set.pk]
                    ),
                    "text": "Resolve them in the adjudication queue",
                }
            }
            # Count-free: the count would include items on documents hidden from some leads.
            jobs.finish(
                job,
                JobState.FAILED,
                "Cannot finalise: items are still unresolved. Each one is listed below.",
            )
            return
    if then is not None:
        Job.objects.filter(pk=job.pk).update(
            message="Preparing the figures of the evaluation page…", heartbeat_at=timezone.now()
        )
        then(done)
    job.done = job.total
    job.result = {
        "gold_set_id": done.pk,
        "redirect": True,
        "link": {
            "url": reverse("evaluation:show-gold-set", args=[job.project.slug, done.pk]),
            "text": f"Open the gold set {done}",
        },
    }
    jobs.finish(job, JobState.SUCCEEDED, f"{done} is finalised: it will never change.")


def _check_loads(bundle: Bundle) -> None:
    try:
        read_bundle(bundle.files)
        if ANSWERS_GOLD_FILE in bundle.files:
            read_answer_gold(bundle.files[ANSWERS_GOLD_FILE])
        if AI_JUDGEMENTS_FILE in bundle.files:
            read_ai_judgements(bundle.files[AI_JUDGEMENTS_FILE])
    except EvaluationInputError as error:
        raise GoldSetError(f"The bundle does not load back ({error.message}).") from error


def newest_gold_set(question_set: QuestionSet) -> GoldSet | None:
    return GoldSet.objects.filter(question_set=question_set).order_by("-number").first()


def bundle_files(gold_set: GoldSet, *, names: Iterable[str] | None = None) -> dict[str, bytes]:
    files = gold_set.files.all()
    if names is not None:
        files = files.filter(name__in=list(names))
    return {name: bytes(content) for name, content in files.values_list("name", "content")}


def write_bundle(*, gold_set: GoldSet, folder: Path) -> list[Path]:
    """Write the bundle's files into ``folder`` (created if needed); returns the paths."""
    return _write_files(folder, bundle_files(gold_set))


def _write_files(folder: Path, files: dict[str, bytes]) -> list[Path]:
    written = []
    for name, content in sorted(files.items()):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        written.append(path)
    return written


def bundle_folder_name(gold_set: GoldSet) -> str:
    question_set = gold_set.question_set
    return f"{question_set.project.slug}-{question_set.name}-{gold_set.label}"


def bundle_zip(gold_set: GoldSet) -> bytes:
    """The bundle as a zip holding one folder, dated at the gold set's creation."""
    folder = bundle_folder_name(gold_set)
    stamp = timezone.localtime(gold_set.created_at).timetuple()[:6]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in sorted(bundle_files(gold_set).items()):
            archive.writestr(zipfile.ZipInfo(f"{folder}/{name}", date_time=stamp), content)
    return buffer.getvalue()


def verify_gold_set(gold_set: GoldSet) -> list[str]:
    """Problems found re-checking stored files against the manifest (empty when intact)."""
    files = bundle_files(gold_set)
    problems = []
    manifest_bytes = files.get(MANIFEST_FILE, b"")
    if sha256(manifest_bytes) != gold_set.checksum:
        problems.append("manifest.json does not match the gold set's checksum")
    listed = json.loads(manifest_bytes or b"{}").get("files", {})
    for name, entry in listed.items():
        if name not in files:
            problems.append(f"{name} is missing")
        elif sha256(files[name]) != entry["sha256"]:
            problems.append(f"{name} does not match its SHA-256 in the manifest")
    problems += [
        f"{name} is not in the manifest"
        for name in files
        if name not in listed and name != MANIFEST_FILE
    ]
    return problems


# A finalised gold set never changes, so its parsed form can be kept per process.
_GOLD_CACHE_SIZE = 4
_gold_cache: OrderedDict[tuple[int, str], Gold] = OrderedDict()
_cache_lock = threading.Lock()


def load_gold_set(gold_set: GoldSet) -> Gold:
    """The gold set read by ``goldeval.formats.gold.read_bundle`` from its own bundle files,
    exactly as ``python -m goldeval evaluate --gold BUNDLE`` reads them."""
    key = (gold_set.pk, gold_set.checksum)
    with _cache_lock:
        if key in _gold_cache:
            _gold_cache.move_to_end(key)
            return _gold_cache[key]
    gold = read_bundle(bundle_files(gold_set, names=READ_FILES))
    with _cache_lock:
        _gold_cache[key] = gold
        while len(_gold_cache) > _GOLD_CACHE_SIZE:
            _gold_cache.popitem(last=False)
    return gold


# --- what the bundle is written from ------------------------------------------------------


def _bundle(
    *,
    question_set: QuestionSet,
    questions: Sequence[FrozenQuestion],
    number: int,
    created_by: str | None,
    created_at,
    min_span_f1: float,
    ai_judge_vote: dict | None = None,
) -> tuple[Bundle, set[int]]:
    """The bundle of the resolved questions, and the Document pks whose text it carries."""
    project = question_set.project
    versions = _corpus_versions(project, questions)
    texts = {(version.document.doc_id, version.version): version.text for version in versions}
    texts.update(_judged_texts(project, questions, known=texts))
    schemes = {
        scheme.name: ChunkSpec(
            strategy=scheme.strategy, unit=scheme.unit, size=scheme.size, overlap=scheme.overlap
        )
        for scheme in ChunkingScheme.objects.filter(project=project).order_by("name")
    }
    votes = _votes(question_set)
    documents = document_states(project)
    pool = pool_bias.pool_lines(question_set)
    ai_judgements = bundle_ai_judgements(
        question_set, question_ids=[question.question_id for question in questions]
    )
    try:
        bundle = build_bundle(
            info=BundleInfo(
                project=project.slug,
                question_set=question_set.name,
                number=number,
                created_by=created_by,
                created_at=created_at,
                min_span_f1=min_span_f1,
                guideline_versions=_guideline_versions(question_set),
                production=_production_questions(question_set, questions),
                changed_spans={
                    **changed_counts(span for q in questions for span in q.spans),
                    "fact_links": len(changed_fact_links(question_set=question_set, viewer=None)),
                },
                ai_judge_vote=ai_judge_vote,
            ),
            questions=questions,
            corpus=[
                CorpusVersion(
                    doc_id=version.document.doc_id,
                    version=version.version,
                    title=version.document.title,
                    text=version.text,
                    content_hash=version.content_hash,
                    access_groups=tuple(
                        sorted(group.name for group in version.document.access_groups.all())
                    ),
                    canary=version.document.is_canary,
                )
                for version in versions
            ],
            texts=texts,
            schemes=schemes,
            votes=votes,
            answers_gold=answers_gold_records(question_set),
            documents=documents,
            pool=pool,
            reusability=pool_bias.reusability_content(questions, pool),
            ai_judgements=ai_judgements,
        )
    except BundleError as error:  # an id no file format carries exactly, named
        raise GoldSetError(str(error)) from None
    named = _bundle_documents(project, questions, versions, votes, pool, ai_judgements)
    return bundle, named | document_pks(project)


def _counted_judge(counting: dict | None) -> str | None:
    """The judge whose vote the gold rule counts, from `machine_counting`'s answer."""
    return counting["judge"] if counting and counting.get("counted") else None


def _ai_judge_vote(counting: dict | None, votes: Sequence[MachineVote]) -> dict | None:
    """What the manifest says about the AI judge in the gold rule: whether a lead had it
    counted and, if so, which judge, how many of its votes the rule counted and under which
    models and prompt versions. None (nothing written) when no judge ever voted on the set."""
    if counting is None:
        return None
    if not counting.get("counted"):
        return {"counted": False}
    return {
        "counted": True,
        "judge": counting["judge"],
        "votes_counted": len(votes),
        "models": sorted({vote.source.get("model") or "" for vote in votes}),
        "prompt_versions": sorted({vote.source["prompt_version"] for vote in votes}),
    }


def _bundle_documents(
    project: Project,
    questions: Sequence[FrozenQuestion],
    versions: Sequence[DocumentVersion],
    votes: Sequence[Vote],
    pool: Sequence[dict] = (),
    ai_judgements: Sequence[AIJudgement] = (),
) -> set[int]:
    """Every document a bundle names anywhere: the texts of corpus.jsonl, and the doc ids of
    spans, judged passages (gold.jsonl, the qrels), votes (judgements.csv, with labellers'
    notes), pooled passages (pool.jsonl, reusability.json) and AI judgements
    (ai-judgements.jsonl). A download is refused to anyone an
    access group hides any one of them from, so a judged document that is not searchable
    (flagged, superseded, a hidden duplicate) counts."""
    doc_ids = {version.document.doc_id for version in versions}
    for question in questions:
        doc_ids.update(span.doc_id for span in question.spans)
        doc_ids.update(doc_id for doc_id, *_ in question.judged)
    doc_ids.update(vote.doc_id for vote in votes if vote.doc_id)
    doc_ids.update(passage["doc_id"] for line in pool for passage in line["passages"])
    doc_ids.update(judgement.passage.doc_id for judgement in ai_judgements)
    ordered, found = sorted(doc_ids), set()
    for batch in in_batches(ordered):
        found.update(
            Document.objects.filter(project=project, doc_id__in=batch).values_list("pk", flat=True)
        )
    return found


def _corpus_versions(
    project: Project, questions: Sequence[FrozenQuestion]
) -> list[DocumentVersion]:
    """The versions gold spans point at, and the newest searchable version of every document
    (what runs search, and what the CLI's BM25 baseline indexes), by doc_id then version."""
    span_versions = {span.version_id for q in questions for span in q.spans}
    newest = Document.objects.filter(project=project).searchable().values("latest_version")
    return list(
        DocumentVersion.objects.filter(document__project=project)
        .filter(Q(pk__in=span_versions) | Q(pk__in=newest))
        .select_related("document")
        .prefetch_related("document__access_groups")
        .order_by("document__doc_id", "version")
    )


def _judged_texts(
    project: Project, questions: Sequence[FrozenQuestion], *, known: dict[tuple[str, int], str]
) -> dict[tuple[str, int], str]:
    """Texts of versions judged passages point at that the corpus file does not carry."""
    wanted = {(doc_id, version) for q in questions for doc_id, version, _, _ in q.judged}
    wanted -= set(known)
    if not wanted:
        return {}
    keys = {
        pk: (doc_id, version)
        for pk, doc_id, version in DocumentVersion.objects.filter(
            document__project=project
        ).values_list("pk", "document__doc_id", "version")
        if (doc_id, version) in wanted
    }
    return {
        keys[pk]: text
        for pk, text in DocumentVersion.objects.filter(pk__in=sorted(keys)).values_list(
            "pk", "text"
        )
    }


def _production_questions(question_set: QuestionSet, questions) -> list[dict]:
    """Where each question promoted from a production sample came from (`Question.origin`)."""
    kept = {q.question_id for q in questions}
    promoted = (
        Question.objects.filter(question_set=question_set)
        .exclude(origin={})
        .order_by("pk")
        .values_list("external_id", "origin")
    )
    return [
        {"question_id": external_id, **origin}
        for external_id, origin in promoted
        if external_id in kept and "trace_id" in origin
    ]


def _guideline_versions(question_set: QuestionSet) -> list[int]:
    versions = set(
        Judgement.objects.filter(
            work_q("assignment__"),
            assignment__pool__question_set=question_set,
            guideline__isnull=False,
        ).values_list("guideline__version", flat=True)
    )
    versions |= set(
        Verdict.objects.filter(
            work_q("assignment__"),
            assignment__pool__question_set=question_set,
            guideline__isnull=False,
        ).values_list("guideline__version", flat=True)
    )
    return sorted(versions)


def _votes(question_set: QuestionSet) -> list[Vote]:
    """Every vote of the set: each judgement, each verdict (a labeller who finished without
    marking the question voted "answerable"), each lead's resolution."""
    order = {
        pk: i
        for i, pk in enumerate(question_set.questions.order_by("pk").values_list("pk", flat=True))
    }
    rows: list[tuple[tuple, Vote]] = []
    judgements = (
        Judgement.objects.filter(
            work_q("assignment__"), assignment__pool__question_set=question_set
        )
        .select_related(
            "assignment__labeller",
            "assignment__pool",
            "assignment__question",
            "candidate__version__document",
            "guideline",
        )
        .prefetch_related("spans")
    )
    for j in judgements:
        candidate, assignment = j.candidate, j.assignment
        doc_id = candidate.version.document.doc_id
        rows.append(
            (
                (
                    order[assignment.question_id],
                    assignment.pool.name,
                    0,
                    doc_id,
                    candidate.start,
                    assignment.slot,
                ),
                Vote(
                    question_id=assignment.question.external_id,
                    pool=assignment.pool.name,
                    kind="judgement",
                    source="labeller",
                    labeller=_username(assignment.labeller),
                    doc_id=doc_id,
                    version=candidate.version.version,
                    start=candidate.start,
                    end=candidate.end,
                    grade=j.grade,
                    spans=_offsets(j.spans.all()),
                    note=j.note,
                    guideline_version=j.guideline.version if j.guideline else None,
                    recorded_at=j.updated_at,
                ),
            )
        )
    # Calibration answers are no votes (`labelling.services.calibration`).
    assignments = (
        Assignment.objects.work()
        .filter(pool__question_set=question_set)
        .select_related("labeller", "pool", "question", "verdict__guideline")
    )
    for a in assignments:
        verdict = getattr(a, "verdict", None)
        if verdict is None and a.completed_at is None:
            continue
        rows.append(
            (
                (order[a.question_id], a.pool.name, 1, "", 0, a.slot),
                Vote(
                    question_id=a.question.external_id,
                    pool=a.pool.name,
                    kind="verdict",
                    source="labeller" if verdict else "finished without marking",
                    labeller=_username(a.labeller),
                    outcome=verdict.outcome if verdict else VerdictOutcome.ANSWERABLE.value,
                    note=verdict.reason if verdict else "",
                    guideline_version=verdict.guideline.version
                    if verdict and verdict.guideline
                    else None,
                    recorded_at=verdict.updated_at if verdict else a.completed_at,
                ),
            )
        )
    resolutions = (
        Resolution.objects.filter(pool__question_set=question_set)
        .select_related("pool", "question", "resolved_by", "candidate__version__document")
        .prefetch_related("spans")
    )
    for r in resolutions:
        candidate = r.candidate
        vote = Vote(
            question_id=r.question.external_id,
            pool=r.pool.name,
            kind="resolution",
            source="lead",
            labeller=_username(r.resolved_by),
            note=r.note,
            recorded_at=r.resolved_at,
        )
        if candidate is None:
            vote = replace(vote, outcome=r.outcome)
        else:
            vote = replace(
                vote,
                doc_id=candidate.version.document.doc_id,
                version=candidate.version.version,
                start=candidate.start,
                end=candidate.end,
                grade=r.grade,
                spans=_offsets(r.spans.all()),
            )
        rows.append(((order[r.question_id], r.pool.name, 2, vote.doc_id, vote.start or 0, 0), vote))
    rows.sort(key=lambda pair: pair[0])
    return [vote for _, vote in rows]


def _username(user) -> str:
    return user.get_username() if user is not None else ""


def _offsets(spans) -> tuple[tuple[int, int], ...]:
    return tuple((span.start, span.end) for span in spans)


def withhold_figures(*, job: Job, gold_set: GoldSet) -> None:
    """A job's figures over ``gold_set`` (a run's, a report's, an index evaluation's) follow the
    rule of the gold set's own pages: someone from whom an access group hides one of its
    documents reads no figure of it, without a count (`corpus.job_display`). Each restricted
    document of the bundle is a share that withholds the message from those outside its
    groups."""
    documents = gold_set.documents.values_list("pk", flat=True)
    jobs.add_shares(job, {pk: {jobs.WITHHOLD: 1} for pk in documents})
