"""An admin finalises a gold set, downloads it, uploads a run and reads the figures (Chromium).

Finalising and checking a run are jobs: the browser follows each job page's progress (htmx
polling) and goes on to the gold set, then to the figures, when the job is done."""

import hashlib
import io
import os
import re
import zipfile

import pytest
from playwright.sync_api import expect

from corpus.models import AccessGroup
from evaluation.models import EvaluationRun, GoldSet, RunDeletion
from evaluation.services import gold_sets
from tests.e2e.conftest import after_the_job, log_in
from tests.factories import PASSWORD, MembershipFactory, UserFactory, labelled_question_set

pytestmark = pytest.mark.e2e

RUN = (
    '{"question_id": "q1", "results": [{"doc_id": "vpn", "start": 0, "end": 50}, '
    '{"doc_id": "leave", "start": 0, "end": 100}]}\n'
    '{"question_id": "q2", "results": [{"doc_id": "vpn", "start": 100, "end": 150}]}\n'
    '{"question_id": "q3", "results": [], "refused": true}\n'
)


def test_admin_finalises_downloads_and_evaluates(
    worker, transactional_db, live_server, page, project, tmp_path
):
    people = {}
    for name, role in (("ann", "labeller"), ("bob", "labeller"), ("lea", "lead"), ("ada", "admin")):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lea"], restricted=True
    )
    AccessGroup.objects.get(name="hr-confidential").members.add(people["ada"])
    csp_errors = []
    page.on(
        "console", lambda m: csp_errors.append(m.text) if "Content Security" in m.text else None
    )

    log_in(page, live_server, "ada", PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/gold-sets/")
    page.get_by_role("button", name="Finalise hr as a new gold set").click()
    # The job page follows the worker and goes on to the gold set when it is done.
    after_the_job(page, page.locator("h1", has_text="Gold set hr v1"))
    gold_set = GoldSet.objects.get(question_set=question_set)
    expect(page.locator("body")).to_contain_text(gold_set.checksum)

    with page.expect_download() as download:
        page.get_by_role("link", name="Download the bundle (.zip)").click()
    assert download.value.suggested_filename == f"{project.slug}-hr-v1.zip"
    path = tmp_path / "bundle.zip"
    download.value.save_as(path)
    with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as archive:
        assert f"{project.slug}-hr-v1/gold.jsonl" in archive.namelist()

    page.get_by_role("link", name="Evaluate runs against it").click()
    run_file = tmp_path / "mine.jsonl"
    run_file.write_text(RUN)
    page.get_by_label("Run file (JSONL or TREC)").set_input_files(str(run_file))
    page.get_by_role("button", name="Upload").click()
    told = after_the_job(page, page.locator("h1", has_text=re.compile("^Evaluation$")))
    assert "Run mine stored: 3 questions." in told
    assert EvaluationRun.objects.get().name == "mine"
    table = page.locator("table.metrics").first  # then the unjudged-passages table
    expect(table.locator("thead")).to_contain_text("mine")
    expect(table.locator("thead")).to_contain_text("bm25-baseline")
    expect(table.locator("tr.k-sent mark").first).to_be_visible()
    expect(page.locator("svg.recall-curve polyline")).to_have_count(2)
    page.locator("details.drill-down summary", has_text="q2").click()
    expect(page.locator("details.drill-down[open]")).to_contain_text("missed")
    if os.environ.get("GOLDSET_SCREENSHOTS"):
        page.screenshot(path=os.environ["GOLDSET_SCREENSHOTS"], full_page=True)
    assert csp_errors == []


def test_a_lead_deletes_a_broken_run_after_confirming(
    worker, transactional_db, live_server, page, project
):
    """A run stored before scores were checked (a NaN from the team's search) is flagged on the
    evaluation page; the lead deletes it after ticking the box, and the page says who did."""
    people = {}
    for name, role in (("ann", "labeller"), ("bob", "labeller"), ("lea", "lead"), ("ada", "admin")):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lea"]
    )
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["ada"])
    broken = b'{"question_id": "q1", "results": [{"doc_id": "leave", "score": NaN}]}\n'
    EvaluationRun.objects.create(
        gold_set=gold_set,
        name="team-nan",
        source="retriever",
        file_name="team-nan.jsonl",
        content=broken,
        sha256=hashlib.sha256(broken).hexdigest(),
        questions=1,
    )
    csp_errors = []
    page.on(
        "console", lambda m: csp_errors.append(m.text) if "Content Security" in m.text else None
    )
    log_in(page, live_server, "lea", PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/evaluation/?gold_set={gold_set.pk}")
    page.get_by_role("button", name="Compute the figures").click()
    after_the_job(page, page.locator(".unreadable-run"))
    expect(page.locator(".unreadable-run")).to_contain_text("The run team-nan cannot be scored")
    expect(page.locator("table.metrics thead").first).to_contain_text("bm25-baseline")

    page.locator("a.delete-run").click()
    expect(page.locator("h1")).to_have_text("Delete run team-nan?")
    delete = page.get_by_role("button", name="Delete")
    delete.click()  # the box is not ticked: the browser asks for it, nothing is sent
    expect(page.locator("h1")).to_have_text("Delete run team-nan?")
    assert EvaluationRun.objects.filter(name="team-nan").exists()
    page.get_by_label("Delete the run team-nan").check()
    delete.click()
    expect(page.locator("body")).to_contain_text("Run team-nan deleted", timeout=60_000)
    assert not EvaluationRun.objects.filter(name="team-nan").exists()
    assert RunDeletion.objects.get().deleted_by == people["lea"]
    page.locator("details.run-deletions summary").click()
    expect(page.locator("details.run-deletions")).to_contain_text("team-nan")
    expect(page.locator("details.run-deletions")).to_contain_text("by lea")
    assert csp_errors == []
