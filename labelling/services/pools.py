"""Writes for runs and pools: importing a team's own run, and pooling candidates for labelling.

A pool is built by one Celery task per retriever and batch of questions. Each task stores its raw
top-k as PoolHit rows; the task that finishes last merges them into candidates with provenance
(labelling.pooling) and a per-question shuffled order. Every step can run twice safely.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from corpus import jobs
from corpus.models import Chunk, Document, DocumentVersion, Job, JobState, Retriever, RetrieverKind
from corpus.services.retrieval import retrieve
from corpus.sources import RecordError
from goldset.errors import ServiceError
from labelling.models import (
    Candidate,
    Pool,
    PoolHit,
    PoolState,
    Provenance,
    Question,
    QuestionSet,
    RunResult,
)
from labelling.pooling import (
    Hit,
    Passage,
    PooledCandidate,
    PoolStats,
    pool_question,
    pool_stats,
    shuffled_order,
)
from labelling.services.questions import InputRejected

logger = logging.getLogger(__name__)

# Questions per pooling task: small enough that a task finishes in seconds (and a lost one is
# cheap to redo), large enough that an embedding retriever encodes its questions in one batch.
POOL_BATCH = 50
MAX_DEPTH = 1000
# By name: the task module imports this one.
POOL_BATCH_TASK = "labelling.tasks.pool_batch"
BULK_BATCH = 2000


# Runs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunLine:
    """One result of an uploaded run, as read; ``rank`` is its place in the question's ranking."""

    line: int
    question_id: str
    doc_id: str
    rank: int
    score: float | None
    start: int | None
    end: int | None


@dataclass
class RunImportResult:
    questions: int = 0
    results: int = 0
    passages: int = 0  # RunResult rows: results without offsets become one per chunk
    whole_documents: int = 0  # results mapped to a whole document (no chunks to map to)


def import_run(
    *, retriever: Retriever, question_set: QuestionSet, data: bytes | str, name: str = "run"
) -> RunImportResult:
    """Replace the retriever's run for this question set: all of it, or nothing on any problem.

    TREC (``qid Q0 docid rank score tag``: ranked by score, ties in file order) or JSONL
    (``{"question_id", "results": [{"doc_id", "start"?, "end"?, "score"?}]}``: ranked in list
    order). A result without offsets stands for its document's chunks under the retriever's
    scheme, all at the result's rank, or for the whole document when there are none. Unknown
    question or document ids and offsets outside a document are reported with their line.
    """
    if retriever.kind != RetrieverKind.RUN:
        raise ServiceError(
            f"{retriever.name} is a {retriever.kind} retriever, not an uploaded run."
        )
    if question_set.project_id != retriever.project_id:
        raise ServiceError("The question set and the retriever belong to different projects.")
    text = _decode(data, name)
    lines, problems = _parse_run(text, name)
    if not lines and not problems:
        raise ServiceError(f"{name} has no results.")
    questions = dict(question_set.questions.values_list("external_id", "pk"))
    documents = {
        doc_id: (version_id, length)
        for doc_id, version_id, length in _latest_texts(retriever, {r.doc_id for r in lines})
    }
    for result in lines:
        if result.question_id not in questions:
            problems.append(
                _problem(name, result.line, f"unknown question id {result.question_id!r}")
            )
        if result.doc_id not in documents:
            problems.append(_problem(name, result.line, f"unknown document id {result.doc_id!r}"))
        elif result.end is not None and result.end > documents[result.doc_id][1]:
            problems.append(
                _problem(
                    name,
                    result.line,
                    f"offsets [{result.start}, {result.end}) are outside {result.doc_id!r}, "
                    f"which has {documents[result.doc_id][1]} characters",
                )
            )
    if problems:
        raise InputRejected(sorted(problems, key=lambda p: p.line or 0))
    chunks = _chunks_of(retriever, {version_id for version_id, _ in documents.values()})
    outcome = RunImportResult(questions=len({r.question_id for r in lines}), results=len(lines))
    rows: list[RunResult] = []
    for result in lines:
        version_id, length = documents[result.doc_id]
        if result.start is not None:
            spans = [(result.start, result.end)]
        elif chunks.get(version_id):
            spans = chunks[version_id]
        else:
            spans = [(0, length)]
            outcome.whole_documents += 1
        rows.extend(
            RunResult(
                retriever=retriever,
                question_id=questions[result.question_id],
                rank=result.rank,
                score=result.score,
                version_id=version_id,
                start=start,
                end=end,
            )
            for start, end in spans
        )
    with transaction.atomic():
        RunResult.objects.filter(retriever=retriever, question__question_set=question_set).delete()
        RunResult.objects.bulk_create(rows, batch_size=BULK_BATCH)
    outcome.passages = len(rows)
    return outcome


def _decode(data: bytes | str, name: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ServiceError(f"{name} is not UTF-8 text (byte {exc.start}).") from exc


def _problem(name: str, line: int, error: str) -> RecordError:
    return RecordError(source=name, line=line, error=error)


def _parse_run(text: str, name: str) -> tuple[list[RunLine], list[RecordError]]:
    # Split on "\n" only: str.splitlines would also break JSON strings holding U+2028.
    lines = text.split("\n")
    first = next(
        (line.lstrip() for line in lines if line.strip() and not line.lstrip().startswith("#")), ""
    )
    if first.startswith("{"):
        return _parse_jsonl_run(lines, name)
    return _parse_trec_run(lines, name)


def _parse_jsonl_run(lines: list[str], name: str) -> tuple[list[RunLine], list[RecordError]]:
    results: list[RunLine] = []
    problems: list[RecordError] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(_problem(name, number, f"not valid JSON ({exc.msg})"))
            continue
        if not isinstance(record, dict):
            problems.append(_problem(name, number, "expected a JSON object"))
            continue
        question_id = record.get("question_id")
        if isinstance(question_id, int) and not isinstance(question_id, bool):
            question_id = str(question_id)
        if not isinstance(question_id, str) or not question_id:
            problems.append(_problem(name, number, "question_id must be a non-empty string"))
            continue
        if question_id in seen:
            problems.append(
                _problem(
                    name,
                    number,
                    f"question {question_id!r} already given on line {seen[question_id]}",
                )
            )
            continue
        seen[question_id] = number
        ranked = record.get("results", [])
        if not isinstance(ranked, list):
            problems.append(_problem(name, number, "results must be a list"))
            continue
        for rank, item in enumerate(ranked, start=1):
            parsed = _jsonl_result(item, name=name, line=number, question_id=question_id, rank=rank)
            if isinstance(parsed, RecordError):
                problems.append(parsed)
            else:
                results.append(parsed)
    return results, problems


def _jsonl_result(
    item, *, name: str, line: int, question_id: str, rank: int
) -> RunLine | RecordError:
    where = f"result {rank}"
    if not isinstance(item, dict):
        return _problem(name, line, f"{where} must be a JSON object")
    doc_id = item.get("doc_id")
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id:
        return _problem(name, line, f"{where} needs a doc_id")
    start, end = item.get("start"), item.get("end")
    if (start is None) != (end is None):
        return _problem(name, line, f"{where} ({doc_id}) needs both start and end, or neither")
    if start is not None and not (
        all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end))
        and 0 <= start < end
    ):
        return _problem(
            name, line, f"{where} ({doc_id}) needs whole-number offsets with 0 <= start < end"
        )
    score = item.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        return _problem(name, line, f"{where} ({doc_id}) has a score that is not a number")
    return RunLine(
        line=line,
        question_id=question_id,
        doc_id=doc_id,
        rank=rank,
        score=None if score is None else float(score),
        start=start,
        end=end,
    )


def _parse_trec_run(lines: list[str], name: str) -> tuple[list[RunLine], list[RecordError]]:
    problems: list[RecordError] = []
    scored: dict[str, list[tuple[float, int, str]]] = defaultdict(list)
    for number, raw in enumerate(lines, start=1):
        fields = raw.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) < 6:
            problems.append(
                _problem(
                    name,
                    number,
                    "expected 'qid Q0 docid rank score tag' (a JSONL run starts with '{')",
                )
            )
            continue
        try:
            score = float(fields[4])
        except ValueError:
            problems.append(_problem(name, number, f"score {fields[4]!r} is not a number"))
            continue
        scored[fields[0]].append((score, number, fields[2]))
    results: list[RunLine] = []
    for question_id, rows in scored.items():
        # The rank column is ignored, as trec_eval does; equal scores keep their file order.
        rows.sort(key=lambda row: (-row[0], row[1]))
        results.extend(
            RunLine(
                line=number,
                question_id=question_id,
                doc_id=doc_id,
                rank=rank,
                score=score,
                start=None,
                end=None,
            )
            for rank, (score, number, doc_id) in enumerate(rows, start=1)
        )
    return results, problems


def _latest_texts(retriever: Retriever, doc_ids: set[str]) -> list[tuple[str, int, int]]:
    """(doc_id, newest version id, text length) of the named documents of the project."""
    found = []
    ordered = sorted(doc_ids)
    for first in range(0, len(ordered), 900):  # SQLite caps bound parameters per query
        documents = Document.objects.filter(
            project_id=retriever.project_id,
            doc_id__in=ordered[first : first + 900],
            latest_version__isnull=False,
        ).values_list("doc_id", "latest_version_id")
        versions = dict(documents)
        lengths = _text_lengths(list(versions.values()))
        found.extend((doc_id, version, lengths[version]) for doc_id, version in versions.items())
    return found


def _text_lengths(version_ids: list[int]) -> dict[int, int]:
    from django.db.models.functions import Length

    return dict(
        DocumentVersion.objects.filter(pk__in=version_ids)
        .annotate(length=Length("text"))
        .values_list("pk", "length")
    )


def _chunks_of(retriever: Retriever, version_ids: set[int]) -> dict[int, list[tuple[int, int]]]:
    chunks: dict[int, list[tuple[int, int]]] = defaultdict(list)
    if retriever.scheme_id is None:
        return chunks
    ordered = sorted(version_ids)
    for first in range(0, len(ordered), 900):
        for version_id, start, end in (
            Chunk.objects.filter(
                scheme_id=retriever.scheme_id, version_id__in=ordered[first : first + 900]
            )
            .order_by("version_id", "ordinal")
            .values_list("version_id", "start", "end")
        ):
            chunks[version_id].append((start, end))
    return chunks


# Pools -----------------------------------------------------------------------------------


def start_pool(
    *,
    question_set: QuestionSet,
    name: str,
    retrievers: Sequence[Retriever],
    depth: int = 10,
    user=None,
) -> Pool:
    """Create a pool and queue its tasks; the Job shows progress and the pool turns ready."""
    project = question_set.project
    if not name or slugify(name) != name:
        raise ServiceError(
            f"A pool name is a slug (lower-case letters, digits, - and _), not {name!r}."
        )
    if Pool.objects.filter(question_set=question_set, name=name).exists():
        raise ServiceError(f"{question_set.name} already has a pool named {name!r}.")
    if not 1 <= depth <= MAX_DEPTH:
        raise ServiceError(f"The pool depth must be between 1 and {MAX_DEPTH}, got {depth}.")
    if not retrievers:
        raise ServiceError("Choose at least one retriever to pool from.")
    questions = question_set.questions.count()
    if not questions:
        raise ServiceError(f"The question set {question_set.name} has no questions.")
    for retriever in retrievers:
        if retriever.project_id != project.pk:
            raise ServiceError(f"{retriever.name} belongs to another project.")
        if retriever.kind == RetrieverKind.RUN:
            if not RunResult.objects.filter(
                retriever=retriever, question__question_set=question_set
            ).exists():
                raise ServiceError(
                    f"{retriever.name} has no run for {question_set.name}: upload one first."
                )
        elif retriever.active_index_id is None:
            raise ServiceError(f"{retriever.name} has no built index yet: build it first.")
    batches = len(retrievers) * -(-questions // POOL_BATCH)
    with transaction.atomic():
        pool = Pool.objects.create(
            question_set=question_set, name=name, depth=depth, created_by=user
        )
        pool.retrievers.set(retrievers)
        pool.job = jobs.start(
            project=project,
            task="labelling.tasks.build_pool",
            kind="build_pool",
            user=user,
            params={"pool_id": pool.pk},
            total=batches,
            description=f"Pool {name}: {questions} questions, depth {depth}, "
            + ", ".join(r.name for r in retrievers),
        )
        pool.save(update_fields=["job"])
    return pool


def run_pool_build(job: Job) -> None:
    """The job of `start_pool`: queue one `pool_batch` task per retriever and batch of
    questions not done yet (safe to re-run)."""
    pool = Pool.objects.get(pk=job.params["pool_id"], question_set__project=job.project)
    batches = _batches(pool)
    finished = set(job.result.get("finished", []))
    job.total, job.done = len(batches), len(finished & {key for key, *_ in batches})
    Job.objects.filter(pk=job.pk).update(total=job.total, done=job.done)
    if pool.state != PoolState.BUILDING:
        # A re-run after the pool was settled (the worker died before the job was closed).
        jobs.finish(
            job,
            JobState.SUCCEEDED if pool.state == PoolState.READY else JobState.FAILED,
            f"Pool {pool.name} is {pool.get_state_display().lower()}.",
        )
        return
    pending = [(retriever_id, ids) for key, retriever_id, ids in batches if key not in finished]
    if not pending:
        _complete(pool)
        return
    for retriever_id, ids in pending:
        transaction.on_commit(
            partial(jobs.task_named(POOL_BATCH_TASK).delay, pool.pk, retriever_id, ids)
        )


def _batches(pool: Pool) -> list[tuple[str, int, list[int]]]:
    question_ids = list(pool.question_set.questions.order_by("pk").values_list("pk", flat=True))
    return [
        (
            f"{retriever_id}:{question_ids[first]}",
            retriever_id,
            question_ids[first : first + POOL_BATCH],
        )
        for retriever_id in pool.retrievers.order_by("pk").values_list("pk", flat=True)
        for first in range(0, len(question_ids), POOL_BATCH)
    ]


def record_pool_hits(*, pool: Pool, retriever: Retriever, question_ids: Sequence[int]) -> None:
    """One retriever's top ``depth`` for a batch of questions, stored as raw hits.

    The batch that completes the pool merges every hit into candidates. A batch that fails
    fails the pool with the reason on its Job.
    """
    if pool.state != PoolState.BUILDING:
        return
    questions = list(
        Question.objects.filter(pk__in=question_ids, question_set=pool.question_set).order_by("pk")
    )
    try:
        hits = _hits(retriever, questions, pool.depth)
    except ServiceError as exc:
        _fail(pool, f"{retriever.name}: {exc}")
        return
    except Exception:
        logger.exception("pooling %s with %s failed", pool.pk, retriever.name)
        _fail(pool, f"{retriever.name}: an unexpected error stopped pooling; it has been logged.")
        return
    key = f"{retriever.pk}:{question_ids[0]}"
    with transaction.atomic():
        # The Job row is the pool's lock: exactly one task sees the last batch arrive.
        job = Job.objects.select_for_update().get(pk=pool.job_id)
        pool = Pool.objects.get(pk=pool.pk)
        if pool.state != PoolState.BUILDING:
            return
        PoolHit.objects.filter(pool=pool, retriever=retriever, question__in=questions).delete()
        PoolHit.objects.bulk_create(
            [
                PoolHit(
                    pool=pool,
                    question=question,
                    retriever=retriever,
                    rank=rank,
                    score=score,
                    version_id=version_id,
                    start=start,
                    end=end,
                )
                for question, found in zip(questions, hits, strict=True)
                for rank, score, version_id, start, end in found
            ],
            batch_size=BULK_BATCH,
        )
        finished = set(job.result.get("finished", [])) | {key}
        job.result = {**job.result, "finished": sorted(finished)}
        job.done = len(finished)
        # The heartbeat tells the reconciler that this pool's tasks are still arriving.
        Job.objects.filter(pk=job.pk).update(
            result=job.result, done=job.done, heartbeat_at=timezone.now()
        )
        if job.done >= job.total:
            _complete(pool)


def _hits(
    retriever: Retriever, questions: list[Question], depth: int
) -> list[list[tuple[int, float | None, int, int, int]]]:
    """(rank, score, version, start, end) of each question's top ``depth``."""
    if retriever.kind != RetrieverKind.RUN:
        found = retrieve(retriever=retriever, questions=[q.text for q in questions], k=depth)
        return [[(r.rank, r.score, r.version_id, r.start, r.end) for r in hits] for hits in found]
    # A run is filtered as a search is: only the newest version of a searchable document, and
    # the ranks close up over what was left out, so depth counts what labellers can see.
    searchable = Document.objects.filter(project_id=retriever.project_id).searchable()
    rows = (
        RunResult.objects.filter(
            retriever=retriever,
            question__in=questions,
            version_id__in=searchable.values("latest_version_id"),
        )
        .order_by("question_id", "rank", "pk")
        .values_list("question_id", "rank", "score", "version_id", "start", "end")
    )
    by_question: dict[int, list[tuple[int, float | None, int, int, int]]] = defaultdict(list)
    last_rank: dict[int, tuple[int, int]] = {}
    for question_id, rank, score, version_id, start, end in rows:
        previous, shown = last_rank.get(question_id, (0, 0))
        if rank != previous:
            shown += 1
            last_rank[question_id] = (rank, shown)
        if shown <= depth:
            by_question[question_id].append((shown, score, version_id, start, end))
    return [by_question[q.pk] for q in questions]


def _fail(pool: Pool, message: str) -> None:
    with transaction.atomic():
        updated = Pool.objects.filter(pk=pool.pk, state=PoolState.BUILDING).update(
            state=PoolState.FAILED
        )
        job = Job.objects.get(pk=pool.job_id)
        if updated and not job.finished:
            jobs.finish(job, JobState.FAILED, message)


def _complete(pool: Pool) -> None:
    candidates = merge_pool(pool)
    Pool.objects.filter(pk=pool.pk).update(state=PoolState.READY)
    job = Job.objects.get(pk=pool.job_id)
    job.result = {**job.result, "candidates": candidates}
    questions = pool.question_set.questions.count()
    jobs.finish(
        job,
        JobState.SUCCEEDED,
        f"Pool {pool.name}: {candidates} candidates for {questions} questions.",
    )


def merge_pool(pool: Pool) -> int:
    """Turn the raw hits into candidates with provenance (replacing any earlier merge)."""
    names = dict(Retriever.objects.filter(pools=pool).values_list("pk", "name"))
    ids = {name: pk for pk, name in names.items()}
    hits: dict[int, list[Hit]] = defaultdict(list)
    for question_id, retriever_id, rank, score, version_id, start, end in PoolHit.objects.filter(
        pool=pool
    ).values_list("question_id", "retriever_id", "rank", "score", "version_id", "start", "end"):
        hits[question_id].append(
            Hit(
                retriever=names[retriever_id],
                rank=rank,
                score=score,
                passage=Passage(version_id, start, end),
            )
        )
    Candidate.objects.filter(pool=pool).delete()
    candidates: list[Candidate] = []
    provenance: list[list[Hit]] = []
    for question_id in sorted(hits):
        pooled = pool_question(hits[question_id], depth=pool.depth)
        # Seeded by pool and question: the same order on every reload, in every process.
        order = shuffled_order(
            [(c.version_id, c.start, c.end) for c in pooled],
            seed=f"pool-{pool.pk}-question-{question_id}",
        )
        shuffle_rank = {position: shown for shown, position in enumerate(order)}
        for position, found in enumerate(pooled):
            candidates.append(
                Candidate(
                    pool=pool,
                    question_id=question_id,
                    version_id=found.version_id,
                    start=found.start,
                    end=found.end,
                    shuffle_rank=shuffle_rank[position],
                )
            )
            provenance.append(found.provenance)
    Candidate.objects.bulk_create(candidates, batch_size=BULK_BATCH)
    Provenance.objects.bulk_create(
        [
            Provenance(
                candidate=candidate,
                retriever_id=ids[hit.retriever],
                rank=hit.rank,
                score=hit.score,
                start=hit.passage.start,
                end=hit.passage.end,
            )
            for candidate, found in zip(candidates, provenance, strict=True)
            for hit in found
        ],
        batch_size=BULK_BATCH,
    )
    return len(candidates)


# Reading a pool --------------------------------------------------------------------------


@dataclass
class PoolSummary:
    """What the pool page shows. ``stats`` is provenance: for leads and admins only."""

    sizes: list[tuple[Question, int]] = field(default_factory=list)
    stats: PoolStats | None = None
    retrievers: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(size for _, size in self.sizes)


def summarize_pool(*, pool: Pool, user, with_provenance: bool) -> PoolSummary:
    """Pool size per question and, with provenance, overlap and unique contributions.

    Counted over the candidates the user may see, so a restricted document shows nowhere
    (``user=None``: every candidate, for scripts).
    """
    candidates = Candidate.objects.filter(pool=pool)
    if user is not None:
        visible = Document.objects.filter(project_id=pool.question_set.project_id).visible_to(user)
        candidates = candidates.filter(version__document__in=visible.values("pk"))
    per_question: dict[int, int] = defaultdict(int)
    for question_id in candidates.values_list("question_id", flat=True):
        per_question[question_id] += 1
    summary = PoolSummary(
        sizes=[(q, per_question[q.pk]) for q in pool.question_set.questions.order_by("pk")],
        retrievers=list(pool.retrievers.order_by("name").values_list("name", flat=True)),
    )
    if with_provenance:
        found: dict[int, PooledCandidate] = {}
        for candidate_id, version_id, name, rank, score, start, end in Provenance.objects.filter(
            candidate__in=candidates
        ).values_list(
            "candidate_id",
            "candidate__version_id",
            "retriever__name",
            "rank",
            "score",
            "start",
            "end",
        ):
            passage = Passage(version_id, start, end)
            candidate = found.setdefault(
                candidate_id, PooledCandidate(version_id=version_id, start=start, end=end)
            )
            candidate.provenance.append(
                Hit(retriever=name, rank=rank, score=score, passage=passage)
            )
        stats = pool_stats(list(found.values()))
        summary.stats = PoolStats(
            size=stats.size,
            per_retriever={n: stats.per_retriever.get(n, 0) for n in summary.retrievers},
            unique={n: stats.unique.get(n, 0) for n in summary.retrievers},
            overlap={
                (a, b): stats.overlap.get((a, b), 0)
                for i, a in enumerate(summary.retrievers)
                for b in summary.retrievers[i + 1 :]
            },
        )
    return summary
