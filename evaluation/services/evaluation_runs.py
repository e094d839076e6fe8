"""Runs scored against a gold set: uploaded run files, built-in retrievers' runs (a job), the
CLI's keyword baseline, and the project's k sent to the model.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path

from django.db import transaction
from django.utils.text import slugify

from corpus import jobs
from corpus.models import Job, Project, Retriever, RetrieverKind
from corpus.services import http_retrieval
from corpus.services.retrieval import check_searchable, retrieve
from corpus.visibility import check_doc_ids
from evaluation.models import EvaluationRun, GoldSet, RunSource
from evaluation.services.gold_sets import GoldSetError, load_gold_set
from goldeval.formats.doc_ids import DocIdCheck
from goldeval.formats.gold import EvaluationInputError, Gold
from goldeval.formats.runfiles import jsonl_run_line
from goldeval.formats.runs import (
    Run,
    check_run_against_gold,
    check_run_documents,
    read_run,
    run_doc_ids,
)
from goldeval.scoring.baseline import BASELINE_NAME, bm25_baseline_run
from goldset.batching import in_batches
from goldset.errors import ServiceError

# The evaluation page: the CLI's defaults, plus a recall curve up to CURVE_MIN_K (or further,
# to the project's k sent to the model).
TABLE_KS = (1, 3, 5, 10)
CURVE_MIN_K = 20
MRR_CUTOFF = 10
MAX_K_SENT_TO_MODEL = 100
RETRIEVE_BATCH = 64
MAX_RUN_BYTES = 50 * 1024 * 1024
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class RunRejected(GoldSetError):
    """An uploaded run that cannot be scored against the gold set; nothing was stored."""


def set_k_sent_to_model(*, project: Project, k: int) -> Project:
    if not 1 <= k <= MAX_K_SENT_TO_MODEL:
        raise GoldSetError(
            f"k sent to the model must be between 1 and {MAX_K_SENT_TO_MODEL}, not {k}."
        )
    project.k_sent_to_model = k
    project.save(update_fields=["k_sent_to_model"])
    return project


def evaluation_depth(project: Project) -> int:
    """How deep built-in runs retrieve: everything the page's table, curve and MRR look at."""
    return max(CURVE_MIN_K, project.k_sent_to_model, MRR_CUTOFF, *TABLE_KS)


def record_uploaded_run(
    *, gold_set: GoldSet, name: str, file_name: str, data: bytes, user=None
) -> EvaluationRun:
    """Store a run file (JSONL or TREC) once it reads cleanly against the gold set.

    A bad file is refused whole, with the line to look at; nothing is stored. So is a file
    naming no document of the corpus the uploader may see (`corpus.visibility.check_doc_ids`);
    unknown document ids among known ones are counted and named in the returned run's
    ``unknown_documents`` (they stay in the rankings, where they reach nothing).
    """
    name = name.strip() or slugify(Path(file_name).stem)
    _check_run_name(gold_set, name)
    if len(data) > MAX_RUN_BYTES:
        raise RunRejected(f"{file_name} is larger than {MAX_RUN_BYTES // (1024 * 1024)} MB.")
    project = gold_set.question_set.project
    run = _read_run(
        data,
        name=name,
        file_name=file_name,
        gold=load_gold_set(gold_set),
        documents=lambda ids: check_doc_ids(project=project, doc_ids=ids, user=user),
    )
    record = EvaluationRun.objects.create(
        gold_set=gold_set,
        name=name,
        source=RunSource.UPLOAD,
        file_name=Path(file_name).name[:255],
        content=data,
        sha256=hashlib.sha256(data).hexdigest(),
        questions=len(run.rankings),
        created_by=user,
    )
    record.unknown_documents = run.unknown_documents
    return record


def _check_run_name(gold_set: GoldSet, name: str) -> None:
    if not RUN_NAME.fullmatch(name):
        raise RunRejected(
            "A run name is up to 100 letters, digits, dots, dashes and underscores (it names "
            f"the run in reports and file names), not {name!r}."
        )
    if name == BASELINE_NAME:
        raise RunRejected(f"The name {BASELINE_NAME!r} belongs to the built-in keyword baseline.")
    if EvaluationRun.objects.filter(gold_set=gold_set, name=name).exists():
        raise RunRejected(f"{gold_set} already has a run named {name!r}; choose another name.")


def _read_run(
    data: bytes,
    *,
    name: str,
    file_name: str,
    gold: Gold,
    documents: Callable[[Iterable[str]], DocIdCheck] | None = None,
) -> Run:
    """The run read against the gold set; with ``documents`` (an upload), its document ids
    checked by it. A stored run is read again without: its ids were checked when it came."""
    try:
        run = read_run(data, name=name, source=file_name)
        check_run_against_gold(run, gold, documents=False)
        if documents is not None:
            check_run_documents(run, documents(run_doc_ids(run)))
    except EvaluationInputError as error:
        where = f"line {error.line}: " if error.line is not None else ""
        raise RunRejected(f"{file_name}: {where}{error.message}.") from error
    if not run.rankings:
        if run.skipped:
            names = ", ".join(repr(q) for q in run.skipped[:5])
            raise RunRejected(
                f"{file_name} holds no question of this gold set (not in it: {names}"
                f"{', …' if len(run.skipped) > 5 else ''})."
            )
        raise RunRejected(f"{file_name} holds no results.")
    run.source = None
    return run


def start_retriever_run(*, gold_set: GoldSet, retriever: Retriever, user=None) -> Job:
    """Queue a built-in retriever's run over the gold set's questions."""
    project = gold_set.question_set.project
    try:
        check_searchable(retriever, project=project)
    except ServiceError as error:
        raise GoldSetError(str(error)) from None
    if retriever.kind == RetrieverKind.RUN:
        raise GoldSetError(
            f"{retriever.name} replays an uploaded run: upload its run file instead."
        )
    # From the manifest: reading the gold set itself may re-anchor spans, a job's work.
    questions = int(gold_set.manifest.get("questions", 0))
    return jobs.start(
        project=project,
        task="evaluation.tasks.evaluation_run",
        kind="evaluation_run",
        user=user,
        params={"gold_set_id": gold_set.pk, "retriever_id": retriever.pk},
        total=questions,
        description=f"Run {retriever.name} over {gold_set} ({questions} questions)",
    )


def record_retriever_run(
    *,
    gold_set: GoldSet,
    retriever: Retriever,
    user=None,
    depth: int | None = None,
    job: Job | None = None,
) -> EvaluationRun:
    """Retrieve the top ``depth`` passages for every gold question and store them as a JSONL
    run, line for line what ``manage.py retrieve`` writes. With a user, documents that user may
    not see never come back."""
    project = gold_set.question_set.project
    depth = depth or evaluation_depth(project)
    gold = load_gold_set(gold_set)
    questions = list(gold.questions.values())
    placed = None
    if retriever.kind == RetrieverKind.HTTP:
        lines, placed = _http_lines(retriever, questions, depth=depth, user=user, job=job)
    else:
        lines = _built_in_lines(retriever, questions, depth=depth, user=user, job=job)
    data = "".join(lines).encode("utf-8")
    index_built_at = (
        Retriever.objects.filter(pk=retriever.pk)
        .values_list("active_index__built_at", flat=True)
        .first()
    )
    if placed is not None and job is not None:
        job.result = {**job.result, "placed": dict(placed)}
    taken = set(EvaluationRun.objects.filter(gold_set=gold_set).values_list("name", flat=True))
    name, suffix = retriever.name, 1
    while name in taken or name == BASELINE_NAME:
        suffix += 1
        name = f"{retriever.name}-{suffix}"
    return EvaluationRun.objects.create(
        gold_set=gold_set,
        name=name,
        source=RunSource.RETRIEVER,
        retriever=retriever,
        index_built_at=index_built_at,
        depth=depth,
        file_name=f"{name}.jsonl",
        content=data,
        sha256=hashlib.sha256(data).hexdigest(),
        questions=len(lines),
        created_by=user,
    )


def _built_in_lines(retriever: Retriever, questions, *, depth: int, user, job: Job | None):
    advance = jobs.progress(job) if job is not None else None
    lines = []
    for batch in in_batches(questions, size=RETRIEVE_BATCH):
        found = retrieve(
            retriever=retriever, questions=[q.question for q in batch], k=depth, user=user
        )
        for question, hits in zip(batch, found, strict=True):
            lines.append(jsonl_run_line(question_id=question.question_id, results=hits))
        if advance:
            advance(len(batch))
    return lines


def _http_lines(retriever: Retriever, questions, *, depth: int, user, job: Job | None):
    """The JSONL run lines of an HTTP retriever and how its results were placed. Any question
    without a usable answer fails the whole run (listed on the job): a run missing questions
    would score them 0 and mislead."""
    run = http_retrieval.search_http(
        retriever=retriever,
        questions=[(q.question_id, q.question) for q in questions],
        k=depth,
        progress=jobs.progress(job) if job is not None else None,
    )
    if job is not None:
        job.errors = run.errors + run.warnings
        # Its placement figures count a restricted document only for those who may see it.
        jobs.add_shares(job, http_retrieval.placement_shares(run, key="run"))
    run.raise_for_errors(retriever, user=user)
    lines = [
        jsonl_run_line(question_id=question.question_id, results=ranking)
        for question, ranking in zip(
            questions,
            http_retrieval.content_rankings(run, project=retriever.project, user=user),
            strict=True,
        )
    ]
    return lines, run.located


def start_uploaded_run(
    *,
    gold_set: GoldSet,
    name: str,
    file_name: str,
    data: bytes,
    user=None,
    retriever: Retriever | None = None,
    change: str = "",
) -> Job:
    """Queue the check and storing of an uploaded run file (its name and size are checked
    here, at once; reading it against the gold set is the job's). The file is kept with the
    job until then. With ``retriever`` and ``change`` (what changed in the team's system), the
    run's figures also join that retriever's plot over changes."""
    name = name.strip() or slugify(Path(file_name).stem)
    _check_run_name(gold_set, name)
    if len(data) > MAX_RUN_BYTES:
        raise RunRejected(f"{file_name} is larger than {MAX_RUN_BYTES // (1024 * 1024)} MB.")
    with transaction.atomic():
        job = jobs.start(
            project=gold_set.question_set.project,
            task="evaluation.tasks.uploaded_run",
            kind="evaluation_upload",
            user=user,
            params={
                "gold_set_id": gold_set.pk,
                "name": name,
                "file_name": file_name,
                **({"retriever_id": retriever.pk, "change": change} if retriever else {}),
            },
            total=1,
            description=f"Check and score the run {name} against {gold_set}",
        )
        jobs.keep_upload(job=job, name=file_name, data=data)
    return job


def load_stored_run(record: EvaluationRun, *, gold: Gold) -> Run:
    return _read_run(bytes(record.content), name=record.name, file_name=record.file_name, gold=gold)


# A finalised gold set never changes, so its baseline run can be kept per process.
_BASELINE_CACHE_SIZE = 4
_baseline_cache: OrderedDict[tuple[int, str, int], Run] = OrderedDict()
_cache_lock = threading.Lock()


def baseline_run(gold_set: GoldSet, *, depth: int) -> Run:
    """The CLI's BM25 keyword baseline over the bundle's corpus.jsonl."""
    key = (gold_set.pk, gold_set.checksum, depth)
    with _cache_lock:
        if key in _baseline_cache:
            return _baseline_cache[key]
    run = bm25_baseline_run(gold=load_gold_set(gold_set), depth=depth)
    with _cache_lock:
        _baseline_cache[key] = run
        while len(_baseline_cache) > _BASELINE_CACHE_SIZE:
            _baseline_cache.popitem(last=False)
    return run
