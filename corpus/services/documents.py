"""Ingestion: documents and their versions, near-duplicates, extraction quality, chunking."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from corpus import jobs
from corpus.chunking import ChunkSpec, chunk_spans
from corpus.dedupe import NearDuplicateIndex, signature
from corpus.models import (
    AccessGroup,
    Chunk,
    ChunkingScheme,
    Document,
    DocumentVersion,
    DuplicateGroup,
    Job,
    JobState,
    Project,
    Upload,
)
from corpus.services.projects import access_changed
from corpus.sources import (
    DocumentRecord,
    RecordError,
    SourceBatch,
    SourceError,
    read_folder,
    read_source,
)
from goldset.errors import ServiceError

BULK_BATCH = 2000
Progress = jobs.Progress


# Ingestion -------------------------------------------------------------------------------


@dataclass
class IngestResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    errors: list[RecordError] = field(default_factory=list)

    def add(self, other: IngestResult) -> None:
        self.created += other.created
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.errors.extend(other.errors)

    @property
    def imported(self) -> int:
        return self.created + self.updated

    def as_dict(self) -> dict:
        return {
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "errors": len(self.errors),
        }


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ingest_batch(
    *, project: Project, batch: SourceBatch, progress: Progress | None = None
) -> IngestResult:
    """Write one source's records atomically: all of its good records, or none on failure.

    Re-importing a doc_id with changed text adds a version; identical text changes nothing.
    New versions are chunked under every scheme and checked for near-duplicates.
    """
    result = IngestResult(errors=list(batch.errors))
    records = batch.records
    if not records:
        return result
    with transaction.atomic():
        existing = _existing_documents(project, [r.doc_id for r in records])
        new_docs: list[Document] = []
        changes: list[tuple[DocumentRecord, Document | None, int]] = []
        for record in records:
            document = existing.get(record.doc_id)
            latest = document.latest_version if document else None
            if latest is not None and latest.content_hash == content_hash(record.text):
                result.unchanged += 1
                continue
            if document is None:
                document = Document(project=project, doc_id=record.doc_id, title=record.title)
                new_docs.append(document)
                result.created += 1
            else:
                document.title = record.title or document.title
                result.updated += 1
            changes.append((record, document, (latest.version + 1) if latest else 1))
        Document.objects.bulk_create(new_docs, batch_size=BULK_BATCH)
        versions = [
            DocumentVersion(
                document=document,
                version=number,
                text=record.text,
                content_hash=content_hash(record.text),
                source_name=record.source_name[:500],
                source_modified_at=record.modified_at,
                extraction=record.report.as_dict(),
                quality_flagged=not record.report.ok,
                minhash=signature(record.text),
            )
            for record, document, number in changes
        ]
        DocumentVersion.objects.bulk_create(versions, batch_size=BULK_BATCH)
        for version, (_, document, _) in zip(versions, changes, strict=True):
            document.latest_version = version
        # One UPDATE … FROM a subquery: bulk_update's CASE expressions cost ~2 ms a row.
        changed_ids = [document.pk for _, document, _ in changes]
        newest = DocumentVersion.objects.filter(document=OuterRef("pk")).order_by("-version")
        for start in range(0, len(changed_ids), BULK_BATCH):
            Document.objects.filter(pk__in=changed_ids[start : start + BULK_BATCH]).update(
                latest_version=Subquery(newest.values("pk")[:1])
            )
        retitled = [document for record, document, number in changes if number > 1]
        Document.objects.bulk_update(retitled, ["title"], batch_size=BULK_BATCH)
        _set_access_groups(project, [(record, document) for record, document, _ in changes])
        for scheme in project.chunking_schemes.all():
            _write_chunks(scheme, versions)
        _group_near_duplicates(project, [document for _, document, _ in changes])
        if progress:
            progress(len(records))
    return result


def import_path(
    *, project: Project, path: Path, report: Callable[[str], None] | None = None
) -> IngestResult:
    """Import a folder of document files, or one JSONL/CSV/document file, from the command line.

    Runs in the calling process (a CI script wants to block on it) and is recorded as a Job.
    """
    job = Job.objects.create(
        project=project,
        kind="import_documents",
        state=JobState.RUNNING,
        description=f"Import {path.name}"[:300],
        started_at=timezone.now(),
    )
    result = IngestResult()
    batches = (
        read_folder(path)
        if path.is_dir()
        else [(path, read_source(name=path.name, data=path.read_bytes()))]
    )
    for file, batch in batches:
        part = ingest_batch(project=project, batch=batch)
        result.add(part)
        job.done += 1
        Job.objects.filter(pk=job.pk).update(done=job.done)
        if report:
            report(
                f"{file}: {part.created} new, {part.updated} updated, {part.unchanged} unchanged"
                + (f", {len(part.errors)} rejected" if part.errors else "")
            )
    job.total = job.done
    _record_result(job, result)
    return result


def _existing_documents(project: Project, doc_ids: Sequence[str]) -> dict[str, Document]:
    found: dict[str, Document] = {}
    for start in range(0, len(doc_ids), 900):  # SQLite caps bound parameters per query
        part = doc_ids[start : start + 900]
        for document in Document.objects.filter(project=project, doc_id__in=part).select_related(
            "latest_version"
        ):
            found[document.doc_id] = document
    return found


def _set_access_groups(project: Project, pairs: list[tuple[DocumentRecord, Document]]) -> None:
    names = {name for record, _ in pairs for name in record.access_groups}
    groups = {g.name: g for g in AccessGroup.objects.filter(project=project, name__in=names)}
    missing = [AccessGroup(project=project, name=n) for n in sorted(names - groups.keys())]
    for group in AccessGroup.objects.bulk_create(missing):
        groups[group.name] = group
    through = Document.access_groups.through
    # A new version's access groups replace the old ones: the source is the authority.
    through.objects.filter(document_id__in=[d.pk for _, d in pairs]).delete()
    through.objects.bulk_create(
        [
            through(document_id=document.pk, accessgroup_id=groups[name].pk)
            for record, document in pairs
            for name in record.access_groups
        ],
        batch_size=BULK_BATCH,
    )
    access_changed(project=project, document_ids=[d.pk for _, d in pairs])


def _scheme_spec(scheme: ChunkingScheme) -> ChunkSpec:
    return ChunkSpec(
        strategy=scheme.strategy, unit=scheme.unit, size=scheme.size, overlap=scheme.overlap
    )


def _write_chunks(scheme: ChunkingScheme, versions: Sequence[DocumentVersion]) -> int:
    spec = _scheme_spec(scheme)
    rows = []
    for version in versions:
        for ordinal, (start, end) in enumerate(chunk_spans(version.text, spec)):
            digest = hashlib.blake2b(version.text[start:end].encode("utf-8"), digest_size=16)
            rows.append(
                Chunk(
                    scheme=scheme,
                    version=version,
                    ordinal=ordinal,
                    start=start,
                    end=end,
                    text_hash=digest.hexdigest(),
                )
            )
    Chunk.objects.bulk_create(rows, batch_size=BULK_BATCH)
    return len(rows)


def _group_near_duplicates(project: Project, changed: Sequence[Document]) -> None:
    """Put each changed document into the near-duplicate group of its matches, if any.

    Matching runs against the newest version of every document of the project. A group keeps
    its representative (the only searchable member) when it grows; a changed document that no
    longer matches leaves its group.
    """
    if not changed:
        return
    changed_ids = {d.pk for d in changed}
    _leave_groups(project, changed_ids)
    index = NearDuplicateIndex(threshold=project.duplicate_threshold)
    rows = (
        Document.objects.filter(project=project, latest_version__isnull=False)
        .values_list("pk", "duplicate_group_id", "latest_version__minhash")
        .order_by("pk")
    )
    group_of: dict[int, int | None] = {}
    for pk, group_id, minhash in rows.iterator(chunk_size=BULK_BATCH):
        group_of[pk] = group_id
        if pk not in changed_ids:
            index.add(pk, bytes(minhash))
    for document in changed:
        sig = bytes(document.latest_version.minhash)
        matches = index.matches(sig)
        index.add(document.pk, sig)
        if not matches:
            continue
        group_id = next((group_of[m] for m in matches if group_of.get(m)), None)
        if group_id is None:
            group = DuplicateGroup.objects.create(project=project, representative_id=min(matches))
            group_id = group.pk
        members = {document.pk, *matches}
        # Matches already in other groups are merged into this one.
        Document.objects.filter(pk__in=members).update(duplicate_group_id=group_id)
        for member in members:
            group_of[member] = group_id
    DuplicateGroup.objects.filter(project=project, documents__isnull=True).delete()


def _leave_groups(project: Project, document_ids: set[int]) -> None:
    group_ids = set(
        Document.objects.filter(pk__in=document_ids, duplicate_group__isnull=False).values_list(
            "duplicate_group_id", flat=True
        )
    )
    if not group_ids:
        return
    Document.objects.filter(pk__in=document_ids).update(duplicate_group=None)
    for group in DuplicateGroup.objects.filter(pk__in=group_ids):
        remaining = list(group.documents.order_by("pk").values_list("pk", flat=True))
        if len(remaining) < 2:
            Document.objects.filter(pk__in=remaining).update(duplicate_group=None)
            group.delete()
        elif group.representative_id not in remaining:
            group.representative_id = remaining[0]
            group.save(update_fields=["representative"])


def choose_representative(*, group: DuplicateGroup, document: Document) -> DuplicateGroup:
    if document.duplicate_group_id != group.pk:
        raise ServiceError(f"{document.doc_id} is not a member of this duplicate group.")
    group.representative = document
    group.save(update_fields=["representative"])
    return group


def accept_quality(*, version: DocumentVersion, user) -> DocumentVersion:
    """An admin lets a flagged version into retrieval despite its extraction report."""
    if not version.quality_flagged:
        raise ServiceError("This version passed the extraction checks; there is nothing to accept.")
    version.quality_accepted_at = timezone.now()
    version.quality_accepted_by = user
    version.save(update_fields=["quality_accepted_at", "quality_accepted_by"])
    return version


# Chunking schemes ------------------------------------------------------------------------


def add_chunking_scheme(
    *,
    project: Project,
    name: str,
    strategy: str,
    unit: str = "words",
    size: int = 200,
    overlap: int = 50,
) -> ChunkingScheme:
    spec = ChunkSpec(strategy=strategy, unit=unit, size=size, overlap=overlap)
    spec.validate()
    if ChunkingScheme.objects.filter(project=project, name=name).exists():
        raise ServiceError(f"A chunking scheme named {name!r} already exists in this project.")
    return ChunkingScheme.objects.create(
        project=project, name=name, strategy=strategy, unit=unit, size=size, overlap=overlap
    )


def change_chunking_scheme(
    *, scheme: ChunkingScheme, strategy: str, unit: str, size: int, overlap: int
) -> ChunkingScheme:
    """Changing a scheme re-cuts its chunks; labels point at document text, so none is touched."""
    ChunkSpec(strategy=strategy, unit=unit, size=size, overlap=overlap).validate()
    scheme.strategy, scheme.unit, scheme.size, scheme.overlap = strategy, unit, size, overlap
    scheme.save(update_fields=["strategy", "unit", "size", "overlap"])
    return scheme


def chunk_corpus(*, scheme: ChunkingScheme, progress: Progress | None = None) -> int:
    """(Re)build the scheme's chunks for the newest version of every document. Idempotent."""
    total = 0
    with transaction.atomic():
        Chunk.objects.filter(scheme=scheme).delete()
        versions = (
            DocumentVersion.objects.filter(
                pk__in=Document.objects.filter(project=scheme.project).values("latest_version")
            )
            .only("pk", "text")
            .order_by("pk")
        )
        batch: list[DocumentVersion] = []
        for version in versions.iterator(chunk_size=500):
            batch.append(version)
            if len(batch) == 500:
                total += _write_chunks(scheme, batch)
                if progress:
                    progress(len(batch))
                batch = []
        total += _write_chunks(scheme, batch)
        if progress and batch:
            progress(len(batch))
    return total


def start_upload_import(
    *, project: Project, files: Sequence, user, access_groups: Sequence[str] = ()
) -> Job:
    """Store the uploaded originals and queue their import (one atomic import per file).
    ``access_groups`` restricts the documents that name no groups of their own."""
    with transaction.atomic():
        job = jobs.start(
            project=project,
            task="corpus.tasks.import_uploads",
            kind="import_uploads",
            user=user,
            total=len(files),
            params={"access_groups": sorted(access_groups)} if access_groups else {},
            description=f"Import {len(files)} uploaded file{'s' if len(files) != 1 else ''}",
        )
        for upload in files:
            data = upload.read()
            Upload.objects.create(
                job=job,
                name=Path(upload.name).name[:255],
                size=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
                content=data,
            )
    return job


def start_chunking(*, scheme: ChunkingScheme, user=None) -> Job:
    return jobs.start(
        project=scheme.project,
        task="corpus.tasks.chunk_corpus",
        kind="chunk_corpus",
        user=user,
        params={"scheme_id": scheme.pk},
        description=f"Chunk the corpus with {scheme.name}",
        total=Document.objects.filter(project=scheme.project, latest_version__isnull=False).count(),
    )


# A running job whose worker has shown no sign of life for this long is presumed dead.


def run_upload_import(job: Job) -> None:
    """The job of `start_upload_import`: each stored original imported on its own."""
    result = IngestResult()
    advance = jobs.progress(job)
    groups = tuple(job.params.get("access_groups", ()))
    for upload in job.uploads.order_by("pk"):
        try:
            batch = read_source(name=upload.name, data=bytes(upload.content))
        except SourceError as exc:
            batch = SourceBatch(
                source=upload.name, errors=[RecordError(source=upload.name, error=str(exc))]
            )
        if groups:
            batch.records = [
                record if record.access_groups else replace(record, access_groups=groups)
                for record in batch.records
            ]
        result.add(ingest_batch(project=job.project, batch=batch))
        advance(1)
    _record_result(job, result)


def run_chunking(job: Job) -> None:
    """The job of `start_chunking`."""
    scheme = ChunkingScheme.objects.get(pk=job.params["scheme_id"], project=job.project)
    chunks = chunk_corpus(scheme=scheme, progress=jobs.progress(job))
    job.result = {"chunks": chunks}
    jobs.finish(job, JobState.SUCCEEDED, f"{chunks} chunks written for {scheme.name}.")


def _record_result(job: Job, result: IngestResult) -> None:
    job.result = result.as_dict()
    job.errors = [e.as_dict() for e in result.errors]
    summary = f"{result.created} new, {result.updated} updated, {result.unchanged} unchanged" + (
        f", {len(result.errors)} rejected" if result.errors else ""
    )
    state = (
        JobState.FAILED
        if result.errors and not (result.imported or result.unchanged)
        else JobState.SUCCEEDED
    )
    jobs.finish(job, state, summary)
