"""Leads' pages: agreement statistics, the adjudication queue, resolving an item, the gold view.

Every page here needs the lead role: only leads may see more than one labeller's votes.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from corpus.access import project_access
from corpus.models import Role
from corpus.visibility import restricted_elsewhere
from goldset.errors import ServiceError
from labelling import escalation
from labelling.agreement import GUIDELINE_ALPHA_THRESHOLD
from labelling.forms import ResolveItemForm, ResolveVerdictForm
from labelling.highlight import highlight
from labelling.models import Candidate, QuestionSet
from labelling.passage_html import passage_html
from labelling.resolution import DEFAULT_MIN_SPAN_F1, PENDING_KINDS
from labelling.services import adjudication, lead_pages
from labelling.services.gold import next_to_decide
from labelling.services.machine_votes import machine_counting

CONTEXT_CHARS = 400


def _lead_set(request: HttpRequest, slug: str, set_id: int):
    access = project_access(request.user, slug, role=Role.LEAD)
    question_set = get_object_or_404(
        QuestionSet.objects.shown_to(access), project=access.project, pk=set_id
    )
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
        question_set=question_set, min_span_f1=_min_span_f1(request), viewer=request.user
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
    question = None
    if request.GET.get("question", "").isdigit():
        question = question_set.questions.filter(pk=request.GET["question"]).first()
    listing = lead_pages.adjudication_page(
        question_set=question_set,
        viewer=request.user,
        min_span_f1=min_f1,
        question_id=question.pk if question is not None else None,
        page=request.GET.get("page"),
    )
    return render(
        request,
        "labelling/list_adjudication.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "listing": listing,
            "page": listing.page,
            "open_entries": listing.open_entries,
            "resolved_entries": listing.resolved_entries,
            "single_entries": listing.single_entries,
            "third_entries": listing.third_entries,
            "escalation_rule": escalation.RULE_TEXT[access.project.escalate_on],
            "order_rule": escalation.ORDER_TEXT,
            "min_span_f1": min_f1,
            "question": question,
            "ai_vote": machine_counting(question_set=question_set),
            "restricted_elsewhere": restricted_elsewhere(
                project=access.project, viewer=request.user
            ),
        },
    )


def _after_resolving(request, slug: str, question_set, following, *, from_gold: bool):
    """Straight on to the next item to decide, or back to the list when none is left."""
    if following is None:
        messages.success(request, "Resolved. Nothing else is waiting for a decision here.")
        target = "labelling:show-gold" if from_gold else "labelling:list-adjudication"
        return redirect(target, slug=slug, set_id=question_set.pk)
    messages.success(request, "Resolved; the labellers' votes are kept. Here is the next one.")
    args = [slug, question_set.pk, following.pool.pk, following.question.pk]
    if following.candidate is not None:
        url = reverse("labelling:resolve-item", args=[*args, following.candidate.pk])
    else:
        url = reverse("labelling:resolve-verdict", args=args)
    return redirect(url + ("?from=gold" if from_gold else ""))


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
        viewer=request.user,
    )
    if item is None:
        raise Http404("No such item.")
    from_gold = request.GET.get("from") == "gold"
    candidate: Candidate = item.candidate
    initial = {"grade": item.resolution.grade} if item.resolution else {}
    form = ResolveItemForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        following = next_to_decide(
            question_set=question_set,
            viewer=request.user,
            pool_id=pool_id,
            question_id=question_id,
            candidate_id=candidate_id,
            from_gold=from_gold,
            min_span_f1=_min_span_f1(request),
        )
        try:
            adjudication.resolve_item_from(item=item, user=request.user, **form.cleaned_data)
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            return _after_resolving(request, slug, question_set, following, from_gold=from_gold)
    text = candidate.version.text
    layers = {name: vote.spans for name, vote in zip("ab", item.votes, strict=False)}
    if item.machine_votes:  # the AI judge's evidence, marked apart from the labellers'
        layers["j"] = tuple(span for vote in item.machine_votes for span in vote.spans)
    if item.resolution is not None:
        layers["r"] = tuple((s.start, s.end) for s in item.resolution.spans.all())
    everything = [p for spans in layers.values() for s in spans for p in s] + [
        candidate.start,
        candidate.end,
    ]
    whole = request.GET.get("whole") == "1"
    window = (
        (0, len(text))
        if whole
        else (
            max(0, min(everything) - CONTEXT_CHARS),
            min(len(text), max(everything) + CONTEXT_CHARS),
        )
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
            "passage_text": passage_html(
                highlight(
                    text, window=window, passage=(candidate.start, candidate.end), layers=layers
                ),
                context=False,
                layer_marks=True,
            ),
            "window": window,
            "whole": whole,
            "text_length": len(text),
            "reason": adjudication.resolve_item_reason(item, min_span_f1=_min_span_f1(request)),
            "from_gold": from_gold,
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
        question_set=question_set, pool_id=pool_id, question_id=question_id, viewer=request.user
    )
    if votes is None:
        raise Http404("No such item.")
    from_gold = request.GET.get("from") == "gold"
    initial = {"outcome": votes.resolution.outcome} if votes.resolution else {}
    form = ResolveVerdictForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        following = next_to_decide(
            question_set=question_set,
            viewer=request.user,
            pool_id=pool_id,
            question_id=question_id,
            candidate_id=None,
            from_gold=from_gold,
        )
        adjudication.resolve(
            pool=votes.pool,
            question=votes.question,
            candidate=None,
            user=request.user,
            outcome=form.cleaned_data["outcome"],
            note=form.cleaned_data["note"],
        )
        return _after_resolving(request, slug, question_set, following, from_gold=from_gold)
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
            "from_gold": from_gold,
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def show_gold(request: HttpRequest, slug: str, set_id: int) -> HttpResponse:
    access, question_set = _lead_set(request, slug, set_id)
    by = "reason" if request.GET.get("group") == "reason" else "question"
    kind = request.GET.get("kind", "")
    gold = lead_pages.gold_page(
        question_set=question_set,
        viewer=request.user,
        min_span_f1=_min_span_f1(request),
        by=by,
        kind=kind,
        page=request.GET.get("page"),
        rows_page=request.GET.get("rows"),
    )
    return render(
        request,
        "labelling/show_gold.html",
        {
            "access": access,
            "project": access.project,
            "question_set": question_set,
            "gold": gold,
            "counts": gold.counts,
            "kind": kind if kind in PENDING_KINDS else "",
            "by": by,
            "page": gold.groups,
            "rows": gold.rows,
            "changed": gold.changed,
            "answerable": gold.answerable,
            "unanswerable": gold.unanswerable,
            "excluded": question_set.questions.excluded()
            .select_related("excluded_by")
            .order_by("excluded_at"),
            "several_pools": question_set.pools.count() > 1,
            "ai_vote": machine_counting(question_set=question_set),
            "restricted_elsewhere": restricted_elsewhere(
                project=access.project, viewer=request.user
            ),
        },
    )
