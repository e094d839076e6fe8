"""A labeller's queue and "next question"; a lead's planning, progress and reassignment pages.

A labeller's pages only ever count and list the labeller's own assignments: whether a question
is double-labelled, and by whom, is visible to leads alone.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from corpus.access import project_access
from corpus.models import Role
from goldset.errors import ServiceError
from labelling.forms import (
    AssignmentFilterForm,
    BulkReassignForm,
    ExcludeQuestionForm,
    LeaseForm,
    PlanForm,
    ReassignForm,
    SecondLabellersForm,
)
from labelling.models import (
    Assignment,
    Candidate,
    Change,
    Judgement,
    Pool,
    Question,
    QuestionSet,
    Verdict,
    included_q,
)
from labelling.services import assignments as services
from labelling.services import exclusion, leases
from labelling.services.judgement_time import judgement_time
from labelling.services.progress import progress_plots
from labelling.views.grading import grade_url

# Labellers ---------------------------------------------------------------------------------


@login_required
@require_GET
def show_queue(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    own = Assignment.objects.in_project(access.project).held_by(request.user)
    rows = (
        own.select_related("pool__question_set", "question")
        .with_progress(request.user, project=access.project)
        .in_queue_order()
    )
    rows = [(a, grade_url(a, slug)) for a in rows]
    context = {
        "access": access,
        "project": access.project,
        "rows": rows,
        "continue_with": _continue_with(rows),
        "progress": services.queue_progress(own, viewer=request.user),
    }
    return render(request, "labelling/queue.html", context)


def _continue_with(rows):
    """Where "Continue" goes: the question the labeller started and has not finished, else their
    first open one (None: "Next question" claims new work)."""
    open_rows = [(a, url) for a, url in rows if a.completed_at is None]
    started = [(a, url) for a, url in open_rows if a.graded or a.has_verdict]
    return (started or open_rows or [None])[0]


@login_required
@require_http_methods(["GET", "POST"])
def next_question(request: HttpRequest, slug: str) -> HttpResponse:
    """POST claims work, so a GET (e.g. after logging in again) just shows the queue."""
    access = project_access(request.user, slug)
    if request.method == "GET":
        return redirect("labelling:show-queue", slug=slug)
    after = None  # where the labeller is: only its place in queue order is used, never read
    pool_id, question_id = request.POST.get("pool", ""), request.POST.get("question", "")
    if pool_id.isdigit() and question_id.isdigit():
        after = Assignment(pool_id=int(pool_id), question_id=int(question_id))
    assignment = services.next_assignment(
        project=access.project, labeller=request.user, after=after
    )
    if assignment is None:
        messages.success(request, "Nothing left to grade. Thank you!")
        return redirect("labelling:show-queue", slug=slug)
    here = after is not None and (assignment.pool_id, assignment.question_id) == (
        after.pool_id,
        after.question_id,
    )
    if here:
        messages.info(
            request,
            "No other question is waiting: finish this one (a grade for every passage "
            "and a verdict) and your queue is done.",
        )
    return redirect(grade_url(assignment, slug))


# Leads -------------------------------------------------------------------------------------


@login_required
@require_GET
def list_assignments(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    return render(request, "labelling/assignments.html", _lead_context(request, access))


ASSIGNMENTS_PER_PAGE = 100


def _lead_context(
    request,
    access,
    form: PlanForm | None = None,
    seconds: SecondLabellersForm | None = None,
    lease_form: LeaseForm | None = None,
) -> dict:
    project = access.project
    pools = (
        Pool.objects.in_project(project)
        .select_related("question_set")
        .with_slot_counts()
        .order_by("-created_at")
    )
    shown_pool = None
    pool_param = request.GET.get("pool", "")
    if pool_param.isdigit():
        shown_pool = pools.filter(pk=pool_param).first()
    if shown_pool is None:
        shown_pool = next((p for p in pools if p.slots), None)
    filters = AssignmentFilterForm(request.GET, project=project)
    page = None
    if shown_pool is not None:
        assignments = (
            Assignment.objects.work()
            .filter(included_q("question__"), pool=shown_pool)
            .select_related("question", "labeller")
            .with_progress(request.user, project=project)
        )
        page = Paginator(filters.apply(assignments), ASSIGNMENTS_PER_PAGE).get_page(
            request.GET.get("page")
        )
    # The judgements' seconds, summed up once for the two tables and the speed plot.
    spent = judgement_time(project=project, viewer=request.user)
    return {
        "access": access,
        "project": project,
        "pools": pools,
        "shown_pool": shown_pool,
        "filters": filters,
        "page": page,
        "rows": page.object_list if page is not None else [],
        "members": project.members(),
        "form": form
        or PlanForm(project=project, initial={"pool": shown_pool.pk if shown_pool else None}),
        "seconds_form": seconds
        or SecondLabellersForm(
            project=project, initial={"pool": shown_pool.pk if shown_pool else None}
        ),
        "lease_form": lease_form or LeaseForm(initial={"lease_minutes": project.lease_minutes}),
        "now": timezone.now(),
        "by_labeller": services.progress_by_labeller(
            project=project, viewer=request.user, seconds=spent
        ),
        "by_question_set": services.progress_by_question_set(
            project=project, viewer=request.user, seconds=spent
        ),
        "plots": progress_plots(project=project, viewer=request.user, seconds=spent),
    }


@login_required
@require_http_methods(["GET", "POST"])
def plan_assignments(request: HttpRequest, slug: str) -> HttpResponse:
    """POST plans; a GET (a link, a reload after a refused plan) opens the Assignments page
    with the pool it names chosen in *Plan a pool*."""
    access = project_access(request.user, slug, role=Role.LEAD)
    if request.method == "GET":
        return _plan_page(slug, request.GET.get("pool", ""))
    form = PlanForm(request.POST, project=access.project)
    if form.is_valid():
        data = form.cleaned_data
        try:
            result = services.plan_assignments(
                pool=data["pool"],
                labellers=list(data["labellers"]),
                double_share=data["double_percent"] / 100,
                double_count=data["double_count"],
                seed=data["seed"],
                user=request.user,
            )
        except services.AssignmentError as exc:
            form.add_error(None, str(exc))
        else:
            (messages.success if result.assignments else messages.warning)(
                request, result.describe()
            )
            response = redirect("labelling:list-assignments", slug=slug)
            response["Location"] += f"?pool={data['pool'].pk}"
            return response
    return render(
        request, "labelling/assignments.html", _lead_context(request, access, form), status=400
    )


def _lead_assignment(request, slug: str, assignment_id: int):
    access = project_access(request.user, slug, role=Role.LEAD)
    assignment = get_object_or_404(
        Assignment.objects.in_project(access.project)
        .work()
        .select_related("pool__question_set", "question", "labeller"),
        pk=assignment_id,
    )
    return access, assignment


def _back_to_pool(slug: str, assignment: Assignment) -> HttpResponse:
    return _to_pool(slug, assignment.pool_id)


def _plan_page(slug: str, pool: str) -> HttpResponse:
    """The Assignments page at its planning forms, with the pool asked for (if a number)."""
    response = redirect("labelling:list-assignments", slug=slug)
    response["Location"] += (f"?pool={pool}" if pool.isdigit() else "") + "#plan"
    return response


def _to_pool(slug: str, pool_id: int, query: str = "") -> HttpResponse:
    response = redirect("labelling:list-assignments", slug=slug)
    response["Location"] += f"?pool={pool_id}" + (f"&{query}" if query else "")
    return response


@login_required
@require_POST
def edit_lease(request: HttpRequest, slug: str) -> HttpResponse:
    """A lead sets how long a claimed question stays its labeller's without activity."""
    access = project_access(request.user, slug, role=Role.LEAD)
    form = LeaseForm(request.POST)
    if not form.is_valid():
        return render(
            request,
            "labelling/assignments.html",
            _lead_context(request, access, lease_form=form),
            status=400,
        )
    project = leases.set_lease_minutes(
        project=access.project, minutes=form.cleaned_data["lease_minutes"]
    )
    if project.lease_minutes:
        messages.success(
            request,
            f"A question a labeller claims now stays theirs for {project.lease_minutes} "
            f"minute{pluralize(project.lease_minutes)} after their last visit or grade; if they "
            "graded nothing on it by then, it goes back to the pool.",
        )
    else:
        messages.success(request, "Claimed questions now stay their labeller's without limit.")
    response = redirect("labelling:list-assignments", slug=slug)
    response["Location"] += "#leases"
    return response


@login_required
@require_POST
def reassign_assignments(request: HttpRequest, slug: str, pool_id: int) -> HttpResponse:
    """Move the ticked unstarted assignments of a pool to one member, or back to the open
    slots."""
    access = project_access(request.user, slug, role=Role.LEAD)
    pool = get_object_or_404(Pool.objects.in_project(access.project), pk=pool_id)
    in_pool = Assignment.objects.work().filter(pool=pool).select_related("question", "labeller")
    form = BulkReassignForm(
        request.POST, project=access.project, assignment_ids=in_pool.values_list("pk", flat=True)
    )
    back = request.POST.get("back", "")
    query = back if back and "__" not in back and len(back) < 500 else ""
    if not form.is_valid():
        messages.error(request, form.first_problem())
        return _to_pool(slug, pool.pk, query)
    to = form.cleaned_data["to"]
    labeller = None if to == "unassign" else access.project.members().get(pk=int(to))
    chosen = list(in_pool.filter(pk__in=form.cleaned_data["assignment"]).order_by("pk"))
    result = services.reassign_many(assignments=chosen, labeller=labeller, user=request.user)
    (messages.success if result.moved else messages.warning)(
        request, result.describe(labeller=labeller)
    )
    return _to_pool(slug, pool.pk, query)


@login_required
@require_http_methods(["GET", "POST"])
def add_second_labellers(request: HttpRequest, slug: str) -> HttpResponse:
    """POST adds second labellers; a GET (a reload after a refused form) opens the page."""
    access = project_access(request.user, slug, role=Role.LEAD)
    if request.method == "GET":
        return _plan_page(slug, request.GET.get("pool", ""))
    form = SecondLabellersForm(request.POST, project=access.project)
    if form.is_valid():
        data = form.cleaned_data
        try:
            result = services.add_second_labellers(
                pool=data["pool"],
                labellers=list(data["labellers"]),
                double_share=None
                if data["double_percent"] is None
                else data["double_percent"] / 100,
                double_count=data["double_count"],
                seed=data["seed"],
                user=request.user,
            )
        except services.AssignmentError as exc:
            form.add_error(None, str(exc))
        else:
            (messages.success if result.assignments else messages.warning)(
                request, result.describe()
            )
            return _to_pool(slug, data["pool"].pk)
    return render(
        request,
        "labelling/assignments.html",
        _lead_context(request, access, seconds=form),
        status=400,
    )


@login_required
@require_POST
def reassign_assignment(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    access, assignment = _lead_assignment(request, slug, assignment_id)
    form = ReassignForm(request.POST, project=access.project)
    if not form.is_valid():
        messages.error(request, "Choose a member of this project to reassign the question to.")
        return _back_to_pool(slug, assignment)
    try:
        services.reassign(
            assignment=assignment, labeller=form.cleaned_data["labeller"], user=request.user
        )
        messages.success(
            request,
            f"{assignment.question.external_id} (slot {assignment.slot}) now belongs to "
            f"{form.cleaned_data['labeller'].get_username()}.",
        )
    except services.AssignmentError as exc:
        messages.error(request, str(exc))
    return _back_to_pool(slug, assignment)


@login_required
@require_POST
def unassign_assignment(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    _, assignment = _lead_assignment(request, slug, assignment_id)
    try:
        moved = services.unassign(assignment=assignment, user=request.user)
        name = f"{assignment.question.external_id} (slot {assignment.slot})"
        if moved is None:
            text = (
                f"{name} was a third vote on disputed passages and no other labeller can see "
                "them: they now wait for a lead on the Adjudication page."
            )
        elif moved.labeller_id is not None:
            text = (
                f"{name} is a third vote on disputed passages: it now belongs to "
                f"{moved.labeller.get_username()}, the next labeller who can see them."
            )
        else:
            text = f"{name} is unassigned; the next labeller to press “Next question” can claim it."
        messages.success(request, text)
    except services.AssignmentError as exc:
        messages.error(request, str(exc))
    return _back_to_pool(slug, assignment)


@login_required
@require_GET
def show_assignment(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    """A lead's read-only view of one labeller's work on one question, with its history."""
    access, assignment = _lead_assignment(request, slug, assignment_id)
    candidates = (
        Candidate.objects.of_assignment(assignment)
        .not_hidden_from(request.user)
        .select_related("version__document")
        .defer("version__text", "version__minhash", "version__extraction")
        .order_by("shuffle_rank", "pk")
    )
    candidates = list(candidates)
    judgements = {
        j.candidate_id: j
        for j in Judgement.objects.filter(
            assignment=assignment, candidate__in=[c.pk for c in candidates]
        )
        .select_related("guideline")
        .prefetch_related("spans")
    }
    # History rows of passages an access group hides from the viewer are left out, like the
    # passages themselves; the others are numbered as in the judgements table.
    number = {c.pk: i for i, c in enumerate(candidates, start=1)}
    changes = [
        (change, number.get(change.candidate_id))
        for change in Change.objects.filter(assignment=assignment)
        .filter(Q(candidate__isnull=True) | Q(candidate__in=list(number)))
        .select_related("made_by", "undoes")
        .order_by("-pk")[:200]
    ]
    others = Assignment.objects.other_slots_of(assignment).work().select_related("labeller")
    context = {
        "access": access,
        "project": access.project,
        "assignment": assignment,
        "rows": [(c, judgements.get(c.pk)) for c in candidates],
        "verdict": Verdict.objects.filter(assignment=assignment)
        .select_related("guideline")
        .first(),
        "changes": changes,
        "others": others,
    }
    return render(request, "labelling/show_assignment.html", context)


# Excluding a question from its set -----------------------------------------------------------


def _lead_question(request, slug: str, set_id: int, question_id: int):
    access = project_access(request.user, slug, role=Role.LEAD)
    question = get_object_or_404(
        Question.objects.filter(question_set__in=QuestionSet.objects.shown_to(access)),
        question_set__project=access.project,
        question_set_id=set_id,
        pk=question_id,
    )
    return access, question


def _after_exclusion(request, slug: str, question: Question) -> HttpResponse:
    if request.POST.get("next") == "gold":
        return redirect("labelling:show-gold", slug=slug, set_id=question.question_set_id)
    return redirect("labelling:list-assignments", slug=slug)


@login_required
@require_POST
def exclude_question(request: HttpRequest, slug: str, set_id: int, question_id: int):
    _, question = _lead_question(request, slug, set_id, question_id)
    form = ExcludeQuestionForm(request.POST)
    if not form.is_valid():
        messages.error(request, form.first_problem())
        return _after_exclusion(request, slug, question)
    try:
        exclusion.exclude_question(
            question=question, user=request.user, reason=form.cleaned_data["reason"]
        )
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"{question.external_id} is excluded from {question.question_set.name}: it is "
            "nobody's work any more and no part of the gold set. Its labels are kept.",
        )
    return _after_exclusion(request, slug, question)


@login_required
@require_POST
def include_question(request: HttpRequest, slug: str, set_id: int, question_id: int):
    _, question = _lead_question(request, slug, set_id, question_id)
    exclusion.include_question(question=question, user=request.user)
    messages.success(
        request, f"{question.external_id} is part of {question.question_set.name} again."
    )
    return _after_exclusion(request, slug, question)
