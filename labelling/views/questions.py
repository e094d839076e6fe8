"""Question sets: list, import (file or pasted lines) and one set's questions."""

from __future__ import annotations

from pathlib import PurePath

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.views.decorators.http import require_GET, require_http_methods

from corpus.access import project_access
from corpus.models import Role
from goldset.errors import ServiceError
from labelling.models import QuestionSet
from labelling.services import questions as services

QUESTIONS_PER_PAGE = 100
FORMAT_OF_SUFFIX = {".csv": "csv", ".jsonl": "jsonl", ".txt": "lines"}


class QuestionImportForm(forms.Form):
    set_name = forms.SlugField(
        max_length=100,
        label="Question set",
        help_text="An existing set adds the new questions; a new name creates the set.",
    )
    file = forms.FileField(
        required=False,
        allow_empty_file=True,  # reported by the import as "has no questions"
        help_text="CSV with a question (or text) column and optional id, source, tags; JSONL "
        "with question (or text) and optional id, source, tags; or .txt, one question a line.",
    )
    # strip=False: a question is stored exactly as typed, spaces included.
    pasted = forms.CharField(
        required=False,
        strip=False,
        label="…or paste questions, one per line",
        widget=forms.Textarea(attrs={"rows": 8}),
    )
    source = forms.CharField(
        required=False,
        max_length=200,
        help_text="Where these questions come from (e.g. helpdesk-tickets), unless a row says.",
    )

    def clean(self):
        data = super().clean()
        upload, pasted = data.get("file"), data.get("pasted") or ""
        if upload and pasted.strip():
            raise forms.ValidationError("Upload a file or paste questions, not both.")
        if not upload and not pasted.strip():
            raise forms.ValidationError("Upload a file or paste at least one question.")
        if upload:
            suffix = PurePath(upload.name).suffix.lower()
            if suffix not in FORMAT_OF_SUFFIX:
                raise forms.ValidationError(
                    f"{upload.name}: use a .csv, .jsonl or .txt file.", code="unsupported"
                )
            if upload.size > settings.GOLDSET_MAX_UPLOAD_BYTES:
                raise forms.ValidationError(
                    f"{upload.name} is {filesizeformat(upload.size)}, over the "
                    f"{filesizeformat(settings.GOLDSET_MAX_UPLOAD_BYTES)} limit.",
                    code="too_large",
                )
            data["format"] = FORMAT_OF_SUFFIX[suffix]
        else:
            data["format"] = "lines"
        return data


@login_required
@require_GET
def list_question_sets(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    question_sets = access.project.question_sets.annotate(
        question_count=Count("questions", distinct=True),
        duplicate_count=Count(
            "questions", filter=Q(questions__duplicate_of__isnull=False), distinct=True
        ),
        pool_count=Count("pools", distinct=True),
    )
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
        try:
            result = services.import_questions(
                project=access.project,
                set_name=form.cleaned_data["set_name"],
                data=upload.read() if upload else form.cleaned_data["pasted"],
                format=form.cleaned_data["format"],
                source=form.cleaned_data["source"],
                name=upload.name if upload else "",
            )
        except services.InputRejected as exc:
            problems = exc.problems
            form.add_error(None, "Nothing was imported; fix these lines and upload again.")
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                f"{result.created} new question{'s' if result.created != 1 else ''}, "
                f"{result.unchanged} already there, {result.duplicates} flagged as duplicates.",
            )
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
    question_set = get_object_or_404(QuestionSet, project=access.project, pk=set_id)
    questions = question_set.questions.select_related("duplicate_of").order_by("pk")
    shown = request.GET.get("show", "all")
    if shown == "duplicates":
        questions = questions.filter(duplicate_of__isnull=False)
    page = Paginator(questions, QUESTIONS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "access": access,
        "project": access.project,
        "question_set": question_set,
        "page": page,
        "shown": shown,
        "question_count": question_set.questions.count(),
        "duplicate_count": question_set.questions.filter(duplicate_of__isnull=False).count(),
        "pools": question_set.pools.prefetch_related("retrievers"),
    }
    return render(request, "labelling/show_question_set.html", context)
