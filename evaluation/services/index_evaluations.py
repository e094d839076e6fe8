"""Evaluation on every index change: each build of a built-in retriever's index is scored on
the project's newest gold set by a job (started by a Celery beat task that finds new builds;
the corpus never calls evaluation) (and an uploaded run of the team's system, tagged with
what changed, joins its retriever's plot), and the retriever page plots recall@k (at the k sent
to the model) and nDCG@10 over its builds, each tagged with what changed (chunking, embedding
model, or the corpus alone).

The run searches as someone in no access group (only unrestricted documents come back), so
its figures are the same for every member; the plot is shown to those the gold set's bundle
is not refused to, as on the evaluation page.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from corpus import jobs
from corpus.models import Index, IndexState, Job, JobState, Project, Retriever, RetrieverKind
from corpus.services.retrieval import retrieve
from evaluation.models import BuildEvaluationStart, EvaluationRun, GoldSet, IndexEvaluation
from evaluation.services.evaluation_runs import evaluation_depth, load_stored_run
from evaluation.services.gold_sets import load_gold_set, withhold_figures
from goldeval.formats.runfiles import jsonl_run_line
from goldeval.formats.runs import read_run
from goldeval.scoring.metrics import MetricOptions, evaluate_run
from goldset.batching import in_batches
from labelling.charts import time_chart

BATCH = 64


def newest_gold_set(project) -> GoldSet | None:
    return GoldSet.objects.in_project(project).order_by("-created_at", "-pk").first()


def start_build_evaluations(*, project: Project | None = None) -> list[Job]:
    """Start one evaluation job per built-in retriever whose current index build has no
    figures on the project's newest gold set yet (of one project, or of all): evaluation finds
    the builds itself, Celery beat calls this every minute, and the corpus knows nothing of
    it. So a new build is scored on the newest gold set, and a newly finalised gold set gets
    the current build scored on it, which starts that gold set's history. Idempotent: a
    (build, gold set) already started (`BuildEvaluationStart`) or evaluated is skipped."""
    retrievers = Retriever.objects.filter(
        kind__in=(RetrieverKind.BM25, RetrieverKind.EMBEDDING),
        active_index__state=IndexState.READY,
        active_index__built_at__isnull=False,
    ).select_related("active_index", "project")
    if project is not None:
        retrievers = retrievers.filter(project=project)
    started = []
    for retriever in retrievers.order_by("pk"):
        # Without a gold set there is nothing to score on: the build waits for the first one.
        gold_set = newest_gold_set(retriever.project)
        if gold_set is None:
            continue
        job = start_build_evaluation(retriever=retriever, gold_set=gold_set)
        if job is not None:
            started.append(job)
    return started


def current_build_scored(*, retriever: Retriever, gold_set: GoldSet) -> bool:
    """Whether the retriever's current index build has figures on the gold set, or a job
    computing them."""
    index = retriever.active_index
    if index is None or index.built_at is None:
        return False
    build = {"retriever": retriever, "built_at": index.built_at, "gold_set": gold_set}
    return (
        BuildEvaluationStart.objects.filter(**build).exists()
        or IndexEvaluation.objects.filter(**build, run__isnull=True).exists()
    )


def start_build_evaluation(*, retriever: Retriever, gold_set: GoldSet, user=None) -> Job | None:
    """Score the retriever's current index build on ``gold_set`` (a job), unless that build
    has figures or a job on it already (None then). Only the current build can be scored: a
    replaced index is gone."""
    index = retriever.active_index
    if (
        retriever.kind not in (RetrieverKind.BM25, RetrieverKind.EMBEDDING)
        or index is None
        or index.state != IndexState.READY
        or index.built_at is None
        or current_build_scored(retriever=retriever, gold_set=gold_set)
    ):
        return None
    try:
        with transaction.atomic():
            start = BuildEvaluationStart.objects.create(
                retriever=retriever, built_at=index.built_at, gold_set=gold_set
            )
            start.job = jobs.start(
                project=retriever.project,
                task="evaluation.tasks.index_evaluation",
                kind="index_evaluation",
                user=user,
                params={
                    "retriever_id": retriever.pk,
                    "index_id": index.pk,
                    "gold_set_id": gold_set.pk,
                },
                total=int(gold_set.manifest.get("questions", 0)),
                description=f"Evaluate the current index of {retriever.name} on {gold_set}",
            )
            start.save(update_fields=["job"])
    except IntegrityError:
        return None  # another beat, command or click started it meanwhile
    return start.job


def _model_of(retriever: Retriever, index: Index) -> str:
    if retriever.kind == RetrieverKind.BM25:
        return "bm25 " + ", ".join(f"{k}={v}" for k, v in sorted(retriever.params.items()))
    return f"{index.model_name}@{index.model_version} ({index.dimension})"


def _change(retriever: Retriever, *, built_at, scheme: str, model: str) -> str:
    """What changed since the build before ``built_at`` (on whatever gold set it was scored)."""
    previous = (
        IndexEvaluation.objects.filter(retriever=retriever, built_at__lt=built_at)
        .order_by("-built_at")
        .first()
    )
    if previous is None:
        return "first build"
    changed = [
        name
        for name, differs in (
            ("chunking", previous.scheme != scheme),
            ("embeddings", previous.model != model),
        )
        if differs
    ]
    return " and ".join(changed) or "corpus"


def run_index_evaluation(job: Job) -> None:
    """The job of `start_build_evaluations`: retrieve the gold questions, score, store the row."""
    retriever = Retriever.objects.select_related("scheme", "project").get(
        pk=job.params["retriever_id"], project=job.project
    )
    gold_set = GoldSet.objects.get(pk=job.params["gold_set_id"])
    index = Index.objects.filter(pk=job.params["index_id"]).first()
    if index is None or retriever.active_index_id != index.pk:
        jobs.finish(
            job, JobState.SUCCEEDED, "A newer index replaced this one; it is evaluated instead."
        )
        return
    scored = IndexEvaluation.objects.filter(
        retriever=retriever, built_at=index.built_at, gold_set=gold_set, run__isnull=True
    )
    if IndexEvaluation.objects.filter(job=job).exists() or scored.exists():
        jobs.finish(job, JobState.SUCCEEDED, "Already evaluated.")
        return
    gold = load_gold_set(gold_set)
    project = retriever.project
    depth, k = evaluation_depth(project), project.k_sent_to_model
    questions = list(gold.questions.values())
    advance = jobs.progress(job)
    lines = []
    for batch in in_batches(questions, size=BATCH):
        # groups=(): as someone in no group, so the figures are everyone's.
        found = retrieve(
            retriever=retriever, questions=[q.question for q in batch], k=depth, groups=()
        )
        lines += [
            jsonl_run_line(question_id=q.question_id, results=hits)
            for q, hits in zip(batch, found, strict=True)
        ]
        advance(len(batch))
    run = read_run("".join(lines).encode("utf-8"), name=retriever.name)
    ks = tuple(sorted({k, 10}))
    evaluation = evaluate_run(gold=gold, run=run, options=MetricOptions(ks=ks))
    scheme = retriever.scheme.describe() if retriever.scheme else ""
    model = _model_of(retriever, index)
    with transaction.atomic():
        IndexEvaluation.objects.create(
            retriever=retriever,
            gold_set=gold_set,
            built_at=index.built_at,
            change=_change(retriever, built_at=index.built_at, scheme=scheme, model=model),
            scheme=scheme,
            model=model,
            k=k,
            metrics={
                f"recall@{k}": evaluation.metrics[f"recall@{k}"],
                "ndcg@10": evaluation.metrics["ndcg@10"],
            },
            questions=len(questions),
            job=job,
        )
    recall = evaluation.metrics[f"recall@{k}"]
    shown = "–" if recall is None else f"{recall:.3f}"
    withhold_figures(job=job, gold_set=gold_set)
    jobs.finish(job, JobState.SUCCEEDED, f"{retriever.name}: recall@{k} {shown} on {gold_set}.")


def build_plot(evaluations: list[IndexEvaluation]) -> dict:
    """recall@k and nDCG@10 over the builds scored on one gold set, and the rows behind the
    lines; with too few builds to draw, `labelling/_time_chart.html` says their values in words
    (`labelling.charts`)."""
    if not evaluations:
        return {}
    k = evaluations[-1].k
    series = [
        (f"recall@{k}", [(e.built_at, e.metrics.get(f"recall@{e.k}") or 0.0) for e in evaluations]),
        ("nDCG@10", [(e.built_at, e.metrics.get("ndcg@10") or 0.0) for e in evaluations]),
    ]
    chart = time_chart(
        series,
        start=evaluations[0].built_at,
        end=evaluations[-1].built_at,
        y_label=lambda value: f"{value:.3f}",  # as the table below writes them
    )
    rows = [
        {
            "evaluation": e,
            "recall": e.metrics.get(f"recall@{e.k}"),
            "ndcg": e.metrics.get("ndcg@10"),
        }
        for e in reversed(evaluations)
    ]
    label = f"recall@{k} and nDCG@10 over the builds"
    return {"chart": chart, "rows": rows, "k": k, "label": label}


def builds_without_figures(*, retriever: Retriever, gold_set: GoldSet) -> list[dict]:
    """The retriever's builds scored on other gold sets but not on ``gold_set``, newest first,
    each with the gold sets it was scored on and whether it is the current build (which can
    still be scored on ``gold_set``; a replaced index is gone)."""
    evaluations = IndexEvaluation.objects.filter(retriever=retriever, run__isnull=True)
    scored_here = set(evaluations.filter(gold_set=gold_set).values_list("built_at", flat=True))
    current = retriever.active_index.built_at if retriever.active_index else None
    builds: dict = {}
    for evaluation in evaluations.exclude(gold_set=gold_set).select_related("gold_set"):
        if evaluation.built_at in scored_here:
            continue
        build = builds.setdefault(
            evaluation.built_at,
            {"built_at": evaluation.built_at, "change": evaluation.change, "gold_sets": []},
        )
        build["gold_sets"].append(str(evaluation.gold_set))
    if current is not None and current not in scored_here and current not in builds:
        builds[current] = {"built_at": current, "change": "", "gold_sets": []}
    for build in builds.values():
        build["current"] = build["built_at"] == current
    return sorted(builds.values(), key=lambda build: build["built_at"], reverse=True)


def record_run_evaluation(*, run: EvaluationRun, retriever_id: int, change: str) -> IndexEvaluation:
    """An uploaded run of the team's system, tagged with what changed in it, on the retriever's
    plot over changes (once per run)."""
    retriever = Retriever.objects.select_related("project").get(
        pk=retriever_id, project=run.gold_set.question_set.project_id
    )
    existing = IndexEvaluation.objects.filter(retriever=retriever, run=run).first()
    if existing is not None:
        return existing
    gold = load_gold_set(run.gold_set)
    k = retriever.project.k_sent_to_model
    evaluation = evaluate_run(
        gold=gold,
        run=load_stored_run(run, gold=gold),
        options=MetricOptions(ks=tuple(sorted({k, 10}))),
    )
    return IndexEvaluation.objects.create(
        retriever=retriever,
        gold_set=run.gold_set,
        run=run,
        built_at=run.created_at,
        change=change or "uploaded run",
        scheme="",
        model=f"run {run.name}",
        k=k,
        metrics={
            f"recall@{k}": evaluation.metrics[f"recall@{k}"],
            "ndcg@10": evaluation.metrics["ndcg@10"],
        },
        questions=len(gold.questions),
    )
