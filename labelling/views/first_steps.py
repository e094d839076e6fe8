"""The first-steps checklist the project page loads (htmx), for leads and admins; labellers
land on their own queue instead. Nothing at all once every step is done."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from corpus.access import project_access
from corpus.models import Role
from labelling.services.first_steps import first_steps


@login_required
@require_GET
def show_first_steps(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    steps = first_steps(project=access.project, viewer=request.user)
    return render(
        request,
        "labelling/first_steps.html",
        {
            "project": access.project,
            "steps": steps,
            "done": sum(step.done for step in steps),
            "all_done": all(step.done for step in steps),
        },
    )
