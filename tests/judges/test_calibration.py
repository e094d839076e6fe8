"""Calibration of scripted judges against the world's adjudicated gold: the figures are
scikit-learn's kappa, the intervals agree with a bootstrap of our own, and the report ranks
the agreeing judge above the lenient one."""

import json

import numpy as np
import pytest
from django.core.management import call_command
from sklearn.metrics import cohen_kappa_score

from corpus.models import Job
from judges.models import AIJudgement, JudgingPass
from judges.services.calibration import calibrate
from judges.services.configuration import add_judge
from judges.services.judging import start_judging

pytestmark = pytest.mark.usefixtures("allow_local", "inline_jobs")


@pytest.fixture
def judged(project, world, llm, django_capture_on_commit_callbacks):
    def judge(behaviour, judging_pass=JudgingPass.FIRST):
        from judges.models import Judge

        found = Judge.objects.filter(project=project, name=behaviour).first() or add_judge(
            project=project,
            name=behaviour,
            url=f"{llm.url}/{behaviour}/v1/chat/completions",
            model="fake",
        )
        with django_capture_on_commit_callbacks(execute=True):
            job = start_judging(
                judge=found, question_set=world.question_set, judging_pass=judging_pass
            )
        assert Job.objects.get(pk=job.pk).state == "succeeded"
        return found

    return judge


def bootstrap_kappa(pairs, *, weights=None, n=1000, seed=7):
    rng = np.random.default_rng(seed)
    gold, judge = np.array(pairs).T
    values = []
    for _ in range(n):
        drawn = rng.integers(0, len(pairs), len(pairs))
        a, b = gold[drawn], judge[drawn]
        if len(set(a) | set(b)) > 1:
            values.append(cohen_kappa_score(a, b, labels=[0, 1, 2], weights=weights))
    return np.percentile(values, [2.5, 97.5])


def test_the_agreeing_judge_is_ranked_above_the_lenient_one(world, people, judged):
    agree, lenient = judged("agree"), judged("lenient")
    lead = people["lead"]
    good = calibrate(judge=agree, question_set=world.question_set, viewer=lead)
    loose = calibrate(judge=lenient, question_set=world.question_set, viewer=lead)
    assert good.against_gold["items"] == loose.against_gold["items"] == 60
    assert good.against_gold["kappa"] > 0.7 > 0.5 > loose.against_gold["kappa"]
    assert loose.bias.above > 0.5 and loose.bias.below == 0
    assert good.bias.above + good.bias.below < 0.2
    # The lenient judge's confusion sits right of the diagonal (rows gold, columns judge).
    confusion = loose.against_gold["confusion"]
    assert confusion[0][0] == 0 and confusion[0][1] > 0 and confusion[2][2] > 0
    # The humans' own agreement is the same for both.
    assert good.humans == loose.humans and good.humans["items"] == len(world.human_pairs)
    # |z| small for the agreeing judge, large and negative for the lenient one.
    assert loose.z < -2 and abs(good.z) < abs(loose.z)
    # Both rank the three systems as the gold does: best, middle, worst.
    for report in (good, loose):
        by_gold = {name: gold for name, (gold, _) in report.systems.items()}
        by_judge = {name: judge for name, (_, judge) in report.systems.items()}
        assert sorted(by_gold, key=by_gold.get) == ["worst", "middle", "best"]
        assert sorted(by_judge, key=by_judge.get) == ["worst", "middle", "best"]
        assert report.kendall_tau == 1 and report.tau_ap == 1


def test_the_figures_are_scikit_learns_and_the_intervals_a_bootstraps(world, people, judged):
    judge = judged("lenient")
    report = calibrate(judge=judge, question_set=world.question_set, viewer=people["lead"])
    rows = AIJudgement.objects.filter(judge=judge, judging_pass="first")
    pairs = [(world.gold[r.candidate_id], r.grade) for r in rows if r.candidate_id in world.gold]
    gold, grades = zip(*pairs, strict=True)
    gold_report = report.against_gold
    assert gold_report["kappa"] == pytest.approx(cohen_kappa_score(gold, grades, labels=[0, 1, 2]))
    assert gold_report["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(gold, grades, labels=[0, 1, 2], weights="quadratic")
    )
    assert gold_report["percent"] == pytest.approx(np.mean(np.equal(gold, grades)))
    for key, weights in (("kappa", None), ("kappa_quadratic", "quadratic")):
        low, high = bootstrap_kappa(pairs, weights=weights)
        ours = gold_report[f"{key}_ci"]
        assert ours[0] == pytest.approx(low, abs=0.06) and ours[1] == pytest.approx(high, abs=0.06)
    humans = report.humans
    first, second = zip(*world.human_pairs, strict=True)
    assert humans["kappa"] == pytest.approx(cohen_kappa_score(first, second, labels=[0, 1, 2]))


def test_items_needed_are_said_until_the_interval_is_narrow(world, people, judged):
    report = calibrate(
        judge=judged("agree"), question_set=world.question_set, viewer=people["lead"]
    )
    # 60 items cannot give a ±0.10 interval: the report says how many would.
    low, high = report.against_gold["kappa_ci"]
    assert (high - low) / 2 > 0.10
    assert report.needed > 60


def test_self_consistency_and_order_passes_are_reported(world, people, judged):
    judged("agree")
    judged("agree", JudgingPass.AGAIN)
    judge = judged("agree", JudgingPass.REVERSED)
    report = calibrate(judge=judge, question_set=world.question_set, viewer=people["lead"])
    # The fake judge is deterministic: it agrees with itself whatever the order.
    assert report.self_consistency["percent"] == 1.0
    assert report.order["percent"] == 1.0


def test_the_restricted_item_counts_only_for_those_who_may_see_it(
    project, world, people, judged, llm
):
    from judges.models import Judge
    from judges.services.configuration import change_judge

    judge = judged("agree")
    change_judge(judge=judge, prompt=judge.prompt.text, groups=["secret"])
    judge = judged("agree")
    assert AIJudgement.objects.filter(candidate=world.secret).exists()
    assert Judge.objects.get(pk=judge.pk).prompt.version == 1  # same prompt, same version
    lead = calibrate(judge=judge, question_set=world.question_set, viewer=people["lead"])
    assert lead.judged == 60  # the lead is not in "secret": the item does not exist for them


def test_the_command_prints_json(world, judged, project, capsys):
    judged("lenient")
    call_command(
        "judge_calibration",
        "--project",
        project.slug,
        "--set",
        "calib",
        "--judge",
        "lenient",
        "--json",
        "--bootstrap",
        "200",
    )
    report = json.loads(capsys.readouterr().out)
    assert report["judge"] == "lenient" and report["prompt_version"] == 1
    assert report["against_gold"]["items"] == 60
    assert report["bias"]["above"] > 0.5
    assert report["items_needed_for_0_10"] > 60
