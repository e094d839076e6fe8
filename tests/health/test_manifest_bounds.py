"""Trust at the manifest intake (issue 32): every time and number a manifest row gives is checked
against what its readers hold (the rows' integer columns, the Index health page, the daily
health check), a bad one named with its line and field and nothing stored; rows stored before
the check cannot fail the page or the daily check; and a row naming a document hidden from the
viewer reads exactly as one naming a document the corpus lacks."""

from __future__ import annotations

import json
import re
from importlib import import_module

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse

from corpus.models import Job, JobState
from corpus.services import retrieval
from goldeval.formats.manifests import COLUMNS
from health import tasks
from health.models import IndexHealthCheck, IndexManifest, IndexManifestRow
from health.services import manifests
from tests.factories import POLICY_TEXT, ProjectFactory, UserFactory, add_documents, login

ON_POSTGRES = connection.vendor == "postgresql"
GOOD_ROW = {
    "doc_id": "policy",
    "version": "1",
    "start": "0",
    "end": "40",
    "indexed_at": "2026-11-20T00:00:00Z",
    "embedding_model": "minilm",
    "embedding_revision": "r1",
    "dimension": "384",
}


@pytest.fixture
def team(project):
    add_documents(project, ("policy", POLICY_TEXT))
    return retrieval.add_retriever(project=project, name="team", kind="run")


def as_csv(*rows: dict) -> bytes:
    lines = [",".join(COLUMNS)] + [",".join(str(row.get(c, "")) for c in COLUMNS) for row in rows]
    return ("\n".join(lines) + "\n").encode()


def as_jsonl(*rows: dict) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


BAD = [
    ("indexed_at", "9999-12-31T23:59:59-14:00"),  # the year 10000 in UTC
    ("indexed_at", "0001-01-01T00:00:00+14:00"),  # the year 0 in UTC
    ("indexed_at", "0001-01-01T00:00:00"),
    ("indexed_at", "1969-12-31T23:59:59Z"),
    ("indexed_at", "3000-01-01T00:00:00Z"),
    ("indexed_at", "2026-11-20T00:00:00+99:00"),
    ("dimension", str(2**31)),
    ("version", str(2**31)),
    ("start", str(2**31)),
    ("end", str(2**31)),
    ("dimension", "9" * 40),
    ("doc_id", "a\x00b"),
    ("doc_id", "a\ud800b"),
    ("embedding_model", "m\x00"),
    ("embedding_revision", "r\ud800"),
    ("embedding_model", "m" * 201),
]


@pytest.mark.parametrize("layout", [as_csv, as_jsonl])
@pytest.mark.parametrize(("field", "value"), BAD, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD)])
def test_a_value_no_reader_can_hold_is_named_with_its_line_and_nothing_is_stored(
    team, member, layout, field, value, django_capture_on_commit_callbacks, inline_jobs
):
    if layout is as_csv and "\ud800" in value:
        pytest.skip("a CSV file is UTF-8 bytes, which cannot hold a lone surrogate")
    data = layout(GOOD_ROW, {**GOOD_ROW, "doc_id": "vpn"}, {**GOOD_ROW, field: value})
    lead = login(member("lead"))
    url = reverse("health:upload-manifest", args=[team.project.slug])
    with django_capture_on_commit_callbacks(execute=True):
        response = lead.post(url, {"retriever": team.pk, "file": SimpleUploadedFile("m", data)})
    assert response.status_code == 302
    job = Job.objects.get(kind="import_manifest")
    assert job.state == JobState.FAILED and "nothing was stored" in job.message
    line = 4 if layout is as_csv else 3
    (error,) = job.errors
    assert error["line"] == line and field in error["error"], error
    assert len(error["error"]) < 300
    assert not IndexManifest.objects.exists() and not IndexManifestRow.objects.exists()
    # The job page says it, and the Index health page still opens.
    assert lead.get(reverse("corpus:show-job", args=[team.project.slug, job.pk])).status_code == 200
    assert (
        lead.get(reverse("health:show-index-health", args=[team.project.slug])).status_code == 200
    )


def test_values_at_the_edges_are_stored(team):
    edge = {**GOOD_ROW, "indexed_at": "1970-01-01T00:00:00Z", "dimension": str(2**31 - 1)}
    late = {**GOOD_ROW, "doc_id": "vpn", "indexed_at": "2999-12-31T10:00:00-13:00"}
    stored = manifests.import_manifest(retriever=team, data=as_csv(edge, late), file_name="m.csv")
    assert stored.rows == 2
    assert IndexManifestRow.objects.get(doc_id="policy").dimension == 2**31 - 1


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite refused these times even before the fix")
def test_rows_stored_before_the_fix_no_longer_fail_the_page_or_the_daily_check(team, member):
    stored = manifests.import_manifest(
        retriever=team, data=as_csv(GOOD_ROW, {**GOOD_ROW, "doc_id": "vpn"}), file_name="m.csv"
    )
    with connection.cursor() as cursor:  # what the old intake let through
        cursor.execute(
            "UPDATE corpus_indexmanifestrow SET indexed_at = '10000-01-01 13:59:59+00' "
            "WHERE doc_id = 'policy'"
        )
        cursor.execute(
            "UPDATE corpus_indexmanifestrow SET indexed_at = '0001-12-31 10:00:00+00 BC' "
            "WHERE doc_id = 'vpn'"
        )
    import_module("health.migrations.0003_issue32_times_in_range").bring_into_range(apps, None)
    assert set(stored.entries.values_list("indexed_at", flat=True)) == {stored.uploaded_at}
    page = login(member("lead")).get(reverse("health:show-index-health", args=[team.project.slug]))
    assert page.status_code == 200
    assert tasks.check_index_health() == 1 and IndexHealthCheck.objects.count() == 1
    superuser = UserFactory(is_staff=True, is_superuser=True)
    listing = login(superuser).get(reverse("admin:health_indexmanifestrow_changelist"))
    assert listing.status_code == 200 and "vpn" in listing.content.decode()


def test_a_file_name_no_column_holds_is_refused_and_nothing_stored(team):
    for name in ("index\x00.csv", "index\ud800.csv"):
        with pytest.raises(manifests.ManifestProblems, match="file name"):
            manifests.import_manifest(retriever=team, data=as_csv(GOOD_ROW), file_name=name)
    assert not IndexManifest.objects.exists()


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite refused these times even before the fix")
def test_one_projects_failing_check_never_costs_the_others_theirs(team, project):
    other = ProjectFactory()
    add_documents(other, ("policy", POLICY_TEXT))
    theirs = retrieval.add_retriever(project=other, name="theirs", kind="run")
    manifests.import_manifest(retriever=team, data=as_csv(GOOD_ROW), file_name="m.csv")
    manifests.import_manifest(retriever=theirs, data=as_csv(GOOD_ROW), file_name="m.csv")
    with connection.cursor() as cursor:  # a row no reader can load, in the first project only
        cursor.execute(
            "UPDATE corpus_indexmanifestrow SET indexed_at = '10000-01-01 13:59:59+00' "
            "WHERE manifest_id = %s",
            [IndexManifest.objects.get(retriever=team).pk],
        )
    assert tasks.check_index_health() == 1
    assert list(IndexHealthCheck.objects.values_list("project", flat=True)) == [other.pk]


# Existence oracles ---------------------------------------------------------------------------


def _page(client, project) -> str:
    html = client.get(reverse("health:show-index-health", args=[project.slug])).content.decode()
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html)
    return re.sub(r'"X-CSRFToken": "[^"]+"', "", html)


def test_a_manifest_naming_a_hidden_document_reads_as_one_naming_a_missing_one(team, member):
    """An outsider's Index health page is byte-identical before and after the restricted
    document the manifest names is added to the corpus: it is "unknown" either way."""
    rows = [GOOD_ROW, {**GOOD_ROW, "doc_id": "payroll"}, {**GOOD_ROW, "doc_id": "ghost"}]
    manifests.import_manifest(retriever=team, data=as_csv(*rows), file_name="m.csv")
    outsider = login(member("lead"))
    admin = login(member("admin"))
    before = _page(outsider, team.project), _page(admin, team.project)
    assert "ghost, payroll" in before[0]
    add_documents(team.project, ("payroll", "Payroll runs on the 25th of each month.", ["hr"]))
    after = _page(outsider, team.project), _page(admin, team.project)
    assert after == before
