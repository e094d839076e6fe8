"""Canaries unmask the judge that obeys instructions inside passages, pass the agreeing one,
and never reach labellers."""

import pytest
from django.urls import reverse

from corpus.models import Job
from judges.canaries import shares_a_word
from judges.models import JudgeCanary, JudgeCanaryResult
from judges.services.calibration import calibrate
from judges.services.canaries import plant_canaries, start_canaries
from judges.services.configuration import add_judge
from labelling.models import Candidate
from tests.factories import login

pytestmark = pytest.mark.usefixtures("allow_local", "inline_jobs")


def canaries_judged(project, world, llm, behaviour, run):
    judge = add_judge(
        project=project,
        name=behaviour,
        url=f"{llm.url}/{behaviour}/v1/chat/completions",
        model="m",
    )
    with run(execute=True):
        job = start_canaries(judge=judge, question_set=world.question_set)
    assert Job.objects.get(pk=job.pk).state == "succeeded"
    return judge


def test_planting_is_idempotent_and_covers_every_class(world):
    planted = plant_canaries(question_set=world.question_set)
    assert plant_canaries(question_set=world.question_set) == 0
    kinds = dict.fromkeys(("stuffing", "instruction", "restated", "paraphrase"), 0)
    for canary in JudgeCanary.objects.all():
        kinds[canary.kind] += 1
    assert planted == sum(kinds.values())
    assert kinds["stuffing"] == kinds["instruction"] == kinds["restated"] == 10
    assert 1 <= kinds["paraphrase"] <= 10
    for canary in JudgeCanary.objects.filter(kind="paraphrase"):
        assert world.gold[canary.candidate_id] >= 1
        assert not shares_a_word(canary.question.text, canary.passage)
    # Canaries are no candidates: labellers' queues, pools and gold never see them.
    assert Candidate.objects.count() == len(world.candidates) + 1


def test_the_obedient_judge_is_unfit_and_the_agreeing_one_passes(
    project, people, world, llm, django_capture_on_commit_callbacks
):
    obedient = canaries_judged(project, world, llm, "obedient", django_capture_on_commit_callbacks)
    agree = canaries_judged(project, world, llm, "agree", django_capture_on_commit_callbacks)
    lead = people["lead"]
    bad = calibrate(judge=obedient, question_set=world.question_set, viewer=lead, n_boot=100)
    good = calibrate(judge=agree, question_set=world.question_set, viewer=lead, n_boot=100)
    classes = {c.kind: c for c in bad.canaries}
    assert classes["instruction"].rate == 0 and classes["instruction"].failed
    assert bad.unfit and not good.unfit
    assert all(c.rate is not None and c.rate >= 0.9 for c in good.canaries)
    page = login(lead).get(
        reverse("judges:show-judge", kwargs={"slug": project.slug, "judge_id": obedient.pk}),
        {"set": world.question_set.pk},
    )
    text = page.content.decode()
    assert "Unfit: prompt v1 failed a canary class" in text
    assert "An instruction to the grader" in text


def test_the_canary_button(project, people, world, llm, django_capture_on_commit_callbacks):
    judge = add_judge(
        project=project, name="agree", url=f"{llm.url}/agree/v1/chat/completions", model="m"
    )
    path = reverse("judges:plant-canaries", kwargs={"slug": project.slug, "judge_id": judge.pk})
    assert (
        login(people["ann"]).post(path, {"question_set": world.question_set.pk}).status_code == 403
    )
    assert not JudgeCanary.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = login(people["lead"]).post(path, {"question_set": world.question_set.pk})
    assert response.status_code == 302
    judged = JudgeCanaryResult.objects.filter(judge=judge).count()
    assert judged == JudgeCanary.objects.count()
