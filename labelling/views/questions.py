"""Question sets: list, import (file or pasted lines) and one set's questions."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from corpus.access import project_access
from corpus.models import Role
from goldset.errors import ServiceError
from labelling.forms import QuestionImportForm
from labelling.models import QuestionSet
from labelling.services import questions as services

QUESTIONS_PER_PAGE = 100


@login_required
@require_GET
def list_question_sets(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    question_sets = access.project.question_sets.shown_to(access).with_counts()
    return render(
        request,
        "labelling/list_question_sets.html",
        {"access": access, "project": access.project, "question_sets": question_sets},
    )


@login_required
@require_http_methods(["GET", "POST"])
def import_questions(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    form = QuestionImportForm(
        request.POST or None, request.FILES or None, initial={"set_name": request.GET.get("set")}
    )
    problems = []
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        data = upload.read() if upload else form.cleaned_data["pasted"].encode("utf-8")
        arguments = {
            "project": access.project,
            "set_name": form.cleaned_data["set_name"],
            "data": data,
            "format": form.cleaned_data["format"],
            "source": form.cleaned_data["source"],
            "name": upload.name if upload else "",
        }
        if data.count(b"\n") >= services.LARGE_IMPORT_LINES:
            # Checking and writing that many questions takes seconds: a job, with progress.
            job = services.start_question_import(**arguments, user=request.user)
            return redirect("corpus:show-job", slug=slug, job_id=job.pk)
        try:
            result = services.import_questions(**arguments)
        except services.InputRejected as exc:
            problems = exc.problems
            form.add_error(None, "Nothing was imported; fix these lines and upload again.")
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, result.describe())
            return redirect("labelling:show-question-set", slug=slug, set_id=result.question_set.pk)
    return render(
        request,
        "labelling/import_questions.html",
        {"access": access, "project": access.project, "form": form, "problems": problems},
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def show_question_set(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    access = project_access(request.user, slug)
    question_set = get_object_or_404(
        QuestionSet.objects.shown_to(access), project=access.project, pk=set_id
    )
    questions = question_set.questions.select_related("duplicate_of").order_by("pk")
    shown = request.GET.get("show", "all")
    if shown == "duplicates":
        questions = questions.duplicates()
    page = Paginator(questions, QUESTIONS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "access": access,
        "project": access.project,
        "question_set": question_set,
        "page": page,
        "shown": shown,
        "question_count": question_set.questions.count(),
        "duplicate_count": question_set.questions.duplicates().count(),
        "pools": question_set.pools.prefetch_related("retrievers"),
    }
    return render(request, "labelling/show_question_set.html", context)
