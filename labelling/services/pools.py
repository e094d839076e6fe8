"""Writes for pools: pooling candidates for labelling from retrievers and uploaded runs.

A pool is built by one Celery task per retriever and batch of questions. Each task stores its raw
top-k as PoolHit rows; the task that finishes last merges them into candidates with provenance
(labelling.pooling) and a per-question shuffled order. Every step can run twice safely. An
uploaded run is pooled from its RunResult rows, which `labelling.services.run_import` writes.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.text import slugify

from corpus import jobs
from corpus.models import Document, Job, JobState, Retriever, RetrieverKind
from corpus.services import http_retrieval
from corpus.services.retrieval import check_searchable, retrieve
from goldeval.pooling import Strategy
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

logger = logging.getLogger(__name__)

# Questions per pooling task: small enough that a task finishes in seconds (and a lost one is
# cheap to redo), large enough that an embedding retriever encodes its questions in one batch.
POOL_BATCH = 50
MAX_DEPTH = 1000
# By name: the task module imports this one.
POOL_BATCH_TASK = "labelling.tasks.pool_batch"
BULK_BATCH = 2000
MAX_LISTED_PROBLEMS = 500


# Pools -----------------------------------------------------------------------------------


def start_pool(
    *,
    question_set: QuestionSet,
    name: str,
    retrievers: Sequence[Retriever],
    depth: int = 10,
    strategy: str = Strategy.DEPTH.value,
    stop_misses: int | None = None,
    stop_budget: int | None = None,
    user=None,
) -> Pool:
    """Create a pool and queue its tasks; the Job shows progress and the pool turns ready.
    ``strategy`` and the stopping rule (``stop_misses``, ``stop_budget``) set the order
    labellers judge each question's candidates in (`goldeval.pooling`)."""
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
    if strategy not in {s.value for s in Strategy}:
        raise ServiceError(f"The judging order is one of {', '.join(Strategy)}, not {strategy!r}.")
    for limit in (stop_misses, stop_budget):
        if limit is not None and not 1 <= limit <= MAX_DEPTH * 10:
            raise ServiceError(
                f"A stopping rule counts between 1 and {MAX_DEPTH * 10} judgements, not {limit}."
            )
    if question_set.is_canary:
        raise ServiceError(
            f"{question_set.name} holds canary questions: permission replays ask them; they are "
            "never pooled or labelled."
        )
    questions = question_set.questions.count()
    if not questions:
        raise ServiceError(f"The question set {question_set.name} has no questions.")
    for retriever in retrievers:
        check_searchable(retriever, project=project)
        runs = RunResult.objects.filter(retriever=retriever, question__question_set=question_set)
        if retriever.kind == RetrieverKind.RUN and not runs.exists():
            raise ServiceError(
                f"{retriever.name} has no run for {question_set.name}: upload one first."
            )
    batches = len(retrievers) * -(-questions // POOL_BATCH)
    with transaction.atomic():
        pool = Pool.objects.create(
            question_set=question_set,
            name=name,
            depth=depth,
            strategy=strategy,
            stop_misses=stop_misses,
            stop_budget=stop_budget,
            created_by=user,
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
    placed: dict = {}
    try:
        hits = _hits(retriever, questions, pool.depth, placed=placed)
    except http_retrieval.HttpSearchFailed as exc:
        _fail(pool, str(exc), errors=exc.problems)
        return
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
        repeated = key in job.result.get("finished", [])
        finished = set(job.result.get("finished", [])) | {key}
        job.result = {**job.result, "finished": sorted(finished)}
        if placed and not repeated:  # how an HTTP retriever's results were placed, summed
            counts = job.result.get("placed", {}).get(retriever.name, {})
            located = placed["located"]
            counts = {n: counts.get(n, 0) + located.get(n, 0) for n in http_retrieval.PLACED}
            job.result["placed"] = {**job.result.get("placed", {}), retriever.name: counts}
            job.errors = [*job.errors, *placed["warnings"]][:MAX_LISTED_PROBLEMS]
            jobs.add_shares(job, placed["shares"])
        job.done = len(finished)
        # The heartbeat tells the reconciler that this pool's tasks are still arriving.
        Job.objects.filter(pk=job.pk).update(
            result=job.result, done=job.done, errors=job.errors, heartbeat_at=timezone.now()
        )
        if job.done >= job.total:
            _complete(pool)


def _hits(
    retriever: Retriever, questions: list[Question], depth: int, *, placed: dict | None = None
) -> list[list[tuple[int, float | None, int, int, int]]]:
    """(rank, score, version, start, end) of each question's top ``depth``. For an HTTP
    retriever ``placed`` receives how its results were placed in the corpus."""
    if retriever.kind == RetrieverKind.HTTP:
        run = http_retrieval.search_http(
            retriever=retriever, questions=[(q.external_id, q.text) for q in questions], k=depth
        )
        run.raise_for_errors(retriever)
        if placed is not None:
            shares = http_retrieval.placement_shares(run, key=_placement_key(retriever.name))
            placed.update(located=run.located, warnings=run.warnings, shares=shares)
        content = http_retrieval.content_rankings(run, project=retriever.project)
        return http_retrieval.pool_rows(content, retriever=retriever)
    if retriever.kind != RetrieverKind.RUN:
        found = retrieve(retriever=retriever, questions=[q.text for q in questions], k=depth)
        return [[(r.rank, r.score, r.version_id, r.start, r.end) for r in hits] for hits in found]
    # A run is filtered as a search is: only the newest version of a searchable document, and
    # the ranks close up over what was left out, so depth counts what labellers can see.
    searchable = Document.objects.filter(project_id=retriever.project_id).searchable().content()
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


def _fail(pool: Pool, message: str, *, errors: Sequence[dict] = ()) -> None:
    with transaction.atomic():
        updated = Pool.objects.filter(pk=pool.pk, state=PoolState.BUILDING).update(
            state=PoolState.FAILED
        )
        job = Job.objects.get(pk=pool.job_id)
        if updated and not job.finished:
            job.errors = [*job.errors, *errors]
            jobs.finish(job, JobState.FAILED, message)


def _placement_key(retriever: str) -> str:
    """A retriever's key in the figures of a pool's message (`_complete`)."""
    return hashlib.sha256(retriever.encode()).hexdigest()[:12]


def _complete(pool: Pool) -> None:
    candidates = merge_pool(pool)
    Pool.objects.filter(pk=pool.pk).update(state=PoolState.READY)
    job = Job.objects.get(pk=pool.job_id)
    job.result = {**job.result, "candidates": candidates}
    # Every figure of the message counts what a viewer may see: what each restricted document
    # adds is kept apart (`corpus.jobs.add_shares`), and left out for those outside its groups.
    per_document = (
        Candidate.objects.filter(pool=pool, version__document__access_groups__isnull=False)
        .order_by()
        .values("version__document")
        .annotate(n=Count("pk", distinct=True))
        .values_list("version__document", "n")
    )
    jobs.add_shares(job, {document: {"candidates": n} for document, n in per_document})
    figures: dict = {
        "pool": pool.name,
        "candidates": candidates,
        "questions": pool.question_set.questions.count(),
    }
    template: list = ["Pool {pool}: {candidates} candidates for {questions} questions."]
    for index, (name, counts) in enumerate(sorted(job.result.get("placed", {}).items())):
        placement, placed = http_retrieval.placement_template(counts, key=_placement_key(name))
        figures |= {f"retriever_{index}": name, **placed}
        template += [f" {{retriever_{index}}}: ", *placement, "."]
    jobs.finish(job, JobState.SUCCEEDED, template, figures=figures)


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
