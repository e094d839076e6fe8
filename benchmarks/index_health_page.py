"""Time the Index health page itself (the request), not only its cores (`index_health.py`).

A temporary SQLite database with 20,000 documents (1% re-imported after indexing, so stale)
and one retriever whose stored manifest has 200,000 chunk rows (10 per document, a 2% slice on
a second model revision). A lead opens the page through Django's test client, logged in:
above 50,000 rows the page checks nothing itself, so it is timed before the job ran (a button),
then the job that checks and stores the report, then the page showing the stored report.
Printed: setting up, the page's median time and SQL queries, the job's time, the peak RSS.

    PYTHONPATH=. .venv/bin/python benchmarks/index_health_page.py [--documents 20000]
        [--chunks 10] [--requests 3]
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def configure() -> None:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
    os.environ["DEBUG"] = "1"
    os.environ.pop("REDIS_URL", None)
    path = Path(tempfile.mkdtemp()) / "health.sqlite3"
    os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def world(documents: int, chunks: int):
    import random

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from corpus.models import Document, DocumentVersion, Membership, Project
    from corpus.services import retrieval
    from health.models import IndexManifest, IndexManifestRow

    rng = random.Random(7)
    project = Project.objects.create(slug="bench", name="Bench")
    lead = get_user_model().objects.create_user("lead")
    Membership.objects.create(project=project, user=lead, role="lead")
    docs = Document.objects.bulk_create(
        Document(project=project, doc_id=f"doc-{n:06d}") for n in range(documents)
    )
    now = timezone.now()
    versions = DocumentVersion.objects.bulk_create(
        DocumentVersion(
            document=d,
            version=1,
            text=f"text {n}",
            content_hash=f"{n:064x}",
            source_modified_at=now - datetime.timedelta(days=rng.uniform(1, 400)),
        )
        for n, d in enumerate(docs)
    )
    for d, v in zip(docs, versions, strict=True):
        d.latest_version = v
    Document.objects.bulk_update(docs, ["latest_version"], batch_size=5000)
    retriever = retrieval.add_retriever(project=project, name="team", kind="run")
    manifest = IndexManifest.objects.create(
        retriever=retriever, file_name="manifest.csv", sha256="0" * 64, rows=documents * chunks
    )
    indexed = now - datetime.timedelta(days=30)
    rows = (
        IndexManifestRow(
            manifest=manifest,
            line=n * chunks + c + 1,
            doc_id=f"doc-{n:06d}",
            version=1,
            content_sha256="0" * 64 if n % 100 == 0 else f"{n:064x}",
            start=c * 500,
            end=c * 500 + 500,
            indexed_at=indexed,
            embedding_model="minilm",
            embedding_revision="r2" if n % 50 == 0 else "r1",
            dimension=384,
        )
        for n in range(documents)
        for c in range(chunks)
    )
    IndexManifestRow.objects.bulk_create(rows, batch_size=5000)
    return project, lead


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--requests", type=int, default=3)
    arguments = parser.parse_args()
    configure()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    started = time.perf_counter()
    project, lead = world(arguments.documents, arguments.chunks)
    rows = arguments.documents * arguments.chunks
    print(
        f"set up {arguments.documents:,} documents, {rows:,} manifest rows: "
        f"{time.perf_counter() - started:.1f} s"
    )
    client = Client()
    client.force_login(lead)
    url = reverse("health:show-index-health", args=[project.slug])

    def requests(label: str) -> None:
        times = []
        for _ in range(arguments.requests):
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - started)
            assert response.status_code == 200, response.status_code
        print(
            f"Index health page, {label}: median {statistics.median(times):.2f} s "
            f"of {arguments.requests} requests, {len(queries)} SQL queries"
        )

    requests("no stored report yet (a Check now button)")
    from corpus.models import Job, Retriever
    from health.services.reports import start_health_report

    started = time.perf_counter()
    # No broker: the job runs in this process as soon as it is queued.
    job = start_health_report(retriever=Retriever.objects.get(project=project), user=lead)
    job_s = time.perf_counter() - started
    job = Job.objects.get(pk=job.pk)
    assert job.state == "succeeded", job.message
    print(f"the job (reads the manifest rows and the corpus, checks, stores): {job_s:.2f} s")
    requests("the stored report")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"peak RSS: {peak / 2**20:.0f} MB")


if __name__ == "__main__":
    main()
