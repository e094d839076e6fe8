"""Ingestion: documents and their versions, near-duplicates, extraction quality, chunking."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from django.contrib.auth.models import AnonymousUser
from django.db import DataError, transaction
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Length
from django.utils import timezone

from corpus import jobs, visibility
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
    Membership,
    Project,
    Role,
    Upload,
)
from corpus.services.projects import access_changed
from corpus.sources import (
    DocumentRecord,
    RecordError,
    SourceBatch,
    SourceError,
    list_import_files,
    read_file_source,
    read_source,
)
from goldeval.text.chunking import ChunkSpec, chunk_spans
from goldset.batching import in_batches
from goldset.errors import ServiceError

BULK_BATCH = 2000
Progress = jobs.Progress


# Ingestion -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Importer:
    """Who writes documents, which decides what an import may change.

    An import never widens a document's access: a record that names no access groups keeps the
    document's groups, and only an importer who manages access (a project admin, or the server's
    operator at the command line) replaces them by the ones a record names. A document hidden
    from the importer cannot get a new version from them, and the refusal says nothing of it
    (not whether the text differs). A new document takes the groups its record names, whoever
    imports it: restricting something new hides nothing that was visible.
    """

    user: object | None  # None: the command line, which sees every document
    manages_access: bool

    @classmethod
    def command_line(cls) -> Importer:
        return cls(user=None, manages_access=True)

    @classmethod
    def member(cls, *, user, project: Project) -> Importer:
        """A user importing through the app, with the rights of their role in ``project`` (no
        user, e.g. a deleted one, sees no restricted document and changes no access)."""
        role = Membership.objects.role_of(user=user, project=project) if user else None
        return cls(user=user or AnonymousUser(), manages_access=role == Role.ADMIN)

    def hidden(self, documents: Sequence[Document]) -> set[int]:
        """The pks of ``documents`` that an access group hides from this importer."""
        if self.user is None:
            return set()
        pks = [d.pk for d in documents]
        seen: set[int] = set()
        for batch in in_batches(pks):
            seen.update(
                Document.objects.filter(pk__in=batch)
                .visible_to(self.user)
                .values_list("pk", flat=True)
            )
        return set(pks) - seen


HIDDEN_DOCUMENT = (
    "this doc id is taken by a document outside your access groups, so nothing was written; "
    "only members of its group (or an admin in it) can import it"
)
KEPT_ACCESS = (
    "imported, keeping the document's access groups: only a project admin changes the groups "
    "of an existing document"
)


@dataclass
class IngestResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    regrouped: int = 0  # existing text, access groups changed by an admin
    errors: list[RecordError] = field(default_factory=list)
    notices: list[RecordError] = field(default_factory=list)  # imported, with a caveat
    # What each document added to the figures ({pk: {"created": 1}}): a job page reads them
    # without the documents hidden from its viewer (`corpus.jobs.add_shares`).
    shares: dict[int, dict[str, int]] = field(default_factory=dict)

    def add(self, other: IngestResult) -> None:
        self.created += other.created
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.regrouped += other.regrouped
        self.errors.extend(other.errors)
        self.notices.extend(other.notices)
        for pk, amounts in other.shares.items():
            mine = self.shares.setdefault(pk, {})
            for name, amount in amounts.items():
                mine[name] = mine.get(name, 0) + amount

    def count(self, document: Document, figure: str) -> None:
        setattr(self, figure, getattr(self, figure) + 1)
        if document.pk is not None:
            mine = self.shares.setdefault(document.pk, {})
            mine[figure] = mine.get(figure, 0) + 1

    @property
    def imported(self) -> int:
        return self.created + self.updated + self.regrouped

    def as_dict(self) -> dict:
        return {
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "regrouped": self.regrouped,
            "errors": len(self.errors),
            "notices": [n.as_dict() for n in self.notices],
        }

    def summary(self) -> str:
        return jobs.render_message(*self.summary_template())

    def summary_template(self) -> tuple[jobs.Template, dict]:
        """The summary as a message template and its figures (`corpus.jobs.finish`), so a
        job page counts only the documents its viewer may see."""
        parts = [
            "{created} new, {updated} updated, {unchanged} unchanged",
            [", access groups changed on {regrouped}", "regrouped"],
            [", {rejected} rejected", "rejected"],
            [", access groups kept on {notices}", "notices"],
        ]
        figures = {
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "regrouped": self.regrouped,
            "rejected": len(self.errors),
            "notices": len(self.notices),
        }
        return parts, figures


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ingest_batch(
    *,
    project: Project,
    batch: SourceBatch,
    importer: Importer,
    progress: Progress | None = None,
) -> IngestResult:
    """Write one source's records atomically: all of its good records, or none on failure.

    Re-importing a doc_id with changed text adds a version; identical text changes nothing.
    New versions are chunked under every scheme and checked for near-duplicates. What the
    ``importer`` may change is `Importer`'s rule. A database error while writing (a value no
    check foresaw) fails this source alone, with its message, and is never retried.
    """
    result = IngestResult(errors=list(batch.errors))
    if not batch.records:
        return result
    try:
        with transaction.atomic():
            _write_batch(project, batch, importer, result)
    except DataError as exc:
        result = IngestResult(errors=list(batch.errors))
        result.errors.append(
            RecordError(
                source=batch.source,
                error=f"nothing of this file was stored: the database refused a value ({exc})"[
                    :500
                ],
            )
        )
    if progress:
        progress(len(batch.records))
    return result


def _write_batch(
    project: Project, batch: SourceBatch, importer: Importer, result: IngestResult
) -> None:
    records = batch.records
    existing = _existing_documents(project, [r.doc_id for r in records])
    hidden = importer.hidden(list(existing.values()))
    current_groups = _group_names({d.pk for d in existing.values()} - hidden)
    new_docs: list[Document] = []
    changes: list[tuple[DocumentRecord, Document, int]] = []
    regroup: list[tuple[Document, tuple[str, ...]]] = []
    for record in records:
        document = existing.get(record.doc_id)
        if document is not None and document.pk in hidden:
            # Before comparing texts: "unchanged" would tell the importer what it says.
            result.errors.append(
                RecordError(
                    source=batch.source,
                    line=record.line,
                    doc_id=record.doc_id,
                    error=HIDDEN_DOCUMENT,
                )
            )
            continue
        if document is not None and record.access_groups:
            named = tuple(sorted(set(record.access_groups)))
            if named != current_groups.get(document.pk, ()):
                if importer.manages_access:
                    regroup.append((document, named))
                else:
                    result.notices.append(
                        RecordError(
                            source=batch.source,
                            line=record.line,
                            doc_id=record.doc_id,
                            error=KEPT_ACCESS,
                        )
                    )
                    result.shares.setdefault(document.pk, {})["notices"] = 1
        latest = document.latest_version if document else None
        if latest is not None and latest.content_hash == content_hash(record.text):
            result.count(
                document, "regrouped" if any(d is document for d, _ in regroup) else "unchanged"
            )
            continue
        if document is None:
            document = Document(project=project, doc_id=record.doc_id, title=record.title)
            new_docs.append(document)
            result.created += 1
            if record.access_groups:
                regroup.append((document, tuple(sorted(set(record.access_groups)))))
        else:
            document.title = record.title or document.title
            result.count(document, "updated")
        changes.append((record, document, (latest.version + 1) if latest else 1))
    Document.objects.bulk_create(new_docs, batch_size=BULK_BATCH)
    if new_docs and new_docs[0].pk is None:  # a backend that does not return new keys
        ids = dict(
            Document.objects.filter(
                project=project, doc_id__in=[d.doc_id for d in new_docs]
            ).values_list("doc_id", "pk")
        )
        for document in new_docs:
            document.pk = ids.get(document.doc_id)
    for document in new_docs:
        if document.pk is not None:
            result.shares.setdefault(document.pk, {})["created"] = 1
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
    # One UPDATE … FROM a subquery: bulk_update's CASE expression grows with every row.
    changed_ids = [document.pk for _, document, _ in changes]
    newest = DocumentVersion.objects.filter(document=OuterRef("pk")).order_by("-version")
    for batch in in_batches(changed_ids, size=BULK_BATCH):
        Document.objects.filter(pk__in=batch).update(
            latest_version=Subquery(newest.values("pk")[:1])
        )
    retitled = [document for record, document, number in changes if number > 1]
    Document.objects.bulk_update(retitled, ["title"], batch_size=BULK_BATCH)
    _set_access_groups(project, regroup)
    for scheme in project.chunking_schemes.all():
        _write_chunks(scheme, versions)
    _group_near_duplicates(project, [document for _, document, _ in changes])


def import_path(
    *,
    project: Project,
    path: Path,
    importer: Importer | None = None,
    report: Callable[[str], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> IngestResult:
    """Import a folder of document files, or one JSONL/CSV/document file, from the command line.

    Runs in the calling process (a CI script wants to block on it) and is recorded as a Job.
    ``progress(done, total)`` is called after each file.
    """
    importer = importer or Importer.command_line()
    files = list_import_files(path)
    job = Job.objects.create(
        project=project,
        kind="import_documents",
        state=JobState.RUNNING,
        description=f"Import {path.name}"[:300],
        started_at=timezone.now(),
        total=len(files),
    )
    result = IngestResult()
    for file, name in files:
        batch = read_file_source(file=file, name=name, doc_id=name if path.is_dir() else None)
        part = ingest_batch(project=project, batch=batch, importer=importer)
        result.add(part)
        job.done += 1
        Job.objects.filter(pk=job.pk).update(done=job.done, heartbeat_at=timezone.now())
        if report:
            report(f"{file}: {part.summary()}")
        if progress:
            progress(job.done, len(files))
    _record_result(job, result)
    return result


def _existing_documents(project: Project, doc_ids: Sequence[str]) -> dict[str, Document]:
    found: dict[str, Document] = {}
    for batch in in_batches(doc_ids):
        for document in Document.objects.filter(project=project, doc_id__in=batch).select_related(
            "latest_version"
        ):
            found[document.doc_id] = document
    return found


def newest_versions(
    *, project_id: int, doc_ids: Iterable[str], user=None
) -> dict[str, tuple[int, int]]:
    """doc_id -> (newest version id, its text length) of the named documents of the project
    that have a version; with a ``user``, of those no access group hides from them. What an
    imported run or answer file's offsets are checked against."""
    found: dict[str, tuple[int, int]] = {}
    for batch in in_batches(sorted(set(doc_ids))):
        documents = Document.objects.filter(
            project_id=project_id, doc_id__in=batch, latest_version__isnull=False
        )
        if user is not None:
            documents = documents.filter(visibility.not_hidden_q(user))
        versions = dict(documents.values_list("doc_id", "latest_version_id"))
        lengths = dict(
            DocumentVersion.objects.filter(pk__in=list(versions.values()))
            .annotate(length=Length("text"))
            .values_list("pk", "length")
        )
        found.update({doc_id: (pk, lengths[pk]) for doc_id, pk in versions.items()})
    return found


def _group_names(document_ids: set[int]) -> dict[int, tuple[str, ...]]:
    """Each document's access group names, sorted (documents without groups are absent)."""
    names: dict[int, list[str]] = {}
    ordered = sorted(document_ids)
    for batch in in_batches(ordered):
        links = Document.access_groups.through.objects.filter(document_id__in=batch).values_list(
            "document_id", "accessgroup__name"
        )
        for document_id, name in links:
            names.setdefault(document_id, []).append(name)
    return {pk: tuple(sorted(group)) for pk, group in names.items()}


def _set_access_groups(project: Project, regroup: list[tuple[Document, tuple[str, ...]]]) -> None:
    """Give each document exactly the named groups (created when new to the project)."""
    if not regroup:
        return
    names = {name for _, named in regroup for name in named}
    groups = {g.name: g for g in AccessGroup.objects.filter(project=project, name__in=names)}
    missing = [AccessGroup(project=project, name=n) for n in sorted(names - groups.keys())]
    for group in AccessGroup.objects.bulk_create(missing):
        groups[group.name] = group
    through = Document.access_groups.through
    document_ids = [d.pk for d, _ in regroup]
    for batch in in_batches(document_ids):
        through.objects.filter(document_id__in=batch).delete()
    through.objects.bulk_create(
        [
            through(document_id=document.pk, accessgroup_id=groups[name].pk)
            for document, named in regroup
            for name in named
        ],
        batch_size=BULK_BATCH,
    )
    access_changed(project=project, document_ids=document_ids)


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
            jobs.keep_upload(job=job, name=upload.name, data=data)
    return job


def start_chunking(*, scheme: ChunkingScheme, user=None) -> Job:
    documents = Document.objects.filter(project=scheme.project, latest_version__isnull=False)
    # Its progress counts documents: each restricted one is a share a viewer outside its
    # groups does not count (`corpus.job_display`).
    restricted = documents.restricted().values_list("pk", flat=True).distinct()
    return jobs.start(
        project=scheme.project,
        task="corpus.tasks.chunk_corpus",
        kind="chunk_corpus",
        user=user,
        params={"scheme_id": scheme.pk},
        description=f"Chunk the corpus with {scheme.name}",
        total=documents.count(),
        shares={pk: {"done": 1, "total": 1} for pk in restricted},
    )


def run_upload_import(job: Job) -> None:
    """The job of `start_upload_import`: each stored original imported on its own, with the
    rights of the user who uploaded it (`Importer.member`)."""
    result = IngestResult()
    advance = jobs.progress(job)
    importer = Importer.member(user=job.created_by, project=job.project)
    # The upload form's access groups go to records that name none (an import's own rules then
    # decide what they may change: a lead's groups restrict new documents only).
    groups = tuple(job.params.get("access_groups", ()))
    # One original in memory at a time: fifty of them may be a gigabyte.
    for pk, name in job.uploads.order_by("pk").values_list("pk", "name"):
        content = Upload.objects.filter(pk=pk).values_list("content", flat=True).first()
        try:
            batch = read_source(name=name, data=bytes(content or b""))
        except SourceError as exc:
            batch = SourceBatch(
                source=name, errors=[RecordError(source=name, error=exc.without(name))]
            )
        if groups:
            batch.records = [
                record if record.access_groups else replace(record, access_groups=groups)
                for record in batch.records
            ]
        result.add(ingest_batch(project=job.project, batch=batch, importer=importer))
        advance(1)
    _record_result(job, result)


def run_chunking(job: Job) -> None:
    """The job of `start_chunking`."""
    scheme = ChunkingScheme.objects.get(pk=job.params["scheme_id"], project=job.project)
    chunks = chunk_corpus(scheme=scheme, progress=jobs.progress(job))
    job.result = {**job.result, "chunks": chunks}
    # No count: it would include documents hidden from some leads (the chunking page shows
    # each viewer the chunks they may see).
    jobs.finish(job, JobState.SUCCEEDED, f"{scheme.name}: every document is chunked.")


def _record_result(job: Job, result: IngestResult) -> None:
    job.result = result.as_dict()
    jobs.add_shares(job, result.shares)
    job.errors = [e.as_dict() for e in result.errors]
    state = (
        JobState.FAILED
        if result.errors and not (result.imported or result.unchanged)
        else JobState.SUCCEEDED
    )
    template, figures = result.summary_template()
    jobs.finish(job, state, [*template, "."], figures=figures)
