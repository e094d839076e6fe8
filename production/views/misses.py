"""The production loop's pages on the evaluation floor: a sample's misses report with the
trend over samples, and promotion of a sample's questions into the next gold set version."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_GET, require_http_methods

from corpus import jobs
from corpus.access import project_access
from corpus.models import Role
from evaluation.services.gold_sets import newest_gold_set
from goldset.errors import ServiceError
from labelling.charts import time_chart
from production.forms import PromotionForm
from production.models import Sample
from production.services import misses as services
from production.services import reports


@login_required
@require_GET
def show_misses(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    """Renders the stored report; never computes one itself: when the labels the viewer may
    see changed since (or there is none yet), it starts the job that does, shows its progress
    and, meanwhile, the last figures marked out of date (`production_reports`)."""
    access = project_access(request.user, slug, role=Role.LEAD)
    sample = get_object_or_404(
        Sample.objects.select_related("rule", "question_set", "project"),
        project=access.project,
        pk=sample_id,
    )
    context = {"access": access, "project": access.project, "sample": sample, "job": None}
    if sample.question_set is None:
        raise Http404("This sample has no question set.")
    key, visibility = reports.report_key(sample=sample, viewer=request.user)
    stored, running = jobs.stored_or_job(
        lambda: reports.stored_report(sample=sample, key=key),
        lambda: reports.pending_job(sample=sample, key=key),
    )
    if stored is None:
        context["job"] = running or reports.start_misses_report(
            sample=sample, viewer=request.user, key=key, visibility=visibility
        )
        stored = reports.latest_report(sample=sample, visibility=visibility)
        if stored is None and (url := jobs.next_url(context["job"])):
            return redirect(url)  # no broker: the job ran in-process, the figures are there
    if stored is not None:
        report, trend, missed = reports.report_page(stored, request.GET.get("page"))
        context.update(
            report=report,
            missed=missed,
            page=missed,
            trend=trend,
            chart=_trend_chart(report["k"], trend),
            computed_at=stored.created_at,
        )
    return render(request, "production/show_misses.html", context)


def _trend_chart(k: int, trend: list[dict]):
    points = [(p, at) for p, at in reports.trend_dates(trend) if p["recall"]["defined"]]
    if not points:
        return None
    return time_chart(
        [
            (f"recall@{k}", [(at, p["recall"]["mean"]) for p, at in points]),
            ("MRR", [(at, p["mrr"]["mean"] or 0.0) for p, at in points]),
        ],
        start=points[0][1],
        end=points[-1][1],
        y_label=lambda value: f"{value:.3f}",  # as the table below writes them
    )


@login_required
@require_http_methods(["GET", "POST"])
def promote_sample(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    sample = get_object_or_404(
        Sample.objects.select_related("rule", "question_set", "project"),
        project=access.project,
        pk=sample_id,
    )
    form = PromotionForm(request.POST or None, sample=sample)
    if request.method == "POST" and form.is_valid():
        target = form.cleaned_data["target"]
        try:
            added = services.promote_sample(
                sample=sample,
                target=target,
                user=request.user,
                only_misses=form.cleaned_data["only_misses"],
            )
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            latest = newest_gold_set(target)
            next_label = f"v{latest.number + 1}" if latest else "v1"
            messages.success(
                request,
                f"Added {len(added)} question{pluralize(len(added))} to {target.name}: "
                f"{next_label} will hold them when it is finalised"
                + (f"; {latest.label} stays as it is." if latest else "."),
            )
            return redirect("labelling:show-gold", slug=access.project.slug, set_id=target.pk)
    context = {"access": access, "project": access.project, "sample": sample, "form": form}
    return render(request, "production/promote_sample.html", context)
