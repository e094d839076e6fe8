"""A labeller's re-check list: their own spans on documents that changed after they labelled,
with where the quote was found again in the newest version (or that it was not), and their
answer for each: confirm the new place, mark the evidence again in the new text, or say it is
gone. Blind: only the viewer's own spans, on documents they may still see. A lead's list also
holds the resolution spans (adjudication decisions) on changed documents they may see, which
any lead of the project answers for."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from corpus.access import project_access
from labelling.forms import RecheckForm
from labelling.highlight import highlight
from labelling.passage_html import passage_html
from labelling.services.recheck import (
    FACTS_CHANGED,
    GONE,
    NotYourSpan,
    RecheckError,
    find_span_again,
    own_stale_span,
    record_recheck,
    span_question,
    stale_spans,
)

SAID = {
    "confirmed": "Confirmed: it only moved; the gold now takes the evidence where it is in the "
    "new version.",
    FACTS_CHANGED: "Recorded as 'the facts changed': the gold now takes the new words where they "
    "are in the new version.",
    "re-marked": "Marked again: the gold now takes the text you selected in the new version.",
    GONE: "Noted: this evidence is gone from the new version, so the gold no longer has it.",
}


@login_required
@require_GET
def show_recheck(request: HttpRequest, slug: str) -> HttpResponse:
    access = project_access(request.user, slug)
    spans = stale_spans(
        project=access.project, viewer=request.user, labeller=request.user, lead=access.is_lead
    )
    return render(
        request,
        "labelling/show_recheck.html",
        {
            "access": access,
            "project": access.project,
            "spans": [s for s in spans if not s.is_resolution],
            "resolution_spans": [s for s in spans if s.is_resolution],
        },
    )


@login_required
@require_GET
def remark_span(request: HttpRequest, slug: str, span_id: int) -> HttpResponse:
    """The newest text of the document, to select the evidence in again."""
    access = project_access(request.user, slug)
    try:
        span = own_stale_span(
            project=access.project, labeller=request.user, span_id=span_id, lead=access.is_lead
        )
    except NotYourSpan as exc:
        raise Http404(str(exc)) from exc
    newest = span.version.document.latest_version
    # Where the quote was found again (if it was) is shown marked, as the grading page marks
    # evidence; the labeller selects the evidence anew anywhere in the text.
    found = find_span_again(span)
    evidence = [] if found is None else [(found.start, found.end)]
    segments = highlight(newest.text, layers={"e": evidence})
    return render(
        request,
        "labelling/remark_span.html",
        {
            "access": access,
            "project": access.project,
            "span": span,
            "question": span_question(span),
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
        own_stale_span(
            project=access.project, labeller=request.user, span_id=span_id, lead=access.is_lead
        )
        if not form.is_valid():
            messages.error(request, form.first_problem())
            return back
        answer = record_recheck(
            project=access.project,
            labeller=request.user,
            span_id=span_id,
            lead=access.is_lead,
            **form.cleaned_data,
        )
    except NotYourSpan as exc:
        raise Http404(str(exc)) from exc
    except RecheckError as exc:
        messages.error(request, str(exc))
        if form.is_valid() and form.cleaned_data["outcome"] == "re-marked":
            return redirect("labelling:remark-span", slug=access.project.slug, span_id=span_id)
        return back
    messages.success(request, SAID[answer.outcome])
    return back
