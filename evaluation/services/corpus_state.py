"""The corpus as the index health checks compare an index with: every document's newest
version, its hash and times, whether runs may return it, its near-duplicate group and its
extraction flags. Written into a gold set's ``documents.jsonl`` when it is finalised, and read
live by the Index health page."""

from __future__ import annotations

from corpus import visibility
from corpus.models import Document, Project
from goldeval.formats.gold import DocumentState


def document_states(project: Project, *, viewer=None) -> list[DocumentState]:
    """Every document's newest version as the index health checks need it (documents.jsonl),
    by doc_id; a document without a version yet is left out. With a ``viewer``, only the
    documents they may see, searchable as their searches see the corpus."""
    documents = Document.objects.filter(project=project)
    if viewer is None:
        searchable = set(documents.searchable().values_list("pk", flat=True))
    else:
        # An anonymous viewer stands for "anyone": the documents no access group restricts.
        documents = (
            documents.visible_to(viewer)
            if viewer.is_authenticated
            else documents.filter(visibility.not_hidden_q(viewer))
        )
        searchable = set(documents.searchable_for(viewer).values_list("pk", flat=True))
    rows = (
        documents.filter(latest_version__isnull=False)
        .order_by("doc_id")
        .values_list(
            "pk",
            "doc_id",
            "latest_version__version",
            "latest_version__content_hash",
            "latest_version__source_modified_at",
            "duplicate_group_id",
            "latest_version__extraction",
            "is_canary",
        )
    )
    return [
        DocumentState(
            doc_id=doc_id,
            version=version,
            content_hash=content_hash,
            source_modified_at=modified,
            searchable=pk in searchable,
            duplicate_group=None if group is None else str(group),
            extraction_flags=tuple(str(flag) for flag in (extraction or {}).get("flags", [])),
            canary=canary,
        )
        for pk, doc_id, version, content_hash, modified, group, extraction, canary in rows
    ]


def document_pks(project: Project) -> set[int]:
    """documents.jsonl names every document that has a version."""
    return set(
        Document.objects.filter(project=project, latest_version__isnull=False).values_list(
            "pk", flat=True
        )
    )
