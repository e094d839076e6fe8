"""Index manifests: the team's index described per retriever, stored whole or not at all.

The format is `goldeval.formats.manifests`'; a file with any problem stores nothing and lists every
problem with its line. The browser's upload is a job (a large manifest takes seconds); the
command imports in place. An HTTP retriever's manifest may also be fetched from a URL on its
own endpoint's host, under the same host policy and headers as its searches. A doc id the
corpus does not know is stored as given: the health checks count it as "indexed but unknown
to the corpus".
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx2
from django.db import transaction
from django.db.models import Count

from corpus import jobs
from corpus.httpendpoint import ConfigError, HttpSearchError
from corpus.httpguard import GuardedTransport
from corpus.httpsearch import MAX_RESPONSE_BYTES, SearchClient
from corpus.models import Document, Job, JobState, Retriever, RetrieverKind
from corpus.services import http_retrieval
from goldeval.formats.manifests import ManifestFile, read_manifest
from goldeval.formats.textfiles import NotUTF8Error
from goldset.errors import ServiceError
from health.models import IndexManifest, IndexManifestRow

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
    manifest = read_manifest_bytes(data=data, file_name=file_name)
    with transaction.atomic():
        stored = IndexManifest.objects.create(
            retriever=retriever,
            file_name=Path(file_name).name[:255],
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


def fetch_manifest_bytes(*, retriever: Retriever, url: str) -> bytes:
    """GET ``url`` on the HTTP retriever's host, with its endpoint's headers, under the host
    policy (`GOLDSET_HTTP_ALLOWED_HOSTS`), no redirect, at most MAX_RESPONSE_BYTES."""
    if retriever.kind != RetrieverKind.HTTP:
        raise ServiceError(f"{retriever.name} is not an HTTP retriever: upload its manifest.")
    endpoint = http_retrieval.endpoint_of(retriever)
    try:
        target, home = httpx2.URL(url), httpx2.URL(endpoint.url)
    except (httpx2.InvalidURL, TypeError):
        raise ServiceError(f"{url[:200]!r} is not a URL.") from None
    same_host = (target.host, target.port) == (home.host, home.port)
    if target.scheme not in ("http", "https") or not same_host:
        raise ServiceError(
            f"The manifest URL must be on {retriever.name}'s host ({home.host}), over http(s)."
        )
    searcher = SearchClient(endpoint=endpoint, policy=http_retrieval.host_policy())
    chunks: list[bytes] = []
    try:
        headers = searcher.headers_for(None) | {"Accept": "*/*"}
        with (
            httpx2.Client(
                transport=GuardedTransport(searcher.policy, connections=1),
                timeout=httpx2.Timeout(endpoint.timeout),
                follow_redirects=False,
                trust_env=False,
            ) as client,
            client.stream("GET", str(target), headers=headers) as response,
        ):
            if response.status_code != 200:
                raise ServiceError(f"{url[:200]} answered HTTP {response.status_code}.")
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise ServiceError(
                        f"The manifest is larger than {MAX_RESPONSE_BYTES // 2**20} MB: upload it."
                    )
                chunks.append(chunk)
    except (ConfigError, HttpSearchError) as error:
        raise ServiceError(str(error)) from None
    except httpx2.HTTPError as error:
        raise ServiceError(f"{url[:200]} could not be fetched ({error}).") from None
    return b"".join(chunks)


def start_manifest_import(
    *,
    retriever: Retriever,
    upload=None,
    url: str = "",
    user,
    then: dict[str, str] | None = None,
) -> Job:
    """Keep the uploaded file (or the URL to fetch it from, an HTTP retriever's) and queue its
    import (`run_manifest_import`); ``then`` (a ``{"url", "text"}`` link) is where the job page
    sends the browser once it succeeded."""
    if upload is None:
        return jobs.start(
            project=retriever.project,
            task="health.tasks.import_manifest",
            kind="import_manifest",
            user=user,
            total=1,
            params={"retriever_id": retriever.pk, "url": url, **({"then": then} if then else {})},
            description=f"Fetch and import the index manifest of {retriever.name}",
        )
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
    """The job of `start_manifest_import`: the stored file (or the one fetched from its URL)
    imported whole, or its problems listed on the job (with lines) and nothing stored."""
    retriever = Retriever.objects.get(pk=job.params["retriever_id"], project=job.project)
    if job.params.get("url"):
        name = job.params["url"]
        data = fetch_manifest_bytes(retriever=retriever, url=name)
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
