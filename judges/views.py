"""The judges' pages: admins connect a judge; leads start judging and read its calibration.

AI grades are shown to leads and admins only, on these pages, and only for candidates whose
documents they may see; a labeller reaches none of them (403).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corpus.access import project_access
from corpus.models import Role
from goldset.errors import ServiceError
from judges.forms import GoldVoteForm, JudgeForm, StartJudgingForm
from judges.models import AIJudgement, Judge
from judges.services import canaries, configuration, gold_vote, judging
from judges.services.calibration import calibrate
from labelling.models import QuestionSet

SHOWN_JUDGEMENTS = 50


@login_required
@require_GET
def list_judges(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    judges = Judge.objects.filter(project=access.project).prefetch_related("prompts")
    return render(
        request,
        "judges/list_judges.html",
        {"access": access, "project": access.project, "judges": judges},
    )


@login_required
@require_http_methods(["GET", "POST"])
def add_judge(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    form = JudgeForm(request.POST or None, project=access.project, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            judge = configuration.add_judge(
                project=access.project,
                user=request.user,
                **{k: v for k, v in data.items() if k != "groups"},
                groups=list(data["groups"]),
            )
        except ServiceError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Judge {judge.name} added.")
            return redirect("judges:show-judge", slug=slug, judge_id=judge.pk)
    return render(
        request,
        "judges/edit_judge.html",
        {"access": access, "project": access.project, "form": form, "judge": None},
        status=400 if form.errors else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def edit_judge(request: HttpRequest, slug: str, judge_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.ADMIN)
    judge = get_object_or_404(Judge, project=access.project, pk=judge_id)
    initial = {name: getattr(judge, name) for name in configuration.ENDPOINT_FIELDS}
    initial |= {"prompt": judge.prompt.text, "groups": judge.access_groups.all()}
    form = JudgeForm(
        request.POST or None,
        project=access.project,
        user=request.user,
        editing=True,
        initial=initial,
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        # Groups the admin is not in are not theirs to take away (nor to give).
        kept = judge.access_groups.exclude(members=request.user)
        try:
            configuration.change_judge(
                judge=judge,
                **{k: v for k, v in data.items() if k != "groups"},
                groups=[*data["groups"], *kept],
            )
        except ServiceError as error:
            form.add_error(None, str(error))
        else:
            messages.success(
                request, f"Judge {judge.name} changed (prompt v{judge.prompt.version})."
            )
            return redirect("judges:show-judge", slug=slug, judge_id=judge.pk)
    return render(
        request,
        "judges/edit_judge.html",
        {"access": access, "project": access.project, "form": form, "judge": judge},
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def show_judge(request: HttpRequest, slug: str, judge_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    judge = get_object_or_404(Judge, project=access.project, pk=judge_id)
    sets = list(QuestionSet.objects.filter(project=access.project).content())
    chosen = _chosen_set(request, sets)
    prompts = list(judge.prompts.select_related("guideline"))
    prompt = _chosen_prompt(request, prompts)
    report = None
    rows = []
    if chosen is not None and prompt is not None:
        report = calibrate(judge=judge, question_set=chosen, viewer=request.user, prompt=prompt)
        rows = list(
            AIJudgement.objects.filter(prompt=prompt, candidate__pool__question_set=chosen)
            .not_hidden_from(request.user)
            .select_related("candidate__question", "candidate__version__document")
            .order_by("-error", "candidate__question__external_id", "candidate_id")[
                :SHOWN_JUDGEMENTS
            ]
        )
    for row in rows:
        row.gold = report.gold.get(row.candidate_id) if report else None
    form = StartJudgingForm(project=access.project, initial={"question_set": chosen})
    switch = gold_vote.gold_vote_switch(chosen) if chosen is not None else None
    return render(
        request,
        "judges/show_judge.html",
        {
            "access": access,
            "project": access.project,
            "judge": judge,
            "sets": sets,
            "chosen": chosen,
            "prompts": prompts,
            "prompt": prompt,
            "report": report,
            "rows": rows,
            "form": form,
            "switch": switch,
            "counted": switch is not None and switch.on and switch.judge_id == judge.pk,
        },
    )


@login_required
@require_POST
def switch_gold_vote(request: HttpRequest, slug: str, judge_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    judge = get_object_or_404(Judge, project=access.project, pk=judge_id)
    form = GoldVoteForm(request.POST, project=access.project)
    if not form.is_valid():
        messages.error(request, "Choose a question set of this project.")
        return redirect("judges:show-judge", slug=slug, judge_id=judge.pk)
    question_set, on = form.cleaned_data["question_set"], form.cleaned_data["on"]
    try:
        gold_vote.set_gold_vote(question_set=question_set, judge=judge, on=on, user=request.user)
    except ServiceError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            f"The gold rule of {question_set.name} now counts {judge.name}'s vote."
            if on
            else f"The gold rule of {question_set.name} does not count {judge.name}'s vote.",
        )
    url = reverse("judges:show-judge", args=[slug, judge.pk])
    return redirect(f"{url}?set={question_set.pk}")


@login_required
@require_POST
def start_judging(request: HttpRequest, slug: str, judge_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    judge = get_object_or_404(Judge, project=access.project, pk=judge_id)
    form = StartJudgingForm(request.POST, project=access.project)
    if form.is_valid():
        data = form.cleaned_data
        try:
            job = judging.start_judging(
                judge=judge,
                question_set=data["question_set"],
                sample=data["sample"],
                judging_pass=data["judging_pass"],
                user=request.user,
            )
        except ServiceError as error:
            messages.error(request, str(error))
        else:
            messages.success(request, "Judging started; its progress is on the job's page.")
            return redirect("corpus:show-job", slug=slug, job_id=job.pk)
    else:
        problems = "; ".join(str(e) for errors in form.errors.values() for e in errors)
        messages.error(request, f"Judging was not started: {problems}")
    return redirect("judges:show-judge", slug=slug, judge_id=judge.pk)


@login_required
@require_POST
def plant_canaries(request: HttpRequest, slug: str, judge_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    judge = get_object_or_404(Judge, project=access.project, pk=judge_id)
    question_set = QuestionSet.objects.filter(
        project=access.project, pk=request.POST.get("question_set") or None
    ).first()
    if question_set is None:
        messages.error(request, "Choose a question set to plant canaries in.")
        return redirect("judges:show-judge", slug=slug, judge_id=judge.pk)
    try:
        job = canaries.start_canaries(judge=judge, question_set=question_set, user=request.user)
    except ServiceError as error:
        messages.error(request, str(error))
        return redirect("judges:show-judge", slug=slug, judge_id=judge.pk)
    messages.success(request, "Canaries planted; the judge is grading them.")
    return redirect("corpus:show-job", slug=slug, job_id=job.pk)


def _chosen_set(request: HttpRequest, sets: list[QuestionSet]) -> QuestionSet | None:
    wanted = request.GET.get("set", "")
    by_pk = {str(s.pk): s for s in sets}
    return by_pk.get(wanted) or (sets[0] if sets else None)


def _chosen_prompt(request: HttpRequest, prompts):
    wanted = request.GET.get("version", "")
    by_version = {str(p.version): p for p in prompts}
    return by_version.get(wanted) or (prompts[0] if prompts else None)
