"""The prompt carries the project's guideline: the text sent holds the current guideline (at
most `judges.prompt.MAX_GUIDELINE` characters), and each prompt version records the guideline
version it carries, so a guideline edit starts a new prompt version and a new calibration."""

import pytest
from django.urls import reverse

from corpus.models import Job, JobState
from judges.models import AIJudgement
from judges.services.calibration import calibrate
from judges.services.canaries import start_canaries
from judges.services.configuration import add_judge
from judges.services.judging import start_judging
from labelling.services.guidelines import save_guideline
from tests.factories import login

pytestmark = pytest.mark.usefixtures("allow_local", "inline_jobs")


def judge_of(project, llm):
    return add_judge(
        project=project, name="qwen", url=f"{llm.url}/agree/v1/chat/completions", model="m"
    )


def judge_set(django_capture_on_commit_callbacks, **kwargs) -> Job:
    with django_capture_on_commit_callbacks(execute=True):
        job = start_judging(**kwargs)
    job = Job.objects.get(pk=job.pk)
    assert job.state == JobState.SUCCEEDED, job.message
    return job


def test_the_prompt_sent_carries_the_guideline_and_an_edit_is_a_new_prompt_version(
    project, people, world, llm, django_capture_on_commit_callbacks
):
    lead = people["lead"]
    first = save_guideline(
        project=project, text="Grade 2 only with the form number. ONE", user=lead
    )
    judge = judge_of(project, llm)
    assert (judge.prompt.version, judge.prompt.guideline) == (1, first)
    subjects = {"judge": judge, "question_set": world.question_set, "sample": 5}
    judge_set(django_capture_on_commit_callbacks, **subjects)
    assert len(llm.requests) == 5
    assert all(
        "<<<GUIDELINE\nGrade 2 only with the form number. ONE\nGUIDELINE>>>" in r.prompt
        for r in llm.requests
    )
    # The lead rewrites the guideline: the next judging is prompt v2, same text, guideline v2,
    # and judges the sample again rather than skipping it as done.
    second = save_guideline(project=project, text="Grade 2 when it answers fully. TWO", user=lead)
    llm.requests.clear()
    judge_set(django_capture_on_commit_callbacks, **subjects)
    prompts = list(judge.prompts.order_by("version"))
    assert [(p.version, p.guideline) for p in prompts] == [(1, first), (2, second)]
    assert prompts[1].text == prompts[0].text
    assert AIJudgement.objects.filter(prompt=prompts[1]).count() == 5
    assert len(llm.requests) == 5
    assert all("TWO" in r.prompt and "ONE" not in r.prompt for r in llm.requests)
    # Nothing changed: the same version, nothing judged twice.
    llm.requests.clear()
    judge_set(django_capture_on_commit_callbacks, **subjects)
    assert judge.prompts.count() == 2 and llm.requests == []
    # Canaries are judged under the current guideline too.
    third = save_guideline(project=project, text="Grade 0 for stuffed keywords. THREE", user=lead)
    with django_capture_on_commit_callbacks(execute=True):
        start_canaries(judge=judge, question_set=world.question_set, per_class=1)
    assert judge.prompt.version == 3 and judge.prompt.guideline == third
    assert llm.requests and all("THREE" in r.prompt for r in llm.requests)
    # The judge's page names the guideline each version carries.
    page = (
        login(lead)
        .get(
            reverse("judges:show-judge", kwargs={"slug": project.slug, "judge_id": judge.pk}),
            {"set": world.question_set.pk, "version": 2},
        )
        .content.decode()
    )
    assert "v2 · guideline v2" in page and "v3 · guideline v3" in page
    assert "Prompt v2 (with guideline v2)" in page
    report = calibrate(judge=judge, question_set=world.question_set, viewer=None, n_boot=0)
    assert (report.as_dict()["prompt_version"], report.as_dict()["guideline_version"]) == (3, 3)


def test_without_a_guideline_the_fixed_scale_is_sent(
    project, world, llm, django_capture_on_commit_callbacks
):
    judge = judge_of(project, llm)
    assert judge.prompt.guideline is None
    judge_set(
        django_capture_on_commit_callbacks, judge=judge, question_set=world.question_set, sample=2
    )
    assert llm.requests and all("2 = the passage answers" in r.prompt for r in llm.requests)
    assert not any("<<<GUIDELINE" in r.prompt for r in llm.requests)
    assert judge.prompts.count() == 1
