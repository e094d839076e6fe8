"""Index manifests in the app, the Index health page and the built-in indexes' checks."""

import datetime
import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from corpus.extraction import assess_quality
from corpus.models import DocumentVersion, Job, JobState
from corpus.services import documents, projects, retrieval
from corpus.sources import DocumentRecord, SourceBatch
from goldeval.formats.manifests import COLUMNS
from health.models import IndexManifest, IndexManifestRow
from health.services import checks as index_health
from health.services import manifests
from tests.factories import POLICY_TEXT, add_documents, login

HEADER = ",".join(COLUMNS) + "\n"
VPN = "Connect to the VPN with the company laptop before opening the intranet. " * 3
SECRET = "Salary bands for 2027 are set by the remuneration committee each spring quarter."
NEW_POLICY = POLICY_TEXT.replace("five days", "ten days")


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def reimport(project, doc_id, text, modified):
    documents.ingest_batch(
        project=project,
        batch=SourceBatch(
            source="test",
            records=[
                DocumentRecord(
                    doc_id=doc_id,
                    title=doc_id,
                    text=text,
                    report=assess_quality(text),
                    modified_at=modified,
                )
            ],
        ),
        importer=documents.Importer.command_line(),
    )


@pytest.fixture
def corpus(project):
    add_documents(project, ("policy", POLICY_TEXT), ("vpn", VPN), ("secret", SECRET, ["hr"]))
    return project


@pytest.fixture
def team(corpus):
    return retrieval.add_retriever(project=corpus, name="team", kind="run")


def manifest_text(*rows):
    return (HEADER + "".join(rows)).encode()


GOOD = manifest_text(
    f"policy,1,{sha(POLICY_TEXT)},,,2026-11-20T00:00:00Z,minilm,r1,384\n",
    f"vpn,1,{sha(VPN)},,,2026-11-20T00:00:00Z,minilm,r1,384\n",
    f"secret,1,{sha(SECRET)},,,2026-11-20T00:00:00Z,minilm,r2,384\n",
    "ghost,1,,,,2026-11-20T00:00:00Z,minilm,r1,384\n",
)


def test_import_manifest_stores_every_row(team, tmp_path):
    path = tmp_path / "index.csv"
    path.write_bytes(GOOD)
    call_command(
        "import_manifest", str(path), "--project", team.project.slug, "--retriever", "team"
    )
    stored = IndexManifest.objects.get(retriever=team)
    assert stored.rows == 4 and stored.file_name == "index.csv"
    assert list(stored.entries.order_by("line").values_list("doc_id", "line")) == [
        ("policy", 2),
        ("vpn", 3),
        ("secret", 4),
        ("ghost", 5),
    ]


def test_import_manifest_exits_2_with_lines_and_stores_nothing(team, tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_bytes(manifest_text("policy,1,,,,later,m,r,384\n", "vpn,1,,,,2026-11-20,m,r,-3\n"))
    with pytest.raises(CommandError) as error:
        call_command(
            "import_manifest", str(path), "--project", team.project.slug, "--retriever", "team"
        )
    assert error.value.returncode == 2 and "nothing was stored" in str(error.value)
    err = capsys.readouterr().err
    assert f"{path}:2: indexed_at 'later' is not an ISO 8601 time" in err
    assert f"{path}:3: dimension -3" in err or f"{path}:3: dimension must be" in err
    assert not IndexManifest.objects.exists() and not IndexManifestRow.objects.exists()


def test_a_lead_uploads_a_manifest_in_the_browser(
    team, member, django_capture_on_commit_callbacks, inline_jobs
):
    lead = login(member("lead"))
    url = reverse("health:upload-manifest", args=[team.project.slug])
    with django_capture_on_commit_callbacks(execute=True):
        response = lead.post(url, {"retriever": team.pk, "file": SimpleUploadedFile("i.csv", GOOD)})
    job = Job.objects.get(kind="import_manifest")
    assert response.status_code == 302 and job.state == JobState.SUCCEEDED
    # The job page sends the browser back to Index health.
    assert job.result["link"]["url"] == reverse(
        "health:show-index-health", args=[team.project.slug]
    )
    assert IndexManifest.objects.get().rows == 4
    bad = SimpleUploadedFile("bad.csv", b"doc_id,indexed_at\npolicy,2026-11-20\n")
    with django_capture_on_commit_callbacks(execute=True):
        lead.post(url, {"retriever": team.pk, "file": bad})
    failed = Job.objects.filter(kind="import_manifest").latest("pk")
    assert failed.state == JobState.FAILED and "nothing was stored" in failed.message
    assert (
        failed.errors[0]["line"] == 1 and "embedding_model, dimension" in failed.errors[0]["error"]
    )
    assert IndexManifest.objects.count() == 1


def test_labellers_cannot_upload_or_see_index_health(team, member):
    labeller = login(member("labeller"))
    assert (
        labeller.get(reverse("health:show-index-health", args=[team.project.slug])).status_code
        == 403
    )
    response = labeller.post(
        reverse("health:upload-manifest", args=[team.project.slug]),
        {"retriever": team.pk, "file": SimpleUploadedFile("i.csv", GOOD)},
    )
    assert response.status_code == 403 and not IndexManifest.objects.exists()


def test_the_page_shows_a_reimported_document_as_stale_and_a_hidden_one_as_a_missing_one(
    team, member
):
    modified = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=3)
    reimport(team.project, "policy", NEW_POLICY, modified)
    manifests.import_manifest(retriever=team, data=GOOD, file_name="i.csv")
    outsider = member("lead", username="outsider")
    page = login(outsider).get(reverse("health:show-index-health", args=[team.project.slug]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "<td>policy</td><td>hash</td>" in html and "3.0 d" in html
    # The restricted document's row reads exactly as the row of a document the corpus lacks:
    # the manifest's own doc id, listed as unknown, never stale or missing (issue 32).
    assert "ghost, secret" in html
    (health,) = index_health.project_health(project=team.project, viewer=outsider)
    assert health.report["unknown"]["doc_ids"] == ["ghost", "secret"]
    assert health.report["unknown"]["lines"] == {"ghost": 5, "secret": 4}
    assert health.report["stale"]["of"] == 2 and health.report["index"]["mixed"]
    insider = member("lead", username="insider")
    projects.set_access_group_members(project=team.project, name="hr", users=[insider])
    inside = index_health.retriever_health(retriever=team, viewer=insider).report
    assert inside["index"]["mixed"] and inside["stale"]["of"] == 3
    assert inside["unknown"]["doc_ids"] == ["ghost"]
    # The recorded check is everyone's: the unrestricted documents only.
    everyone = index_health.retriever_health(retriever=team).report
    assert everyone["stale"]["of"] == 2 and everyone["unknown"]["doc_ids"] == ["ghost", "secret"]


def test_a_built_in_index_is_checked_from_its_own_records(corpus, member):
    scheme = documents.add_chunking_scheme(
        project=corpus, name="w50", strategy="fixed", size=50, overlap=0
    )
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=corpus, name="bm25", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=bm25)
    assert index_health.retriever_health(retriever=bm25).report["stale"]["documents"] == 0
    reimport(corpus, "vpn", VPN + " New rule.", datetime.datetime.now(datetime.UTC))
    DocumentVersion.objects.filter(document__doc_id="vpn", version=2).update(
        created_at=datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=5)
    )
    report = index_health.retriever_health(retriever=bm25, viewer=member("lead")).report
    assert [row["doc_id"] for row in report["stale"]["rows"]] == ["vpn"]
    assert report["stale"]["rows"][0]["basis"] == "hash"
    assert report["index"]["models"][0]["model"] == "bm25"


def test_the_runs_of_the_newest_gold_set_are_checked_and_refused_to_outsiders(project, member):
    from evaluation.models import EvaluationRun
    from evaluation.services.gold_sets import finalise_gold_set
    from tests.factories import labelled_question_set

    people = {r: member(r, username=r) for r in ("ann", "bob", "lead", "admin")}
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], restricted=True
    )
    projects.set_access_group_members(
        project=project, name="hr-confidential", users=[people["lead"], people["admin"]]
    )
    gold_set = finalise_gold_set(question_set=question_set, user=people["admin"])
    content = (
        b'{"question_id": "q1", "results": [{"doc_id": "leave", "start": 0, "end": 100}]}\n'
        b'{"question_id": "q2", "results": [{"doc_id": "vpn"}, {"doc_id": "leave"}, '
        b'{"doc_id": "vpn", "start": 0, "end": 40}, {"doc_id": "salaries"}, '
        b'{"doc_id": "leave", "start": 0, "end": 50}]}\n'
    )  # five distinct results: a repeated one is dropped when the run is read (issue 13)
    EvaluationRun.objects.create(
        gold_set=gold_set,
        name="team",
        source="upload",
        file_name="team.jsonl",
        content=content,
        sha256="0" * 64,
    )
    report = index_health.runs_health(project=project, viewer=people["lead"])
    team = report["runs"]["team"]
    assert team["short_lists"]["per_question"] == {"q1": 1} and team["questions"] == 2
    assert team["extraction"]["groups"]["clean"]["questions"] == 2
    html = login(people["lead"]).get(reverse("health:show-index-health", args=[project.slug]))
    assert (
        '<tr id="run-team"><td>team</td><td>0</td><td>0%</td><td>1 of 2</td>'
        in html.content.decode()
    )
    outsider = member("lead", username="outsider")
    page = login(outsider).get(reverse("health:show-index-health", args=[project.slug]))
    assert "the checks of its runs are not available to you" in page.content.decode()


def test_the_form_asks_for_a_file(team, member):
    """A lead uploads a file; a fetch goes to an admin's source (test_manifest_sources.py)."""
    lead = login(member("lead"))
    response = lead.post(
        reverse("health:upload-manifest", args=[team.project.slug]), {"retriever": team.pk}
    )
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    assert not Job.objects.exists()


def test_a_health_job_finishing_while_the_page_reads_shows_its_figures(team, member, monkeypatch):
    """The job stores its report, then finishes. A page that read the stored report first and
    the job second, with the job finishing in between, found neither; it now reads the report
    again when it finds no job running."""
    from corpus import jobs
    from health.services import reports as health_reports

    monkeypatch.setattr(health_reports, "INLINE_ROWS", 3)  # this manifest's 4 rows are "large"
    manifests.import_manifest(retriever=team, data=GOOD, file_name="i.csv")
    lead = login(member("lead", username="outsider"))
    lead.post(reverse("health:check-index-now", args=[team.project.slug, team.pk]))
    job = Job.objects.get(kind="index_health_report")
    assert job.state == JobState.QUEUED
    read_the_job = health_reports.pending_job

    def the_worker_finishes_first(*args, **kwargs):
        jobs.run(job.pk, health_reports.run_health_report)  # stored and finished just now
        return read_the_job(*args, **kwargs)

    monkeypatch.setattr(health_reports, "pending_job", the_worker_finishes_first)
    html = lead.get(reverse("health:show-index-health", args=[team.project.slug])).content.decode()
    assert "Computed by a job at" in html and "Check team now" not in html


def test_a_large_index_is_checked_by_a_job_and_its_stored_figures_shown_until_inputs_change(
    team, member, monkeypatch, django_capture_on_commit_callbacks, inline_jobs
):
    from health.models import IndexHealthReport
    from health.services import reports as health_reports

    monkeypatch.setattr(health_reports, "INLINE_ROWS", 3)  # this manifest's 4 rows are "large"
    manifests.import_manifest(retriever=team, data=GOOD, file_name="i.csv")
    outsider = member("lead", username="outsider")
    insider = member("lead", username="insider")
    projects.set_access_group_members(project=team.project, name="hr", users=[insider])
    page_url = reverse("health:show-index-health", args=[team.project.slug])
    lead = login(outsider)
    html = lead.get(page_url).content.decode()
    assert "too many to check while the page loads" in html and "Check team now" in html
    assert "ghost" not in html  # nothing computed in the request
    assert not Job.objects.filter(kind="index_health_report").exists()  # a GET starts nothing

    with django_capture_on_commit_callbacks(execute=True):
        response = lead.post(reverse("health:check-index-now", args=[team.project.slug, team.pk]))
    job = Job.objects.get(kind="index_health_report")
    assert job.state == JobState.SUCCEEDED and job.task == "health.tasks.index_health_report"
    # The job page follows it, then sends the browser back to Index health.
    assert response.status_code == 302 and job.result["link"]["url"] == page_url
    (stored,) = IndexHealthReport.objects.all()
    # The hidden document's row is unknown to the outsider, as the missing one's is.
    assert stored.retriever == team and stored.report["unknown"]["documents"] == 2
    html = lead.get(page_url).content.decode()
    assert "Computed by a job at" in html and "ghost, secret" in html

    # Someone who may see more documents does not get the outsider's figures.
    html = login(insider).get(page_url).content.decode()
    assert "Check team now" in html and "Computed by a job" not in html
    # A re-imported document changes the inputs: the stored figures are no longer shown.
    reimport(team.project, "policy", NEW_POLICY, datetime.datetime.now(datetime.UTC))
    html = lead.get(page_url).content.decode()
    assert "Check team now" in html and "Computed by a job" not in html
