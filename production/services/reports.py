"""The misses page's figures, computed by a job and stored, so no request scores anything.

A sample's misses report reads its gold as the viewer may see it (every vote and resolution
of its question set), production's rankings and the built-in retrievers', and the trend does
the same for the latest samples. The page therefore renders a stored `ProductionReport`; one
that does not exist yet is a job the page starts and follows (htmx, like every job page),
showing the last figures it has meanwhile, marked as out of date.

A report is keyed by what it was computed from, as its viewer may see it:

- **visibility**: the access groups of the project the viewer is a member of. Two viewers in
  the same groups see the same documents, so they share reports; a viewer in other groups
  never gets figures computed over documents hidden from them.
- **label state**: cheap aggregates (counts, greatest ids and times) over the rows the report
  reads, restricted to the candidates and documents the viewer may see: candidates and their
  retriever ranks, judgements, spans, verdicts, resolutions, assignments, exclusions, history,
  the visible documents' versions, k sent to the model and the samples of the trend. Any
  labelling change the viewer could see is another key, so the page recomputes; a change on a
  document hidden from the viewer is no change for them (the page stays byte for byte the same).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime

from django.core.paginator import Page, Paginator
from django.db import IntegrityError, transaction
from django.db.models import Count, Max, Q, Sum
from django.urls import reverse
from django.utils import timezone

from corpus import jobs
from corpus.models import AccessGroup, Document, DocumentVersion, Job, JobState
from corpus.visibility import hidden_document_ids
from goldeval.scoring.misses import report_content
from goldset.errors import ServiceError
from labelling.models import (
    Assignment,
    Candidate,
    Change,
    Judgement,
    Provenance,
    Question,
    Resolution,
    Span,
    Verdict,
)
from production.models import ProductionReport, ReportMissedQuestion, Sample
from production.services.misses import TREND_SAMPLES, sample_misses

KIND = "misses_report"


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def trend_samples(project) -> list[Sample]:
    """The samples the trend shows, oldest first."""
    samples = (
        Sample.objects.filter(project=project, question_set__isnull=False)
        .select_related("rule", "question_set", "project")
        .order_by("-window_end", "-pk")[:TREND_SAMPLES]
    )
    return list(reversed(list(samples)))


def visibility_of(*, project, viewer) -> str:
    groups = sorted(
        AccessGroup.objects.filter(project=project, members=viewer).values_list("pk", flat=True)
    )
    return _digest({"project": project.pk, "groups": groups})


def label_state(*, sample: Sample, viewer) -> dict:
    """What the report reads, summed up over the rows the viewer may see (see the module).

    The viewer's hidden documents, and the candidates on them, are left out by their ids
    (`corpus.visibility.hidden_document_ids`: one anti-join per aggregate) rather than by
    testing each candidate's document, so a request sums the rows without a test per row."""
    project = sample.project
    sets = sorted({s.question_set_id for s in trend_samples(project)} | {sample.question_set_id})
    hidden = hidden_document_ids(project=project, user=viewer)
    candidates = Candidate.objects.filter(pool__question_set__in=sets).exclude(
        version__document_id__in=hidden
    )
    # The candidates on hidden documents, by id: rows that name a candidate leave those out
    # without a join through every candidate.
    unseen = Candidate.objects.filter(
        pool__question_set__in=sets, version__document_id__in=hidden
    ).values("pk")
    assignments = Assignment.objects.filter(pool__question_set__in=sets)
    on_visible = Q(candidate__isnull=True) | ~Q(candidate_id__in=unseen)

    def rows(queryset, **aggregates) -> dict:
        return queryset.aggregate(n=Count("pk"), **aggregates)

    documents = Document.objects.visible_to(viewer).filter(project=project).values("pk")
    # Spans on the viewer's documents, of the sets' judgements and of their resolutions: the
    # two apart, each by its own join (one OR over both joins reads every span).
    spans = Span.objects.exclude(version__document_id__in=hidden)
    judged = rows(
        spans.filter(judgement__assignment__pool__question_set__in=sets),
        top=Max("pk"),
        sum=Sum("pk"),
    )
    resolved = rows(
        spans.filter(resolution__pool__question_set__in=sets), top=Max("pk"), sum=Sum("pk")
    )
    return {
        "k": project.k_sent_to_model,
        "samples": [s.pk for s in trend_samples(project)] + [sample.pk],
        "candidates": rows(candidates, top=Max("pk"), sum=Sum("pk")),
        "ranks": rows(
            Provenance.objects.filter(candidate__pool__question_set__in=sets).exclude(
                candidate_id__in=unseen
            ),
            top=Max("pk"),
        ),
        "judgements": rows(
            Judgement.objects.filter(assignment__in=assignments).exclude(candidate_id__in=unseen),
            at=Max("updated_at"),
            revisions=Sum("revision"),
            grades=Sum("grade"),
        ),
        "spans": {"judgements": judged, "resolutions": resolved},
        "verdicts": rows(Verdict.objects.filter(assignment__in=assignments), at=Max("updated_at")),
        "resolutions": rows(
            Resolution.objects.filter(pool__question_set__in=sets).filter(on_visible),
            at=Max("resolved_at"),
            sum=Sum("pk"),
        ),
        "assignments": rows(
            assignments,
            top=Max("pk"),
            done=Count("completed_at"),
            at=Max("completed_at"),
        ),
        "questions": rows(Question.objects.filter(question_set__in=sets).included(), sum=Sum("pk")),
        "history": rows(
            Change.objects.filter(assignment__in=assignments).filter(on_visible), top=Max("pk")
        ),
        "versions": rows(
            DocumentVersion.objects.filter(document__in=documents), top=Max("pk"), sum=Sum("pk")
        ),
    }


def report_key(*, sample: Sample, viewer) -> tuple[str, str]:
    """(key, visibility) of the report the viewer should be shown now."""
    visibility = visibility_of(project=sample.project, viewer=viewer)
    state = label_state(sample=sample, viewer=viewer)
    return _digest({"visibility": visibility, "state": state}), visibility


def stored_report(*, sample: Sample, key: str) -> ProductionReport | None:
    """The report of ``key``, its content not read (`report_page` reads what a page shows)."""
    return ProductionReport.objects.filter(sample=sample, key=key).defer("content").first()


def latest_report(*, sample: Sample, visibility: str) -> ProductionReport | None:
    """The newest report computed for the same visibility (shown, marked out of date, while
    the current one is being computed)."""
    return (
        ProductionReport.objects.filter(sample=sample, visibility=visibility)
        .defer("content")
        .order_by("-created_at", "-pk")
        .first()
    )


def pending_job(*, sample: Sample, key: str) -> Job | None:
    return jobs.unfinished(
        jobs.newest(project_id=sample.project_id, kind=KIND, sample_id=sample.pk, key=key)
    )


def start_misses_report(*, sample: Sample, viewer, key: str, visibility: str) -> Job:
    """Queue the report of ``sample`` as ``viewer`` may see it (or give the job doing it)."""
    running = pending_job(sample=sample, key=key)
    if running is not None:
        return running
    return jobs.start(
        project=sample.project,
        task="production.tasks.misses_report",
        kind="misses_report",
        user=viewer,
        params={"sample_id": sample.pk, "key": key, "visibility": visibility},
        total=len(trend_samples(sample.project)) + 1,
        description=f"Misses report of {sample.question_set.name}",
    )


def _trend_point(sample: Sample, content: dict) -> dict:
    return {
        "sample_id": sample.pk,
        "name": sample.question_set.name,
        "window_end": sample.window_end.isoformat(),
        "decided": content["decided"],
        "questions": content["questions"],
        "recall": content["recall"],
        "mrr": content["mrr"],
    }


def compute_report(
    *, sample: Sample, viewer, progress: Callable[[int], None] | None = None
) -> ProductionReport:
    """Compute the sample's report and the trend as ``viewer`` may see them, and store them
    under the key of the state they were read from (read first: a label changed meanwhile
    makes the page compute again)."""
    key, visibility = report_key(sample=sample, viewer=viewer)
    shown = report_content(sample_misses(sample=sample, viewer=viewer))
    if progress:
        progress(1)
    trend = []
    for other in trend_samples(sample.project):
        content = (
            shown
            if other.pk == sample.pk
            else report_content(sample_misses(sample=other, viewer=viewer))
        )
        trend.append(_trend_point(other, content))
        if progress:
            progress(1)
    # The missed questions are rows of their own; the content keeps how many misses each has,
    # so a page reads only its questions (`report_page`).
    missed = shown["missed"]
    content = {
        "report": {key: value for key, value in shown.items() if key != "missed"},
        "trend": trend,
        "missed_counts": [len(row["misses"]) for row in missed],
    }
    try:
        with transaction.atomic():
            report, _ = ProductionReport.objects.update_or_create(
                sample=sample,
                key=key,
                defaults={"visibility": visibility, "content": content},
            )
            ReportMissedQuestion.objects.filter(report=report).delete()
            ReportMissedQuestion.objects.bulk_create(
                [
                    ReportMissedQuestion(report=report, position=n, content=row)
                    for n, row in enumerate(missed)
                ],
                batch_size=500,
            )
    except IntegrityError:  # another job stored the same figures first
        report = ProductionReport.objects.get(sample=sample, key=key)
    # Older figures for the same viewers are out of date for good: only the newest is kept.
    ProductionReport.objects.filter(sample=sample, visibility=visibility).exclude(
        pk=report.pk
    ).delete()
    return report


def run_misses_report(job: Job) -> None:
    """The job of `start_misses_report`: its viewer is the user who started it (anyone with
    the same visibility sees the same figures)."""
    sample = Sample.objects.select_related("project", "question_set", "rule").get(
        pk=job.params["sample_id"], project=job.project
    )

    def advance(count: int) -> None:
        job.done += count
        Job.objects.filter(pk=job.pk).update(
            done=job.done, total=max(job.total, job.done), heartbeat_at=timezone.now()
        )

    if job.created_by is None:
        raise ServiceError("The lead who asked for this report is gone; open the page again.")
    compute_report(sample=sample, viewer=job.created_by, progress=advance)
    url = reverse("production:show-misses", args=[sample.project.slug, sample.pk])
    job.result = {"redirect": True, "link": {"url": url, "text": "Show the misses report"}}
    jobs.finish(job, JobState.SUCCEEDED, "The misses report is ready.")


def trend_dates(trend: list[dict]) -> list[tuple[dict, datetime]]:
    return [(point, datetime.fromisoformat(point["window_end"])) for point in trend]


MISSES_PER_PAGE = 100  # gold spans production missed, on one page of the misses report
# What the page shows of a stored report besides the misses.
REPORT_KEYS = (
    "k",
    "questions",
    "decided",
    "answerable",
    "unanswerable",
    "unplaced",
    "recall",
    "mrr",
    "answered_unanswerable",
)


def report_page(report: ProductionReport, number) -> tuple[dict, list[dict], Page]:
    """(the report's figures, the trend, one page of its missed gold) as the page shows them:
    a report's misses run to megabytes at a real project's size, so they are rows of their own
    (`ReportMissedQuestion`) and a request reads the questions of its page only.

    A page holds at most `MISSES_PER_PAGE` misses: its questions, each with its misses on the
    page (``continued`` when some were on the page before), so no page grows with the gold's
    density. (A report stored before the counts were kept is read whole.)"""
    found = (
        ProductionReport.objects.filter(pk=report.pk)
        .values("content__report", "content__trend", "content__missed_counts")
        .get()
    )
    counts = found["content__missed_counts"]
    whole = None
    if counts is None:  # stored before the missed questions were rows of their own
        whole = found["content__report"]["missed"]
        counts = [len(row["misses"]) for row in whole]
    figures = {key: found["content__report"][key] for key in REPORT_KEYS}
    flat = [(n, m) for n, count in enumerate(counts) for m in range(count)]
    page = Paginator(flat, MISSES_PER_PAGE).get_page(number)
    wanted = sorted({n for n, _ in page.object_list})
    if whole is not None:
        missed = {n: whole[n] for n in wanted}
    else:
        missed = dict(
            ReportMissedQuestion.objects.filter(report=report, position__in=wanted).values_list(
                "position", "content"
            )
        )
    shown: dict[int, dict] = {}
    for n, m in page.object_list:
        if n not in shown:
            shown[n] = {**missed[n], "misses": [], "continued": m > 0}
        shown[n]["misses"].append(missed[n]["misses"][m])
    page.object_list = list(shown.values())
    return figures, found["content__trend"], page
