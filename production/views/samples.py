"""Sampling rules and the samples they drew, for leads: write a rule (each change a new
version), draw it now, open a sample (its strata, questions and, once labelled, its misses)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corpus.access import project_access
from corpus.models import Role
from corpus.views import follow_job
from goldset.errors import ServiceError
from production.forms import SamplingRuleForm
from production.models import Sample, SamplingRule
from production.services import draws as production
from production.services import sampling as services


@login_required
@require_http_methods(["GET", "POST"])
def list_sampling_rules(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    project = access.project
    edit = None
    if request.GET.get("edit", "").isdigit():
        edit = get_object_or_404(SamplingRule, project=project, pk=request.GET["edit"])
    form = SamplingRuleForm(request.POST or None, project=project, initial=_initial(edit))
    if request.method == "POST" and form.is_valid():
        try:
            rule = services.save_sampling_rule(
                project=project,
                user=request.user,
                name=form.cleaned_data["name"],
                spec=form.cleaned_data["spec"],
                retrievers=list(form.cleaned_data["retrievers"]),
                active=form.cleaned_data["active"],
            )
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Saved the sampling rule {rule}.")
            return redirect("production:list-sampling-rules", slug=project.slug)
    context = {
        "access": access,
        "project": project,
        "form": form,
        "rules": services.latest_rules(project).prefetch_related("retrievers"),
        "samples": Sample.objects.filter(project=project)
        .select_related("rule", "question_set")
        .order_by("-drawn_at")[:50],
    }
    return render(request, "production/list_sampling_rules.html", context)


def _initial(rule: SamplingRule | None) -> dict:
    if rule is None:
        return {"active": True}
    f = rule.filters
    return {
        "name": rule.name,
        "strategy": rule.strategy,
        "size": rule.size,
        "seed": rule.seed,
        "window_days": f.get("window_days", services.DEFAULT_WINDOW_DAYS),
        "feedback": f.get("feedback", ""),
        "refused": {True: "yes", False: "no"}.get(f.get("refused"), ""),
        "no_citation": f.get("no_citation", False),
        "top_score_below": f.get("top_score_below"),
        "user_group": f.get("user_group", ""),
        "system_version": f.get("system_version", ""),
        "stratify_by": rule.stratify_by,
        "quotas": ", ".join(f"{k}={v}" for k, v in rule.quotas.items()),
        "retrievers": list(rule.retrievers.all()),
        "active": rule.active,
    }


@login_required
@require_POST
def draw_sample(request: HttpRequest, slug: str, rule_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    rule = get_object_or_404(SamplingRule, project=access.project, pk=rule_id)
    earlier = production.drawn_in_week(rule=rule, moment=timezone.now())
    if earlier is not None:
        messages.info(request, str(production.AlreadyDrawn(earlier)))
        return redirect("production:show-sample", slug=access.project.slug, sample_id=earlier.pk)
    job = production.start_draw(rule=rule, user=request.user)
    # The job page follows the draw and goes on to the sample; straight there if it is done
    # already (no broker: it ran in-process).
    return follow_job(request, job)


@login_required
@require_GET
def show_sample(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    sample = get_object_or_404(
        Sample.objects.select_related("rule", "question_set", "retriever"),
        project=access.project,
        pk=sample_id,
    )
    rows = sample.traces.select_related("trace", "question").only(
        "stratum",
        "inclusion_probability",
        "question__id",
        "question__text",
        "trace__trace_id",
        "trace__question",
        "trace__thumb",
        "trace__refused",
        "trace__unknown_doc_ids",
    )
    context = {
        "access": access,
        "project": access.project,
        "sample": sample,
        "rows": rows,
        "pool": sample.question_set.pools.first() if sample.question_set else None,
    }
    return render(request, "production/show_sample.html", context)


@login_required
@require_POST
def dismiss_sample(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    """The lead has seen the banner of this sample: it stops showing (for every lead)."""
    access = project_access(request.user, slug, role=Role.LEAD)
    sample = get_object_or_404(Sample, project=access.project, pk=sample_id)
    Sample.objects.filter(pk=sample.pk, seen_at__isnull=True).update(seen_at=timezone.now())
    return redirect("production:show-sample", slug=access.project.slug, sample_id=sample.pk)
