"""A labeller's re-check list: their own spans on documents that changed after they labelled,
with where the quote was found again in the newest version (or that it was not), and their
answer for each: confirm the new place, mark the evidence again in the new text, or say it is
gone. Blind: only the viewer's own spans, on documents they may still see."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from corpus.access import project_access
from goldeval.text.anchoring import SIMILARITY_FLOOR, locate
from labelling.forms import RecheckForm
from labelling.highlight import highlight
from labelling.passage_html import passage_html
from labelling.services.recheck import (
    GONE,
    NotYourSpan,
    RecheckError,
    own_stale_span,
    record_recheck,
    stale_spans,
)

SAID = {
    "confirmed": "Confirmed: the gold now takes your evidence where it is in the new version.",
    "re-marked": "Marked again: the gold now takes the text you selected in the new version.",
    GONE: "Noted: this evidence is gone from the new version, so the gold no longer has it.",
}


@login_required
@require_GET
def show_recheck(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    spans = stale_spans(project=access.project, viewer=request.user, labeller=request.user)
    return render(
        request,
        "labelling/show_recheck.html",
        {"access": access, "project": access.project, "spans": spans},
    )


@login_required
@require_GET
def remark_span(request: HttpRequest, slug: str, span_id: int) -> HttpResponse:
    """The newest text of the document, to select the evidence in again."""
    access = project_access(request.user, slug)
    try:
        span = own_stale_span(project=access.project, labeller=request.user, span_id=span_id)
    except NotYourSpan as exc:
        raise Http404(str(exc)) from exc
    newest = span.version.document.latest_version
    # Where the quote was found again (if it was) is shown marked, as the grading page marks
    # evidence; the labeller selects the evidence anew anywhere in the text.
    found = locate(span.quote, newest.text, near=span.start, floor=SIMILARITY_FLOOR)
    evidence = [] if found is None else [(found.start, found.end)]
    segments = highlight(newest.text, layers={"e": evidence})
    return render(
        request,
        "labelling/remark_span.html",
        {
            "access": access,
            "project": access.project,
            "span": span,
            "question": span.judgement.candidate.question,
            "newest": newest,
            "passage_text": passage_html(segments, context=False),
            "found": found,
        },
    )


@login_required
@require_POST
def answer_recheck(request: HttpRequest, slug: str, span_id: int) -> HttpResponse:
    access = project_access(request.user, slug)
    form = RecheckForm(request.POST)
    back = redirect("labelling:show-recheck", slug=access.project.slug)
    try:
        # Whether the span is the viewer's is checked before the form: another's id is a 404.
        own_stale_span(project=access.project, labeller=request.user, span_id=span_id)
        if not form.is_valid():
            messages.error(request, form.first_problem())
            return back
        record_recheck(
            project=access.project,
            labeller=request.user,
            span_id=span_id,
            **form.cleaned_data,
        )
    except NotYourSpan as exc:
        raise Http404(str(exc)) from exc
    except RecheckError as exc:
        messages.error(request, str(exc))
        if form.is_valid() and form.cleaned_data["outcome"] == "re-marked":
            return redirect("labelling:remark-span", slug=access.project.slug, span_id=span_id)
        return back
    messages.success(request, SAID[form.cleaned_data["outcome"]])
    return back
