"""Index health in the app: the checks of `goldeval.scoring.health` over the live corpus, per
retriever, as the viewer may see it; the daily recorded check, the banner and the emails.

An uploaded manifest describes the team's index; a built-in retriever's index is described by
its own records (the newest version of each document created before it was built, with the
index's model, revision and dimension), so both get the same checks.

Access: a viewer's figures are computed over the documents they may see. A manifest row naming
a document hidden from the viewer reads exactly as one naming a document the corpus lacks:
"indexed but unknown to the corpus", with its doc id and line (the id is the team's file's, not
Goldset's), so the page answers nothing about which restricted documents exist. A built-in
index's rows come from Goldset's own records, so there a hidden document is simply absent
(listing it as unknown would name it). The recorded daily check,
its history plot, the project page's banner and the alert emails are the same for every
member, so they cover what every member may see: the documents no access group restricts
(`EVERYONE`). Restricted documents are checked live on the page, for those who may see them.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from corpus.models import (
    Document,
    DocumentVersion,
    IndexState,
    Project,
    Retriever,
    RetrieverKind,
)
from evaluation.models import EvaluationRun, GoldSet, PermissionReplay
from evaluation.services.corpus_state import document_states
from evaluation.services.evaluation_runs import load_stored_run
from evaluation.services.gold_sets import GoldSetError, load_gold_set
from goldeval.formats.gold import DocumentState, EvaluationInputError
from goldeval.formats.manifests import ManifestRow
from goldeval.formats.runs import Ranking, Run, read_run
from goldeval.scoring.health import Thresholds, check_index
from health.models import IndexHealthCheck, IndexHealthThresholds, IndexManifest
from health.services.alerts import send_alert
from labelling.charts import time_chart

# The viewer the recorded checks are made for: no group, so only unrestricted documents.
EVERYONE = AnonymousUser()


@dataclass
class RetrieverHealth:
    retriever: Retriever
    source: str  # "manifest", "built-in" or "" (nothing to check)
    described: str  # what the figures are of, for the page
    report: dict[str, Any] | None


def thresholds_of(project: Project) -> IndexHealthThresholds:
    found = IndexHealthThresholds.objects.filter(project=project).first()
    return found or IndexHealthThresholds(project=project)


def set_thresholds(*, project: Project, **limits) -> IndexHealthThresholds:
    thresholds, _ = IndexHealthThresholds.objects.update_or_create(project=project, defaults=limits)
    return thresholds


def _thresholds(project: Project) -> Thresholds:
    limits = thresholds_of(project)
    return Thresholds(
        max_stale=limits.max_stale,
        max_lag_days=limits.max_lag_days,
        fail_on_model_mix=limits.fail_on_model_mix,
        max_crowding=limits.max_crowding,
    )


def _documents(project: Project, viewer) -> dict[str, DocumentState]:
    return {state.doc_id: state for state in document_states(project, viewer=viewer)}


def _hidden_doc_ids(project: Project, viewer) -> set[str]:
    return set(
        Document.objects.filter(project=project)
        .hidden_from(viewer)
        .values_list("doc_id", flat=True)
    )


def manifest_rows(manifest: IndexManifest) -> list[ManifestRow]:
    """Every row of an uploaded manifest, as the team's file gave it (none dropped for a viewer:
    a row naming a hidden document is checked as one naming a missing document)."""
    fields = (
        "line",
        "doc_id",
        "version",
        "content_sha256",
        "start",
        "end",
        "indexed_at",
        "embedding_model",
        "embedding_revision",
        "dimension",
    )
    rows = []
    for values in manifest.entries.order_by("line").values_list(*fields).iterator(chunk_size=5000):
        record = dict(zip(fields, values, strict=True))
        record["content_sha256"] = record["content_sha256"] or None
        rows.append(ManifestRow(**record))
    return rows


def built_in_rows(retriever: Retriever, *, hidden: set[str] = frozenset()) -> list[ManifestRow]:
    """A built-in index described by its records: for each searchable document, the newest
    version created before the index was built (what it read), with the index's model."""
    index = retriever.active_index
    if index is None or index.state != IndexState.READY or index.built_at is None:
        return []
    newest_then = (
        DocumentVersion.objects.filter(
            document=OuterRef("document"), created_at__lte=index.built_at
        )
        .order_by("-version")
        .values("pk")[:1]
    )
    # What its searches can return: the index's own filter leaves the rest out.
    searchable = Document.objects.filter(project=retriever.project_id).searchable()
    versions = (
        DocumentVersion.objects.filter(
            document__in=searchable.values("pk"),
            document__is_canary=False,
            created_at__lte=index.built_at,
            pk=Subquery(newest_then),
        )
        .values_list("document__doc_id", "version", "content_hash")
        .order_by("document__doc_id")
    )
    model = index.model_name or retriever.kind
    return [
        ManifestRow(
            line=number,
            doc_id=doc_id,
            indexed_at=index.built_at,
            embedding_model=model,
            embedding_revision=index.model_version,
            dimension=index.dimension or 0,
            version=version,
            content_sha256=content_hash,
        )
        for number, (doc_id, version, content_hash) in enumerate(versions, start=1)
        if doc_id not in hidden
    ]


def retriever_health(*, retriever: Retriever, viewer=EVERYONE, now=None) -> RetrieverHealth:
    """The health report of one retriever's index, over what ``viewer`` may see (`EVERYONE`:
    the unrestricted documents, for the recorded check)."""
    project = retriever.project
    now = now or timezone.now()
    hidden = _hidden_doc_ids(project, viewer)
    manifest = retriever.manifests.first()
    if manifest is not None:
        rows = manifest_rows(manifest)
        source = "manifest"
        described = (
            f"the manifest {manifest.file_name}, uploaded {manifest.uploaded_at:%Y-%m-%d %H:%M}"
        )
    elif retriever.kind in (RetrieverKind.BM25, RetrieverKind.EMBEDDING):
        rows = built_in_rows(retriever, hidden=hidden)
        if not rows:
            return RetrieverHealth(retriever, "", "no index built yet", None)
        source = "built-in"
        described = f"its own index, built {retriever.active_index.built_at:%Y-%m-%d %H:%M}"
    else:
        return RetrieverHealth(retriever, "", "no manifest uploaded yet", None)
    report = check_index(
        documents=_documents(project, viewer),
        rows=rows,
        now=now,
        k=project.k_sent_to_model or 10,
        thresholds=_thresholds(project),
    )
    return RetrieverHealth(retriever, source, described, report)


def project_health(*, project: Project, viewer, now=None) -> list[RetrieverHealth]:
    retrievers = project.retrievers.select_related("active_index", "project").order_by("name")
    return [retriever_health(retriever=r, viewer=viewer, now=now) for r in retrievers]


# --- the recorded check, the banner and the emails ---------------------------------------------


def record_health_checks(*, project: Project, now=None) -> list[IndexHealthCheck]:
    """Check every retriever of the project over the unrestricted documents and record it;
    email the project's admins when a retriever first crosses a threshold (its previous record
    crossed none)."""
    now = now or timezone.now()
    recorded = []
    for health in project_health(project=project, viewer=EVERYONE, now=now):
        if health.report is None:
            continue
        report = health.report
        previous = (
            IndexHealthCheck.objects.filter(retriever=health.retriever)
            .order_by("-checked_at")
            .first()
        )
        check = IndexHealthCheck.objects.create(
            project=project,
            retriever=health.retriever,
            checked_at=now,
            source=health.source,
            stale_share=report["stale"]["share"],
            lag_p95_days=report["stale"]["lag_days"]["p95"],
            lag_oldest_days=report["stale"]["lag_days"]["oldest"],
            mixed_models=report["index"]["mixed"],
            crossed=report["crossed"],
        )
        if check.crossed and (previous is None or not previous.crossed):
            _email_admins(project, check)
            check.notified = True
            check.save(update_fields=["notified"])
        recorded.append(check)
    return recorded


def _email_admins(project: Project, check: IndexHealthCheck) -> None:
    lines = "\n".join(f"- {item['message']}" for item in check.crossed)
    send_alert(
        project,
        subject=f"index health of {check.retriever.name} crossed a threshold",
        lines=(
            f"The daily index health check of {check.retriever.name} in {project.name} "
            f"({check.checked_at:%Y-%m-%d %H:%M} UTC) crossed a threshold:\n\n{lines}"
        ),
    )


def latest_crossed(project: Project, user) -> list[dict[str, Any]]:
    """The thresholds the newest recorded check of each retriever crossed, for the project
    page's banner (the same for every member)."""
    newest = IndexHealthCheck.objects.filter(
        retriever=OuterRef("retriever"), project=project
    ).order_by("-checked_at", "-pk")
    checks = IndexHealthCheck.objects.filter(project=project, pk=Subquery(newest.values("pk")[:1]))
    return [
        {"retriever": check.retriever.name, "checked_at": check.checked_at, **item}
        for check in checks.select_related("retriever").order_by("-checked_at", "retriever__name")
        for item in check.crossed
    ]


def history(project: Project, user, *, days: int = 90) -> dict[str, list[IndexHealthCheck]]:
    """Recorded checks per retriever name (oldest first), for the plot."""
    since = timezone.now() - datetime.timedelta(days=days)
    found: dict[str, list[IndexHealthCheck]] = {}
    for check in IndexHealthCheck.objects.filter(
        project=project, checked_at__gte=since
    ).select_related("retriever"):
        found.setdefault(check.retriever.name, []).append(check)
    return found


def plot_of(checks: list[IndexHealthCheck]) -> dict[str, Any]:
    """Two time charts of a retriever's recorded checks: the stale share, and the oldest lag
    in days (scaled to the largest one); the rows behind them come along for the table."""
    if not checks:
        return {}
    start, end = checks[0].checked_at, checks[-1].checked_at
    stale = time_chart(
        [("stale share", [(c.checked_at, c.stale_share) for c in checks])], start=start, end=end
    )
    charts = [stale]
    # A check without a stale document has no lag: no point, rather than a lag of 0.
    lagged = [c for c in checks if c.lag_oldest_days is not None]
    if lagged:
        top = max(c.lag_oldest_days for c in lagged) or 1.0
        charts.append(
            time_chart(
                [("oldest lag", [(c.checked_at, c.lag_oldest_days / top) for c in lagged])],
                start=start,
                end=end,
                y_label=lambda value: (
                    f"{value * top:.0f} d" if top >= 10 else f"{value * top:.1f} d"
                ),
            )
        )
    # Too few checks to draw: both lines' values in one sentence (the charts share their moments).
    few = "; ".join(chart.few for chart in charts if chart.few) if stale.few else ""
    return {"charts": charts, "few": few, "rows": list(reversed(checks))[:30]}


# --- runs of the newest gold set ----------------------------------------------------------------


def _without(run: Run, hidden: set[str]) -> Run:
    """The run as the viewer may see it: results of documents hidden from them dropped."""
    if not hidden:
        return run
    return Run(
        name=run.name,
        rankings={
            question_id: Ranking([p for p in ranking.passages if p.doc_id not in hidden])
            for question_id, ranking in run.rankings.items()
        },
    )


def runs_health(*, project: Project, viewer, now=None) -> dict[str, Any] | None:
    """The run checks (mixed models, crowding, extraction split, short lists, results from
    documents runs must not return) of the newest gold set's stored runs, and short lists per
    test user of its newest permission replay; None without a gold set. Refused (count-free)
    to a viewer the bundle is refused to, as on the evaluation page."""
    gold_set = GoldSet.objects.in_project(project).order_by("-created_at", "-pk").first()
    if gold_set is None:
        return None
    if gold_set.hidden_document_count(viewer):
        return {"gold_set": gold_set, "refused": True}
    now = now or timezone.now()
    gold = load_gold_set(gold_set)
    hidden = _hidden_doc_ids(project, viewer)
    documents = _documents(project, viewer)
    k = project.k_sent_to_model or 10
    runs = {}
    unreadable = []
    for record in EvaluationRun.objects.of_gold_set(gold_set).select_related("retriever"):
        try:
            run = _without(load_stored_run(record, gold=gold), hidden)
        except GoldSetError as error:
            # A run stored before its values were checked (a NaN score): flagged, not a 500.
            unreadable.append({"name": record.name, "error": str(error)})
            continue
        retriever = record.retriever
        rows: list[ManifestRow] = []
        if retriever is not None:
            manifest = retriever.manifests.first()
            rows = (
                manifest_rows(manifest)
                if manifest is not None
                else built_in_rows(retriever, hidden=hidden)
            )
        report = check_index(documents=documents, rows=rows, now=now, runs=[run], gold=gold, k=k)
        runs[record.name] = report["runs"][run.name]
    users = {}
    replay = PermissionReplay.objects.filter(gold_set=gold_set).order_by("-pk").first()
    if replay is not None:
        user_runs = []
        for stored in replay.runs.order_by("user_name"):
            try:
                user_runs.append(
                    _without(read_run(bytes(stored.content), name=stored.user_name), hidden)
                )
            except EvaluationInputError as error:
                unreadable.append({"name": f"test user {stored.user_name}", "error": str(error)})
        users = check_index(documents=documents, rows=[], now=now, test_users=user_runs, k=k)[
            "test_users"
        ]
    return {
        "gold_set": gold_set,
        "refused": False,
        "k": k,
        "runs": runs,
        "test_users": users,
        "unreadable": unreadable,
    }
