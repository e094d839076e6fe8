"""The Index health page: each retriever's index checked against the corpus the viewer may see,
the manifest upload, the project's thresholds, and the banner the project page loads.

Leads and admins; every figure is over the documents the viewer may see (`index_health`).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corpus.access import project_access
from corpus.models import Retriever, RetrieverKind, Role
from corpus.views import follow_job
from evaluation.models import GoldSet, IndexEvaluation
from evaluation.services import index_evaluations
from goldset.errors import ServiceError
from health.forms import HealthThresholdsForm, ManifestSourceForm, ManifestUploadForm
from health.models import ManifestSource
from health.services import alerts, daily, manifest_sources, manifests
from health.services import checks as index_health
from health.services import reports as health_reports
from labelling.services.recheck import stale_spans


@login_required
@require_GET
def show_index_health(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    return _render(request, access)


def _render(request, access, *, upload_form=None, thresholds_form=None, status=200):
    project = access.project
    thresholds = index_health.thresholds_of(project)
    history = index_health.history(project, request.user)
    sources = {s.retriever_id: s for s in ManifestSource.objects.filter(retriever__project=project)}
    context = {
        "access": access,
        "project": project,
        "healths": [
            health_reports.shown_health(retriever=retriever, viewer=request.user)
            for retriever in project.retrievers.select_related("active_index", "project")
            .prefetch_related("manifests")
            .order_by("name")
        ],
        "upload_form": upload_form or ManifestUploadForm(project=project),
        "sources": [
            (retriever, sources.get(retriever.pk))
            for retriever in project.retrievers.order_by("name")
        ],
        "thresholds_form": thresholds_form or HealthThresholdsForm(instance=thresholds),
        "history": {name: index_health.plot_of(checks) for name, checks in history.items()},
        "stale_spans": stale_spans(project=project, viewer=request.user),
        "runs_health": index_health.runs_health(project=project, viewer=request.user),
    }
    # The page's banner sums up the figures the page shows (the documents the viewer may see,
    # now), never the daily check's (unrestricted documents, then): the two would differ.
    context["crossed"] = [
        {"retriever": h.retriever.name, **item}
        for h in context["healths"]
        if h.report
        for item in h.report["crossed"]
    ]
    return render(request, "health/show_index_health.html", context, status=status)


@login_required
@require_POST
def upload_manifest(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    form = ManifestUploadForm(request.POST, request.FILES, project=access.project)
    if not form.is_valid():
        return _render(request, access, upload_form=form, status=400)
    then = {
        "url": reverse("health:show-index-health", args=[access.project.slug]),
        "text": "Open Index health",
    }
    job = manifests.start_manifest_import(
        retriever=form.cleaned_data["retriever"],
        upload=form.cleaned_data["file"],
        user=request.user,
        then=then,
    )
    return follow_job(request, job)


@login_required
@require_POST
def fetch_manifest(request: HttpRequest, slug: str, retriever_id: int) -> HttpResponse:
    """Fetch a retriever's manifest from the source an admin configured (a job); leads start
    it, never choose where it goes."""
    access = project_access(request.user, slug, role=Role.LEAD)
    retriever = get_object_or_404(Retriever, project=access.project, pk=retriever_id)
    then = {
        "url": reverse("health:show-index-health", args=[access.project.slug]),
        "text": "Open Index health",
    }
    try:
        job = manifests.start_manifest_import(
            retriever=retriever, fetch=True, user=request.user, then=then
        )
    except ServiceError as error:
        messages.error(request, str(error))
        return redirect("health:show-index-health", slug=access.project.slug)
    return follow_job(request, job)


@login_required
@require_http_methods(["GET", "POST"])
def edit_manifest_source(request: HttpRequest, slug: str, retriever_id: int) -> HttpResponse:
    """Where a retriever's manifest is fetched from, with its own headers: an admin's decision
    (outbound calls carrying the worker's environment variables)."""
    access = project_access(request.user, slug, role=Role.ADMIN)
    retriever = get_object_or_404(Retriever, project=access.project, pk=retriever_id)
    source = ManifestSource.objects.filter(retriever=retriever).first()
    if request.method == "POST" and "remove" in request.POST:
        manifest_sources.remove_manifest_source(retriever=retriever)
        messages.success(request, f"{retriever.name} has no manifest source now.")
        return redirect("health:show-index-health", slug=access.project.slug)
    form = ManifestSourceForm(
        request.POST or None, retriever=retriever, initial=ManifestSourceForm.initial_of(source)
    )
    if request.method == "POST" and form.is_valid():
        try:
            manifest_sources.set_manifest_source(
                retriever=retriever, user=request.user, **form.cleaned_data
            )
        except ServiceError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"The manifest source of {retriever.name} is saved.")
            return redirect("health:show-index-health", slug=access.project.slug)
    return render(
        request,
        "health/edit_manifest_source.html",
        {
            "access": access,
            "project": access.project,
            "retriever": retriever,
            "source": source,
            "form": form,
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def check_index_now(request: HttpRequest, slug: str, retriever_id: int) -> HttpResponse:
    """Queue the check of a large index (too many rows to check in a request)."""
    access = project_access(request.user, slug, role=Role.LEAD)
    retriever = get_object_or_404(Retriever, project=access.project, pk=retriever_id)
    job = health_reports.start_health_report(retriever=retriever, user=request.user)
    return follow_job(request, job)


@login_required
@require_POST
def run_daily_check_now(request: HttpRequest, slug: str) -> HttpResponse:
    """The daily check of every retriever, now, as a job (the scheduled task's service); a
    second click while it waits or runs follows the same job."""
    access = project_access(request.user, slug, role=Role.LEAD)
    return follow_job(request, daily.start_daily_check(project=access.project, user=request.user))


@login_required
@require_POST
def send_test_alert(request: HttpRequest, slug: str) -> HttpResponse:
    """A test alert to the project's admins through the alert channel; the page says whether
    it went. Admins only: the alerts are theirs."""
    access = project_access(request.user, slug, role=Role.ADMIN)
    try:
        messages.success(request, alerts.send_test_alert(project=access.project, user=request.user))
    except ServiceError as error:
        messages.error(request, str(error))
    return redirect("health:show-index-health", slug=access.project.slug)


@login_required
@require_POST
def edit_health_thresholds(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    form = HealthThresholdsForm(request.POST, instance=index_health.thresholds_of(access.project))
    if not form.is_valid():
        return _render(request, access, thresholds_form=form, status=400)
    index_health.set_thresholds(project=access.project, **form.cleaned_data)
    messages.success(request, "Thresholds saved; the figures below use them.")
    return redirect("health:show-index-health", slug=access.project.slug)


@login_required
@require_GET
def show_health_banner(request: HttpRequest, slug: str) -> HttpResponse:
    """The project page's banner (loaded by htmx): thresholds the newest daily check crossed."""
    access = project_access(request.user, slug, role=Role.LEAD)
    crossed = index_health.latest_crossed(access.project, request.user)
    return render(
        request,
        "health/show_index_health.html#banner",
        {"project": access.project, "crossed": crossed, "daily": True},
    )


def _chosen_gold_set(project, value: str) -> GoldSet | None:
    """The gold set a page asked for (``?gold_set=<id>`` of this project), or the newest one;
    404 for an id the project has no gold set of."""
    if not value:
        return index_evaluations.newest_gold_set(project)
    return get_object_or_404(
        GoldSet.objects.in_project(project), pk=value if value.isdigit() else 0
    )


@login_required
@require_GET
def show_retriever_builds(request: HttpRequest, slug: str, retriever_id: int) -> HttpResponse:
    """The retriever page's plot (loaded by htmx): recall@k and nDCG@10 over its builds, on
    the gold set chosen (``?gold_set=``, by default the newest), unless its bundle is refused
    to the viewer (count-free); builds without figures on it are listed."""
    access = project_access(request.user, slug, role=Role.LEAD)
    retriever = get_object_or_404(
        Retriever.objects.select_related("active_index"), project=access.project, pk=retriever_id
    )
    gold_set = _chosen_gold_set(access.project, request.GET.get("gold_set", ""))
    refused = gold_set is not None and gold_set.hidden_document_count(request.user) > 0
    evaluations, missing = [], []
    if gold_set is not None and not refused:
        evaluations = list(IndexEvaluation.objects.filter(retriever=retriever, gold_set=gold_set))
        missing = index_evaluations.builds_without_figures(retriever=retriever, gold_set=gold_set)
    return render(
        request,
        "evaluation/retriever_builds.html",
        {
            "project": access.project,
            "retriever": retriever,
            "gold_set": gold_set,
            "gold_sets": GoldSet.objects.in_project(access.project)
            .select_related("question_set")
            .order_by("-created_at", "-pk"),
            "refused": refused,
            "plot": index_evaluations.build_plot(evaluations),
            "missing": missing,
            "can_score": retriever.kind in (RetrieverKind.BM25, RetrieverKind.EMBEDDING),
        },
    )


@login_required
@require_POST
def score_current_build(request: HttpRequest, slug: str, retriever_id: int) -> HttpResponse:
    """Score the retriever's current index build on a chosen gold set (a job), so that gold
    set's history includes it; refused, as the plot is, for a gold set naming documents an
    access group hides from the viewer."""
    access = project_access(request.user, slug, role=Role.LEAD)
    retriever = get_object_or_404(
        Retriever.objects.select_related("active_index"), project=access.project, pk=retriever_id
    )
    value = request.POST.get("gold_set", "")
    gold_set = get_object_or_404(
        GoldSet.objects.in_project(access.project), pk=value if value.isdigit() else 0
    )
    back = reverse("corpus:show-retriever", args=[slug, retriever.pk]) + f"?gold_set={gold_set.pk}"
    if gold_set.hidden_document_count(request.user) > 0:
        messages.error(
            request,
            f"{gold_set} names documents that an access group hides from you, so its figures "
            "are not available to you.",
        )
        return redirect(back)
    job = index_evaluations.start_build_evaluation(
        retriever=retriever, gold_set=gold_set, user=request.user
    )
    if job is None:
        messages.info(
            request,
            f"The current build of {retriever.name} has figures on {gold_set} already, or is "
            "being scored, or has no ready index.",
        )
        return redirect(back)
    return follow_job(request, job)
