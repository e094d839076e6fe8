"""Pools: create one from several retrievers, watch it build, read its make-up; upload runs.

Which retriever found a candidate, at which rank and score (provenance) is for leads and admins:
labellers see pool sizes and candidates in their shuffled order only.
"""

from __future__ import annotations

from pathlib import PurePath

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corpus.access import project_access
from corpus.models import Document, Retriever, RetrieverKind, Role
from goldset.errors import ServiceError
from labelling.forms import PoolForm
from labelling.models import Candidate, Pool, Question, QuestionSet
from labelling.services import pools as services
from labelling.services.questions import InputRejected
from labelling.services.run_import import import_run

RUN_SUFFIXES = (".jsonl", ".json", ".run", ".trec", ".txt", ".tsv")


@login_required
@require_GET
def list_pools(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    pools = (
        Pool.objects.in_project(access.project)
        .select_related("question_set", "job")
        .prefetch_related("retrievers")
        .with_question_count()
    )
    return render(
        request,
        "labelling/list_pools.html",
        {"access": access, "project": access.project, "pools": pools},
    )


@login_required
@require_http_methods(["GET", "POST"])
def add_pool(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    form = PoolForm(
        request.POST or None,
        project=access.project,
        initial={
            "question_set": request.GET.get("set"),
            "retrievers": list(
                access.project.retrievers.filter(active_index__isnull=False).values_list(
                    "pk", flat=True
                )
            ),
        },
    )
    if request.method == "POST" and form.is_valid():
        try:
            pool = services.start_pool(**form.cleaned_data, user=request.user)
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Pool {pool.name} is being built.")
            return redirect("labelling:show-pool", slug=slug, pool_id=pool.pk)
    return render(
        request,
        "labelling/add_pool.html",
        {"access": access, "project": access.project, "form": form},
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def show_pool(request: HttpRequest, slug: str, pool_id: int) -> HttpResponse:
    access = project_access(request.user, slug)
    pool = get_object_or_404(
        Pool.objects.select_related("question_set", "job"),
        question_set__project=access.project,
        pk=pool_id,
    )
    summary = services.summarize_pool(pool=pool, user=request.user, with_provenance=access.is_lead)
    context = {"access": access, "project": access.project, "pool": pool, "summary": summary}
    template = "labelling/show_pool.html#pool" if request.htmx else "labelling/show_pool.html"
    return render(request, template, context)


@login_required
@require_GET
def show_pool_question(
    request: HttpRequest, slug: str, pool_id: int, question_id: int
) -> HttpResponse:
    """A question's candidates in the order labellers get them; leads also see provenance."""
    access = project_access(request.user, slug)
    pool = get_object_or_404(
        Pool.objects.select_related("question_set"),
        question_set__project=access.project,
        pk=pool_id,
    )
    question = get_object_or_404(Question, question_set=pool.question_set, pk=question_id)
    visible = Document.objects.filter(project=access.project).visible_to(request.user)
    candidates = (
        Candidate.objects.filter(
            pool=pool, question=question, version__document__in=visible.values("pk")
        )
        .select_related("version__document")
        .order_by("shuffle_rank")
    )
    if access.is_lead:
        candidates = candidates.with_provenance()
    return render(
        request,
        "labelling/show_pool_question.html",
        {
            "access": access,
            "project": access.project,
            "pool": pool,
            "question": question,
            "candidates": candidates,
        },
    )


@login_required
@require_POST
def upload_run(request: HttpRequest, slug: str, retriever_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    retriever = get_object_or_404(
        Retriever, project=access.project, pk=retriever_id, kind=RetrieverKind.RUN
    )
    set_id = request.POST.get("question_set", "")
    question_set = get_object_or_404(
        # Runs are of the team's questions: a canary set is answered as a missing one.
        QuestionSet.objects.content(),
        project=access.project,
        pk=set_id if set_id.isdigit() else 0,
    )
    upload = request.FILES.get("file")
    problems = []
    error = ""
    if upload is None:
        error = "Choose a run file to upload."
    elif PurePath(upload.name).suffix.lower() not in RUN_SUFFIXES:
        error = f"{upload.name}: use a TREC run or a .jsonl file ({', '.join(RUN_SUFFIXES)})."
    elif upload.size > settings.GOLDSET_MAX_UPLOAD_BYTES:
        error = (
            f"{upload.name} is {filesizeformat(upload.size)}, over the "
            f"{filesizeformat(settings.GOLDSET_MAX_UPLOAD_BYTES)} limit."
        )
    else:
        try:
            result = import_run(
                retriever=retriever,
                question_set=question_set,
                data=upload.read(),
                name=upload.name,
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
                f"Run of {retriever.name} for {question_set.name}: {result.questions} questions, "
                f"{result.results} results, {result.passages} passages.",
            )
            if result.warning:
                messages.warning(request, f"{result.warning}.")
            return redirect("corpus:show-retriever", slug=slug, retriever_id=retriever.pk)
    return render(
        request,
        "labelling/upload_run.html",
        {
            "access": access,
            "project": access.project,
            "retriever": retriever,
            "question_set": question_set,
            "error": error,
            "problems": problems,
        },
        status=400,
    )
