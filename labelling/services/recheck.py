"""Gold spans on documents that changed after labelling, re-projected onto the newest version.

A span points at the version its labeller read. When the document gets a newer version, the
span's quote is found again in the new text with `goldeval.text.anchoring.locate` (exact, then the
bounded fuzzy match: the same rule the gold reader applies when scoring), and what could not be
found is listed with its question. A labeller's re-check list is their own spans on changed
documents; a lead's also holds the resolution spans (adjudication decisions, whoever made them)
on changed documents they may see; the lead's figures (the Index health page) are every span of
the project's labels on documents the viewer may see. The spans stay as labelled: whoever may
decide a span answers for it (`record_recheck`: confirmed where the quote was found again,
re-marked against the new text, or gone). Confirming a quote whose words changed ("40 percent"
is now "50 percent") is recorded as `FACTS_CHANGED`, a different outcome from one that only
moved. The answer is stored beside the span (`SpanRecheck`; a labeller's history is a `Change`)
and the gold rule places the gold span where the answer says (`labelling.services.gold`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import F, Q

from corpus.models import Document, Project
from goldeval.text.anchoring import SIMILARITY_FLOOR, Located, locate, on_word_edges
from goldeval.text.worddiff import FACTS_CHANGED, Piece, outcome, word_diff
from goldset.errors import ServiceError
from labelling.models import (
    Assignment,
    Change,
    ChangeSubject,
    Span,
    SpanRecheck,
    included_q,
    work_q,
)

EXCERPT = 300  # characters of the new text shown around a proposal


@dataclass(frozen=True)
class StaleSpan:
    span_id: int
    pool_id: int
    question_pk: int
    question_id: str  # the question's external id
    question: str
    doc_id: str
    old_version: int
    new_version: int
    start: int
    end: int
    quote: str
    # Where the quote sits in the newest version, or None when it could not be re-anchored.
    proposal: tuple[int, int] | None
    proposed_text: str
    similarity: float | None
    # The labeller's answer so far ("" for none): confirmed, re-marked or gone, and where.
    answer: str = ""
    answered: tuple[int, int] | None = None
    answered_text: str = ""
    # "labeller" (a judgement's evidence) or "resolution" (a lead's decision)
    kind: str = "labeller"
    # For a resolution: its question set and candidate, to open the decision.
    set_id: int | None = None
    candidate_id: int | None = None

    @property
    def is_resolution(self) -> bool:
        return self.kind == RESOLUTION

    @property
    def answer_said(self) -> str:
        """The recorded answer as the pages say it ("the facts changed", ...)."""
        return SAY.get(self.answer, self.answer)

    @property
    def reanchored(self) -> bool:
        return self.proposal is not None

    @property
    def facts_changed(self) -> bool:
        """Re-anchored, but some word of the quote differs ("40 percent" is now "50 percent"),
        as opposed to a span that only moved."""
        return self.reanchored and outcome(self.quote, self.proposed_text) == FACTS_CHANGED

    @property
    def diff(self) -> list[Piece]:
        """The word diff of the quote against where it was found (empty when not found)."""
        return word_diff(self.quote, self.proposed_text) if self.reanchored else []


def find_again(*, quote: str, old_text: str, start: int, end: int, new_text: str) -> Located | None:
    """Where a span marked at [start, end) of ``old_text`` (``quote``) is in ``new_text``: the
    gold reader's rule (`goldeval.text.anchoring.locate` near its old start, whole words kept
    when it was marked in whole words), or None when it is not found."""
    return locate(
        quote,
        new_text,
        near=start,
        floor=SIMILARITY_FLOOR,
        whole_words=on_word_edges(old_text, start, end),
    )


def find_span_again(span: Span) -> Located | None:
    """`find_again` for a stored span, in its document's newest version."""
    return find_again(
        quote=span.quote,
        old_text=span.version.text,
        start=span.start,
        end=span.end,
        new_text=span.version.document.latest_version.text,
    )


LABELLER, RESOLUTION = "labeller", "resolution"

# Who may answer for a span on a changed document: its labeller for a judgement's evidence, a
# lead of the project for a resolution's (whoever made it), on documents they may see.
_JUDGEMENT_SPAN = included_q("judgement__candidate__question__") & Q(resolution__isnull=True)
_RESOLUTION_SPAN = included_q("resolution__question__") & Q(judgement__isnull=True)


def _stale(project: Project, viewer):
    """Spans on an older version than their document's newest, on documents ``viewer`` may see
    (`Document.objects.visible_to`, the one visibility rule)."""
    visible = Document.objects.filter(project=project).visible_to(viewer).values("pk")
    return (
        Span.objects.filter(version__document__in=visible)
        .exclude(version_id=F("version__document__latest_version"))
        .filter(version__document__latest_version__isnull=False)
    )


def _decidable_by(user, *, lead: bool) -> Q:
    """The spans ``user`` answers for: their own evidence, and with ``lead`` resolutions'."""
    own = _JUDGEMENT_SPAN & Q(judgement__assignment__labeller=user)
    return (own | _RESOLUTION_SPAN) if lead else own


def stale_spans(*, project: Project, viewer, labeller=None, lead: bool = False) -> list[StaleSpan]:
    """Spans on an older version than their document's newest, over the documents ``viewer``
    may see: the ones ``labeller`` answers for (their own; with ``lead``, every resolution's
    too), or without ``labeller`` every judgement's and resolution's."""
    spans = _stale(project, viewer)
    if labeller is not None:
        spans = spans.filter(_decidable_by(labeller, lead=lead))
    else:  # everyone's: the gold's evidence, so no calibration answer's (its labeller's only)
        spans = spans.filter(
            (_JUDGEMENT_SPAN & work_q("judgement__assignment__")) | _RESOLUTION_SPAN
        )
    spans = spans.select_related(
        "version__document__latest_version",
        "judgement__candidate__question",
        "resolution__question",
        "resolution__pool",
        "recheck",
    )
    found = []
    for span in spans.order_by("version__document__doc_id", "start", "pk"):
        newest = span.version.document.latest_version
        owner = span.judgement.candidate if span.judgement else span.resolution
        question = owner.question
        located = find_span_again(span)
        answer = getattr(span, "recheck", None)
        placed = answer is not None and answer.start is not None
        found.append(
            StaleSpan(
                span_id=span.pk,
                pool_id=owner.pool_id,
                question_pk=question.pk,
                question_id=question.external_id,
                question=question.text,
                doc_id=span.version.document.doc_id,
                old_version=span.version.version,
                new_version=newest.version,
                start=span.start,
                end=span.end,
                quote=span.quote,
                proposal=None if located is None else (located.start, located.end),
                proposed_text=""
                if located is None
                else newest.text[located.start : located.end][:EXCERPT],
                similarity=None if located is None else round(located.similarity, 3),
                answer=answer.outcome if answer else "",
                answered=(answer.start, answer.end) if placed else None,
                answered_text=answer.quote[:EXCERPT] if placed else "",
                kind=LABELLER if span.judgement_id else RESOLUTION,
                set_id=None if span.judgement_id else span.resolution.pool.question_set_id,
                candidate_id=None if span.judgement_id else span.resolution.candidate_id,
            )
        )
    return found


# What a user may answer (the form's choices) ...
CONFIRMED, REMARKED, GONE = "confirmed", "re-marked", "gone"
OUTCOMES = (CONFIRMED, REMARKED, GONE)
# ... and what is recorded: confirming a quote whose words changed is "the facts changed",
# not "confirmed" (which is kept for a span that only moved).
RECORDED = (CONFIRMED, FACTS_CHANGED, REMARKED, GONE)
# How each recorded outcome reads on the pages.
SAY = {
    CONFIRMED: "confirmed: it moved",
    FACTS_CHANGED: "the facts changed",
    REMARKED: "re-marked",
    GONE: "gone",
}


class RecheckError(ServiceError):
    """Bad input on the Re-check page; nothing was written."""

    status = 400


class NotYourSpan(RecheckError):
    """Not a span on a changed document the user may see and answer for (or no such span):
    the same answer either way, so it reveals nothing."""

    status = 404


def own_stale_span(*, project: Project, labeller, span_id: int, lead: bool = False) -> Span:
    """A span on an older version of a document ``labeller`` may still see that they answer
    for: their own evidence, and with ``lead`` (a lead of the project) a resolution's."""
    span = (
        _stale(project, labeller)
        .filter(_decidable_by(labeller, lead=lead), pk=span_id)
        .select_related(
            "version__document__latest_version",
            "judgement__candidate__question",
            "resolution__question",
            "recheck",
        )
        .first()
    )
    if span is None:
        raise NotYourSpan("That evidence is not in your re-check list.")
    return span


def span_question(span: Span):
    """The question a span is evidence for (its judgement's or its resolution's)."""
    return span.judgement.candidate.question if span.judgement_id else span.resolution.question


def record_recheck(
    *,
    project: Project,
    labeller,
    span_id: int,
    outcome: str,
    start: int | None = None,
    end: int | None = None,
    quote: str = "",
    lead: bool = False,
) -> SpanRecheck:
    """The answer for a span on a changed document, by its labeller (or, with ``lead``, by a
    lead for a resolution's span): ``confirmed`` (the place the quote was found again in the
    newest version; recorded as `FACTS_CHANGED` when its words differ), ``re-marked``
    (``start``/``end`` and ``quote`` selected in the newest version's text, checked against it)
    or ``gone`` (the evidence is no longer there). Stored beside the span; a labeller's answer
    also gets a `Change` in their history."""
    span = own_stale_span(project=project, labeller=labeller, span_id=span_id, lead=lead)
    newest = span.version.document.latest_version
    if outcome == CONFIRMED:
        located = find_span_again(span)
        if located is None:
            raise RecheckError(
                "Your quote was not found in the new text, so there is nothing to confirm: "
                "mark the evidence again, or say it is gone."
            )
        start, end = located.start, located.end
        quote = newest.text[start:end]
        outcome = recorded_outcome(span.quote, quote)
    elif outcome == REMARKED:
        if not (isinstance(start, int) and isinstance(end, int)) or start < 0 or end <= start:
            raise RecheckError("Select the evidence in the new text first.")
        if end > len(newest.text):
            raise RecheckError(
                f"The selection [{start}, {end}) runs past the end of the new text "
                f"({len(newest.text)} characters)."
            )
        if newest.text[start:end] != quote:
            raise RecheckError(
                "The selected text does not match the new version at those positions, so it "
                "was not saved. Reload the page and select it again."
            )
    elif outcome == GONE:
        start = end = None
        quote = ""
    else:
        raise RecheckError("Choose: confirm, mark again, or the evidence is gone.")
    after = {"outcome": outcome, "version": newest.pk, "start": start, "end": end}
    with transaction.atomic():
        assignment = None
        if span.judgement_id:
            # One labeller's writes on one assignment run one after the other.
            assignment = Assignment.objects.select_for_update().get(pk=span.judgement.assignment_id)
        else:
            # Two leads answering for one resolution's span: one after the other.
            Span.objects.select_for_update().filter(pk=span.pk).first()
        existing = SpanRecheck.objects.filter(span=span).first()
        before = None
        if existing is not None:
            before = {
                "outcome": existing.outcome,
                "version": existing.version_id,
                "start": existing.start,
                "end": existing.end,
            }
        if before == after:
            return existing
        answer, _ = SpanRecheck.objects.update_or_create(
            span=span,
            defaults={
                "outcome": outcome,
                "version": newest,
                "start": start,
                "end": end,
                "quote": quote,
                "made_by": labeller,
            },
        )
        if assignment is None:
            return answer
        Change.objects.create(
            assignment=assignment,
            candidate=span.judgement.candidate,
            subject=ChangeSubject.RECHECK,
            action=f"re-check: {outcome}",
            before={"span": [span.version_id, span.start, span.end], "answer": before},
            after={"span": [span.version_id, span.start, span.end], "answer": after},
            made_by=labeller,
        )
    return answer


def recorded_outcome(old_quote: str, confirmed_quote: str) -> str:
    """What confirming ``old_quote`` at ``confirmed_quote`` records: `CONFIRMED` when the words
    are the same (it moved), `FACTS_CHANGED` when some word differs."""
    return CONFIRMED if outcome(old_quote, confirmed_quote) != FACTS_CHANGED else FACTS_CHANGED
