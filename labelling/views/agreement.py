"""Leads' pages: agreement statistics, the adjudication queue, resolving an item, the gold view.

Every page here needs the lead role: only leads may see more than one labeller's votes.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from corpus.access import project_access
from corpus.models import Document, Role
from goldset.errors import ServiceError
from labelling.agreement import GUIDELINE_ALPHA_THRESHOLD
from labelling.forms import ResolveItemForm, ResolveVerdictForm
from labelling.highlight import highlight
from labelling.models import Candidate, QuestionSet
from labelling.resolution import DEFAULT_MIN_SPAN_F1
from labelling.services import adjudication
from labelling.services.gold import resolve_gold

CONTEXT_CHARS = 400


def _lead_set(request: HttpRequest, slug: str, set_id: int):
    access = project_access(request.user, slug, role=Role.LEAD)
    question_set = get_object_or_404(QuestionSet, project=access.project, pk=set_id)
    return access, question_set


def _min_span_f1(request: HttpRequest) -> float:
    try:
        value = float(request.GET.get("min_span_f1", DEFAULT_MIN_SPAN_F1))
    except ValueError:
        return DEFAULT_MIN_SPAN_F1
    return min(max(value, 0.0), 1.0)


@login_required
@require_GET
def show_agreement(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    access, question_set = _lead_set(request, slug, set_id)
    report = adjudication.agreement_report(
        question_set=question_set, min_span_f1=_min_span_f1(request)
    )
    confusion = report["confusion"]
    peak = max((c for row in confusion for c in row), default=0) or 1
    heat = [[{"count": c, "level": round(9 * c / peak)} for c in row] for row in confusion]
    return render(
        request,
        "labelling/show_agreement.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "report": report,
            "heat": heat,
            "threshold": GUIDELINE_ALPHA_THRESHOLD,
        },
    )


@login_required
@require_GET
def list_adjudication(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    access, question_set = _lead_set(request, slug, set_id)
    min_f1 = _min_span_f1(request)
    entries = adjudication.adjudication_queue(
        question_set=question_set, min_span_f1=min_f1, include_resolved=True
    )
    open_entries = [e for e in entries if e.reason != "resolved"]
    return render(
        request,
        "labelling/list_adjudication.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "open_entries": open_entries,
            "resolved_entries": [e for e in entries if e.reason == "resolved"],
            "min_span_f1": min_f1,
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def resolve_item(
    request: HttpRequest, slug: str, set_id: int, pool_id: int, question_id: int, candidate_id: int
) -> HttpResponse:
    access, question_set = _lead_set(request, slug, set_id)
    item = adjudication.item_votes(
        question_set=question_set,
        pool_id=pool_id,
        question_id=question_id,
        candidate_id=candidate_id,
    )
    if item is None or not (
        Document.objects.visible_to(request.user)
        .filter(pk=item.candidate.version.document_id)
        .exists()
    ):
        raise Http404("No such item.")
    candidate: Candidate = item.candidate
    initial = {"grade": item.resolution.grade} if item.resolution else {}
    form = ResolveItemForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            adjudication.resolve_item_from(item=item, user=request.user, **form.cleaned_data)
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Resolved. The labellers' votes are kept.")
            return redirect("labelling:list-adjudication", slug=slug, set_id=set_id)
    text = candidate.version.text
    layers = {name: vote.spans for name, vote in zip("ab", item.votes, strict=False)}
    if item.resolution is not None:
        layers["r"] = tuple((s.start, s.end) for s in item.resolution.spans.all())
    everything = [p for spans in layers.values() for s in spans for p in s] + [
        candidate.start,
        candidate.end,
    ]
    window = (
        max(0, min(everything) - CONTEXT_CHARS),
        min(len(text), max(everything) + CONTEXT_CHARS),
    )
    return render(
        request,
        "labelling/resolve_item.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "question": item.question,
            "candidate": candidate,
            "item": item,
            "form": form,
            "segments": highlight(text, window=window, layers=layers),
            "window": window,
            "text_length": len(text),
            "reason": adjudication.resolve_item_reason(item, min_span_f1=_min_span_f1(request)),
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def resolve_verdict(
    request: HttpRequest, slug: str, set_id: int, pool_id: int, question_id: int
) -> HttpResponse:
    access, question_set = _lead_set(request, slug, set_id)
    votes = adjudication.question_votes(
        question_set=question_set, pool_id=pool_id, question_id=question_id
    )
    if votes is None:
        raise Http404("No such item.")
    initial = {"outcome": votes.resolution.outcome} if votes.resolution else {}
    form = ResolveVerdictForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        adjudication.resolve(
            pool=votes.pool,
            question=votes.question,
            candidate=None,
            user=request.user,
            outcome=form.cleaned_data["outcome"],
            note=form.cleaned_data["note"],
        )
        messages.success(request, "Verdict resolved.")
        return redirect("labelling:list-adjudication", slug=slug, set_id=set_id)
    return render(
        request,
        "labelling/resolve_verdict.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "question": votes.question,
            "votes": votes,
            "form": form,
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def show_gold(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    access, question_set = _lead_set(request, slug, set_id)
    gold = resolve_gold(question_set=question_set, min_span_f1=_min_span_f1(request))
    visible = set(
        Document.objects.filter(project=access.project)
        .visible_to(request.user)
        .values_list("doc_id", flat=True)
    )
    return render(
        request,
        "labelling/show_gold.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "gold": gold,
            "visible_doc_ids": visible,
        },
    )
