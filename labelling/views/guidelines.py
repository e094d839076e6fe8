"""The relevance guideline: everyone in the project reads it; leads edit it (a new version each
time, so every judgement keeps pointing at the text it was made under)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corpus.access import project_access
from corpus.models import Role
from labelling.forms import GuidelineForm
from labelling.models import Guideline
from labelling.services import guidelines as services


@login_required
@require_GET
def show_guideline(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    versions = Guideline.objects.filter(project=access.project).order_by("-version")
    number = request.GET.get("version", "")
    guideline = (
        get_object_or_404(versions, version=number) if number.isdigit() else versions.first()
    )
    context = {
        "access": access,
        "project": access.project,
        "guideline": guideline,
        "html": services.render_guideline(guideline.text) if guideline else "",
        "versions": versions.select_related("created_by").defer("text"),
    }
    return render(request, "labelling/guideline.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def edit_guideline(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    current = services.current_guideline(access.project)
    form = GuidelineForm(request.POST or None, initial={"text": current.text if current else ""})
    preview = ""
    if request.method == "POST" and "preview" in request.POST:
        # "Preview" without a script: the page again, the text kept, nothing saved.
        if form.is_valid():
            preview = services.render_guideline(form.cleaned_data["text"])
    elif request.method == "POST" and form.is_valid():
        try:
            saved = services.save_guideline(
                project=access.project, text=form.cleaned_data["text"], user=request.user
            )
        except services.GuidelineError as exc:
            form.add_error("text", str(exc))
        else:
            if current is not None and saved.pk == current.pk:
                messages.info(
                    request, f"No change: the guideline stays at version {saved.version}."
                )
            else:
                messages.success(request, f"Guideline version {saved.version} saved.")
            return redirect("labelling:show-guideline", slug=slug)
    status = 400 if form.errors else 200
    if not preview and request.method == "GET" and current is not None:
        preview = services.render_guideline(current.text)
    return render(
        request,
        "labelling/edit_guideline.html",
        {
            "access": access,
            "project": access.project,
            "form": form,
            "current": current,
            "preview": preview,
        },
        status=status,
    )


@login_required
@require_POST
def preview_guideline(request: HttpRequest, slug: str) -> HttpResponse:
    """The editor's live preview (htmx): the Markdown rendered as the guideline page shows it,
    nothing saved."""
    project_access(request.user, slug, role=Role.LEAD)
    form = GuidelineForm(request.POST)
    if form.is_valid():
        context = {"preview": services.render_guideline(form.cleaned_data["text"])}
    else:
        context = {"preview_error": " ".join(e for errors in form.errors.values() for e in errors)}
    return render(request, "labelling/edit_guideline.html#preview", context)
