"""Judging a set against the fake LLM: rows written, quotes placed, errors per item, access
profile honoured, resumable and idempotent, keys read from the environment only."""

import re

import pytest

from corpus.models import Job, JobState
from goldset.errors import ServiceError
from judges.models import AIJudgement, JudgingPass
from judges.services.configuration import add_judge
from judges.services.judging import start_judging
from tests.judges.world import SECRET_TEXT

pytestmark = pytest.mark.usefixtures("allow_local", "inline_jobs")


def judge_named(project, llm, behaviour, **fields):
    return add_judge(
        project=project,
        name=behaviour,
        url=f"{llm.url}/{behaviour}/v1/chat/completions",
        model="fake-judge",
        **fields,
    )


def run(django_capture_on_commit_callbacks, **kwargs) -> Job:
    with django_capture_on_commit_callbacks(execute=True):
        job = start_judging(**kwargs)
    return Job.objects.get(pk=job.pk)


def test_an_agreeing_judge_grades_every_candidate_it_may_see(
    project, world, llm, django_capture_on_commit_callbacks
):
    judge = judge_named(project, llm, "agree")
    job = run(django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set)
    assert job.state == JobState.SUCCEEDED, job.message
    rows = AIJudgement.objects.filter(judge=judge)
    assert rows.count() == len(world.candidates)
    assert "60 candidates judged, 60 graded" in job.message
    assert "1 passage not sent" in job.message
    # The restricted passage never reached the endpoint: the judge has no access group.
    assert SECRET_TEXT not in "".join(llm.sent_passages())
    assert not rows.filter(candidate=world.secret).exists()
    row = rows.get(candidate=world.candidates[0])
    assert row.grade in (0, 1, 2)
    assert row.model == "fake-judge-1"  # as the endpoint reported it
    assert row.prompt.version == 1 and row.prompt_tokens == 120 and row.completion_tokens == 9
    assert row.error == "" and '"grade"' in row.raw
    graded = rows.filter(grade__gt=0).first()
    assert graded.placed == "exact"
    text = graded.candidate.version.text
    assert text[graded.span_start : graded.span_end] == graded.quote


def test_judging_again_is_idempotent_and_a_sample_is_stable(
    project, world, llm, django_capture_on_commit_callbacks
):
    judge = judge_named(project, llm, "agree")
    first = run(
        django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set, sample=10
    )
    # The sample is drawn by the ids (a seed of the judge's and the set's), from the passages
    # the judge may be sent: which ten differs from one database to the next, never how many.
    judged = int(re.search(r"(\d+) candidates judged", first.message).group(1))
    assert judged == 10 and "not sent" not in first.message
    chosen = set(AIJudgement.objects.values_list("candidate_id", flat=True))
    sent = len(llm.requests)
    again = run(
        django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set, sample=10
    )
    assert len(llm.requests) == sent  # nothing sent twice
    assert "0 candidates judged" in again.message
    assert f"{judged} already judged" in again.message
    assert set(AIJudgement.objects.values_list("candidate_id", flat=True)) == chosen
    assert AIJudgement.objects.count() == judged


def test_a_job_that_stopped_half_way_carries_on_where_it_stopped(
    project, world, llm, django_capture_on_commit_callbacks
):
    judge = judge_named(project, llm, "agree")
    run(django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set, sample=5)
    job = run(django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set)
    assert "55 candidates judged" in job.message and "5 already judged" in job.message
    assert AIJudgement.objects.filter(judge=judge).count() == 60


def test_a_malformed_answer_is_that_items_error(
    project, world, llm, django_capture_on_commit_callbacks
):
    judge = judge_named(project, llm, "malformed")
    job = run(
        django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set, sample=4
    )
    assert job.state == JobState.SUCCEEDED
    assert "4 errors" in job.message
    rows = AIJudgement.objects.filter(judge=judge)
    assert rows.count() == 4 and not rows.filter(grade__isnull=False).exists()
    assert all("no JSON object" in r.error for r in rows)
    assert all("roughly" in r.raw for r in rows)  # the answer, bounded, kept for admins
    # Fixed on the judge's side, the failed items are judged again (and only they).
    judge.url = f"{llm.url}/prose/v1/chat/completions"
    judge.save()
    job = run(
        django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set, sample=4
    )
    assert "4 graded" in job.message
    assert rows.filter(grade__isnull=False, error="").count() == 4


def test_the_generic_template_reads_a_text_answer(
    project, world, llm, django_capture_on_commit_callbacks
):
    judge = add_judge(
        project=project, name="gen", url=f"{llm.url}/agree/generate", template="generic"
    )
    job = run(
        django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set, sample=3
    )
    assert "3 graded" in job.message, job.message
    assert AIJudgement.objects.filter(judge=judge, prompt_tokens=120).count() == 3


def test_a_judge_with_the_group_may_be_sent_the_restricted_passage(
    project, world, llm, django_capture_on_commit_callbacks
):
    judge = judge_named(project, llm, "agree", groups=["secret"])
    run(django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set)
    assert SECRET_TEXT in llm.sent_passages()
    assert AIJudgement.objects.filter(candidate=world.secret).exists()


def test_the_api_key_is_read_from_the_environment_and_sent_as_a_bearer_token(
    project, world, llm, django_capture_on_commit_callbacks, monkeypatch
):
    judge = judge_named(project, llm, "agree", api_key="env:JUDGE_KEY")
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    job = run(
        django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set, sample=2
    )
    assert job.state == JobState.FAILED
    assert "JUDGE_KEY" in job.message and "not set" in job.message
    assert not llm.requests and not AIJudgement.objects.exists()
    monkeypatch.setenv("JUDGE_KEY", "sk-test-123")
    job = run(
        django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set, sample=2
    )
    assert job.state == JobState.SUCCEEDED
    assert {r.headers["Authorization"] for r in llm.requests} == {"Bearer sk-test-123"}
    assert "sk-test-123" not in str(Job.objects.get(pk=job.pk).__dict__)


def test_a_slow_judge_is_given_up_on_per_item(
    project, world, llm, django_capture_on_commit_callbacks
):
    llm.slow_seconds = 1.0
    judge = judge_named(project, llm, "slow", timeout=0.2, retries=0)
    job = run(
        django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set, sample=2
    )
    assert job.state == JobState.SUCCEEDED and "2 errors" in job.message
    assert all("no answer" in r.error for r in AIJudgement.objects.filter(judge=judge))


def test_a_self_consistency_pass_is_stored_apart(
    project, world, llm, django_capture_on_commit_callbacks
):
    judge = judge_named(project, llm, "agree")
    run(django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set, sample=6)
    run(
        django_capture_on_commit_callbacks,
        judge=judge,
        question_set=world.question_set,
        sample=6,
        judging_pass=JudgingPass.AGAIN,
    )
    rows = AIJudgement.objects.filter(judge=judge)
    first = set(rows.filter(judging_pass="first").values_list("candidate_id", flat=True))
    again = set(rows.filter(judging_pass="again").values_list("candidate_id", flat=True))
    assert first == again and len(first) == 6


def test_a_canary_set_and_another_projects_set_are_refused(project, world, llm):
    from labelling.models import QuestionSet
    from tests.factories import ProjectFactory, QuestionSetFactory

    judge = judge_named(project, llm, "agree")
    canary = QuestionSet.objects.create(project=project, name="canary", is_canary=True)
    with pytest.raises(ServiceError, match="canary"):
        start_judging(judge=judge, question_set=canary)
    other = QuestionSetFactory(project=ProjectFactory())
    with pytest.raises(ServiceError, match="different projects"):
        start_judging(judge=judge, question_set=other)
