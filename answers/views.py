"""Answer runs of a question set (upload, list, plan their review), the leads' reference
answers, and a labeller's answer review (their own assignments only: blind like grading)."""

from __future__ import annotations

import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from answers.forms import (
    AnswerGradeForm,
    AnswerReviewPlanForm,
    AnswerUploadForm,
    ReferenceFactFormSet,
)
from answers.models import Answer, AnswerAssignment
from answers.services import adjudication, review
from answers.services import runs as services
from answers.services.fact_links import changed_fact_links
from corpus.access import project_access
from corpus.models import Document, Role
from goldset.errors import ServiceError
from labelling.highlight import highlight
from labelling.models import QuestionSet
from labelling.passage_html import passage_html
from labelling.services.guidelines import current_guideline, render_guideline
from labelling.views.grading import OTHER_ACCOUNT

# The id of a row of the adjudication queue, as a redirect's fragment.
ROW_ID = re.compile(r"item-\d+-[a-z0-9-]+")


@login_required
@require_http_methods(["GET", "POST"])
def list_answer_runs(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    question_set = get_object_or_404(
        QuestionSet.objects.shown_to(access), project=access.project, pk=set_id
    )
    form = AnswerUploadForm(request.POST or None, request.FILES or None)
    problems: list = []  # an upload's bad lines are on its job's page
    error = ""
    if form.is_valid():
        upload = form.cleaned_data["file"]
        # Reading and checking every line can take seconds: a job does it, its page follows.
        try:
            job = services.start_answer_import(
                question_set=question_set,
                data=upload.read(),
                run_name=form.cleaned_data["name"],
                source=upload.name,
                user=request.user,
            )
        except ServiceError as exc:
            error = str(exc)
        else:
            return redirect("corpus:show-job", slug=slug, job_id=job.pk)
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "answers/list_answer_runs.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "runs": question_set.answer_runs.order_by("-created_at"),
            "rows": services.reference_rows(question_set=question_set),
            "changed_links": changed_fact_links(question_set=question_set, viewer=request.user),
            "form": form,
            "plan_form": AnswerReviewPlanForm(question_set=question_set),
            "error": error,
            "problems": problems,
        },
        status=status,
    )


@login_required
@require_http_methods(["POST"])
def plan_answer_review(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    question_set = get_object_or_404(
        QuestionSet.objects.shown_to(access), project=access.project, pk=set_id
    )
    form = AnswerReviewPlanForm(request.POST, question_set=question_set)
    if not form.is_valid():
        name, errors = next(iter(form.errors.items()))
        messages.error(request, f"{form.fields[name].label}: {errors[0]}")
        return redirect("answers:list-answer-runs", slug=slug, set_id=question_set.pk)
    try:
        plan = review.plan_answer_review(
            run=form.cleaned_data["run"],
            labellers=list(form.cleaned_data["labellers"]),
            double_share=form.cleaned_data["double_percent"] / 100,
        )
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"{plan.assignments} reviews planned for {plan.answers} answers"
            + (
                f"; {plan.unreachable} answers cite documents none of them may see"
                if plan.unreachable
                else ""
            )
            + ".",
        )
    return redirect("answers:list-answer-runs", slug=slug, set_id=question_set.pk)


@login_required
@require_http_methods(["GET", "POST"])
def edit_reference_answer(
    request: HttpRequest, slug: str, set_id: int, question_id: int
) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    question_set = get_object_or_404(
        QuestionSet.objects.shown_to(access), project=access.project, pk=set_id
    )
    question = get_object_or_404(question_set.questions.included(), pk=question_id)
    current = services.current_reference(question)
    facts = list(current.facts.all()) if current is not None else []
    # The question's gold spans on documents the lead may see, offered by their quoted text.
    offered = services.fact_span_choices(question=question, viewer=request.user)
    choices = [(key, services.describe_span(span)) for key, span in offered.items()]
    # Links to spans not offered (no longer gold, or hidden from this lead) stay as they are.
    kept = [[span for span in f.spans if services.span_key(span) not in offered] for f in facts]
    initial = [
        {
            "text": f.text,
            "vital": "1" if f.vital else "0",
            "spans": [key for key in map(services.span_key, f.spans) if key in offered],
        }
        for f in facts
    ]
    formset = ReferenceFactFormSet(
        request.POST or None,
        initial=initial,
        prefix="facts",
        form_kwargs={"span_choices": choices},
    )
    error = ""
    if request.method == "POST" and formset.is_valid():
        rows = [
            services.FactInput(
                text=row["text"],
                vital=row["vital"],
                spans=tuple(
                    [services.span_of(offered[key]) for key in row.get("spans", [])]
                    + (kept[index] if index < len(kept) else [])
                ),
            )
            for index, row in enumerate(formset.cleaned_data)
            if row.get("text", "").strip()
        ]
        try:
            reference = services.record_reference_answer(
                question=question, facts=rows, user=request.user
            )
        except ServiceError as exc:
            error = str(exc)
        else:
            messages.success(
                request,
                f"Reference answer of {question.external_id} saved as v{reference.version}.",
            )
            return redirect("answers:list-answer-runs", slug=slug, set_id=question_set.pk)
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "answers/edit_reference_answer.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "question": question,
            "current": current,
            "versions": question.reference_answers.count(),
            "formset": formset,
            "rows": list(zip(formset, [len(k) for k in kept] + [0] * len(formset), strict=False)),
            "has_gold_spans": bool(offered),
            "changed_links": changed_fact_links(
                question_set=question_set, viewer=request.user, question=question
            ),
            "error": error,
        },
        status=status,
    )


# The labeller's answer review ----------------------------------------------------------------


@login_required
@require_http_methods(["GET"])
def list_answer_reviews(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    assignments = (
        AnswerAssignment.objects.filter(labeller=request.user, answer__run__project=access.project)
        .select_related("answer__question", "answer__run")
        .order_by("done_at", "pk")
    )
    return render(
        request,
        "answers/list_answer_reviews.html",
        {"access": access, "project": access.project, "assignments": assignments},
    )


def _own_assignment(request: HttpRequest, slug: str, answer_assignment_id: int):
    access = project_access(request.user, slug)
    assignment = get_object_or_404(
        AnswerAssignment.objects.select_related("answer__question", "answer__run"),
        pk=answer_assignment_id,
        labeller=request.user,
        answer__run__project=access.project,
    )
    # Access changed since planning: a passage the labeller may no longer see hides the review.
    if assignment.answer.passages.filter(
        version__document__in=Document.objects.hidden_from(request.user)
    ).exists():
        raise Http404
    return access, assignment


def _refused(request: HttpRequest, access, assignment, error: ServiceError) -> HttpResponse:
    """The review page again, with what a write refused (400)."""
    context = _review_context(access, assignment, error=str(error))
    return render(request, "answers/review_answer.html", context, status=400)


def _review_context(access, assignment, *, error: str = "") -> dict:
    answer = assignment.answer
    passages = review.passages_of(assignment)
    by_pk = {passage.pk: passage for passage in passages}
    claims = []
    sentences = list(answer.sentences.order_by("position"))
    all_claims = list(
        assignment.claims.prefetch_related("citations", "evidence").order_by("position")
    )
    for index, claim in enumerate(all_claims):
        following = all_claims[index + 1] if index + 1 < len(all_claims) else None
        claims.append(
            {
                "claim": claim,
                "text": answer.text[claim.start : claim.end],
                "cuts": _cuts(answer.text, claim.start, claim.end),
                "evidence": list(claim.evidence.all()),
                "joinable": following is not None
                and any(s.start <= claim.start and following.end <= s.end for s in sentences),
                "citations": [
                    {
                        "judgement": c,
                        "passage": by_pk[c.passage_id],
                        "text": _passage_text(by_pk[c.passage_id]),
                    }
                    for c in claim.citations.all()
                ],
            }
        )
        claims[-1]["supporting"] = _supporting(claims[-1]["citations"], claim.supporting_sets)
    reference = review.reference_for(assignment)
    presence = dict(assignment.facts.values_list("fact_id", "present"))
    facts = (
        [{"fact": fact, "present": presence.get(fact.pk, "")} for fact in reference.facts.all()]
        if reference is not None
        else []
    )
    context = [{"passage": p, "html": _passage_html(p)} for p in passages if p.role == "context"]
    guideline = current_guideline(access.project)
    return {
        "access": access,
        "project": access.project,
        "assignment": assignment,
        "answer": answer,
        "claims": claims,
        "facts": facts,
        "context": context,
        "missing": review.missing_grades(assignment),
        "progress": _progress(assignment, claims, facts),
        "reviews": _reviews_left(assignment),
        # The guideline beside the work, as on the grading page (one guideline per project).
        "guideline": guideline,
        "guideline_html": render_guideline(guideline.text) if guideline else "",
        "error": error,
    }


def _progress(assignment, claims: list[dict], facts: list[dict]) -> dict:
    """The status bar's count: the decisions the page asks for (each claim's support, each
    citation's grade, each reference fact unless the system refused) and how many are made."""
    made = [row["claim"].support != "" for row in claims]
    made += [cite["judgement"].grade is not None for row in claims for cite in row["citations"]]
    if not assignment.answer.refused:
        made += [row["present"] != "" for row in facts]
    return {"decided": sum(made), "total": len(made)}


def _reviews_left(assignment) -> dict:
    """The labeller's answer reviews in this project: how many are done and how many to go."""
    mine = AnswerAssignment.objects.filter(
        labeller_id=assignment.labeller_id, answer__run__project_id=assignment.answer.run.project_id
    )
    return {
        "done": mine.filter(done_at__isnull=False).count(),
        "remaining": mine.filter(done_at__isnull=True).count(),
    }


def _supporting(citations: list[dict], groups: list[list[int]]) -> dict | None:
    """The supporting-citations control of a claim: only when two or more of its citations
    are graded partly (1), the case where ALCE needs to know which support it together."""
    partial = [
        {"index": index, "doc_id": cite["passage"].version.document.doc_id}
        for index, cite in enumerate(citations)
        if cite["judgement"].grade == 1
    ]
    if len(partial) < 2:
        return None
    names = {index: cite["passage"].version.document.doc_id for index, cite in enumerate(citations)}
    return {
        "partial": partial,
        "groups": [[names.get(i, "?") for i in group] for group in groups],
    }


def _cuts(text: str, start: int, end: int) -> list[tuple[int, str]]:
    """Where a claim may be split: after each of its words but the last, shown as the words
    either side of the cut."""
    cuts = []
    for position in range(start + 1, end):
        if text[position].isspace() and not text[position - 1].isspace():
            before = text[start:position].split()[-1]
            after = text[position:end].split()[0]
            cuts.append((position, f"… {before} | {after} …"))
    return cuts


def _passage_html(passage) -> str:
    """A context passage as the grading page shows text (labelling.passage_html), each
    character at its offset in the version's text, so a selection is saved where it is."""
    start = 0 if passage.start is None else passage.start
    return passage_html(highlight(_passage_text(passage), offset=start), context=False)


def _passage_text(passage) -> str:
    text = passage.version.text
    if passage.start is None:
        return text
    return text[passage.start : passage.end]


@login_required
@require_http_methods(["GET"])
def review_answer(request: HttpRequest, slug: str, answer_assignment_id: int) -> HttpResponse:
    access, assignment = _own_assignment(request, slug, answer_assignment_id)
    return render(request, "answers/review_answer.html", _review_context(access, assignment))


@login_required
@require_http_methods(["POST"])
def grade_answer(request: HttpRequest, slug: str, answer_assignment_id: int) -> HttpResponse:
    """One grade, saved at once (the page sends each change as it is made, through the
    kept-action queue, which may resend it later: a grade sets a value, so a repeat is
    harmless). An action made by another account than the session's is refused as such."""
    form = AnswerGradeForm(request.POST)
    opened_for = form.data.get("labeller", "")
    if opened_for and opened_for != str(request.user.pk):
        response = HttpResponse(OTHER_ACCOUNT.format(user=request.user.get_username()), status=403)
        response["X-Goldset-Refused"] = "other-account"
        return response
    access, assignment = _own_assignment(request, slug, answer_assignment_id)
    error = ""
    if not form.is_valid():
        error = next(iter(form.errors.values()))[0]
    else:
        data = form.cleaned_data
        try:
            if data["kind"] == "support":
                review.record_claim_support(
                    assignment=assignment,
                    labeller=request.user,
                    claim=data["claim"],
                    support=data["value"],
                )
            elif data["kind"] == "citation":
                review.record_citation_grade(
                    assignment=assignment,
                    labeller=request.user,
                    claim=data["claim"],
                    passage=data["passage"],
                    grade=data["value"],
                )
            elif data["kind"] == "fact":
                review.record_fact_presence(
                    assignment=assignment,
                    labeller=request.user,
                    fact=data["fact"],
                    present=data["value"],
                )
            else:
                review.set_wrongly_refused(
                    assignment=assignment, labeller=request.user, value=data["value"]
                )
        except ServiceError as exc:
            error = str(exc)
    assignment.refresh_from_db()
    context = _review_context(access, assignment, error=error)
    # The page already shows the choice made; an htmx reply brings the status bar's progress
    # and message only.
    template = "answers/review_answer.html#update" if request.htmx else "answers/review_answer.html"
    return render(request, template, context, status=400 if error else 200)


@login_required
@require_http_methods(["POST"])
def finish_answer_review(
    request: HttpRequest, slug: str, answer_assignment_id: int
) -> HttpResponse:
    access, assignment = _own_assignment(request, slug, answer_assignment_id)
    try:
        review.finish_answer_review(assignment=assignment, labeller=request.user)
    except ServiceError as exc:
        return _refused(request, access, assignment, exc)
    following = (
        AnswerAssignment.objects.filter(
            labeller=request.user, answer__run__project=access.project, done_at__isnull=True
        )
        .order_by("pk")
        .first()
    )
    messages.success(request, "Answer review saved.")
    if following is not None:
        return redirect("answers:review-answer", slug=slug, answer_assignment_id=following.pk)
    return redirect("answers:list-answer-reviews", slug=slug)


# Agreement and the lead's decisions ----------------------------------------------------------


@login_required
@require_http_methods(["GET"])
def list_answer_adjudication(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    question_set = get_object_or_404(
        QuestionSet.objects.shown_to(access), project=access.project, pk=set_id
    )
    agreement = adjudication.answer_agreement(question_set=question_set, viewer=request.user)
    disputes = adjudication.answer_disputes(question_set=question_set, viewer=request.user)
    return render(
        request,
        "answers/list_answer_adjudication.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "agreement": list(agreement.items()),
            "disputes": disputes,
            "undecided": sum(dispute.undecided for dispute in disputes),
        },
    )


def _visible_answer(request: HttpRequest, question_set: QuestionSet, answer_id: str) -> Answer:
    """An answer of the set the lead may adjudicate (`adjudication.adjudicable`), else 404: not
    even that it exists."""
    answers = adjudication.adjudicable(question_set, request.user)
    return get_object_or_404(answers, pk=answer_id if answer_id.isdigit() else 0)


@login_required
@require_http_methods(["POST"])
def decide_answer_item(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    """The lead's decision on one item the two reviews of an answer differ on; back to the
    queue on the row the page names as the next one (``next``)."""
    access = project_access(request.user, slug, role=Role.LEAD)
    question_set = get_object_or_404(
        QuestionSet.objects.shown_to(access), project=access.project, pk=set_id
    )
    answer = _visible_answer(request, question_set, request.POST.get("answer", ""))
    following = request.POST.get("next", "")
    try:
        adjudication.decide_item(
            answer=answer,
            item=request.POST.get("item", ""),
            value=request.POST.get("value", ""),
            user=request.user,
        )
    except ServiceError as exc:
        messages.error(request, f"{answer.question.external_id}: {exc}")
        following = request.POST.get("row", "")
    url = reverse("answers:list-answer-adjudication", args=[slug, question_set.pk])
    if ROW_ID.fullmatch(following):
        url += f"#{following}"
    return redirect(url)


@login_required
@require_http_methods(["POST"])
def resolve_answer(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    access = project_access(request.user, slug, role=Role.LEAD)
    question_set = get_object_or_404(
        QuestionSet.objects.shown_to(access), project=access.project, pk=set_id
    )
    answer = _visible_answer(request, question_set, request.POST.get("answer", ""))
    chosen_id = request.POST.get("chosen", "")
    chosen = get_object_or_404(
        AnswerAssignment, answer=answer, pk=chosen_id if chosen_id.isdigit() else 0
    )
    try:
        adjudication.resolve_answer(answer=answer, chosen=chosen, user=request.user)
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"{answer.question.external_id}: {chosen.labeller.get_username()}'s review stands.",
        )
    return redirect("answers:list-answer-adjudication", slug=slug, set_id=question_set.pk)


@login_required
@require_http_methods(["POST"])
def split_answer_claim(request: HttpRequest, slug: str, answer_assignment_id: int) -> HttpResponse:
    """Split a claim in two, or join it with the next one again (``join``)."""
    access, assignment = _own_assignment(request, slug, answer_assignment_id)
    claim, at = request.POST.get("claim", ""), request.POST.get("at", "")
    try:
        if not claim.isdigit():
            raise ServiceError("Which claim? Reload the page.")
        if "join" in request.POST:
            review.join_claims(assignment=assignment, labeller=request.user, claim=int(claim))
        elif not at.isdigit():
            raise ServiceError("Choose where to split the claim.")
        else:
            review.split_claim(
                assignment=assignment, labeller=request.user, claim=int(claim), at=int(at)
            )
    except ServiceError as exc:
        return _refused(request, access, assignment, exc)
    return _back_to(slug, assignment, f"claim-{claim}")


def _back_to(slug: str, assignment, row: str) -> HttpResponse:
    """The review page again, on the row the labeller was working on (answer_review.js makes
    the row the URL's fragment names the current one)."""
    url = reverse("answers:review-answer", args=[slug, assignment.pk])
    return redirect(f"{url}#{row}" if row else url)


@login_required
@require_http_methods(["POST"])
def mark_supporting_citations(
    request: HttpRequest, slug: str, answer_assignment_id: int
) -> HttpResponse:
    """Record a group of partial citations that support a claim together, or remove one."""
    access, assignment = _own_assignment(request, slug, answer_assignment_id)
    claim, remove = request.POST.get("claim", ""), request.POST.get("remove", "")
    chosen = request.POST.getlist("citation")
    try:
        if not claim.isdigit():
            raise ServiceError("Which claim? Reload the page.")
        if remove:
            if not remove.isdigit():
                raise ServiceError("That group of citations is already gone; reload the page.")
            review.remove_supporting_set(
                assignment=assignment, labeller=request.user, claim=int(claim), group=int(remove)
            )
        else:
            if not all(value.isdigit() for value in chosen):
                raise ServiceError("Supporting citations: choose citations of this claim.")
            review.add_supporting_set(
                assignment=assignment,
                labeller=request.user,
                claim=int(claim),
                citations=[int(value) for value in chosen],
            )
    except ServiceError as exc:
        return _refused(request, access, assignment, exc)
    return _back_to(slug, assignment, f"supporting-{claim}")


@login_required
@require_http_methods(["POST"])
def mark_claim_evidence(request: HttpRequest, slug: str, answer_assignment_id: int) -> HttpResponse:
    """Add a selected span of a context passage as a claim's evidence, or remove one."""
    access, assignment = _own_assignment(request, slug, answer_assignment_id)
    fields = {name: request.POST.get(name, "") for name in ("claim", "version", "start", "end")}
    try:
        if request.POST.get("remove", "").isdigit():
            review.remove_claim_evidence(
                assignment=assignment, labeller=request.user, evidence=int(request.POST["remove"])
            )
        elif not all(value.isdigit() for value in fields.values()):
            raise ServiceError("Select some text of a context passage, then press e.")
        else:
            review.add_claim_evidence(
                assignment=assignment,
                labeller=request.user,
                quote=request.POST.get("quote", ""),
                **{name: int(value) for name, value in fields.items()},
            )
    except ServiceError as exc:
        return _refused(request, access, assignment, exc)
    claim = request.POST.get("claim", "")
    return _back_to(slug, assignment, f"claim-{claim}" if claim.isdigit() else "")
