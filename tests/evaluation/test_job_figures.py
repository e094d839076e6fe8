"""A job's figures over a gold set follow the gold set's own rule (issue 32, item 4): someone
from whom an access group hides one of the bundle's documents reads no figure of it on the job
page, the jobs list or the message the page following it flashes; the others read them."""

from __future__ import annotations

from django.urls import reverse

from corpus import jobs
from corpus.job_display import WITHHELD, view_job
from corpus.models import Document, Job, JobState
from corpus.services import projects
from evaluation.services.gold_sets import finalise_gold_set, withhold_figures
from tests.factories import labelled_question_set, login


def test_figures_over_a_gold_set_naming_a_hidden_document_are_withheld(project, member):
    ann, bob = member("labeller"), member("labeller")
    insider, outsider, admin = member("lead"), member("lead"), member("admin")
    projects.set_access_group_members(project=project, name="hr-confidential", users=[insider])
    question_set = labelled_question_set(project, ann=ann, bob=bob, lead=insider, restricted=True)
    gold_set = finalise_gold_set(question_set=question_set, user=insider)
    salaries = Document.objects.get(project=project, doc_id="salaries")
    if not gold_set.documents.filter(pk=salaries.pk).exists():
        gold_set.documents.add(salaries)  # as a bundle judging it carries it
    job = Job.objects.create(project=project, kind="index_evaluation")
    withhold_figures(job=job, gold_set=gold_set)
    jobs.finish(job, JobState.SUCCEEDED, "bm25: recall@5 0.667 on hr v1.")
    assert view_job(job, insider).message == "bm25: recall@5 0.667 on hr v1."
    for who in (outsider, admin):
        assert view_job(job, who).message == WITHHELD
        page = login(who).get(reverse("corpus:show-job", args=[project.slug, job.pk]))
        listed = login(who).get(reverse("corpus:list-jobs", args=[project.slug]))
        for body in (page.content.decode(), listed.content.decode()):
            assert "0.667" not in body and "they are not shown" in body
    # A gold set with no restricted document: everyone reads the figures.
    public = Job.objects.create(project=project, kind="index_evaluation")
    gold_set.documents.remove(salaries)
    withhold_figures(job=public, gold_set=gold_set)
    jobs.finish(public, JobState.SUCCEEDED, "bm25: recall@5 0.5 on hr v1.")
    assert view_job(public, outsider).message == "bm25: recall@5 0.5 on hr v1."
