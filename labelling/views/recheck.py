"""A labeller's re-check list: their own spans on documents that changed after they labelled,
with where the quote was found again in the newest version (or that it was not)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from corpus.access import project_access
from labelling.services.recheck import stale_spans


@login_required
@require_GET
def show_recheck(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    spans = stale_spans(project=access.project, viewer=request.user, labeller=request.user)
    return render(
        request,
        "labelling/show_recheck.html",
        {"access": access, "project": access.project, "spans": spans},
    )
