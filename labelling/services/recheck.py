"""Gold spans on documents that changed after labelling, re-projected onto the newest version.

A span points at the version its labeller read. When the document gets a newer version, the
span's quote is found again in the new text with `goldeval.text.anchoring.locate` (exact, then the
bounded fuzzy match: the same rule the gold reader applies when scoring), and what could not be
found is listed with its question. A labeller's re-check list is their own spans on changed
documents; the lead's figures (the Index health page) are every span of the project's labels
on documents the viewer may see. The spans stay as labelled: a labeller answers for each of
their own (`record_recheck`: confirmed where the quote was found again, re-marked against the
new text, or gone), the answer is stored beside the span (`SpanRecheck`, its history a `Change`)
and the gold rule places the gold span where the answer says (`labelling.services.gold`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import F, Q

from corpus.models import Document, Project
from goldeval.text.anchoring import SIMILARITY_FLOOR, locate
from goldeval.text.worddiff import FACTS_CHANGED, Piece, outcome, word_diff
from goldset.errors import ServiceError
from labelling.models import Assignment, Change, ChangeSubject, Span, SpanRecheck, included_q

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


def stale_spans(*, project: Project, viewer, labeller=None) -> list[StaleSpan]:
    """Spans on an older version than their document's newest, over the documents ``viewer``
    may see: a labeller's own (``labeller``), or every judgement's and resolution's."""
    visible = Document.objects.filter(project=project).visible_to(viewer).values("pk")
    spans = (
        Span.objects.filter(version__document__in=visible)
        .exclude(version_id=F("version__document__latest_version"))
        .filter(version__document__latest_version__isnull=False)
    )
    if labeller is not None:
        spans = spans.filter(judgement__assignment__labeller=labeller)
    spans = spans.filter(
        (included_q("judgement__candidate__question__") & Q(resolution__isnull=True))
        | (included_q("resolution__question__") & Q(judgement__isnull=True))
    ).select_related(
        "version__document__latest_version",
        "judgement__candidate__question",
        "resolution__question",
        "recheck",
    )
    found = []
    for span in spans.order_by("version__document__doc_id", "start", "pk"):
        newest = span.version.document.latest_version
        owner = span.judgement.candidate if span.judgement else span.resolution
        question = owner.question
        located = locate(span.quote, newest.text, near=span.start, floor=SIMILARITY_FLOOR)
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
            )
        )
    return found


CONFIRMED, REMARKED, GONE = "confirmed", "re-marked", "gone"
OUTCOMES = (CONFIRMED, REMARKED, GONE)


class RecheckError(ServiceError):
    """Bad input on the Re-check page; nothing was written."""

    status = 400


class NotYourSpan(RecheckError):
    """Not one of the labeller's spans on a changed document they may see (or no such span):
    the same answer either way, so it reveals nothing."""

    status = 404


def own_stale_span(*, project: Project, labeller, span_id: int) -> Span:
    """One of ``labeller``'s spans on an older version of a document they may still see."""
    visible = Document.objects.filter(project=project).visible_to(labeller).values("pk")
    span = (
        Span.objects.filter(
            included_q("judgement__candidate__question__"),
            pk=span_id,
            judgement__assignment__labeller=labeller,
            version__document__in=visible,
            version__document__latest_version__isnull=False,
        )
        .exclude(version_id=F("version__document__latest_version"))
        .select_related(
            "version__document__latest_version", "judgement__candidate__question", "recheck"
        )
        .first()
    )
    if span is None:
        raise NotYourSpan("That evidence is not in your re-check list.")
    return span


def record_recheck(
    *,
    project: Project,
    labeller,
    span_id: int,
    outcome: str,
    start: int | None = None,
    end: int | None = None,
    quote: str = "",
) -> SpanRecheck:
    """The labeller's answer for one of their spans on a changed document: ``confirmed`` (the
    place the quote was found again in the newest version), ``re-marked`` (``start``/``end``
    and ``quote`` selected in the newest version's text, checked against it) or ``gone`` (the
    evidence is no longer there). Stored beside the span, with a `Change` in the history."""
    span = own_stale_span(project=project, labeller=labeller, span_id=span_id)
    newest = span.version.document.latest_version
    if outcome == CONFIRMED:
        located = locate(span.quote, newest.text, near=span.start, floor=SIMILARITY_FLOOR)
        if located is None:
            raise RecheckError(
                "Your quote was not found in the new text, so there is nothing to confirm: "
                "mark the evidence again, or say it is gone."
            )
        start, end = located.start, located.end
        quote = newest.text[start:end]
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
        # One labeller's writes on one assignment run one after the other.
        assignment = Assignment.objects.select_for_update().get(pk=span.judgement.assignment_id)
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
