"""Every writer of documents (upload, JSONL/CSV, import_documents, import_beir) never widens a
document's access, and every field of an import is checked before anything is written: a bad
line is that line's problem, with its number and field, never a 500 or a job stuck "running"."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from corpus import jobs
from corpus.models import Document, Job, JobState, Upload
from corpus.services import projects
from tests.conftest import wait_for_job
from tests.factories import POLICY_TEXT, login

SECRET = "Band C pays 52,000 to 61,000 euros per year. Band D pays 60,000 to 72,000 euros."
SECRET_TITLE = "Salary bands CONFIDENTIAL"


def named(data: bytes, name: str) -> io.BytesIO:
    upload = io.BytesIO(data)
    upload.name = name
    return upload


def upload(client, project, *files):
    response = client.post(
        reverse("corpus:upload-documents", args=[project.slug]), {"files": list(files)}
    )
    assert response.status_code == 302, response.content.decode()[:500]
    job = wait_for_job(Job.objects.filter(project=project, kind="import_uploads").latest("pk"))
    return job, client.get(response["Location"]).content.decode()


def jsonl(*records) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


@pytest.fixture
def hr(project, member):
    """The restricted salary document of hr-confidential, a member of the group, a lead and an
    admin outside it, and a labeller outside it."""
    from corpus.extraction import assess_quality
    from corpus.services import documents
    from corpus.sources import DocumentRecord, SourceBatch

    documents.ingest_batch(
        project=project,
        batch=SourceBatch(
            source="seed",
            records=[
                DocumentRecord(
                    doc_id="hr-conf-002-salary-bands.md",
                    title=SECRET_TITLE,
                    text=SECRET,
                    report=assess_quality(SECRET),
                    access_groups=("hr-confidential",),
                )
            ],
        ),
        importer=documents.Importer.command_line(),
    )
    people = {
        "insider": member("lead"),
        "lead": member("lead"),
        "admin": member("admin"),
        "labeller": member("labeller"),
        "insider_admin": member("admin"),
    }
    projects.set_access_group_members(
        project=project, name="hr-confidential", users=[people["insider"], people["insider_admin"]]
    )
    people["document"] = Document.objects.get(doc_id="hr-conf-002-salary-bands.md")
    return people


def groups_of(document) -> list[str]:
    return sorted(document.access_groups.values_list("name", flat=True))


def assert_untouched(document):
    document.refresh_from_db()
    assert groups_of(document) == ["hr-confidential"]
    assert list(document.versions.values_list("version", flat=True)) == [1]
    assert document.latest_version.text == SECRET and document.title == SECRET_TITLE


@pytest.mark.parametrize("outsider", ["lead", "admin"])
@pytest.mark.parametrize("same_text", [False, True], ids=["new text", "identical text"])
def test_an_upload_named_after_a_hidden_document_is_refused_without_a_word_of_it(
    worker, project, hr, outsider, same_text
):
    client = login(hr[outsider])
    text = SECRET.encode() if same_text else b"Everyone may read this now."
    job, page = upload(client, project, named(text, "hr-conf-002-salary-bands.md"))
    assert job.state == JobState.FAILED
    assert job.result["updated"] == 0 and job.result["unchanged"] == 0
    assert "taken by a document outside your access groups" in job.errors[0]["error"]
    # The refusal reads the same whether or not the texts match, and quotes nothing of it.
    assert "unchanged" not in job.errors[0]["error"]
    for secret in (SECRET, SECRET_TITLE, "52,000", "hr-confidential"):
        assert secret not in page
    assert_untouched(hr["document"])
    visible = Document.objects.visible_to(hr["labeller"])
    assert not visible.filter(pk=hr["document"].pk).exists()


def test_a_jsonl_naming_no_groups_keeps_them_whoever_imports_it(worker, project, hr):
    for who in ("insider", "insider_admin"):
        client = login(hr[who])
        data = jsonl({"doc_id": "hr-conf-002-salary-bands.md", "text": SECRET + f" ({who})"})
        job, _ = upload(client, project, named(data, "bands.jsonl"))
        assert job.state == JobState.SUCCEEDED and job.result["updated"] == 1, job.message
    document = hr["document"]
    assert groups_of(document) == ["hr-confidential"]
    assert document.versions.count() == 3
    assert not Document.objects.visible_to(hr["lead"]).filter(pk=document.pk).exists()
    # An explicitly empty list does not lift the restriction either: an import never widens.
    client = login(hr["insider_admin"])
    data = jsonl({"doc_id": "hr-conf-002-salary-bands.md", "text": SECRET, "access_groups": []})
    upload(client, project, named(data, "bands.jsonl"))
    assert groups_of(document) == ["hr-confidential"]


def test_only_an_admin_who_names_groups_changes_them(worker, project, hr):
    document = hr["document"]
    lead = login(hr["insider"])
    data = jsonl({"doc_id": document.doc_id, "text": SECRET + " v2", "access_groups": ["all"]})
    job, page = upload(lead, project, named(data, "bands.jsonl"))
    assert job.state == JobState.SUCCEEDED and job.result["updated"] == 1
    assert groups_of(document) == ["hr-confidential"]
    assert "access groups kept on 1" in job.message
    assert job.result["notices"][0]["doc_id"] == document.doc_id
    assert "only a project admin changes the groups" in job.result["notices"][0]["error"]

    admin = login(hr["insider_admin"])
    data = jsonl({"doc_id": document.doc_id, "text": SECRET + " v2", "access_groups": ["board"]})
    job, _ = upload(admin, project, named(data, "bands.csv.jsonl"))
    assert job.state == JobState.SUCCEEDED and job.result["regrouped"] == 1, job.message
    assert groups_of(document) == ["board"]
    assert document.versions.count() == 2  # same text: groups changed, no new version


def test_a_lead_may_restrict_a_new_document(worker, project, hr):
    client = login(hr["lead"])
    data = jsonl({"doc_id": "board-minutes", "text": POLICY_TEXT, "access_groups": ["board"]})
    job, _ = upload(client, project, named(data, "minutes.jsonl"))
    assert job.state == JobState.SUCCEEDED and job.result["created"] == 1
    assert groups_of(Document.objects.get(doc_id="board-minutes")) == ["board"]


def test_import_documents_keeps_the_groups_of_a_jsonl_without_them(project, hr, tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_bytes(jsonl({"doc_id": "hr-conf-002-salary-bands.md", "text": SECRET + " new"}))
    call_command("import_documents", str(path), "--project", project.slug)
    document = hr["document"]
    assert groups_of(document) == ["hr-confidential"] and document.versions.count() == 2
    # A folder of files (doc id = file name) and a CSV with an empty group cell: the same.
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "hr-conf-002-salary-bands.md").write_text(SECRET + " from a folder")
    call_command("import_documents", str(folder), "--project", project.slug)
    csv_path = tmp_path / "docs.csv"
    csv_path.write_text(
        "doc_id,title,text,access_groups\nhr-conf-002-salary-bands.md,t,csv text,\n"
    )
    call_command("import_documents", str(csv_path), "--project", project.slug)
    assert groups_of(document) == ["hr-confidential"] and document.versions.count() == 4


def test_import_beir_keeps_the_groups_of_a_document_it_updates(project, hr, tmp_path):
    (tmp_path / "corpus.jsonl").write_bytes(
        jsonl({"_id": "hr-conf-002-salary-bands.md", "title": "T", "text": "BEIR text"})
    )
    (tmp_path / "queries.jsonl").write_bytes(jsonl({"_id": "q1", "text": "salary?"}))
    call_command("import_beir", str(tmp_path), "--project", project.slug, "--set", "beir")
    document = hr["document"]
    assert groups_of(document) == ["hr-confidential"] and document.versions.count() == 2


# --- every field checked before writing ------------------------------------------------------

BAD_LINES = [
    ({"doc_id": "nul\u0000id", "text": "t"}, "doc_id contains a NUL character"),
    ({"doc_id": "title-nul", "title": "a\u0000b", "text": "t"}, "title contains a NUL"),
    ({"doc_id": "group-nul", "text": "t", "access_groups": ["a\u0000"]}, "contains a NUL"),
    ({"doc_id": "group-long", "text": "t", "access_groups": ["g" * 101]}, "longer than 100"),
    ({"doc_id": "surrogate\ud800", "text": "t"}, "half of a UTF-16 surrogate pair"),
    ({"doc_id": "text-surrogate", "text": "a \udfff b"}, "text contains U+DFFF"),
    ({"doc_id": "x" * 256, "text": "t"}, "longer than 255"),
    ({"doc_id": "inv\u202eoice.pdf", "text": "t"}, "bidirectional control character U+202E"),
    ({"doc_id": "isolate\u2067", "text": "t"}, "bidirectional control character U+2067"),
    ({"doc_id": ["a list"], "text": "t"}, "doc_id must be a string"),
    ({"doc_id": "dict-title", "title": {"a": 1}, "text": "t"}, "title must be a string"),
]


def bad_file() -> bytes:
    lines = [json.dumps({"doc_id": "good-1", "text": POLICY_TEXT})]
    for record, _ in BAD_LINES:
        lines.append(json.dumps(record))  # ensure_ascii: NUL and surrogates as JSON escapes
    lines.append("[" * 100_000 + "]" * 100_000)  # nested too deeply for any JSON parser
    lines.append('{"doc_id": "huge", "text": ' + "9" * 5000 + "}")
    lines.append(json.dumps({"doc_id": "good-2", "text": POLICY_TEXT + " two"}))
    return ("\n".join(lines) + "\n").encode()


def test_a_jsonl_upload_with_bad_values_imports_the_good_lines_and_names_each_bad_one(
    worker, project, member
):
    client = login(member("lead"))
    job, page = upload(
        client,
        project,
        named(bad_file(), "docs.jsonl"),
        named(b"# Other file\n\nThis one imports as well.", "other.md"),
    )
    assert job.state == JobState.SUCCEEDED, job.message
    assert job.result["created"] == 3  # good-1, good-2 and other.md
    assert sorted(Document.objects.values_list("doc_id", flat=True)) == [
        "good-1",
        "good-2",
        "other.md",
    ]
    errors = {e["line"]: e["error"] for e in job.errors}
    for line, (_, message) in enumerate(BAD_LINES, start=2):
        assert message in errors[line], (line, errors.get(line))
    assert "nested too deeply" in errors[len(BAD_LINES) + 2]
    assert "not usable JSON" in errors[len(BAD_LINES) + 3]
    assert "an unexpected error" not in job.message
    assert f"Problems ({len(BAD_LINES) + 2})" in page


def test_a_bad_line_in_import_documents_is_reported_and_exit_1(project, tmp_path, capsys):
    path = tmp_path / "docs.jsonl"
    path.write_bytes(bad_file())
    with pytest.raises(SystemExit) as exit_:
        call_command("import_documents", str(path), "--project", project.slug)
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "docs.jsonl, line 2: doc_id contains a NUL character" in err
    assert "Traceback" not in err
    assert Document.objects.count() == 2


@pytest.fixture
def in_process(monkeypatch, transactional_db):
    """Jobs run in this process (the code under test is patched here, not in a worker)."""
    from goldset.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


def test_a_database_error_fails_its_file_alone_and_is_never_retried(
    in_process, project, member, monkeypatch
):
    """A value no check foresaw (here: the database refuses the second file's version) is
    that file's failure; the first file is imported and the job finishes."""
    from django.db import DataError

    from corpus.services import documents

    real = documents._write_batch

    def refuse_the_second(project_, batch, importer, result):
        if batch.source == "second.md":
            raise DataError("value too long for type character varying(100)")
        return real(project_, batch, importer, result)

    monkeypatch.setattr(documents, "_write_batch", refuse_the_second)
    client = login(member("lead"))
    job, page = upload(
        client,
        project,
        named(b"# First\n\nThe first file imports fine.", "first.md"),
        named(b"# Second\n\nThe database refuses this one.", "second.md"),
    )
    assert job.state == JobState.SUCCEEDED and job.attempts == 1
    assert list(Document.objects.values_list("doc_id", flat=True)) == ["first.md"]
    assert "the database refused a value" in job.errors[0]["error"]
    assert job.errors[0]["source"] == "second.md"


def test_a_data_error_outside_a_file_fails_the_job_and_the_reconciler_leaves_it(
    in_process, project, member, monkeypatch
):
    from django.db import DataError

    from corpus.services import documents

    def broken(job):
        raise DataError("invalid byte sequence for encoding UTF8: 0x00")

    monkeypatch.setattr(documents, "run_upload_import", broken)
    client = login(member("lead"))
    job, _ = upload(client, project, named(b"some text that imports", "a.txt"))
    assert job.state == JobState.FAILED and "The database refused" in job.message
    assert jobs.reconcile(stale_after=__import__("datetime").timedelta(0)) == []
    job.refresh_from_db()
    assert job.attempts == 1


def test_the_reconciler_survives_any_row(in_process, project):
    """Rows no code of ours writes, and one that fails when it runs: each ends failed with its
    reason and the reconciler goes on to the next."""
    from datetime import timedelta

    odd = [
        Job.objects.create(project=project, kind="x", task="os.system"),
        Job.objects.create(project=project, kind="x", task="no.such.module.tasks.run"),
        Job.objects.create(project=project, kind="x", task="corpus.tasks"),
        Job.objects.create(project=project, kind="x", task="corpus.tasks.no_such_task"),
        Job.objects.create(project=project, kind="x", task="corpus.tasks.chunk_corpus"),
        Job.objects.create(project=project, kind="x", task="", state=JobState.RUNNING),
        Job.objects.create(
            project=project,
            kind="x",
            task="corpus.tasks.build_index",
            params={"retriever_id": "not an id"},
        ),
    ]
    good = Job.objects.create(
        project=project, kind="import_uploads", task="corpus.tasks.import_uploads"
    )
    Upload.objects.create(
        job=good, name="fine.txt", size=4, sha256="", content=POLICY_TEXT.encode()
    )
    jobs.reconcile(stale_after=timedelta(0))
    for job in odd:
        job.refresh_from_db()
        assert job.state == JobState.FAILED and job.message, (job.task, job.state)
    assert "There is no task named 'os.system'" in Job.objects.get(pk=odd[0].pk).message
    good.refresh_from_db()
    assert good.state == JobState.SUCCEEDED, good.message
    assert Document.objects.filter(doc_id="fine.txt").exists()


# --- item 13: the upload form's own messages ------------------------------------------------


def test_fifty_one_files_get_the_forms_message(project, member, settings):
    client = login(member("lead"))
    files = [
        named(b"text %d" % i, f"f{i}.txt") for i in range(settings.GOLDSET_MAX_UPLOAD_FILES + 1)
    ]
    response = client.post(
        reverse("corpus:upload-documents", args=[project.slug]), {"files": files}
    )
    assert response.status_code == 413
    page = response.content.decode()
    assert "At most 50 files at once; you sent 51." in page and "<form" in page
    assert not Job.objects.exists() and not Upload.objects.exists()


def test_an_uploaded_file_name_never_brings_a_bidi_control_into_a_doc_id(worker, project, member):
    # Django drops unprintable characters from uploaded file names; the form would refuse any
    # that came through, and a JSONL doc id with one is refused with its line (BAD_LINES).
    client = login(member("lead"))
    job, _ = upload(client, project, named(b"A reversed name.", "invoice\u202etxt.exe.txt"))
    assert job.state == JobState.SUCCEEDED
    (doc_id,) = Document.objects.values_list("doc_id", flat=True)
    assert not set(doc_id) & set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def test_the_upload_form_refuses_a_bidi_file_name_that_reaches_it():
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.utils.datastructures import MultiValueDict

    from corpus.forms import UploadForm

    files = MultiValueDict({"files": [SimpleUploadedFile("a\u202eb.txt", b"text")]})
    form = UploadForm(files=files)
    assert not form.is_valid()
    assert "bidirectional control character U+202E" in str(form.errors)


def test_a_bidi_doc_id_in_a_folder_import_is_refused(project, tmp_path, capsys):
    (tmp_path / "inv\u2066oice.md").write_text("# Invoice\n\nA reversed name.")
    (tmp_path / "fine.md").write_text("# Fine\n\nA normal name.")
    with pytest.raises(SystemExit) as exit_:
        call_command("import_documents", str(tmp_path), "--project", project.slug)
    assert exit_.value.code == 1
    assert "bidirectional control character U+2066" in capsys.readouterr().err
    assert list(Document.objects.values_list("doc_id", flat=True)) == ["fine.md"]
