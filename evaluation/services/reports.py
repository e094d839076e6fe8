"""The evaluation page's figures, computed by jobs and stored, so no request scores anything.

Scoring reads the gold set (re-anchoring spans onto newer document versions, which for a long
span on an edited version takes minutes), every chosen run and the BM25 baseline. The page
therefore renders a stored `EvaluationReport` for the runs chosen; a report that does not exist
yet is a job the page follows (htmx, like every job page). The jobs that change what the page
shows by default (a run uploaded or retrieved, a new gold set) end by computing the default
choice's report, so the page is ready when they are.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlencode

from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from corpus import jobs
from corpus.models import Job, JobState, Retriever
from corpus.services import http_retrieval
from evaluation import scoreboard
from evaluation.models import EvaluationReport, EvaluationRun, GoldSet
from evaluation.services import evaluation_runs, gold_sets, index_evaluations
from goldeval.formats.doc_ids import SCORED

# Runs scored when the page is opened without a choice: the newest few.
DEFAULT_RUNS = 6


@dataclass(frozen=True)
class Choice:
    """What the page scores: some runs of a gold set, the keyword baseline or not, and the k
    sent to the model it highlights."""

    run_ids: tuple[int, ...]
    baseline: bool
    k: int

    def as_dict(self) -> dict:
        return {"runs": sorted(self.run_ids), "baseline": self.baseline, "k": self.k}

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()

    def query(self, gold_set: GoldSet) -> str:
        """The evaluation page's query string that shows this choice."""
        pairs = [("gold_set", gold_set.pk), ("shown", 1)]
        pairs += [("run", pk) for pk in sorted(self.run_ids)]
        if self.baseline:
            pairs.append(("baseline", 1))
        return urlencode(pairs)


def default_choice(gold_set: GoldSet) -> Choice:
    runs = list(EvaluationRun.objects.of_gold_set(gold_set).values_list("pk", flat=True))
    return Choice(
        run_ids=tuple(runs[-DEFAULT_RUNS:]),
        baseline=True,
        k=gold_set.question_set.project.k_sent_to_model,
    )


def stored_report(gold_set: GoldSet, choice: Choice) -> EvaluationReport | None:
    return EvaluationReport.objects.filter(gold_set=gold_set, key=choice.key).first()


def report_job(gold_set: GoldSet, choice: Choice) -> Job | None:
    """The job storing this choice's report now, or the last one that tried."""
    return jobs.newest(
        project_id=gold_set.question_set.project_id,
        kind="evaluation_report",
        gold_set_id=gold_set.pk,
        key=choice.key,
    )


def pending_job(gold_set: GoldSet, choice: Choice) -> Job | None:
    """An unfinished job that will store this choice's report."""
    return jobs.unfinished(report_job(gold_set, choice))


def start_report(*, gold_set: GoldSet, choice: Choice, user=None) -> Job:
    """Queue the report of ``choice`` (or give the job already doing it)."""
    running = pending_job(gold_set, choice)
    if running is not None:
        return running
    valid = set(EvaluationRun.objects.filter(gold_set=gold_set).values_list("pk", flat=True))
    if not set(choice.run_ids) <= valid:
        raise gold_sets.GoldSetError("Choose runs of this gold set.")
    count = len(choice.run_ids)
    return jobs.start(
        project=gold_set.question_set.project,
        task="evaluation.tasks.evaluation_report",
        kind="evaluation_report",
        user=user,
        params={"gold_set_id": gold_set.pk, "key": choice.key, **choice.as_dict()},
        total=_steps(choice),
        description=f"Score {count} run{'s' if count != 1 else ''}"
        + (" and the baseline" if choice.baseline else "")
        + f" against {gold_set}",
    )


def _steps(choice: Choice) -> int:
    """What `scoreboard.evaluate_gold_set` reports: the gold set, each run, the baseline."""
    return 1 + len(choice.run_ids) + int(choice.baseline)


def compute_report(
    *, gold_set: GoldSet, choice: Choice, progress: Callable[[int], None] | None = None
) -> EvaluationReport:
    """Score the choice and store what the page shows (idempotent: the same choice of a
    frozen gold set always gives the same figures)."""
    records = list(
        EvaluationRun.objects.of_gold_set(gold_set)
        .filter(pk__in=choice.run_ids)
        .select_related("created_by")
    )
    board = scoreboard.evaluate_gold_set(
        gold_set=gold_set,
        records=records,
        baseline=choice.baseline,
        k_sent_to_model=choice.k,
        progress=progress,
    )
    content = scoreboard.report_of(board)
    try:
        with transaction.atomic():
            report, _ = EvaluationReport.objects.update_or_create(
                gold_set=gold_set,
                key=choice.key,
                defaults={"choice": choice.as_dict(), "content": content},
            )
    except IntegrityError:  # another job stored the same figures first
        report = EvaluationReport.objects.get(gold_set=gold_set, key=choice.key)
    return report


def _advance(job: Job) -> Callable[[int], None]:
    def advance(count: int) -> None:
        job.done += count
        Job.objects.filter(pk=job.pk).update(
            done=job.done, total=max(job.total, job.done), heartbeat_at=timezone.now()
        )

    return advance


def _page(gold_set: GoldSet, choice: Choice) -> dict:
    """A job's result that sends the page following it on to these figures."""
    url = reverse("evaluation:show-evaluation", args=[gold_set.question_set.project.slug])
    return {
        "redirect": True,
        "link": {"url": f"{url}?{choice.query(gold_set)}", "text": "Show the figures"},
    }


def _gold_set_of(job: Job) -> GoldSet:
    return GoldSet.objects.select_related("question_set__project").get(
        pk=job.params["gold_set_id"], question_set__project=job.project
    )


def run_report(job: Job) -> None:
    """The job of `start_report`."""
    gold_set = _gold_set_of(job)
    choice = Choice(
        run_ids=tuple(job.params.get("runs", ())),
        baseline=bool(job.params.get("baseline")),
        k=int(job.params.get("k", 5)),
    )
    compute_report(gold_set=gold_set, choice=choice, progress=_advance(job))
    job.result = _page(gold_set, choice)
    jobs.finish(job, JobState.SUCCEEDED, "The figures are ready.")


def run_uploaded_run(job: Job) -> None:
    """The job of `evaluation_runs.start_uploaded_run`: read the file against the gold set
    (refused whole, with the line, when bad), store it, then the page's default figures."""
    gold_set = _gold_set_of(job)
    run = EvaluationRun.objects.filter(pk=job.result.get("run_id")).first()
    if run is None:
        upload = job.uploads.order_by("pk").first()
        if upload is None:
            raise gold_sets.GoldSetError("The uploaded file is gone; upload it again.")
        try:
            run = evaluation_runs.record_uploaded_run(
                gold_set=gold_set,
                name=job.params["name"],
                file_name=job.params["file_name"],
                data=bytes(upload.content),
                user=job.created_by,
            )
        except evaluation_runs.RunRejected as error:
            raise evaluation_runs.RunRejected(f"Nothing was stored. {error}") from error
        if run.unknown_documents is not None and run.unknown_documents.unknown:
            warning = run.unknown_documents.warning(job.params["file_name"], outcome=SCORED)
            job.errors = [{"source": job.params["file_name"], "error": warning}]
        Job.objects.filter(pk=job.pk).update(result={"run_id": run.pk}, errors=job.errors)
    if job.params.get("retriever_id"):
        index_evaluations.record_run_evaluation(
            run=run, retriever_id=job.params["retriever_id"], change=job.params.get("change", "")
        )
    # The unknown document ids travel in the message too: the job page goes on to the figures.
    warning = next((e["error"] for e in job.errors or [] if isinstance(e, dict)), "")
    _finish_with_default_report(
        job,
        gold_set,
        ["Run {run} stored: {questions} questions.", (" {unknown}.", "unknown")],
        figures={"run": run.name, "questions": run.questions, "unknown": warning},
    )


def run_retriever_run(job: Job) -> None:
    """The job of `evaluation_runs.start_retriever_run`: retrieve, store the run, then the
    page's default figures."""
    gold_set = _gold_set_of(job)
    run = EvaluationRun.objects.filter(pk=job.result.get("run_id")).first()
    if run is None:  # a redelivered job finds its run already stored
        retriever = Retriever.objects.get(pk=job.params["retriever_id"], project=job.project)
        run = evaluation_runs.record_retriever_run(
            gold_set=gold_set, retriever=retriever, user=job.created_by, job=job
        )
        Job.objects.filter(pk=job.pk).update(result=job.result | {"run_id": run.pk})
    template: list = ["{run}: top {depth} for {questions} questions."]
    figures: dict = {"run": run.name, "depth": run.depth, "questions": run.questions}
    placed = job.result.get("placed") if isinstance(job.result, dict) else None
    if placed:  # an HTTP retriever's results, placed by offsets, by their text or as documents
        placement, counts = http_retrieval.placement_template(placed, key="run")
        template += [" ", *placement, "."]
        figures |= counts
    _finish_with_default_report(job, gold_set, template, figures=figures)


def run_finalise(job: Job) -> None:
    """The job of `gold_sets.start_finalise`, and then the new gold set's default figures, so
    its evaluation page is ready too."""
    gold_sets.run_finalise(
        job,
        then=lambda gold_set: compute_report(gold_set=gold_set, choice=default_choice(gold_set)),
    )


def _finish_with_default_report(
    job: Job, gold_set: GoldSet, message: jobs.Template, *, figures: dict | None = None
) -> None:
    run_id = job.result.get("run_id") if isinstance(job.result, dict) else None
    shares = job.result.get("shares") if isinstance(job.result, dict) else None
    choice = default_choice(gold_set)
    job.total = job.done + _steps(choice)
    Job.objects.filter(pk=job.pk).update(total=job.total)
    compute_report(gold_set=gold_set, choice=choice, progress=_advance(job))
    job.result = {"run_id": run_id, **_page(gold_set, choice), "shares": shares or {}}
    gold_sets.withhold_figures(job=job, gold_set=gold_set)
    jobs.finish(job, JobState.SUCCEEDED, message, figures=figures)
