"""The production loop's pages on the evaluation floor: a sample's misses report with the
trend over samples, and promotion of a sample's questions into the next gold set version."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_GET, require_http_methods

from corpus.access import project_access
from corpus.models import Role
from evaluation.forms import PromotionForm
from evaluation.services import production as services
from evaluation.services.gold_sets import newest_gold_set
from goldset.errors import ServiceError
from labelling.charts import time_chart
from labelling.trace_models import Sample


@login_required
@require_GET
def show_misses(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    sample = get_object_or_404(
        Sample.objects.select_related("rule", "question_set", "project"),
        project=access.project,
        pk=sample_id,
    )
    report = services.sample_misses(sample=sample, viewer=request.user)
    trend = services.misses_trend(project=access.project, viewer=request.user)
    chart = None
    points = [p for p in trend if p.report.recall.defined]
    if points:
        chart = time_chart(
            [
                (
                    f"recall@{report.k}",
                    [(p.sample.window_end, p.report.recall.mean) for p in points],
                ),
                ("MRR", [(p.sample.window_end, p.report.mrr.mean) for p in points]),
            ],
            start=points[0].sample.window_end,
            end=points[-1].sample.window_end,
        )
    context = {
        "access": access,
        "project": access.project,
        "sample": sample,
        "report": report,
        "trend": trend,
        "chart": chart,
    }
    return render(request, "evaluation/show_misses.html", context)


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
    return render(request, "evaluation/promote_sample.html", context)
