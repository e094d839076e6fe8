"""Canaries from the browser: the project's admins plant them (a job running the service of
`manage.py plant_canaries`, with its options and checks) and download the ones they may see as
JSONL for their own index (what `plant_canaries --out` writes).

Admins only. A canary is a restricted document: the list and the download hold only those the
viewer may see (`corpus.services.canaries.planted_for`, the visibility rule).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from corpus.access import project_access
from corpus.models import Role
from corpus.services.canaries import jsonl_line, planted_for
from labelling.forms import PlantCanariesForm
from labelling.services.canary_planting import start_planting


@login_required
@require_http_methods(["GET", "POST"])
def plant_canaries(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    project = access.project
    form = PlantCanariesForm(request.POST or None, project=project)
    if request.method == "POST" and form.is_valid():
        job = start_planting(
            project=project,
            user=request.user,
            group=form.cleaned_data["group"].name,
            count=form.cleaned_data["count"],
            set_name=form.cleaned_data["set_name"],
        )
        return redirect("corpus:show-job", slug=slug, job_id=job.pk)
    context = {
        "access": access,
        "project": project,
        "form": form,
        "canaries": planted_for(project, request.user),
        "has_groups": project.access_groups.exists(),
    }
    return render(
        request, "labelling/plant_canaries.html", context, status=400 if form.errors else 200
    )


@login_required
@require_GET
def download_canaries(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    lines = [
        jsonl_line(
            doc_id=canary.doc_id,
            title=canary.title,
            text=canary.latest_version.text if canary.latest_version else "",
            groups=sorted(g.name for g in canary.access_groups.all()),
        )
        for canary in planted_for(access.project, request.user)
    ]
    response = HttpResponse("".join(lines), content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{access.project.slug}-canaries.jsonl"'
    return response
