"""Writes to the corpus: projects, members, ingestion, versions, duplicates, chunking, jobs."""

from __future__ import annotations

import hashlib
import io
import logging
import threading
import zipfile
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import DatabaseError, transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone
from django.utils.text import slugify

from corpus.analysis import Analyzer
from corpus.bm25 import BM25Index
from corpus.chunking import ChunkSpec, chunk_spans
from corpus.dedupe import NearDuplicateIndex, signature
from corpus.embedding import Encoder, ModelNotFoundError, VectorIndex
from corpus.models import (
    AccessGroup,
    Chunk,
    ChunkingScheme,
    Document,
    DocumentQuerySet,
    DocumentVersion,
    DuplicateGroup,
    EmbeddingCache,
    Index,
    IndexState,
    Job,
    JobState,
    Membership,
    Project,
    Retriever,
    RetrieverKind,
    Role,
    Upload,
)
from corpus.sources import (
    DocumentRecord,
    RecordError,
    SourceBatch,
    SourceError,
    read_folder,
    read_source,
)

logger = logging.getLogger(__name__)
User = get_user_model()

BULK_BATCH = 2000
Progress = Callable[[int], None]


class ServiceError(Exception):
    """A request that cannot be carried out; the message is shown to the user as is."""


# Projects and members --------------------------------------------------------------------


def create_project(*, slug: str, name: str = "") -> Project:
    if Project.objects.filter(slug=slug).exists():
        raise ServiceError(f"A project with the slug {slug!r} already exists.")
    return Project.objects.create(slug=slug, name=name or slug)


def add_member(*, project: Project, user, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": Role(role)}
    )
    return membership


def set_access_group_members(*, project: Project, name: str, users: Iterable) -> AccessGroup:
    group, _ = AccessGroup.objects.get_or_create(project=project, name=name)
    before = set(group.members.values_list("pk", flat=True))
    group.members.set(users)
    after = set(group.members.values_list("pk", flat=True))
    access_changed(project=project, user_ids=before ^ after)
    return group


# What other apps derive from what each user may see (labelling: whether an assignment is done,
# since hidden passages are not the labeller's to grade) is recomputed the moment access
# changes, not at the labeller's next edit. None means "any user" / "any document".
AccessListener = Callable[[Project, "set[int] | None", "set[int] | None"], None]
ACCESS_LISTENERS: list[AccessListener] = []


def register_access_listener(listener: AccessListener) -> AccessListener:
    ACCESS_LISTENERS.append(listener)
    return listener


def access_changed(
    *,
    project: Project,
    user_ids: Iterable[int] | None = None,
    document_ids: Iterable[int] | None = None,
) -> None:
    """Some users' (None: anyone's) access to some documents (None: any) of `project` changed."""
    users = None if user_ids is None else set(user_ids)
    documents = None if document_ids is None else set(document_ids)
    if users == set() or documents == set():
        return
    for listener in ACCESS_LISTENERS:
        listener(project, users, documents)


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


# Jobs ------------------------------------------------------------------------------------


def start_job(
    *,
    project: Project,
    kind: str,
    description: str,
    params: dict | None = None,
    user=None,
    total: int = 0,
) -> Job:
    """Create a Job and queue it once the surrounding transaction commits."""
    from corpus.tasks import run_job

    job = Job.objects.create(
        project=project,
        kind=kind,
        description=description[:300],
        params=params or {},
        created_by=user,
        total=total,
    )
    transaction.on_commit(lambda: run_job.delay(job.pk))
    return job


def start_upload_import(*, project: Project, files: Sequence, user) -> Job:
    """Store the uploaded originals and queue their import (one atomic import per file)."""
    with transaction.atomic():
        job = start_job(
            project=project,
            kind="import_uploads",
            user=user,
            total=len(files),
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
    return start_job(
        project=scheme.project,
        kind="chunk_corpus",
        user=user,
        params={"scheme_id": scheme.pk},
        description=f"Chunk the corpus with {scheme.name}",
        total=Document.objects.filter(project=scheme.project, latest_version__isnull=False).count(),
    )


# A running job whose worker has shown no sign of life for this long is presumed dead.
JOB_STALE_AFTER = timedelta(minutes=10)
JOB_MAX_ATTEMPTS = 3


def run_job(job: Job) -> Job:
    """Do a job's work; safe to call again for a job whose worker died (work is idempotent).

    The job is claimed under a row lock, so a redelivered message and a reconciler's re-queue
    cannot run it twice at once.
    """
    now = timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job.pk)
        alive = job.heartbeat_at is not None and job.heartbeat_at > now - JOB_STALE_AFTER
        if job.finished or (job.state == JobState.RUNNING and alive):
            return job
        job.state, job.started_at, job.heartbeat_at = JobState.RUNNING, now, now
        job.attempts += 1
        job.done = 0
        job.save(update_fields=["state", "started_at", "heartbeat_at", "attempts", "done"])
    handler = JOB_HANDLERS.get(job.kind)
    try:
        if handler is None:
            raise ServiceError(f"Unknown job kind {job.kind!r}.")
        handler(job)
    except (ServiceError, SourceError) as exc:
        finish_job(job, JobState.FAILED, str(exc))
    except DatabaseError:
        # The database went away mid-job: leave it unfinished for the retry or the reconciler.
        raise
    except Exception:
        logger.exception("job %s failed", job.pk)
        finish_job(
            job, JobState.FAILED, "An unexpected error stopped this job; it has been logged."
        )
    return job


def reconcile_jobs(*, stale_after: timedelta = JOB_STALE_AFTER) -> list[int]:
    """Re-queue unfinished jobs whose message was lost (e.g. Redis restarted empty) or whose
    worker died; give up, with the reason, after JOB_MAX_ATTEMPTS."""
    from corpus.tasks import run_job as run_job_task

    now = timezone.now()
    cutoff = now - stale_after
    requeued = []
    stale = Job.objects.unfinished().filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=cutoff)
    )
    for job in stale:
        if job.attempts >= JOB_MAX_ATTEMPTS:
            finish_job(
                job,
                JobState.FAILED,
                f"Gave up after {job.attempts} attempts: the worker stopped each time.",
            )
            continue
        Job.objects.filter(pk=job.pk).update(state=JobState.QUEUED, heartbeat_at=now)
        transaction.on_commit(lambda pk=job.pk: run_job_task.delay(pk))
        requeued.append(job.pk)
    return requeued


def finish_job(job: Job, state: str, message: str) -> None:
    job.state, job.message, job.finished_at = state, message, timezone.now()
    job.save(update_fields=["state", "message", "finished_at", "errors", "result", "done", "total"])


def job_progress(job: Job) -> Progress:
    def advance(count: int) -> None:
        job.done += count
        Job.objects.filter(pk=job.pk).update(
            done=job.done, total=max(job.total, job.done), heartbeat_at=timezone.now()
        )

    return advance


def _import_uploads(job: Job) -> None:
    result = IngestResult()
    advance = job_progress(job)
    for upload in job.uploads.order_by("pk"):
        try:
            batch = read_source(name=upload.name, data=bytes(upload.content))
        except SourceError as exc:
            batch = SourceBatch(
                source=upload.name, errors=[RecordError(source=upload.name, error=str(exc))]
            )
        result.add(ingest_batch(project=job.project, batch=batch))
        advance(1)
    _record_result(job, result)


def _chunk_corpus(job: Job) -> None:
    scheme = ChunkingScheme.objects.get(pk=job.params["scheme_id"], project=job.project)
    chunks = chunk_corpus(scheme=scheme, progress=job_progress(job))
    job.result = {"chunks": chunks}
    finish_job(job, JobState.SUCCEEDED, f"{chunks} chunks written for {scheme.name}.")


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
    finish_job(job, state, summary)


JOB_HANDLERS: dict[str, Callable[[Job], None]] = {
    "import_uploads": _import_uploads,
    "chunk_corpus": _chunk_corpus,
}


def register_job_handler(kind: str) -> Callable[[Callable[[Job], None]], Callable[[Job], None]]:
    """Let another app's services run as Jobs (registered when its AppConfig is ready)."""

    def register(handler: Callable[[Job], None]) -> Callable[[Job], None]:
        JOB_HANDLERS[kind] = handler
        return handler

    return register


# Retrievers and indexes ------------------------------------------------------------------

# Indexes kept loaded per process: searching must not re-read a 100,000-passage artefact from
# the database for every batch of questions. A handful covers every retriever of a pool.
LOADED_INDEXES = 6
ENCODE_BATCH = 256
_PASSAGE_FORMAT = 1


@dataclass(frozen=True)
class Retrieved:
    """One passage a retriever returned for a question; ranks start at 1."""

    rank: int
    score: float
    version_id: int
    document_id: int
    doc_id: str
    start: int
    end: int


@dataclass(frozen=True)
class LoadedIndex:
    """An Index artefact in memory: its searcher and which passage each position is."""

    index_id: int
    built_at: datetime | None
    searcher: BM25Index | VectorIndex
    version_ids: np.ndarray
    document_ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.version_ids)


_loaded: OrderedDict[tuple, LoadedIndex] = OrderedDict()
_loaded_lock = threading.Lock()


def add_retriever(
    *,
    project: Project,
    name: str,
    kind: str,
    scheme: ChunkingScheme | None = None,
    stem: bool = False,
    stopwords: bool = False,
    k1: float = 0.9,
    b: float = 0.4,
    model_path: str = "",
) -> Retriever:
    """Configure a retriever. Built-in kinds need a chunking scheme that has chunks."""
    if kind not in RetrieverKind.values:
        raise ServiceError(
            f"Unknown retriever kind {kind!r}; choose one of {', '.join(RetrieverKind.values)}."
        )
    if not name or slugify(name) != name:
        raise ServiceError(
            f"A retriever name is a slug (lower-case letters, digits, - and _), not {name!r}."
        )
    if Retriever.objects.filter(project=project, name=name).exists():
        raise ServiceError(f"A retriever named {name!r} already exists in this project.")
    if scheme is not None and scheme.project_id != project.pk:
        raise ServiceError(f"The chunking scheme {scheme.name} belongs to another project.")
    params: dict = {}
    if kind != RetrieverKind.RUN:
        if scheme is None:
            raise ServiceError(f"A {kind} retriever needs a chunking scheme to search.")
        _require_chunks(scheme)
    if kind == RetrieverKind.BM25:
        if k1 < 0 or not 0 <= b <= 1:
            raise ServiceError(f"BM25 needs k1 >= 0 and b between 0 and 1, got k1={k1}, b={b}.")
        params = {"k1": float(k1), "b": float(b), "stem": bool(stem), "stopwords": bool(stopwords)}
    if kind == RetrieverKind.EMBEDDING:
        model_path = _check_model(model_path)
    elif model_path:
        raise ServiceError("Only an embedding retriever takes a model folder.")
    return Retriever.objects.create(
        project=project, name=name, kind=kind, scheme=scheme, params=params, model_path=model_path
    )


def start_index_build(*, retriever: Retriever, user=None) -> Job:
    """Queue a new index of a built-in retriever; it becomes active once it is complete."""
    _check_buildable(retriever)
    return start_job(
        project=retriever.project,
        kind="build_index",
        user=user,
        params={"retriever_id": retriever.pk},
        description=f"Build the {retriever.name} index",
        total=Chunk.objects.filter(
            scheme=retriever.scheme, version__in=_latest_versions(retriever)
        ).count(),
    )


def build_index(*, retriever: Retriever, job: Job | None = None) -> Index:
    """Build a fresh index over the newest version of every document, then switch to it.

    BM25 simply rebuilds (it takes seconds at 100,000 passages). Embedding reuses every vector
    already computed for the same passage text and model version, so adding one document embeds
    only that document's passages. The previous index keeps serving until the switch, and a
    failed build leaves it active.
    """
    _check_buildable(retriever)
    if job is not None:
        # An earlier attempt of this job died with its worker (kill -9, OOM): its half-built
        # index can never finish, so it goes rather than showing as "building" forever.
        Index.objects.filter(retriever=retriever, job=job, state=IndexState.BUILDING).delete()
    index = Index.objects.create(retriever=retriever, job=job)
    advance = job_progress(job) if job is not None else None
    try:
        # The index reflects the corpus as read here: anything newer is reported as stale.
        snapshot = timezone.now()
        passages = _passages(retriever)
        if not passages:
            raise ServiceError(
                f"The chunking scheme {retriever.scheme.name} has no chunks: import documents "
                "or re-chunk before building an index."
            )
        texts = [text for *_, text in passages]
        if retriever.kind == RetrieverKind.BM25:
            searcher: BM25Index | VectorIndex = BM25Index.build(
                texts,
                analyzer=Analyzer(
                    stem=retriever.params.get("stem", False),
                    stopwords=retriever.params.get("stopwords", False),
                ),
                k1=retriever.params.get("k1", 0.9),
                b=retriever.params.get("b", 0.4),
            )
            if advance:
                advance(len(passages))
        else:
            searcher = _embed(retriever, index, passages, advance)
        index.artifact = _pack(searcher, passages)
        index.passages = len(passages)
        index.state = IndexState.READY
        index.built_at = snapshot
        with transaction.atomic():
            index.save()
            Retriever.objects.filter(pk=retriever.pk).update(active_index=index)
            retriever.active_index = index
            DocumentVersion.objects.filter(
                pk__in=_latest_versions(retriever).filter(latest_version__created_at__lte=snapshot)
            ).update(indexed_at=timezone.now())
            # Older artefacts are never searched again (the active one is switched atomically).
            retriever.indexes.exclude(pk=index.pk).exclude(state=IndexState.BUILDING).delete()
    except BaseException:
        Index.objects.filter(pk=index.pk).update(state=IndexState.FAILED, artifact=b"")
        raise
    return index


def retrieve(
    *, retriever: Retriever, questions: Sequence[str], k: int, user=None
) -> list[list[Retrieved]]:
    """The top k passages for each question, searched in one batch.

    Only the newest version of a searchable document can come back. With a user, documents that
    user may not see are filtered out *before* the cut, so k results still come back and nothing
    about a hidden document shows, not even a score.
    """
    if k < 1:
        raise ServiceError(f"k must be at least 1, got {k}.")
    if retriever.kind == RetrieverKind.RUN:
        raise ServiceError(f"{retriever.name} replays an uploaded run; it does not search.")
    loaded = load_index(retriever)
    if not questions:
        return []
    allowed = _allowed_passages(loaded, retriever.project, user)
    if retriever.kind == RetrieverKind.BM25:
        found = loaded.searcher.search_many(list(questions), k=k, allowed=allowed)
    else:
        encoder = Encoder(_model_folder(retriever.model_path))
        if encoder.info.version != loaded.searcher.info.version:
            raise ServiceError(
                f"The model of {retriever.name} changed since its index was built; rebuild it."
            )
        found = loaded.searcher.search_many(encoder.encode(list(questions)), k=k, allowed=allowed)
    wanted = sorted({int(loaded.document_ids[p]) for hits in found for p, _ in hits})
    doc_ids: dict[int, str] = {}
    for first in range(0, len(wanted), 900):  # SQLite caps bound parameters per query
        doc_ids.update(
            Document.objects.filter(pk__in=wanted[first : first + 900]).values_list("pk", "doc_id")
        )
    return [
        [
            Retrieved(
                rank=rank,
                score=score,
                version_id=int(loaded.version_ids[position]),
                document_id=int(loaded.document_ids[position]),
                doc_id=doc_ids[int(loaded.document_ids[position])],
                start=int(loaded.starts[position]),
                end=int(loaded.ends[position]),
            )
            for rank, (position, score) in enumerate(hits, start=1)
        ]
        for hits in found
    ]


def load_index(retriever: Retriever) -> LoadedIndex:
    """The retriever's active index, read from the database once per process.

    One small query tells which index is active now (another process may have switched it);
    the artefact itself is read only when this process has not loaded that index yet.
    """
    index_id, built_at = (
        Retriever.objects.filter(pk=retriever.pk)
        .values_list("active_index_id", "active_index__built_at")
        .first()
    ) or (None, None)
    if index_id is None:
        raise ServiceError(f"{retriever.name} has no built index yet: build it first.")
    # built_at in the key: an id alone can come back after a rolled-back transaction.
    key = (index_id, built_at)
    with _loaded_lock:
        if key in _loaded:
            _loaded.move_to_end(key)
            return _loaded[key]
    artifact = (
        Index.objects.filter(pk=index_id, state=IndexState.READY)
        .values_list("artifact", flat=True)
        .first()
    )
    if not artifact:
        raise ServiceError(f"The index of {retriever.name} is not ready: build it again.")
    loaded = _unpack(index_id, built_at, bytes(artifact))
    with _loaded_lock:
        _loaded[key] = loaded
        while len(_loaded) > LOADED_INDEXES:
            _loaded.popitem(last=False)
    return loaded


def stale_documents(retriever: Retriever) -> DocumentQuerySet:
    """Documents added or changed since the active index read the corpus (none without one)."""
    index = retriever.active_index
    documents = Document.objects.filter(project=retriever.project)
    if index is None or index.built_at is None:
        return documents.none()
    return documents.changed_since(index.built_at)


def _require_chunks(scheme: ChunkingScheme) -> None:
    if not Chunk.objects.filter(scheme=scheme).exists():
        raise ServiceError(
            f"The chunking scheme {scheme.name} has no chunks: import documents or re-chunk "
            "before adding a retriever over it."
        )


def _check_buildable(retriever: Retriever) -> None:
    if retriever.kind == RetrieverKind.RUN:
        raise ServiceError(
            f"{retriever.name} is an uploaded run: upload its results instead of building it."
        )
    if retriever.scheme is None:
        raise ServiceError(f"{retriever.name} has no chunking scheme to index.")
    _require_chunks(retriever.scheme)
    if retriever.kind == RetrieverKind.EMBEDDING:
        _check_model(retriever.model_path)


def _model_folder(model_path: str) -> Path | None:
    """The retriever's model folder; blank means the deployment's or the packaged default."""
    chosen = model_path or settings.GOLDSET_EMBEDDING_MODEL
    return Path(chosen) if chosen else None


def _check_model(model_path: str) -> str:
    try:
        Encoder(_model_folder(model_path))
    except ModelNotFoundError as exc:
        raise ServiceError(str(exc)) from exc
    return str(Path(model_path).expanduser().resolve()) if model_path else ""


def _latest_versions(retriever: Retriever):
    return Document.objects.filter(project=retriever.project, latest_version__isnull=False).values(
        "latest_version"
    )


def _passages(retriever: Retriever) -> list[tuple[int, int, int, int, str, str]]:
    """(version, document, start, end, text hash, text) of every chunk of the newest versions.

    Documents held back by quality or hidden as duplicates are indexed too: whether they may be
    returned is decided at search time, so accepting one needs no rebuild.
    """
    versions = {
        pk: (document_id, text)
        for pk, document_id, text in DocumentVersion.objects.filter(
            pk__in=_latest_versions(retriever)
        ).values_list("pk", "document_id", "text")
    }
    chunks = (
        Chunk.objects.filter(scheme=retriever.scheme, version_id__in=_latest_versions(retriever))
        .order_by("version_id", "ordinal")
        .values_list("version_id", "start", "end", "text_hash")
    )
    passages = []
    for version_id, start, end, text_hash in chunks.iterator(chunk_size=BULK_BATCH):
        document_id, text = versions[version_id]
        passages.append((version_id, document_id, start, end, text_hash, text[start:end]))
    return passages


def _embed(
    retriever: Retriever,
    index: Index,
    passages: list[tuple[int, int, int, int, str, str]],
    advance: Progress | None,
) -> VectorIndex:
    """Vectors of every passage: from the cache where known, encoded (and cached) otherwise."""
    encoder = Encoder(_model_folder(retriever.model_path))
    info = encoder.info
    index.model_name, index.model_version, index.dimension = info.name, info.version, info.dimension
    hashes = list(dict.fromkeys(text_hash for *_, text_hash, _ in passages))
    vectors: dict[str, np.ndarray] = {}
    for first in range(0, len(hashes), 900):  # SQLite caps bound parameters per query
        for text_hash, vector in EmbeddingCache.objects.filter(
            model_version=info.version, text_hash__in=hashes[first : first + 900]
        ).values_list("text_hash", "vector"):
            vectors[text_hash] = np.frombuffer(bytes(vector), dtype=np.float32)
    uses = Counter(text_hash for *_, text_hash, _ in passages)
    if advance:
        advance(sum(uses[text_hash] for text_hash in vectors))
    texts = {text_hash: text for *_, text_hash, text in passages if text_hash not in vectors}
    missing = list(texts)
    for first in range(0, len(missing), ENCODE_BATCH):
        batch = missing[first : first + ENCODE_BATCH]
        encoded = encoder.encode([texts[h] for h in batch])
        EmbeddingCache.objects.bulk_create(
            [
                EmbeddingCache(model_version=info.version, text_hash=h, vector=v.tobytes())
                for h, v in zip(batch, encoded, strict=True)
            ],
            ignore_conflicts=True,
        )
        vectors.update(zip(batch, encoded, strict=True))
        if advance:
            advance(sum(uses[text_hash] for text_hash in batch))
    matrix = np.stack([vectors[text_hash] for *_, text_hash, _ in passages]).astype(np.float32)
    return VectorIndex(matrix, info=info)


def _pack(
    searcher: BM25Index | VectorIndex, passages: list[tuple[int, int, int, int, str, str]]
) -> bytes:
    buffer = io.BytesIO()
    np.savez(
        buffer,
        format=np.int64(_PASSAGE_FORMAT),
        kind=np.str_("bm25" if isinstance(searcher, BM25Index) else "embedding"),
        searcher=np.frombuffer(searcher.to_bytes(), dtype=np.uint8),
        version_ids=np.array([p[0] for p in passages], dtype=np.int64),
        document_ids=np.array([p[1] for p in passages], dtype=np.int64),
        starts=np.array([p[2] for p in passages], dtype=np.int64),
        ends=np.array([p[3] for p in passages], dtype=np.int64),
    )
    return buffer.getvalue()


def _unpack(index_id: int, built_at: datetime | None, artifact: bytes) -> LoadedIndex:
    try:
        with np.load(io.BytesIO(artifact), allow_pickle=False) as stored:
            if int(stored["format"]) != _PASSAGE_FORMAT:
                raise ServiceError("This index was stored by another Goldset version: rebuild it.")
            data = stored["searcher"].tobytes()
            kind = str(stored["kind"])
            arrays = {
                name: stored[name] for name in ("version_ids", "document_ids", "starts", "ends")
            }
        searcher = BM25Index.from_bytes(data) if kind == "bm25" else VectorIndex.from_bytes(data)
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as exc:
        raise ServiceError(f"The stored index is unreadable ({exc}): rebuild it.") from exc
    return LoadedIndex(index_id=index_id, built_at=built_at, searcher=searcher, **arrays)


def _allowed_passages(loaded: LoadedIndex, project: Project, user) -> np.ndarray | None:
    """Which passages may be returned (None: all of them).

    The rule of ``Document.objects.searchable()`` and ``.visible_to(user)``, plus "the newest
    version only", worked out from the few rows that block something (held-back versions,
    hidden near-duplicates, versions newer than the index, restricted documents) instead of
    from every document: at 100,000 documents that direct query costs some 200 ms per search
    on SQLite, this a few milliseconds (see tests/corpus/test_retrievers.py for the agreement).
    """
    if user is not None and not (
        user.is_authenticated and Membership.objects.filter(project=project, user=user).exists()
    ):
        return np.zeros(len(loaded), dtype=bool)
    # Not narrowed to the project: joining documents makes SQLite scan them all, while these
    # indexed lookups return a few rows, and rows of other projects match no passage here.
    versions = DocumentVersion.objects.order_by()
    blocked_versions = set(
        versions.filter(quality_flagged=True, quality_accepted_at__isnull=True).values_list(
            "pk", flat=True
        )
    )
    blocked_documents = set(
        Document.objects.filter(duplicate_group__project=project)
        .exclude(duplicate_group__representative=F("pk"))
        .order_by()
        .values_list("pk", flat=True)
    )
    # A document with a version newer than the index has only stale passages in it.
    newer = dict(
        versions.filter(created_at__gt=loaded.built_at).values_list("document_id", "pk")
        if loaded.built_at is not None
        else []
    )
    if user is not None:
        groups: dict[int, set[int]] = {}
        for document_id, group_id in Document.access_groups.through.objects.filter(
            accessgroup__project=project
        ).values_list("document_id", "accessgroup_id"):
            groups.setdefault(document_id, set()).add(group_id)
        mine = set(
            AccessGroup.objects.filter(project=project, members=user).values_list("pk", flat=True)
        )
        blocked_documents |= {document for document, of in groups.items() if not of & mine}
    if not (blocked_versions or blocked_documents or newer):
        return None
    mask = ~np.isin(loaded.version_ids, list(blocked_versions))
    mask &= ~np.isin(loaded.document_ids, list(blocked_documents))
    if newer:
        mask &= ~np.isin(loaded.document_ids, list(newer)) | np.isin(
            loaded.version_ids, list(newer.values())
        )
    return None if mask.all() else mask


@register_job_handler("build_index")
def _build_index_job(job: Job) -> None:
    retriever = Retriever.objects.select_related("scheme", "project").get(
        pk=job.params["retriever_id"], project=job.project
    )
    try:
        index = build_index(retriever=retriever, job=job)
    except ModelNotFoundError as exc:
        raise ServiceError(str(exc)) from exc
    job.result = {"index_id": index.pk, "passages": index.passages}
    finish_job(job, JobState.SUCCEEDED, f"{retriever.name}: {index.passages} passages indexed.")
