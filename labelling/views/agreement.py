"""Leads' pages: agreement statistics, the adjudication queue, resolving an item, the gold view.

Every page here needs the lead role: only leads may see more than one labeller's votes.
"""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from corpus.access import project_access
from corpus.models import Document, Role
from goldset.errors import ServiceError
from labelling.agreement import GUIDELINE_ALPHA_THRESHOLD
from labelling.models import Candidate, Pool, Question, QuestionSet, VerdictOutcome
from labelling.resolution import DEFAULT_MIN_SPAN_F1, union
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


@dataclass(frozen=True)
class Segment:
    text: str
    layers: str  # "", "a", "b", "ab", "r": who marked this stretch


def highlight(
    text: str, window: tuple[int, int], layers: dict[str, tuple[tuple[int, int], ...]]
) -> list[Segment]:
    """Cut `text[window]` into segments labelled by which layers' spans cover them."""
    start, end = window
    cuts = {start, end}
    for spans in layers.values():
        for s, e in spans:
            cuts.update(p for p in (s, e) if start < p < end)
    points = sorted(cuts)
    segments = []
    for left, right in zip(points, points[1:], strict=False):
        names = "".join(
            sorted(
                n for n, spans in layers.items() if any(s < right and left < e for s, e in spans)
            )
        )
        segments.append(Segment(text=text[left:right], layers=names))
    return segments


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


class ResolveItemForm(forms.Form):
    grade = forms.TypedChoiceField(
        choices=[(0, "0 — not relevant"), (1, "1 — partially answers"), (2, "2 — fully answers")],
        coerce=int,
        widget=forms.RadioSelect,
    )
    spans_from = forms.ChoiceField(
        choices=[
            ("both", "Both labellers' spans (union)"),
            ("a", "First labeller's"),
            ("b", "Second labeller's"),
            ("candidate", "The candidate passage"),
            ("custom", "These offsets:"),
        ],
        initial="both",
    )
    custom_spans = forms.CharField(
        required=False, help_text="start-end pairs, e.g. 120-410, 500-620"
    )
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))

    def clean_custom_spans(self):
        raw = self.cleaned_data["custom_spans"].strip()
        spans = []
        for part in filter(None, (p.strip() for p in raw.replace(";", ",").split(","))):
            left, _, right = part.partition("-")
            if not (left.strip().isdigit() and right.strip().isdigit()):
                raise forms.ValidationError(f"{part!r} is not start-end.")
            spans.append((int(left), int(right)))
        return spans


class ResolveVerdictForm(forms.Form):
    outcome = forms.ChoiceField(choices=VerdictOutcome.choices[:2], widget=forms.RadioSelect)
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))


def _item_for(question_set: QuestionSet, pool_id: int, question_id: int, candidate_id: int | None):
    pool = get_object_or_404(Pool, question_set=question_set, pk=pool_id)
    question = get_object_or_404(Question, question_set=question_set, pk=question_id)
    for votes in adjudication.gather_votes(question_set=question_set):
        if votes.pool.pk == pool.pk and votes.question.pk == question.pk:
            if candidate_id is None:
                return pool, question, votes, None
            item = next((i for i in votes.items if i.candidate.pk == candidate_id), None)
            if item is not None:
                return pool, question, votes, item
    raise Http404("No such item.")


@login_required
@require_http_methods(["GET", "POST"])
def resolve_item(
    request: HttpRequest, slug: str, set_id: int, pool_id: int, question_id: int, candidate_id: int
) -> HttpResponse:
    access, question_set = _lead_set(request, slug, set_id)
    pool, question, votes, item = _item_for(question_set, pool_id, question_id, candidate_id)
    candidate: Candidate = item.candidate
    if (
        not Document.objects.visible_to(request.user)
        .filter(pk=candidate.version.document_id)
        .exists()
    ):
        raise Http404("No such item.")
    vote_spans = [tuple((s.start, s.end) for s in j.spans.all()) for j in item.judgements]
    initial = {"grade": item.resolution.grade} if item.resolution else {}
    form = ResolveItemForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        choice = form.cleaned_data["spans_from"]
        spans = {
            "both": union(*vote_spans),
            "a": vote_spans[0] if vote_spans else (),
            "b": vote_spans[1] if len(vote_spans) > 1 else (),
            "candidate": ((candidate.start, candidate.end),),
            "custom": tuple(form.cleaned_data["custom_spans"]),
        }[choice]
        try:
            adjudication.resolve(
                pool=pool,
                question=question,
                candidate=candidate,
                user=request.user,
                grade=form.cleaned_data["grade"],
                spans=spans,
                note=form.cleaned_data["note"],
            )
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Resolved. The labellers' votes are kept and now frozen.")
            return redirect("labelling:list-adjudication", slug=slug, set_id=set_id)
    text = candidate.version.text
    layers = {name: spans for name, spans in zip("ab", vote_spans, strict=False)}
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
            "question": question,
            "candidate": candidate,
            "item": item,
            "form": form,
            "segments": highlight(text, window, layers),
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
    pool, question, votes, _ = _item_for(question_set, pool_id, question_id, None)
    initial = {"outcome": votes.resolution.outcome} if votes.resolution else {}
    form = ResolveVerdictForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        adjudication.resolve(
            pool=pool,
            question=question,
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
            "question": question,
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
