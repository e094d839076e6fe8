"""Ingestion services against the database: versions, access groups, quality, duplicates, chunks."""

from dataclasses import replace

import pytest

from corpus.extraction import assess_quality
from corpus.models import Chunk, Document, DocumentVersion, DuplicateGroup
from corpus.services import documents, projects
from corpus.sources import DocumentRecord, SourceBatch
from tests.factories import POLICY_TEXT as PROSE


def record(doc_id: str, text: str = PROSE, **fields) -> DocumentRecord:
    return DocumentRecord(
        doc_id=doc_id, title=doc_id, text=text, report=assess_quality(text), **fields
    )


def ingest(project, *records, source="test.jsonl", importer=None):
    return documents.ingest_batch(
        project=project,
        batch=SourceBatch(source=source, records=list(records)),
        importer=importer or documents.Importer.command_line(),
    )


def test_new_document_gets_version_one_with_hash_and_report(project):
    result = ingest(project, record("leave"))
    assert (result.created, result.updated, result.unchanged) == (1, 0, 0)
    document = Document.objects.get(project=project, doc_id="leave")
    version = document.latest_version
    assert version.version == 1 and version.text == PROSE
    assert version.content_hash == documents.content_hash(PROSE)
    assert version.extraction["chars"] == len(PROSE) and not version.quality_flagged
    assert Document.objects.filter(pk=document.pk).searchable().exists()


def test_same_text_changes_nothing_and_changed_text_adds_a_version(project):
    ingest(project, record("leave"))
    again = ingest(project, record("leave"))
    assert (again.created, again.updated, again.unchanged) == (0, 0, 1)
    assert DocumentVersion.objects.count() == 1
    changed = ingest(project, record("leave", PROSE.replace("five", "seven")))
    assert changed.updated == 1
    document = Document.objects.get(doc_id="leave")
    assert list(document.versions.values_list("version", flat=True)) == [1, 2]
    assert document.latest_version.version == 2 and "seven" in document.latest_version.text
    # The old version stays, unchanged, for the spans that point at it.
    assert "five" in document.versions.get(version=1).text


def test_access_groups_restrict_and_follow_the_newest_import(project, member):
    ingest(project, record("salaries", access_groups=("hr",)))
    outsider, insider = member("labeller"), member("labeller")
    projects.set_access_group_members(project=project, name="hr", users=[insider])
    docs = Document.objects.filter(project=project)
    assert not docs.visible_to(outsider).exists()
    assert docs.visible_to(insider).count() == 1
    # A new version that names no groups keeps them: an import never widens access.
    ingest(project, record("salaries", PROSE + " Updated.", access_groups=()))
    assert not docs.visible_to(outsider).exists()
    assert docs.get().latest_version.version == 2
    # The command line names other groups explicitly: they replace the old ones.
    ingest(project, record("salaries", PROSE + " Updated.", access_groups=("all-staff",)))
    assert list(docs.get().access_groups.values_list("name", flat=True)) == ["all-staff"]


def test_flagged_extraction_keeps_a_document_out_of_retrieval_until_accepted(project, member):
    table = "\n".join(f"| {i} | {i * 3.5:.2f} | {i * 7} | NW-{i:04d} |" for i in range(60))
    ingest(project, record("rates", table))
    version = Document.objects.get(doc_id="rates").latest_version
    assert version.quality_flagged and version.held_back
    assert not Document.objects.searchable().filter(doc_id="rates").exists()
    documents.accept_quality(version=version, user=member("admin"))
    assert Document.objects.searchable().filter(doc_id="rates").exists()


def test_near_duplicates_form_a_group_with_one_searchable_member(project):
    ingest(
        project, record("proc"), record("other", "Completely different text about VPN tokens " * 8)
    )
    ingest(project, record("proc-copy", PROSE.replace("peak season", "busy season")))
    group = DuplicateGroup.objects.get(project=project)
    members = set(group.documents.values_list("doc_id", flat=True))
    assert members == {"proc", "proc-copy"}
    assert group.representative.doc_id == "proc"
    searchable = set(
        Document.objects.filter(project=project).searchable().values_list("doc_id", flat=True)
    )
    assert searchable == {"proc", "other"}
    documents.choose_representative(group=group, document=Document.objects.get(doc_id="proc-copy"))
    searchable = set(
        Document.objects.filter(project=project).searchable().values_list("doc_id", flat=True)
    )
    assert searchable == {"proc-copy", "other"}


def test_a_changed_document_that_no_longer_matches_leaves_its_group(project):
    ingest(project, record("proc"), record("proc-copy", PROSE.replace("peak", "busy")))
    assert DuplicateGroup.objects.count() == 1
    ingest(
        project,
        record("proc-copy", "Entirely rewritten: badge access is requested in the portal. " * 5),
    )
    assert DuplicateGroup.objects.count() == 0
    assert Document.objects.filter(project=project).searchable().count() == 2


def test_duplicate_threshold_is_configurable(project):
    project.duplicate_threshold = 0.99
    project.save()
    ingest(
        project, record("proc"), record("proc-copy", PROSE.replace("peak season", "busy season"))
    )
    assert DuplicateGroup.objects.count() == 0


def test_new_versions_are_chunked_under_every_scheme_and_old_chunks_stay(project):
    words = documents.add_chunking_scheme(
        project=project, name="w20", strategy="fixed", unit="words", size=20, overlap=5
    )
    whole = documents.add_chunking_scheme(
        project=project, name="doc", strategy="document", size=1, overlap=0
    )
    ingest(project, record("leave"))
    v1 = Document.objects.get(doc_id="leave").latest_version
    assert Chunk.objects.filter(scheme=whole, version=v1).values_list("start", "end").get() == (
        0,
        len(PROSE),
    )
    chunks = list(Chunk.objects.filter(scheme=words, version=v1).order_by("ordinal"))
    assert len(chunks) > 1 and all(PROSE[c.start : c.end].strip() for c in chunks)
    ingest(project, record("leave", PROSE + " Extra sentence."))
    assert Chunk.objects.filter(scheme=whole, version=v1).exists()
    assert Chunk.objects.filter(scheme=whole).count() == 2


def test_adding_and_changing_a_scheme_rechunks_only_that_scheme(project):
    ingest(project, record("a"), record("b", PROSE + " More."))
    scheme = documents.add_chunking_scheme(
        project=project, name="w10", strategy="fixed", unit="words", size=10, overlap=0
    )
    first = documents.chunk_corpus(scheme=scheme)
    assert first == Chunk.objects.filter(scheme=scheme).count() > 2
    documents.change_chunking_scheme(
        scheme=scheme, strategy="document", unit="words", size=1, overlap=0
    )
    assert documents.chunk_corpus(scheme=scheme) == 2
    assert documents.chunk_corpus(scheme=scheme) == 2  # idempotent


def test_records_from_one_source_are_written_atomically(project, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(documents, "_group_near_duplicates", explode)
    with pytest.raises(RuntimeError):
        ingest(project, record("a"), record("b", PROSE + " b"))
    assert not Document.objects.filter(project=project).exists()
    assert not DocumentVersion.objects.exists()


def test_source_modified_time_is_kept(project):
    from datetime import UTC, datetime

    when = datetime(2026, 3, 14, 9, tzinfo=UTC)
    ingest(project, replace(record("leave"), modified_at=when))
    assert Document.objects.get(doc_id="leave").latest_version.source_modified_at == when
