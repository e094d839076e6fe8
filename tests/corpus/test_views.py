"""The corpus pages as users see them: access, uploads with live jobs, duplicates, chunking."""

import io
import zipfile

import pytest
from django.test import Client
from django.urls import reverse

from corpus.extraction import assess_quality
from corpus.models import ChunkingScheme, Document, DocumentVersion, Job, Upload
from corpus.services import documents, projects
from corpus.sources import DocumentRecord, SourceBatch
from tests.conftest import wait_for_job
from tests.factories import POLICY_TEXT as TEXT
from tests.factories import login


def add_docs(project, *specs):
    records = [
        DocumentRecord(
            doc_id=doc_id,
            title=title,
            text=text,
            report=assess_quality(text),
            access_groups=tuple(groups),
        )
        for doc_id, title, text, groups in specs
    ]
    documents.ingest_batch(
        project=project,
        batch=SourceBatch(source="t", records=records),
        importer=documents.Importer.command_line(),
    )


@pytest.fixture
def corpus(project):
    add_docs(
        project,
        ("leave", "Annual leave", TEXT, []),
        (
            "salaries",
            "Salary bands SECRET-TITLE",
            "Band C pays 52,000 to 61,000 euros per year. " * 4,
            ["hr"],
        ),
    )
    return project


def test_anonymous_users_are_sent_to_login(corpus):
    response = Client().get(reverse("corpus:list-documents", args=[corpus.slug]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_non_members_get_404_for_another_projects_pages(corpus, django_user_model):
    from tests.factories import UserFactory

    stranger = login(UserFactory())
    doc = Document.objects.get(doc_id="leave")
    for url in (
        reverse("corpus:show-project", args=[corpus.slug]),
        reverse("corpus:list-documents", args=[corpus.slug]),
        reverse("corpus:show-document", args=[corpus.slug, doc.pk]),
    ):
        assert stranger.get(url).status_code == 404


def test_restricted_document_is_invisible_outside_its_group(corpus, member):
    labeller = member("labeller")
    client = login(labeller)
    listing = client.get(reverse("corpus:list-documents", args=[corpus.slug]))
    body = listing.content.decode()
    assert "leave" in body and "salaries" not in body and "SECRET-TITLE" not in body
    assert "1 document" in body
    # Labellers land on their queue; the project page's counts are a lead's, outside the group too.
    landing = client.get(reverse("corpus:show-project", args=[corpus.slug]))
    assert landing.status_code == 302
    assert landing["Location"] == reverse("labelling:show-queue", args=[corpus.slug])
    lead = login(member("lead"))
    dashboard = lead.get(reverse("corpus:show-project", args=[corpus.slug])).content.decode()
    assert "<dd>1</dd>" in dashboard  # the count does not include the hidden document
    hidden = Document.objects.get(doc_id="salaries")
    assert (
        client.get(reverse("corpus:show-document", args=[corpus.slug, hidden.pk])).status_code
        == 404
    )
    projects.set_access_group_members(project=corpus, name="hr", users=[labeller])
    assert (
        client.get(reverse("corpus:show-document", args=[corpus.slug, hidden.pk])).status_code
        == 200
    )


def test_document_text_and_title_are_escaped(project, member):
    add_docs(
        project, ("x", "<img src=x onerror=alert(1)>", "<script>alert('doc')</script> " * 5, [])
    )
    client = login(member("labeller"))
    doc = Document.objects.get(doc_id="x")
    body = client.get(reverse("corpus:show-document", args=[project.slug, doc.pk])).content.decode()
    assert "<script>alert" not in body and "&lt;script&gt;alert" in body
    assert "<img src=x" not in body


def test_labellers_cannot_upload_or_accept(corpus, member):
    client = login(member("labeller"))
    assert client.get(reverse("corpus:upload-documents", args=[corpus.slug])).status_code == 403
    doc = Document.objects.get(doc_id="leave")
    assert (
        client.post(reverse("corpus:accept-quality", args=[corpus.slug, doc.pk])).status_code == 403
    )


def test_upload_runs_a_job_that_imports_each_file_and_reports_bad_ones(worker, project, member):
    client = login(member("lead"))
    files = [
        io.BytesIO(b"# Sick leave\n\nA doctor's note is needed after three days of sickness."),
        io.BytesIO(b""),
        io.BytesIO(
            "Caf\u00e9 policy: d\u00e9j\u00e0 vu coffee is free on Fridays for all staff.".encode(
                "latin-1"
            )
        ),
    ]
    for f, name in zip(files, ["sick.md", "empty.txt", "cafe.txt"], strict=True):
        f.name = name
    response = client.post(
        reverse("corpus:upload-documents", args=[project.slug]), {"files": files}
    )
    assert response.status_code == 302
    job = wait_for_job(Job.objects.get(project=project, kind="import_uploads"))
    assert job.state == "succeeded", job.message
    assert job.result["created"] == 2
    assert [e["source"] for e in job.errors] == ["empty.txt"]
    assert Document.objects.get(project=project, doc_id="cafe.txt").latest_version.text.startswith(
        "Café"
    )
    assert Upload.objects.filter(job=job).count() == 3
    page = client.get(response["Location"]).content.decode()
    assert "Succeeded" in page and "empty.txt" in page
    partial = client.get(response["Location"], headers={"HX-Request": "true"}).content.decode()
    assert partial.lstrip().startswith("<section") and "<html" not in partial


def test_upload_over_the_size_limit_gets_a_clean_413(project, member, settings):
    settings.GOLDSET_MAX_UPLOAD_BYTES = 1000
    client = login(member("lead"))
    big = io.BytesIO(b"a" * 2000)
    big.name = "big.txt"
    response = client.post(
        reverse("corpus:upload-documents", args=[project.slug]), {"files": [big]}
    )
    assert response.status_code == 413
    assert "over the 1000" in response.content.decode()
    assert not Job.objects.exists()


def test_upload_rejects_unsupported_types(project, member):
    client = login(member("lead"))
    exe = io.BytesIO(b"MZ\x90\x00")
    exe.name = "setup.exe"
    response = client.post(
        reverse("corpus:upload-documents", args=[project.slug]), {"files": [exe]}
    )
    assert response.status_code == 400 and "is not supported" in response.content.decode()


def test_docx_zip_bomb_upload_fails_cleanly(worker, project, member):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr(
            "word/document.xml", "<w:document>" + " " * (150 * 2**20) + "</w:document>"
        )
    buffer.seek(0)
    buffer.name = "bomb.docx"
    client = login(member("lead"))
    client.post(reverse("corpus:upload-documents", args=[project.slug]), {"files": [buffer]})
    job = wait_for_job(Job.objects.get(project=project))
    assert job.state == "failed" and "bomb.docx" in job.errors[0]["source"]
    assert not DocumentVersion.objects.exists()


def test_admin_accepts_a_flagged_document(project, member):
    table = "\n".join(f"| {i} | {i * 3.5:.2f} | {i * 7} |" for i in range(60))
    add_docs(project, ("rates", "Rates", table, []))
    doc = Document.objects.get(doc_id="rates")
    client = login(member("admin"))
    page = client.get(reverse("corpus:show-document", args=[project.slug, doc.pk])).content.decode()
    assert "not searchable" in page and "Accept for retrieval" in page
    client.post(reverse("corpus:accept-quality", args=[project.slug, doc.pk]))
    doc.latest_version.refresh_from_db()
    assert doc.latest_version.quality_accepted_at is not None


def test_duplicates_page_and_changing_the_searchable_copy(project, member):
    add_docs(
        project,
        ("proc", "Proc", TEXT, []),
        ("proc-copy", "Proc copy", TEXT.replace("peak season", "busy season"), []),
    )
    client = login(member("admin"))
    page = client.get(reverse("corpus:list-duplicates", args=[project.slug])).content.decode()
    assert "proc-copy" in page and "Make searchable instead" in page
    copy = Document.objects.get(doc_id="proc-copy")
    client.post(
        reverse("corpus:choose-representative", args=[project.slug, copy.duplicate_group_id]),
        {"document": copy.pk},
    )
    copy.duplicate_group.refresh_from_db()
    assert copy.duplicate_group.representative_id == copy.pk


def test_lead_adds_a_chunking_scheme_and_bad_parameters_are_explained(worker, project, member):
    add_docs(project, ("leave", "Leave", TEXT, []))
    client = login(member("lead"))
    url = reverse("corpus:list-chunking", args=[project.slug])
    bad = client.post(
        url, {"name": "w", "strategy": "fixed", "unit": "words", "size": 10, "overlap": 10}
    )
    assert bad.status_code == 400 and "overlap" in bad.content.decode().lower()
    response = client.post(
        url, {"name": "w10", "strategy": "fixed", "unit": "words", "size": 10, "overlap": 2}
    )
    assert response.status_code == 302
    job = wait_for_job(Job.objects.get(project=project, kind="chunk_corpus"))
    assert job.state == "succeeded"
    assert ChunkingScheme.objects.get(name="w10").chunks.count() == job.result["chunks"] > 0


def test_an_oversized_request_is_refused_before_its_body_is_read(project, member, settings):
    settings.GOLDSET_MAX_REQUEST_BYTES = 10_000
    client = login(member("lead"))
    big = io.BytesIO(b"a" * 50_000)
    big.name = "big.txt"
    url = reverse("corpus:upload-documents", args=[project.slug])
    response = client.post(url, {"files": [big]})
    assert response.status_code == 413
    assert b"limit for one request" in response.content
    assert not Job.objects.exists() and not Upload.objects.exists()
