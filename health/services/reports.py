"""The Index health figures of a large index, computed by a job and stored.

Checking an index reads every manifest row (200,000 rows take seconds): an index of more than
`INLINE_ROWS` rows is therefore never checked in a request. The page shows the stored report
for the current state of its inputs (`inputs_key`: the documents the viewer may see with their
newest versions and near-duplicate groups, the manifest or the built index, the thresholds, k)
or, when there is none, a button that starts the job (`start_health_report`). A smaller index
is checked in the request as before. Two viewers who may see the same documents share reports.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.urls import reverse

from corpus import jobs
from corpus.models import Document, Job, JobState, Retriever, RetrieverKind
from health.models import IndexHealthReport
from health.services.checks import RetrieverHealth, retriever_health, thresholds_of

# An index with more rows than this is checked by a job, never in a request.
INLINE_ROWS = 50_000


@dataclass
class HealthShown:
    """One retriever's part of the Index health page."""

    retriever: Retriever
    source: str
    described: str
    report: dict | None
    rows: int = 0
    by_job: bool = False  # too large to check in a request
    stored_at: datetime | None = None
    job: Job | None = None  # the unfinished job computing it


def rows_to_check(retriever: Retriever) -> int:
    """How many index rows a check reads: the manifest's, or one per document (built-in)."""
    manifest = retriever.manifests.first()
    if manifest is not None:
        return manifest.rows
    if retriever.kind in (RetrieverKind.BM25, RetrieverKind.EMBEDDING):
        return Document.objects.filter(project=retriever.project_id).count()
    return 0


def inputs_key(retriever: Retriever, viewer) -> str:
    """SHA-256 of everything the figures depend on, as ``viewer`` may see it."""
    project = retriever.project
    documents = hashlib.sha256()
    visible = Document.objects.filter(project=project).visible_to(viewer).order_by("pk")
    fields = (
        "pk",
        "latest_version_id",
        "duplicate_group_id",
        "duplicate_group__representative",
        "is_canary",
        "latest_version__quality_flagged",
        "latest_version__quality_accepted_at",
    )
    for row in visible.values_list(*fields).iterator(chunk_size=5000):
        documents.update(repr(row).encode())
    manifest = retriever.manifests.first()
    index = retriever.active_index
    limits = thresholds_of(project)
    inputs = {
        "documents": documents.hexdigest(),
        "manifest": manifest.pk if manifest else None,
        "index": [index.pk, index.built_at.isoformat() if index.built_at else None]
        if index
        else None,
        "thresholds": [
            limits.max_stale,
            limits.max_lag_days,
            limits.fail_on_model_mix,
            limits.max_crowding,
        ],
        "k": project.k_sent_to_model,
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


def pending_job(retriever: Retriever, viewer) -> Job | None:
    return jobs.unfinished(
        jobs.newest(
            project_id=retriever.project_id,
            kind="index_health_report",
            retriever_id=retriever.pk,
            viewer_id=viewer.pk,
        )
    )


def shown_health(*, retriever: Retriever, viewer) -> HealthShown:
    """What the page shows for one retriever: checked here when small, else the stored report
    of the current inputs (or nothing yet, with the job computing it if one is)."""
    rows = rows_to_check(retriever)
    if rows <= INLINE_ROWS:
        health = retriever_health(retriever=retriever, viewer=viewer)
        return HealthShown(health.retriever, health.source, health.described, health.report, rows)
    key = inputs_key(retriever, viewer)
    stored, job = jobs.stored_or_job(
        lambda: IndexHealthReport.objects.filter(retriever=retriever, key=key).first(),
        lambda: pending_job(retriever, viewer),
    )
    if stored is not None:
        return HealthShown(
            retriever,
            stored.source,
            stored.described,
            stored.report,
            rows,
            by_job=True,
            stored_at=stored.created_at,
        )
    return HealthShown(retriever, "", "", None, rows, by_job=True, job=job)


def start_health_report(*, retriever: Retriever, user) -> Job:
    """Queue the check of ``retriever``'s index as ``user`` may see it (or give the job
    already doing it)."""
    running = pending_job(retriever, user)
    if running is not None:
        return running
    then = {
        "url": reverse("health:show-index-health", args=[retriever.project.slug]),
        "text": "Open Index health",
    }
    return jobs.start(
        project=retriever.project,
        task="health.tasks.index_health_report",
        kind="index_health_report",
        user=user,
        params={"retriever_id": retriever.pk, "viewer_id": user.pk, "then": then},
        total=1,
        description=f"Check the index health of {retriever.name}",
    )


def run_health_report(job: Job) -> None:
    """The job of `start_health_report`: check, and store under the inputs as they are now."""
    retriever = Retriever.objects.select_related("project", "active_index").get(
        pk=job.params["retriever_id"], project=job.project
    )
    viewer = get_user_model().objects.get(pk=job.params["viewer_id"])
    key = inputs_key(retriever, viewer)
    if not IndexHealthReport.objects.filter(retriever=retriever, key=key).exists():
        health: RetrieverHealth = retriever_health(retriever=retriever, viewer=viewer)
        try:
            with transaction.atomic():
                IndexHealthReport.objects.create(
                    retriever=retriever,
                    key=key,
                    source=health.source,
                    described=health.described[:300],
                    report=health.report or {},
                )
        except IntegrityError:
            pass  # another job stored the same inputs' report meanwhile
    job.done = 1
    job.result = {"link": job.params["then"], "redirect": True} if job.params.get("then") else {}
    jobs.finish(job, JobState.SUCCEEDED, f"{retriever.name}: index health checked.")
