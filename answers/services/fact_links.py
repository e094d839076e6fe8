"""Reference facts linked to evidence on a document that changed since (issue 33 item 3).

A lead links a reference fact to gold spans of its question (`ReferenceFact.spans`: doc_id,
version, offsets). When the document gets a newer version the link still points at the old
one: these are listed for the leads who may see the document (`Document.objects.visible_to`,
the one visibility rule), with the linked text against where it is found now
(`labelling.services.recheck.find_again`, the gold reader's rule) and a word diff, so a lead
re-links the fact on its reference answer's page.
"""

from __future__ import annotations

from dataclasses import dataclass

from answers.models import ReferenceFact
from corpus.models import Document, DocumentVersion
from goldeval.text.worddiff import FACTS_CHANGED, Piece, outcome, word_diff
from labelling.models import QuestionSet, included_q
from labelling.services.recheck import find_again

EXCERPT = 300


@dataclass(frozen=True)
class ChangedFactLink:
    question_pk: int
    question_id: str
    fact: str
    doc_id: str
    old_version: int
    new_version: int
    linked: str  # the linked text, in the old version
    current: str  # where it is found in the newest version ("" when not found)

    @property
    def facts_changed(self) -> bool:
        return bool(self.current) and outcome(self.linked, self.current) == FACTS_CHANGED

    @property
    def diff(self) -> list[Piece]:
        return word_diff(self.linked, self.current) if self.current else []


def changed_fact_links(
    *, question_set: QuestionSet, viewer, question=None
) -> list[ChangedFactLink]:
    """Links of the current reference facts of the set's included questions (or of
    ``question``) to an older version of a document ``viewer`` may see (with ``viewer``
    None, of any document: what a gold set's manifest counts)."""
    facts = ReferenceFact.objects.filter(
        included_q("reference__question__"), reference__question__question_set=question_set
    ).select_related("reference__question")
    if question is not None:
        facts = facts.filter(reference__question=question)
    current: dict[int, int] = {}
    rows = []
    for fact in facts.order_by("reference__question_id", "-reference__version", "position"):
        newest = current.setdefault(fact.reference.question_id, fact.reference.version)
        if fact.reference.version == newest and fact.spans:
            rows.append(fact)
    doc_ids = {link.get("doc_id") for fact in rows for link in fact.spans}
    documents = Document.objects.filter(project=question_set.project, doc_id__in=doc_ids)
    if viewer is not None:
        documents = documents.visible_to(viewer)
    documents = {
        document.doc_id: document
        for document in documents.exclude(latest_version__isnull=True).select_related(
            "latest_version"
        )
    }
    wanted = {
        (documents[link["doc_id"]].pk, link.get("version"))
        for fact in rows
        for link in fact.spans
        if link.get("doc_id") in documents
        and link.get("version") != documents[link["doc_id"]].latest_version.version
    }
    texts = {
        (document_id, version): text
        for document_id, version, text in DocumentVersion.objects.filter(
            document_id__in={document_id for document_id, _ in wanted}
        ).values_list("document_id", "version", "text")
        if (document_id, version) in wanted
    }
    found = []
    for fact in rows:
        for link in fact.spans:
            document = documents.get(link.get("doc_id"))
            if document is None:
                continue
            old_text = texts.get((document.pk, link.get("version")))
            start, end = link.get("start"), link.get("end")
            if old_text is None or not isinstance(start, int) or not isinstance(end, int):
                continue
            linked = old_text[start:end]
            newest = document.latest_version
            located = find_again(
                quote=linked, old_text=old_text, start=start, end=end, new_text=newest.text
            )
            found.append(
                ChangedFactLink(
                    question_pk=fact.reference.question_id,
                    question_id=fact.reference.question.external_id,
                    fact=fact.text,
                    doc_id=document.doc_id,
                    old_version=link["version"],
                    new_version=newest.version,
                    linked=linked[:EXCERPT],
                    current=""
                    if located is None
                    else newest.text[located.start : located.end][:EXCERPT],
                )
            )
    return found
