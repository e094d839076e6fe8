"""Calibration pages: a lead's (the share, and every labeller's figures against the gold) and
each member's own ("My calibration": their figures, and for each passage they graded otherwise
than the lead, the lead's decision with the guideline behind it).

Only finished calibration questions are shown, so the gold is never revealed before the
labeller answered; nothing here names another labeller on a labeller's page.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from corpus.access import project_access
from corpus.models import Role
from labelling.forms import CalibrationShareForm
from labelling.services import calibration as services


@login_required
@require_http_methods(["GET", "POST"])
def show_calibration(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    project = access.project
    form = CalibrationShareForm(
        request.POST or None, initial={"percent": services.share_percent(project)}
    )
    if request.method == "POST" and form.is_valid():
        try:
            services.set_share(
                project=project, percent=form.cleaned_data["percent"], user=request.user
            )
        except services.CalibrationError as exc:
            form.add_error("percent", str(exc))
        else:
            messages.success(request, f"Calibration share set to {form.cleaned_data['percent']}%.")
            return redirect("labelling:show-calibration", slug=slug)
    context = {
        "access": access,
        "project": project,
        "form": form,
        "rows": services.calibration_by_labeller(project=project, viewer=request.user),
    }
    return render(
        request, "labelling/calibration.html", context, status=400 if form.errors else 200
    )


@login_required
@require_GET
def show_my_calibration(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    rows = services.calibration_by_labeller(
        project=access.project, viewer=request.user, labeller=request.user
    )
    mine = rows[0] if rows else None
    disagreements = [
        (item, services.guideline_basis(item.resolution, access.project))
        for item in (mine.disagreements if mine else [])
    ]
    context = {
        "access": access,
        "project": access.project,
        "mine": mine,
        "disagreements": disagreements,
    }
    return render(request, "labelling/my_calibration.html", context)
