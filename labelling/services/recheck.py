"""Gold spans on documents that changed after labelling, re-projected onto the newest version.

A span points at the version its labeller read. When the document gets a newer version, the
span's quote is found again in the new text with `corpus.anchoring.locate` (exact, then the
bounded fuzzy match: the same rule the gold reader applies when scoring), and what could not be
found is listed with its question. A labeller's re-check list is their own spans on changed
documents; the lead's figures (the Index health page) are every span of the project's labels
on documents the viewer may see. Nothing is rewritten here: the spans stay as labelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, Q

from corpus.anchoring import SIMILARITY_FLOOR, locate
from corpus.models import Document, Project
from labelling.models import Span

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

    @property
    def reanchored(self) -> bool:
        return self.proposal is not None


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
        Q(judgement__candidate__question__excluded_at__isnull=True, resolution__isnull=True)
        | Q(resolution__question__excluded_at__isnull=True, judgement__isnull=True)
    ).select_related(
        "version__document__latest_version",
        "judgement__candidate__question",
        "resolution__question",
    )
    found = []
    for span in spans.order_by("version__document__doc_id", "start", "pk"):
        newest = span.version.document.latest_version
        owner = span.judgement.candidate if span.judgement else span.resolution
        question = owner.question
        located = locate(span.quote, newest.text, near=span.start, floor=SIMILARITY_FLOOR)
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
            )
        )
    return found
