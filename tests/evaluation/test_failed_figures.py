"""A page whose figures a job computes says when the last attempt failed, and why, beside the
button that tries again (it used to show the button alone, as if nothing had been tried)."""

import pytest
from django.urls import reverse

from answers.services.runs import import_answers
from corpus.models import Job, JobState
from evaluation.services import answer_scores, gold_sets, reports
from evaluation.tasks import answer_report, evaluation_report
from tests.evaluation.test_answer_scores import answers_file
from tests.factories import labelled_question_set, login


@pytest.fixture
def lead(member):
    return member("lead", username="lea")


@pytest.fixture
def gold_set(project, member, lead):
    question_set = labelled_question_set(
        project, ann=member("labeller"), bob=member("labeller"), lead=lead
    )
    import_answers(question_set=question_set, data=answers_file(), run_name="rag")
    return gold_sets.finalise_gold_set(question_set=question_set, user=member("admin"))


def broken(*args, **kwargs):
    raise RuntimeError("the scorer broke")


def _failed_once(client, compute_url, task, kind):
    assert client.post(compute_url, {"shown": "1", "baseline": "1"}).status_code == 302
    job = Job.objects.get(kind=kind)
    task(job.pk)  # the worker's part, run here: the patched scorer raises
    job.refresh_from_db()
    assert job.state == JobState.FAILED
    return job


@pytest.mark.parametrize("page", ["answers", "evaluation"])
def test_a_failed_computation_is_said_with_its_reason_and_can_be_tried_again(
    page, project, lead, gold_set, monkeypatch
):
    client = login(lead)
    if page == "answers":
        url = reverse("evaluation:show-answers", args=[project.slug, gold_set.pk])
        compute = reverse("evaluation:compute-answers", args=[project.slug, gold_set.pk])
        monkeypatch.setattr(answer_scores, "compute_answers_report", broken)
        task, kind, button = answer_report, "answer_report", "Compute the answer scores"
    else:
        url = reverse("evaluation:show-evaluation", args=[project.slug])
        compute = reverse("evaluation:score-runs", args=[project.slug, gold_set.pk])
        monkeypatch.setattr(reports, "run_report", broken)
        task, kind, button = evaluation_report, "evaluation_report", "Compute the figures"
    before = client.get(url).content.decode()
    assert button in before and "figures-failed" not in before

    job = _failed_once(client, compute, task, kind)
    page_after = client.get(url).content.decode()
    assert 'id="figures-failed"' in page_after
    assert "An unexpected error stopped this job; it has been logged." in page_after
    assert "the scorer broke" not in page_after  # the exception stays in the log
    assert reverse("corpus:show-job", args=[project.slug, job.pk]) in page_after
    assert button in page_after

    # Trying again starts a new job: the page follows it, and no longer shows the failure.
    assert client.post(compute, {"shown": "1", "baseline": "1"}).status_code == 302
    assert Job.objects.filter(kind=kind).count() == 2
    following = client.get(url).content.decode()
    assert "being computed" in following and "figures-failed" not in following


@pytest.mark.parametrize("page", ["answers", "evaluation"])
def test_a_job_finishing_while_the_page_reads_shows_the_figures(
    page, project, lead, gold_set, monkeypatch
):
    """A job stores its figures, then finishes. A page that read the stored figures first and
    the job second, with the job finishing in between, found neither and offered the button
    again; it now reads the figures again when no job is running."""
    client = login(lead)
    if page == "answers":
        url = reverse("evaluation:show-answers", args=[project.slug, gold_set.pk])
        compute = reverse("evaluation:compute-answers", args=[project.slug, gold_set.pk])
        module, name, task, kind = answer_scores, "answers_job", answer_report, "answer_report"
        shown, button = 'data-score="faithfulness"', "Compute the answer scores"
    else:
        url = reverse("evaluation:show-evaluation", args=[project.slug])
        compute = reverse("evaluation:score-runs", args=[project.slug, gold_set.pk])
        module, name, task, kind = reports, "report_job", evaluation_report, "evaluation_report"
        shown, button = '<table class="metrics">', "Compute the figures"
    assert client.post(compute, {"shown": "1", "baseline": "1"}).status_code == 302
    job = Job.objects.get(kind=kind)
    read_the_job = getattr(module, name)

    def the_worker_finishes_first(*args, **kwargs):
        task(job.pk)  # the worker stores the figures and finishes the job, just now
        return read_the_job(*args, **kwargs)

    monkeypatch.setattr(module, name, the_worker_finishes_first)
    body = client.get(url).content.decode()
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    assert shown in body and button not in body
    assert "being computed" not in body and "figures-failed" not in body
