"""Gold sets (list, finalise, show, download) and the evaluation page.

Leads and admins only: a gold set shows every question's evidence. Only admins finalise.
A bundle carries document text, so anyone an access group hides one of its documents from is
refused the download and the figures.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from answers.models import AnswerRun
from answers.services.gold import core_answers
from corpus import job_display, jobs
from corpus.access import ProjectAccess, project_access
from corpus.models import Role
from corpus.views import follow_job
from evaluation.forms import (
    FinaliseForm,
    KSentForm,
    PermissionReplayForm,
    PowerForm,
    RetrieverRunForm,
    UploadRunForm,
)
from evaluation.models import EvaluationRun, GoldSet, PermissionReplay, RunDeletion
from evaluation.services import (
    answer_scores,
    evaluation_runs,
    gold_sets,
    permission_replays,
    pool_bias,
    power,
    reports,
    run_deletions,
)
from evaluation.services.evaluation_runs import MAX_K_SENT_TO_MODEL
from goldeval.formats.answers import write_answer_file
from goldeval.scoring.answers import HUMAN_SCORES
from goldeval.scoring.answers_report import LABELS, SCORE_GROUPS
from labelling.models import QuestionSet
from labelling.resolution import DEFAULT_MIN_SPAN_F1


def _gold_set(access: ProjectAccess, gold_set_id: int) -> GoldSet:
    return get_object_or_404(
        GoldSet.objects.in_project(access.project).select_related(
            "question_set__project", "created_by"
        ),
        pk=gold_set_id,
    )


def _refusal(hidden: int) -> str:
    # Count-free: how many documents are hidden is itself something an access group hides.
    return (
        "This gold set names documents that an access group hides from you, so neither its "
        "files nor its figures are available to you. Ask an admin for access to the groups "
        "of its documents."
    )


# --- gold sets --------------------------------------------------------------------------------


@login_required
@require_GET
def list_gold_sets(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    return _render_list(request, access)


def _render_list(request, access, *, form=None, status=200):
    question_sets = (
        QuestionSet.objects.content()
        .filter(project=access.project)
        .prefetch_related("gold_sets__created_by")
        .order_by("name")
    )
    return render(
        request,
        "evaluation/list_gold_sets.html",
        {
            "access": access,
            "project": access.project,
            "question_sets": question_sets,
            "form": form or FinaliseForm(),
        },
        status=status,
    )


@login_required
@require_POST
def finalise_gold_set(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    question_set = get_object_or_404(
        QuestionSet.objects.shown_to(access), project=access.project, pk=set_id
    )
    form = FinaliseForm(request.POST)
    if not form.is_valid():
        return _render_list(request, access, form=form, status=400)
    min_span_f1 = form.cleaned_data["min_span_f1"]
    try:
        # The gold rule and reading the bundle back can take a while: a job, with its stages.
        job = gold_sets.start_finalise(
            question_set=question_set,
            user=request.user,
            min_span_f1=DEFAULT_MIN_SPAN_F1 if min_span_f1 is None else min_span_f1,
        )
    except gold_sets.GoldSetError as error:
        messages.error(request, str(error))
        return redirect("evaluation:list-gold-sets", access.project.slug)
    return follow_job(request, job)


@login_required
@require_GET
def show_gold_set(request: HttpRequest, slug: str, gold_set_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    gold_set = _gold_set(access, gold_set_id)
    hidden = gold_set.hidden_document_count(request.user)
    # Pool bias names pooled documents: shown only to those the bundle hides nothing from.
    reusability = None if hidden else pool_bias.stored_reusability(gold_set)
    return render(
        request,
        "evaluation/show_gold_set.html",
        {
            "access": access,
            "project": access.project,
            "gold_set": gold_set,
            "manifest": gold_set.manifest,
            "files": gold_set.files.order_by("name").values("name", "size", "sha256"),
            "versions": GoldSet.objects.filter(question_set=gold_set.question_set)
            .select_related("created_by")
            .order_by("-number"),
            "refusal": _refusal(hidden) if hidden else "",
            "reusability": reusability,
        },
    )


def _refuse_download(request: HttpRequest, access, gold_set) -> HttpResponse | None:
    """A bundle carries document text: refuse it to anyone an access group hides one from."""
    hidden = gold_set.hidden_document_count(request.user)
    if not hidden:
        return None
    context = {
        "access": access,
        "project": access.project,
        "gold_set": gold_set,
        "refusal": _refusal(hidden),
    }
    return render(request, "evaluation/download_refused.html", context, status=403)


@login_required
@require_GET
def download_gold_set(request: HttpRequest, slug: str, gold_set_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    gold_set = _gold_set(access, gold_set_id)
    refused = _refuse_download(request, access, gold_set)
    if refused is not None:
        return refused
    name = gold_sets.bundle_folder_name(gold_set)
    return HttpResponse(
        gold_sets.bundle_zip(gold_set),
        content_type="application/zip",
        headers={"Content-Disposition": content_disposition_header(True, f"{name}.zip")},
    )


# --- the evaluation page ------------------------------------------------------------------------


def _choice(request: HttpRequest, gold_set: GoldSet, data) -> reports.Choice:
    """The runs the page's form chose (from ``data``: GET or POST), or the default choice."""
    if "shown" not in data:
        return reports.default_choice(gold_set)
    chosen = {int(pk) for pk in data.getlist("run") if pk.isdigit()}
    runs = EvaluationRun.objects.filter(gold_set=gold_set, pk__in=chosen)
    return reports.Choice(
        run_ids=tuple(sorted(runs.values_list("pk", flat=True))),
        baseline=data.get("baseline") == "1",
        k=gold_set.question_set.project.k_sent_to_model,
    )


@login_required
@require_GET
def show_evaluation(request: HttpRequest, slug: str) -> HttpResponse:
    """Renders the stored figures of the chosen runs; never scores anything itself (a job
    does: `evaluation.services.reports`)."""
    access = project_access(request.user, slug, role=Role.LEAD)
    project = access.project
    gold_sets = list(
        GoldSet.objects.in_project(project).select_related("question_set").newest_first()
    )
    gold_set = None
    if request.GET.get("gold_set", "").isdigit():
        gold_set = next((g for g in gold_sets if g.pk == int(request.GET["gold_set"])), None)
    elif gold_sets:
        gold_set = max(gold_sets, key=lambda g: g.created_at)
    context = {
        "access": access,
        "project": project,
        "gold_sets": gold_sets,
        "gold_set": gold_set,
        "k_form": KSentForm(initial={"k_sent_to_model": project.k_sent_to_model}),
    }
    if gold_set is None:
        return render(request, "evaluation/show_evaluation.html", context)
    hidden = gold_set.hidden_document_count(request.user)
    if hidden:
        context["refusal"] = _refusal(hidden)
        return render(request, "evaluation/show_evaluation.html", context, status=403)
    runs = list(EvaluationRun.objects.of_gold_set(gold_set).select_related("created_by"))
    choice = _choice(request, gold_set, request.GET)
    stored, job = jobs.stored_or_job(
        lambda: reports.stored_report(gold_set, choice),
        lambda: reports.report_job(gold_set, choice),
    )
    context.update(
        runs=runs,
        selected_ids=set(choice.run_ids),
        baseline=choice.baseline,
        choice_query=choice.query(gold_set),
        report=stored.content if stored else None,
        deltas=_deltas_shown(stored.content if stored else None, request.GET.get("reference")),
        job=jobs.unfinished(job),
        failed=job_display.failure_shown(job, request.user),
        depth=evaluation_runs.evaluation_depth(project),
        upload_form=UploadRunForm(project=project),
        retriever_form=RetrieverRunForm(project=project),
        deletions=RunDeletion.objects.filter(gold_set=gold_set).select_related(
            "deleted_by", "stored_by"
        )[:20],
        power_form=PowerForm(figures=power.stored_power(stored.content if stored else None)),
    )
    return render(request, "evaluation/show_evaluation.html", context)


@login_required
@require_GET
def calculate_power(request: HttpRequest, slug: str, gold_set_id: int) -> HttpResponse:
    """The power calculator of the evaluation page (an htmx swap, or a page of its own)."""
    access = project_access(request.user, slug, role=Role.LEAD)
    gold_set = _gold_set(access, gold_set_id)
    template = (
        "evaluation/calculate_power.html#calculator"
        if request.htmx
        else "evaluation/calculate_power.html"
    )
    context = {"access": access, "project": access.project, "gold_set": gold_set}
    hidden = gold_set.hidden_document_count(request.user)
    if hidden:
        context["refusal"] = _refusal(hidden)
        return render(request, template, context, status=403)
    choice = _choice(request, gold_set, request.GET)
    stored = reports.stored_report(gold_set, choice)
    content = stored.content if stored else None
    form = PowerForm(request.GET, figures=power.stored_power(content))
    valid = form.is_valid()
    context.update(
        power_form=form,
        choice_query=choice.query(gold_set),
        selected_ids=set(choice.run_ids),
        baseline=choice.baseline,
        answer=power.calculate_power(content=content, **form.cleaned_data) if valid else None,
    )
    return render(request, template, context, status=200 if valid else 400)


def _deltas_shown(content: dict | None, reference: str | None) -> dict | None:
    """The stored run-against-run comparison with the reference the lead chose (the first run
    unless named)."""
    deltas = [d for d in (content or {}).get("deltas") or [] if isinstance(d, dict)]
    if not deltas:
        return None
    chosen = [d for d in deltas if d.get("reference") == reference]
    return (chosen or deltas)[0]


@login_required
@require_POST
def score_runs(request: HttpRequest, slug: str, gold_set_id: int) -> HttpResponse:
    """Queue the figures of the runs chosen on the evaluation page."""
    access = project_access(request.user, slug, role=Role.LEAD)
    gold_set = _gold_set(access, gold_set_id)
    hidden = gold_set.hidden_document_count(request.user)
    if hidden:
        messages.error(request, _refusal(hidden))
        return _back_to_evaluation(access.project.slug, gold_set)
    choice = _choice(request, gold_set, request.POST)
    if reports.stored_report(gold_set, choice) is None:
        reports.start_report(gold_set=gold_set, choice=choice, user=request.user)
    target = reverse("evaluation:show-evaluation", args=[access.project.slug])
    return redirect(f"{target}?{choice.query(gold_set)}")


def _back_to_evaluation(slug: str, gold_set: GoldSet) -> HttpResponse:
    return redirect(f"{reverse('evaluation:show-evaluation', args=[slug])}?gold_set={gold_set.pk}")


@login_required
@require_POST
def upload_run(request: HttpRequest, slug: str, gold_set_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    gold_set = _gold_set(access, gold_set_id)
    hidden = gold_set.hidden_document_count(request.user)
    form = UploadRunForm(request.POST, request.FILES, project=access.project)
    if hidden:
        messages.error(request, _refusal(hidden))
    elif not form.is_valid():
        problems = " ".join(error for errors in form.errors.values() for error in errors)
        messages.error(request, f"Nothing was stored. {problems}")
    else:
        upload = form.cleaned_data["file"]
        try:
            # Reading a run against the gold set is a job's work; its page follows it.
            job = evaluation_runs.start_uploaded_run(
                gold_set=gold_set,
                name=form.cleaned_data["name"],
                file_name=upload.name,
                data=upload.read(),
                user=request.user,
                retriever=form.cleaned_data["retriever"],
                change=form.cleaned_data["change"],
            )
        except gold_sets.GoldSetError as error:
            messages.error(request, f"Nothing was stored. {error}")
        else:
            return follow_job(request, job)
    return _back_to_evaluation(access.project.slug, gold_set)


@login_required
@require_POST
def start_retriever_run(request: HttpRequest, slug: str, gold_set_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    gold_set = _gold_set(access, gold_set_id)
    hidden = gold_set.hidden_document_count(request.user)
    form = RetrieverRunForm(request.POST, project=access.project)
    if hidden:
        messages.error(request, _refusal(hidden))
    elif not form.is_valid():
        messages.error(request, "Choose a retriever with a built index.")
    else:
        try:
            job = evaluation_runs.start_retriever_run(
                gold_set=gold_set, retriever=form.cleaned_data["retriever"], user=request.user
            )
        except gold_sets.GoldSetError as error:
            messages.error(request, str(error))
        else:
            return follow_job(request, job)
    return _back_to_evaluation(access.project.slug, gold_set)


@login_required
@require_GET
def download_run(request: HttpRequest, slug: str, gold_set_id: int, run_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    gold_set = _gold_set(access, gold_set_id)
    run = get_object_or_404(EvaluationRun, gold_set=gold_set, pk=run_id)
    refused = _refuse_download(request, access, gold_set)
    if refused is not None:
        return refused
    return HttpResponse(
        bytes(run.content),
        content_type="application/octet-stream",
        # The run name is the uploader's: quoted by Django, never spliced into the header.
        headers={"Content-Disposition": content_disposition_header(True, f"{run.name}.run")},
    )


@login_required
@require_http_methods(["GET", "POST"])
def delete_run(request: HttpRequest, slug: str, gold_set_id: int, run_id: int) -> HttpResponse:
    """Ask (GET), then delete (POST from that page) a run of a gold set: leads and admins, with
    the access a download of the run needs. Who deleted it and when stay on the page."""
    access = project_access(request.user, slug, role=Role.LEAD)
    gold_set = _gold_set(access, gold_set_id)
    run = get_object_or_404(
        EvaluationRun.objects.select_related("created_by"), gold_set=gold_set, pk=run_id
    )
    refused = _refuse_download(request, access, gold_set)
    if refused is not None:
        return refused
    context = {"access": access, "project": access.project, "gold_set": gold_set, "run": run}
    if request.method == "GET":
        return render(request, "evaluation/delete_run.html", context)
    if request.POST.get("confirm") != "yes":
        context["error"] = "Tick the box to confirm that this run should be deleted."
        return render(request, "evaluation/delete_run.html", context, status=400)
    try:
        deletion = run_deletions.delete_run(run=run, user=request.user)
    except gold_sets.GoldSetError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            f"Run {deletion.name} deleted; the figures are computed again without it.",
        )
    return _back_to_evaluation(access.project.slug, gold_set)


@login_required
@require_POST
def edit_k_sent_to_model(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    form = KSentForm(request.POST)
    target = reverse("evaluation:show-evaluation", args=[access.project.slug])
    gold_set_id = request.POST.get("gold_set", "")
    gold_set = (
        GoldSet.objects.in_project(access.project).filter(pk=gold_set_id).first()
        if gold_set_id.isdigit()
        else None
    )
    if form.is_valid():
        evaluation_runs.set_k_sent_to_model(
            project=access.project, k=form.cleaned_data["k_sent_to_model"]
        )
        messages.success(request, f"k sent to the model is now {access.project.k_sent_to_model}.")
        if gold_set is not None and not gold_set.hidden_document_count(request.user):
            # The highlighted k changes the figures shown: compute them for the page.
            choice = reports.default_choice(gold_set)
            if reports.stored_report(gold_set, choice) is None:
                reports.start_report(gold_set=gold_set, choice=choice, user=request.user)
    else:
        messages.error(
            request,
            f"k sent to the model is a whole number from 1 to {MAX_K_SENT_TO_MODEL}.",
        )
    return redirect(f"{target}?gold_set={gold_set.pk}" if gold_set is not None else target)


# --- permission replays -------------------------------------------------------------------------


@login_required
@require_GET
def list_permission_replays(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    return _render_replays(request, access, PermissionReplayForm(project=access.project))


def _render_replays(request, access, form, status=200) -> HttpResponse:
    replays = (
        PermissionReplay.objects.in_project(access.project)
        .select_related("gold_set__question_set", "job", "created_by")
        .defer("snapshot")[:50]
    )
    return render(
        request,
        "evaluation/list_permission_replays.html",
        {"access": access, "project": access.project, "replays": replays, "form": form},
        status=status,
    )


@login_required
@require_POST
def start_permission_replay(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    form = PermissionReplayForm(request.POST, request.FILES, project=access.project)
    if not form.is_valid():
        return _render_replays(request, access, form, status=400)
    gold_set = form.cleaned_data["gold_set"]
    hidden = gold_set.hidden_document_count(request.user)
    if hidden:
        form.add_error(None, _refusal(hidden))
        return _render_replays(request, access, form, status=403)
    try:
        replay = permission_replays.start_permission_replay(
            user=request.user, **form.service_arguments()
        )
    except gold_sets.GoldSetError as error:
        form.add_error(None, str(error))
        return _render_replays(request, access, form, status=400)
    return redirect("evaluation:show-permission-replay", access.project.slug, replay.pk)


@login_required
@require_GET
def show_permission_replay(request: HttpRequest, slug: str, replay_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    replay = get_object_or_404(
        PermissionReplay.objects.in_project(access.project)
        .select_related("gold_set__question_set__project", "job")
        .defer("snapshot"),
        pk=replay_id,
    )
    context = {
        "access": access,
        "project": access.project,
        "replay": replay,
        "report": permission_replays.shown_report(replay=replay, user=request.user),
    }
    template = (
        "evaluation/show_permission_replay.html#status"
        if request.htmx
        else "evaluation/show_permission_replay.html"
    )
    return render(request, template, context)


@login_required
@require_GET
def show_answers(request: HttpRequest, slug: str, gold_set_id: int) -> HttpResponse:
    """The gold set's Answers page: each answer run's scores, side by side, and per question."""
    access = project_access(request.user, slug, role=Role.LEAD)
    gold_set = _gold_set(access, gold_set_id)
    context = {"access": access, "project": access.project, "gold_set": gold_set}
    if answer_scores.hides_anything(gold_set=gold_set, viewer=request.user):
        context["refusal"] = (
            "This page shows the text of answers and documents, and some of them are restricted "
            "to access groups you are not in; a member of those groups can read it."
        )
        return render(request, "evaluation/show_answers.html", context, status=403)
    page, job = jobs.stored_or_job(
        lambda: answer_scores.stored_answers_report(gold_set),
        lambda: answer_scores.answers_job(gold_set),
    )
    if page is None:
        context["job"] = jobs.unfinished(job)
        context["failed"] = job_display.failure_shown(job, request.user)
        return render(request, "evaluation/show_answers.html", context)
    names = [run["name"] for run in page["runs"]]
    runs = page["report"]["runs"]
    context.update(
        page=page,
        names=names,
        columns=[(run["name"], run["pk"]) for run in page["runs"]],
        score_groups=[
            (
                title,
                explanation,
                [
                    (score, LABELS[score], [runs[name]["scores"].get(score) for name in names])
                    for score in scores
                ],
            )
            for title, explanation, scores in SCORE_GROUPS
        ],
        missing=[(name, runs[name].get("missing_questions", [])) for name in names],
        count_rows=[
            (key.replace("_", " "), [runs[name]["counts"][key] for name in names])
            for key in ("answerable", "unanswerable", "answers", "missing", "refused", "graded")
        ],
        coverage=[runs[name]["coverage"] for name in names],
        human_scores=HUMAN_SCORES,
        reviews_since=answer_scores.reviews_finished_since(gold_set),
    )
    return render(request, "evaluation/show_answers.html", context)


@login_required
@require_POST
def compute_answers(request: HttpRequest, slug: str, gold_set_id: int) -> HttpResponse:
    """Queue the Answers page's figures (a job: scoring reads the gold set and every run)."""
    access = project_access(request.user, slug, role=Role.LEAD)
    gold_set = _gold_set(access, gold_set_id)
    url = reverse("evaluation:show-answers", args=[access.project.slug, gold_set.pk])
    if answer_scores.hides_anything(gold_set=gold_set, viewer=request.user):
        return redirect(url)
    if answer_scores.stored_answers_report(gold_set) is None:
        answer_scores.start_answers_report(gold_set=gold_set, user=request.user)
    return redirect(url)


@login_required
@require_GET
def download_answer_run(
    request: HttpRequest, slug: str, gold_set_id: int, answer_run_id: int
) -> HttpResponse:
    """An answer run as the JSONL file the CLI reads (the page's figures come from it)."""
    access = project_access(request.user, slug, role=Role.LEAD)
    gold_set = _gold_set(access, gold_set_id)
    run = get_object_or_404(AnswerRun, question_set_id=gold_set.question_set_id, pk=answer_run_id)
    if answer_scores.hides_anything(gold_set=gold_set, viewer=request.user):
        return render(
            request, "403.html", {"access": access, "project": access.project}, status=403
        )
    answers = sorted(core_answers(run).values(), key=lambda answer: answer.line)
    response = HttpResponse(write_answer_file(answers), content_type="application/octet-stream")
    response["Content-Disposition"] = content_disposition_header(
        as_attachment=True, filename=f"{run.name}.jsonl"
    )
    return response
