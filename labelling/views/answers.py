"""Answer runs of a question set (upload, list) and the leads' reference answers."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from corpus.access import project_access
from corpus.models import Role
from goldset.errors import ServiceError
from labelling.forms import AnswerUploadForm, ReferenceFactFormSet
from labelling.models import QuestionSet
from labelling.services import answers as services
from labelling.services.questions import InputRejected


@login_required
@require_http_methods(["GET", "POST"])
def list_answer_runs(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    question_set = get_object_or_404(QuestionSet, project=access.project, pk=set_id)
    form = AnswerUploadForm(request.POST or None, request.FILES or None)
    problems: list = []
    error = ""
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            result = services.import_answers(
                question_set=question_set,
                data=upload.read(),
                run_name=form.cleaned_data["name"],
                source=upload.name,
                user=request.user,
            )
        except InputRejected as exc:
            problems = exc.problems
            error = f"Nothing was imported from {upload.name}: fix these lines and upload again."
        except ServiceError as exc:
            error = str(exc)
        else:
            messages.success(
                request,
                f"Answer run {result.run.name}: {result.answers} answers ({result.refused} "
                f"refused), {result.citations} citations.",
            )
            return redirect("labelling:list-answer-runs", slug=slug, set_id=question_set.pk)
    questions = (
        question_set.questions.included()
        .order_by("pk")
        .prefetch_related("reference_answers__facts")
    )
    rows = []
    for question in questions:
        references = sorted(question.reference_answers.all(), key=lambda r: -r.version)
        rows.append({"question": question, "reference": references[0] if references else None})
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "labelling/list_answer_runs.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "runs": question_set.answer_runs.order_by("-created_at"),
            "rows": rows,
            "form": form,
            "error": error,
            "problems": problems,
        },
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def edit_reference_answer(
    request: HttpRequest, slug: str, set_id: int, question_id: int
) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    question_set = get_object_or_404(QuestionSet, project=access.project, pk=set_id)
    question = get_object_or_404(question_set.questions.included(), pk=question_id)
    current = services.current_reference(question)
    initial = (
        [{"text": f.text, "vital": "1" if f.vital else "0"} for f in current.facts.all()]
        if current is not None
        else []
    )
    formset = ReferenceFactFormSet(request.POST or None, initial=initial, prefix="facts")
    error = ""
    if request.method == "POST" and formset.is_valid():
        facts = [
            services.FactInput(text=row["text"], vital=row["vital"])
            for row in formset.cleaned_data
            if row.get("text", "").strip()
        ]
        try:
            reference = services.record_reference_answer(
                question=question, facts=facts, user=request.user
            )
        except ServiceError as exc:
            error = str(exc)
        else:
            messages.success(
                request,
                f"Reference answer of {question.external_id} saved as v{reference.version}.",
            )
            return redirect("labelling:list-answer-runs", slug=slug, set_id=question_set.pk)
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "labelling/edit_reference_answer.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "question": question,
            "current": current,
            "versions": question.reference_answers.count(),
            "formset": formset,
            "error": error,
        },
        status=status,
    )
