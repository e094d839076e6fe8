"""Index manifests: the team's index described per retriever, stored whole or not at all.

The format is `goldeval.formats.manifests`'; a file with any problem stores nothing and lists every
problem with its line. The browser's upload is a job (a large manifest takes seconds); the
command imports in place. A retriever's manifest may also be fetched from the manifest source
an admin configured for it (`health.services.manifest_sources`); what such a file holds reaches
pages only as a bounded excerpt for admins. A doc id the corpus does not know is stored as given:
the health checks count it as "indexed but unknown to the corpus".
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.db import transaction
from django.db.models import Count

from corpus import jobs
from corpus.models import Document, Job, JobState, Retriever
from corpus.remote import excerpt
from goldeval.formats.manifests import ManifestFile, read_manifest
from goldeval.formats.textfiles import NotUTF8Error, text_problem
from goldset.errors import ServiceError
from health.models import IndexManifest, IndexManifestRow, ManifestSource
from health.services import manifest_sources

BATCH = 2000


class ManifestProblems(ServiceError):
    """A manifest that cannot be stored, with every problem found (line, message)."""

    def __init__(self, message: str, *, problems: list[tuple[int, str]], more: int = 0):
        super().__init__(message)
        self.problems = problems
        self.more = more


def read_manifest_bytes(*, data: bytes, file_name: str) -> ManifestFile:
    """The manifest's rows, or `ManifestProblems` naming the file and each problem's line."""
    try:
        manifest = read_manifest(data)
    except NotUTF8Error as error:
        raise ManifestProblems(f"{file_name}: {error}", problems=[(1, str(error))]) from None
    if manifest.problems:
        problems = [(p.line, p.message) for p in manifest.problems]
        count = len(problems) + manifest.more_problems
        first_line, first = problems[0]
        raise ManifestProblems(
            f"{file_name}: nothing was stored; {count} problem{'s' if count != 1 else ''}, the "
            f"first on line {first_line}: {first}",
            problems=problems,
            more=manifest.more_problems,
        )
    return manifest


def import_manifest(
    *, retriever: Retriever, data: bytes, file_name: str, user=None
) -> IndexManifest:
    """Store a manifest for ``retriever``: every row, or nothing (`ManifestProblems`)."""
    file_name = Path(file_name).name[:255]
    if problem := text_problem(file_name):  # the name is stored and shown, as a row's text is
        raise ManifestProblems(f"The file name {problem}.", problems=[(1, f"file name {problem}")])
    manifest = read_manifest_bytes(data=data, file_name=file_name)
    with transaction.atomic():
        stored = IndexManifest.objects.create(
            retriever=retriever,
            file_name=file_name,
            sha256=hashlib.sha256(data).hexdigest(),
            rows=len(manifest.rows),
            uploaded_by=user,
        )
        for start in range(0, len(manifest.rows), BATCH):
            IndexManifestRow.objects.bulk_create(
                [
                    IndexManifestRow(
                        manifest=stored,
                        line=row.line,
                        doc_id=row.doc_id,
                        version=row.version,
                        content_sha256=row.content_sha256 or "",
                        start=row.start,
                        end=row.end,
                        indexed_at=row.indexed_at,
                        embedding_model=row.embedding_model,
                        embedding_revision=row.embedding_revision,
                        dimension=row.dimension,
                    )
                    for row in manifest.rows[start : start + BATCH]
                ]
            )
    return stored


def start_manifest_import(
    *,
    retriever: Retriever,
    upload=None,
    fetch: bool = False,
    user,
    then: dict[str, str] | None = None,
) -> Job:
    """Keep the uploaded file (or, with ``fetch``, nothing: the job fetches the file from the
    retriever's manifest source) and queue its import (`run_manifest_import`); ``then`` (a
    ``{"url", "text"}`` link) is where the job page sends the browser once it succeeded."""
    if fetch:
        if not ManifestSource.objects.filter(retriever=retriever).exists():
            raise ServiceError(
                f"{retriever.name} has no manifest source: an admin configures one, or upload "
                "the file."
            )
        return jobs.start(
            project=retriever.project,
            task="health.tasks.import_manifest",
            kind="import_manifest",
            user=user,
            total=1,
            params={
                "retriever_id": retriever.pk,
                "fetch": True,
                **({"then": then} if then else {}),
            },
            description=f"Fetch and import the index manifest of {retriever.name}",
        )
    if upload is None:
        raise ServiceError("Upload the manifest file, or fetch it from its manifest source.")
    data = upload.read()
    with transaction.atomic():
        job = jobs.start(
            project=retriever.project,
            task="health.tasks.import_manifest",
            kind="import_manifest",
            user=user,
            total=1,
            params={"retriever_id": retriever.pk, **({"then": then} if then else {})},
            description=f"Import the index manifest of {retriever.name}",
        )
        jobs.keep_upload(job=job, name=upload.name, data=data)
    return job


def run_manifest_import(job: Job) -> None:
    """The job of `start_manifest_import`: the stored file (or the one its manifest source
    answers) imported whole, or its problems listed on the job (with lines) and nothing
    stored. A fetched file is the server's words: its problems' text is kept as a bounded
    excerpt that only admins see (`corpus.remote`)."""
    retriever = Retriever.objects.get(pk=job.params["retriever_id"], project=job.project)
    fetched = bool(job.params.get("fetch"))
    if job.params.get("url"):
        # A job queued when leads could name the URL: never fetched (the URL was theirs).
        raise ServiceError(
            "A manifest is no longer fetched from a URL given with the upload: an admin sets "
            f"{retriever.name}'s manifest source, then fetch it from Index health."
        )
    if fetched:
        source = ManifestSource.objects.filter(retriever=retriever).first()
        if source is None:
            raise ServiceError(f"{retriever.name} no longer has a manifest source.")
        try:
            data = manifest_sources.fetch_manifest(source=source)
        except manifest_sources.ManifestFetchFailed as failed:
            if failed.remote:
                job.errors = [
                    {"source": "manifest source", "error": str(failed), "remote": failed.remote}
                ]
            jobs.finish(job, JobState.FAILED, str(failed))
            return
        name = manifest_sources.file_name_of(source)
    else:
        upload = job.uploads.order_by("pk").first()
        if upload is None:
            raise ServiceError("The uploaded manifest is gone; upload it again.")
        name, data = upload.name, bytes(upload.content)
    digest = hashlib.sha256(data).hexdigest()
    if IndexManifest.objects.filter(
        retriever=retriever, sha256=digest, uploaded_at__gte=job.created_at
    ).exists():
        jobs.finish(job, JobState.SUCCEEDED, "The manifest was already imported.")
        return  # a redelivered message: imported once
    try:
        stored = import_manifest(
            retriever=retriever,
            data=data,
            file_name=name.rsplit("/", 1)[-1] or name,
            user=job.created_by,
        )
    except ManifestProblems as problems:
        if fetched:
            _fail_fetched(job, retriever, problems)
            return
        job.errors = [
            {"item": name, "line": line, "error": message} for line, message in problems.problems
        ]
        jobs.finish(job, JobState.FAILED, str(problems))
        return
    job.done = 1
    job.result = {"manifest_id": stored.pk, "rows": stored.rows}
    if job.params.get("then"):
        job.result |= {"link": job.params["then"], "redirect": True}
    # Rows about restricted documents are counted only for those who may see them.
    restricted = dict(
        Document.objects.filter(project_id=retriever.project_id, access_groups__isnull=False)
        .filter(doc_id__in=stored.entries.values("doc_id"))
        .values_list("doc_id", "pk")
        .distinct()
    )
    rows = (
        stored.entries.filter(doc_id__in=list(restricted))
        .order_by()
        .values("doc_id")
        .annotate(n=Count("pk"))
        .values_list("doc_id", "n")
    )
    jobs.add_shares(job, {restricted[doc_id]: {"rows": n} for doc_id, n in rows})
    jobs.finish(
        job,
        JobState.SUCCEEDED,
        "{retriever}: {rows:,} manifest rows stored.",
        figures={"retriever": retriever.name, "rows": stored.rows},
    )


def _fail_fetched(job: Job, retriever: Retriever, problems: ManifestProblems) -> None:
    """The lines of a fetched file that cannot be stored, without quoting them but to admins."""
    job.errors = [
        {
            "source": "manifest source",
            "line": line,
            "error": "this line cannot be stored",
            "remote": excerpt(message),
        }
        for line, message in problems.problems
    ]
    count = len(problems.problems) + problems.more
    first_line = problems.problems[0][0]
    jobs.finish(
        job,
        JobState.FAILED,
        f"{retriever.name}: the manifest its source answered has {count} "
        f"problem{'s' if count != 1 else ''}, the first on line {first_line}; nothing was "
        "stored. Admins see what each line held.",
    )
