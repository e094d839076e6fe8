"""The weekly step of the production loop: a sample becomes a question set linked to its
traces, the production retrieval a run pooled with the built-in retrievers, leads are told."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core import mail
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from corpus import jobs
from corpus.models import Job, JobState
from corpus.services import documents, retrieval
from labelling.models import Candidate, Pool, Provenance, Question, QuestionSet, RunResult
from production import tasks
from production.models import Sample, SampledTrace, Trace
from production.services import draws as production
from production.services import sampling as sampling_services
from production.services.traces import receive_traces
from tests.conftest import wait_for_job
from tests.factories import (
    POLICY_TEXT,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    add_documents,
    login,
)

NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)  # a Tuesday of ISO week 49
QUESTIONS = ["how many days can i carry over ", "Wer genehmigt Ausnahmen?", "form HR-F-112??"]


@pytest.fixture
def loop(db):
    project = ProjectFactory(slug="acme")
    lead = UserFactory(email="lead@example.com")
    MembershipFactory(project=project, user=lead, role="lead")
    add_documents(project, ("leave", POLICY_TEXT), ("other", "Travel costs are paid monthly."))
    scheme = documents.add_chunking_scheme(
        project=project, name="w50", strategy="fixed", size=50, overlap=0
    )
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=bm25)
    items = [
        {
            "trace_id": f"t-{i}",
            "occurred_at": (timezone.now() - timedelta(days=1, hours=i)).isoformat(),
            "user": "someone@example.com",
            "question": text,
            "retrieved": [
                {"doc_id": "leave", "start": 0, "end": 60, "rank": 1, "score": 3.0},
                {"doc_id": "gone", "rank": 2},
            ],
        }
        for i, text in enumerate(QUESTIONS)
    ]
    receive_traces(project=project, items=items)
    spec = sampling_services.check_rule(filters={}, strategy="uniform", size=10, seed=1)
    rule = sampling_services.save_sampling_rule(
        project=project, user=lead, name="weekly", spec=spec
    )
    return {"project": project, "lead": lead, "rule": rule, "bm25": bm25}


def traces_as_of(moment: datetime) -> None:
    """The loop's traces moved to the day before ``moment``, an hour apart, as the fixture
    places them before the real clock: for a test that pins the clock to ``moment``."""
    for i, trace in enumerate(Trace.objects.order_by("trace_id")):
        Trace.objects.filter(pk=trace.pk).update(occurred_at=moment - timedelta(days=1, hours=i))


def test_the_weekly_task_makes_a_set_a_run_and_a_pool_and_tells_the_lead(worker, loop, monkeypatch):
    monkeypatch.setattr("production.services.draws.timezone.now", lambda: NOW)
    traces_as_of(NOW)
    sample_ids = tasks.draw_weekly_samples()
    sample = Sample.objects.get(pk__in=sample_ids)
    question_set = sample.question_set
    assert question_set.name == "production-2026-W49"
    questions = list(Question.objects.filter(question_set=question_set).order_by("external_id"))
    assert [q.text for q in questions] == QUESTIONS  # byte for byte, trailing space and all
    for question in questions:
        assert question.sampled_trace.trace.trace_id == question.external_id
        assert question.sampled_trace.sample == sample
    runs = RunResult.objects.filter(retriever=sample.retriever, question__question_set=question_set)
    assert sample.retriever.name == "production" and sample.retriever.kind == "run"
    assert {(r.rank, r.start, r.end) for r in runs} == {(1, 0, 60)}  # "gone" left out: unknown
    pool = Pool.objects.get(question_set=question_set)
    job = wait_for_job(pool.job)
    pool.refresh_from_db()
    assert job.state == "succeeded" and pool.state == "ready", job.message
    assert set(pool.retrievers.values_list("name", flat=True)) == {"production", "bm25"}
    sources = set(
        Provenance.objects.filter(candidate__pool=pool).values_list("retriever__name", flat=True)
    )
    assert sources == {"production", "bm25"}
    assert Candidate.objects.filter(pool=pool).exists()
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["lead@example.com"]
    assert "production-2026-W49" in mail.outbox[0].subject
    assert f"/p/acme/samples/{sample.pk}/" in mail.outbox[0].body

    # Run again the same week: nothing new.
    assert tasks.draw_weekly_samples() == []
    assert QuestionSet.objects.filter(project=loop["project"]).count() == 1


def test_the_lead_sees_a_banner_until_dismissed_and_labellers_never_see_who_asked(loop):
    traces_as_of(NOW)
    made = production.draw_and_open(rule=loop["rule"], end=NOW)
    lead = login(loop["lead"])
    page = lead.get(reverse("labelling:list-question-sets", kwargs={"slug": "acme"}))
    assert "New production sample" in page.content.decode()
    assert "production-2026-W49" in page.content.decode()
    sample_page = lead.get(
        made.sample
        and reverse("production:show-sample", kwargs={"slug": "acme", "sample_id": made.sample.pk})
    ).content.decode()
    assert "form HR-F-112??" in sample_page and "someone@example.com" not in sample_page
    dismiss = reverse(
        "production:dismiss-sample", kwargs={"slug": "acme", "sample_id": made.sample.pk}
    )
    assert lead.post(dismiss).status_code == 302
    page = lead.get(reverse("labelling:list-question-sets", kwargs={"slug": "acme"}))
    assert "New production sample" not in page.content.decode()
    labeller = UserFactory()
    MembershipFactory(project=loop["project"], user=labeller)
    assert (
        login(labeller)
        .get(
            sample_page
            and reverse(
                "production:show-sample", kwargs={"slug": "acme", "sample_id": made.sample.pk}
            )
        )
        .status_code
        == 403
    )


def test_the_command_draws_a_rule_and_names_what_it_made(loop):
    out = StringIO()
    call_command("sample_traces", project="acme", rule="weekly", stdout=out)
    assert "3 of 3 traces → question set production-" in out.getvalue()
    assert SampledTrace.objects.filter(question__isnull=False).count() == 3
    with pytest.raises(CommandError, match="No sampling rule 'nope'"):
        call_command("sample_traces", project="acme", rule="nope")


def test_a_rule_that_selects_nothing_stops_the_command_with_its_reason(loop):
    spec = sampling_services.check_rule(filters={"feedback": "down"}, strategy="uniform", size=5)
    sampling_services.save_sampling_rule(
        project=loop["project"], user=None, name="negatives", spec=spec
    )
    with pytest.raises(CommandError, match="selects no trace") as raised:
        call_command("sample_traces", project="acme", rule="negatives")
    assert raised.value.returncode == 2
    assert not Sample.objects.exists() and not QuestionSet.objects.exists()


def test_a_lead_writes_a_rule_in_the_browser_and_draws_it(worker, loop):
    lead = login(loop["lead"])
    url = reverse("production:list-sampling-rules", kwargs={"slug": "acme"})
    response = lead.post(
        url,
        {
            "name": "negatives",
            "strategy": "stratified",
            "size": "5",
            "seed": "3",
            "window_days": "30",
            "stratify_by": "feedback",
            "quotas": "down=2, none=3",
            "active": "on",
        },
    )
    assert response.status_code == 302
    rule = sampling_services.latest_rules(loop["project"]).get(name="negatives")
    assert rule.quotas == {"down": 2, "none": 3} and rule.version == 1
    bad = lead.post(
        url,
        {
            "name": "x",
            "strategy": "stratified",
            "size": "5",
            "seed": "0",
            "window_days": "7",
            "quotas": "down:2",
        },
    )
    text = bad.content.decode()
    assert "Write each quota as stratum=count" in text
    draw = reverse("production:draw-sample", kwargs={"slug": "acme", "rule_id": rule.pk})
    # A job: the draw may search every retriever of a disagreement rule, no request waits.
    assert lead.post(draw).status_code == 302
    job = wait_for_job(Job.objects.get(kind="draw_sample"))
    assert job.state == JobState.SUCCEEDED, job.message
    assert job.message.startswith("Drew 3 traces into production-")
    page = lead.get(reverse("corpus:show-job", args=["acme", job.pk])).content.decode()
    assert "Drew 3 traces into production-" in page and "Open the sample" in page
    assert Sample.objects.get(pk=job.result["sample_id"]).rule == rule


def test_a_draw_job_retried_after_its_draw_committed_draws_no_second_sample(loop):
    job = production.start_draw(rule=loop["rule"], user=loop["lead"])
    jobs.run(job.pk, production.run_draw)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and Sample.objects.count() == 1
    # The worker died after the draw's commit, before the job was marked done.
    Job.objects.filter(pk=job.pk).update(state=JobState.QUEUED, finished_at=None)
    jobs.run(job.pk, production.run_draw)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and Sample.objects.count() == 1
    assert job.message.startswith("Drew 3 traces")


def test_a_draw_that_finds_nothing_fails_its_job_with_the_reason(loop):
    Trace.objects.update(occurred_at=NOW - timedelta(days=400))
    job = production.start_draw(rule=loop["rule"], user=loop["lead"])
    jobs.run(job.pk, production.run_draw)
    job.refresh_from_db()
    assert job.state == JobState.FAILED and "between" in job.message
    assert (
        not Sample.objects.exists()
        and not QuestionSet.objects.filter(name__startswith="production-").exists()
    )


# Issue 33, item 8: a rule draws once per ISO week, whoever asks and however often.


def test_draw_now_twice_in_a_week_opens_the_week_s_sample_and_draws_nothing_new(worker, loop):
    lead = login(loop["lead"])
    draw = reverse("production:draw-sample", kwargs={"slug": "acme", "rule_id": loop["rule"].pk})
    assert lead.post(draw).status_code == 302
    job = wait_for_job(Job.objects.get(kind="draw_sample"))
    assert job.state == JobState.SUCCEEDED, job.message
    sample = Sample.objects.get()
    again = lead.post(draw, follow=True)
    assert again.status_code == 200
    assert again.redirect_chain[-1][0] == reverse(
        "production:show-sample", kwargs={"slug": "acme", "sample_id": sample.pk}
    )
    text = again.content.decode()
    assert f"already drew {sample.question_set.name} this week" in text
    assert "change the rule (its next version draws again)" in text
    assert Sample.objects.count() == 1 and Job.objects.filter(kind="draw_sample").count() == 1
    assert QuestionSet.objects.filter(project=loop["project"]).count() == 1
    # The weekly task, later that week, leaves it alone too.
    assert tasks.draw_weekly_samples() == []
    assert Sample.objects.count() == 1


def test_two_draws_queued_at_once_make_one_sample(loop):
    first = production.start_draw(rule=loop["rule"], user=loop["lead"])
    second = production.start_draw(rule=loop["rule"], user=loop["lead"])  # a double click
    jobs.run(first.pk, production.run_draw)
    jobs.run(second.pk, production.run_draw)
    first.refresh_from_db()
    second.refresh_from_db()
    sample = Sample.objects.get()
    assert first.state == second.state == JobState.SUCCEEDED
    assert "already drew" in second.message
    # The second job leads to the week's sample.
    assert second.result["sample_id"] == first.result["sample_id"] == sample.pk
    assert second.result["link"]["url"].endswith(f"/samples/{sample.pk}/")


def test_a_rule_s_new_version_draws_anew_and_every_pool_is_named_for_its_set(loop, monkeypatch):
    monkeypatch.setattr("production.services.draws.timezone.now", lambda: NOW)
    traces_as_of(NOW)
    first = production.draw_and_open(rule=loop["rule"], end=NOW)
    with pytest.raises(production.AlreadyDrawn):
        production.draw_and_open(rule=loop["rule"], end=NOW + timedelta(days=2))
    # The rule changed (its next version): that draws anew the same week.
    spec = sampling_services.check_rule(filters={}, strategy="uniform", size=2, seed=1)
    newer = sampling_services.save_sampling_rule(
        project=loop["project"], user=loop["lead"], name="weekly", spec=spec
    )
    second = production.draw_and_open(rule=newer, end=NOW)
    assert Sample.objects.count() == 2
    sets = [first.question_set.name, second.question_set.name]
    pools = [first.pool.name, second.pool.name]
    assert sets == ["production-2026-W49", "production-2026-W49-weekly"]
    # No two "production" pools: each is named for its set, so the name says what it is.
    assert pools == ["production-2026-w49", "production-2026-w49-weekly"]
    # Choice lists name the set as well (pool names are unique within a set only).
    Pool.objects.update(state="ready")
    page = login(loop["lead"]).get(reverse("labelling:list-assignments", args=["acme"]))
    assert "production-2026-w49-weekly — production-2026-W49-weekly" in page.content.decode()
