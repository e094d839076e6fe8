"""The misses report is computed by a job and stored (production/services/reports.py):
the page renders stored figures, starts the job when the labels it may see changed, and never
shows a lead anything of a document an access group hides from them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from corpus import jobs
from corpus.models import Document, Job
from corpus.services import projects
from labelling.models import Assignment, Candidate, Judgement, Span
from production.models import ProductionReport, ReportMissedQuestion
from production.services import reports as production_reports
from tests.factories import SALARY_TEXT, MembershipFactory, UserFactory, add_documents, login
from tests.production.test_production_misses import labelled  # noqa: F401 (fixture)
from tests.test_blindness import TOKEN


@pytest.fixture
def world(labelled, monkeypatch):  # noqa: F811
    """The labelled sample, with jobs left queued: each test runs them itself."""
    monkeypatch.setattr("corpus.jobs.queue", lambda job: None)
    sample = labelled["sample"]
    url = reverse("production:show-misses", kwargs={"slug": "acme", "sample_id": sample.pk})
    return {**labelled, "url": url}


def run_queued() -> int:
    queued = list(Job.objects.unfinished().filter(kind="misses_report"))
    for job in queued:
        jobs.run(job.pk, production_reports.run_misses_report)
    return len(queued)


def test_the_page_queues_the_report_then_shows_the_stored_figures(world):
    browser = login(world["lead"])
    first = browser.get(world["url"]).content.decode()
    assert "the misses report is being computed" in first
    assert "when are travel costs paid back" not in first
    (job,) = Job.objects.filter(kind="misses_report")
    assert job.task == "production.tasks.misses_report" and job.created_by == world["lead"]
    assert ProductionReport.objects.count() == 0
    browser.get(world["url"])  # opened again meanwhile: the same job, not another
    assert Job.objects.filter(kind="misses_report").count() == 1

    assert run_queued() == 1
    (stored,) = ProductionReport.objects.all()
    assert stored.sample == world["sample"]
    assert stored.content["report"]["recall"]["mean"] == pytest.approx(0.5)
    assert [p["sample_id"] for p in stored.content["trend"]] == [world["sample"].pk]
    page = browser.get(world["url"]).content.decode()
    assert "when are travel costs paid back" in page and "bm25 found it at rank 1" in page
    assert "being computed" not in page
    assert Job.objects.filter(kind="misses_report").count() == 1  # nothing computed again


def test_a_job_finishing_while_the_page_reads_is_not_started_again(world, monkeypatch):
    """The job stores its report, then finishes. A page that read the stored report first
    and the job second, with the job finishing in between, started a second job for figures
    already there; it now reads the report again when it finds no job running."""
    browser = login(world["lead"])
    browser.get(world["url"])
    (job,) = Job.objects.filter(kind="misses_report")
    read_the_job = production_reports.pending_job

    def the_worker_finishes_first(**kwargs):
        jobs.run(job.pk, production_reports.run_misses_report)  # stored and finished just now
        return read_the_job(**kwargs)

    monkeypatch.setattr(production_reports, "pending_job", the_worker_finishes_first)
    page = browser.get(world["url"]).content.decode()
    assert "when are travel costs paid back" in page and "being computed" not in page
    assert Job.objects.filter(kind="misses_report").count() == 1


def test_a_label_changed_marks_the_figures_out_of_date_and_computes_them_again(world):
    browser = login(world["lead"])
    browser.get(world["url"])
    run_queued()
    # ann now grades the leave passage of the travel question as evidence too.
    judgement = Judgement.objects.get(
        candidate__question__external_id="t-1", candidate__version__document__doc_id="leave"
    )
    judgement.grade = 2
    judgement.save()
    candidate = judgement.candidate
    Span.objects.create(
        judgement=judgement,
        version=candidate.version,
        start=candidate.start,
        end=candidate.end,
        quote=candidate.version.text[candidate.start : candidate.end],
    )
    stale = browser.get(world["url"]).content.decode()
    assert "The labels changed since these figures were computed" in stale
    assert "0.500" in stale  # the old figures, meanwhile
    assert run_queued() == 1
    assert ProductionReport.objects.count() == 1  # the old figures are gone
    fresh = browser.get(world["url"]).content.decode()
    assert "labels changed" not in fresh and "being computed" not in fresh
    report = production_reports.stored_report(
        sample=world["sample"],
        key=production_reports.report_key(sample=world["sample"], viewer=world["lead"])[0],
    )
    # Both of t-1's documents are evidence now; production sent only the leave one (k = 1).
    assert report.content["report"]["recall"]["mean"] == pytest.approx((1 + 0.5) / 2)


def test_an_outsider_lead_gets_the_same_bytes_with_a_restricted_document_labelled(world):
    project, sample = world["sample"].project, world["sample"]
    leo, insider = UserFactory(username="leo"), UserFactory(username="insider")
    for lead in (leo, insider):
        MembershipFactory(project=project, user=lead, role="lead")
    projects.set_access_group_members(
        project=project, name="hr-confidential", users=[world["ann"], insider]
    )
    for viewer in (leo, insider):
        login(viewer).get(world["url"])
    run_queued()

    def seen(viewer) -> bytes:
        return TOKEN.sub(rb"\1-", login(viewer).get(world["url"]).content)

    before = {viewer: seen(viewer) for viewer in (leo, insider)}
    # The salaries document, restricted to hr-confidential, joins the travel question's pool,
    # and ann (a member) grades it as evidence.
    add_documents(project, ("salaries", SALARY_TEXT, ["hr-confidential"]))
    version = Document.objects.get(project=project, doc_id="salaries").latest_version
    travel = sample.question_set.questions.get(external_id="t-1")
    candidate = Candidate.objects.create(
        pool=sample.question_set.pools.get(),
        question=travel,
        version=version,
        start=0,
        end=44,
        shuffle_rank=9,
    )
    judgement = Judgement.objects.create(
        assignment=Assignment.objects.get(question=travel), candidate=candidate, grade=2
    )
    Span.objects.create(
        judgement=judgement, version=version, start=0, end=44, quote=SALARY_TEXT[:44]
    )
    assert seen(leo) == before[leo]  # no job, no "out of date", no figure moved
    assert not Job.objects.unfinished().filter(kind="misses_report", created_by=leo).exists()
    assert b"salaries" not in seen(leo) and b"Band C" not in seen(leo)
    # The insider's labels changed: their figures are computed again, with the salaries span.
    assert b"The labels changed since" in seen(insider)
    run_queued()
    page = seen(insider)
    assert b"salaries" in page and b"Band C pays" in page
    assert seen(leo) == before[leo]
    visibilities = set(ProductionReport.objects.values_list("visibility", flat=True))
    assert len(visibilities) == 2  # leo's report is never the insider's


def test_a_page_lists_at_most_its_share_of_misses_in_order_whatever_the_questions_hold(
    world, monkeypatch
):
    """The missed questions are rows of their own; each page reads its questions only and
    lists at most `MISSES_PER_PAGE` misses, a question running over pages marked continued.
    Read page by page, the misses are the report's, in its order, each once."""
    browser = login(world["lead"])
    browser.get(world["url"])
    run_queued()
    (stored,) = ProductionReport.objects.all()
    missed = [row.content for row in ReportMissedQuestion.objects.filter(report=stored)]
    assert missed and "missed" not in stored.content["report"]
    # A question with many misses, another with a few: three pages of two.
    many = {**missed[0], "misses": missed[0]["misses"] * 5}
    ReportMissedQuestion.objects.filter(report=stored).delete()
    for n, row in enumerate([many, missed[0]]):
        ReportMissedQuestion.objects.create(report=stored, position=n, content=row)
    stored.content["missed_counts"] = [len(many["misses"]), len(missed[0]["misses"])]
    stored.save(update_fields=["content"])
    monkeypatch.setattr(production_reports, "MISSES_PER_PAGE", 2)
    total = len(many["misses"]) + len(missed[0]["misses"])
    read, continued = [], []
    for number in range(1, (total + 1) // 2 + 1):
        _, _, page = production_reports.report_page(stored, number)
        assert sum(len(row["misses"]) for row in page) <= 2
        for row in page:
            read.extend(row["misses"])
            continued.append(row["continued"])
    assert read == many["misses"] + missed[0]["misses"]
    assert continued[0] is False and True in continued
    response = browser.get(world["url"] + "?page=2")
    assert response.status_code == 200 and "continued" in response.content.decode()
