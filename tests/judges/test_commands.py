"""The judges' commands end to end, through the real queue and worker (whose host policy
allows 127.0.0.1), with their exit codes."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judges.models import AIJudgement, Judge, JudgeCanaryResult


def test_add_judge_judge_canaries_and_calibration(
    worker, project, world, llm, settings, tmp_path, capsys
):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    slug = project.slug
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Grade it.\nQuestion: {{question}}\n<<<PASSAGE\n{{passage}}\nPASSAGE>>>\n")
    url = f"{llm.url}/lenient/v1/chat/completions"
    call_command(
        "add_judge",
        "--project",
        slug,
        "--name",
        "loose",
        "--url",
        url,
        "--model",
        "m",
        "--prompt",
        str(prompt),
    )
    assert "Added judge loose" in capsys.readouterr().out
    assert Judge.objects.get(name="loose").prompt.text == prompt.read_text()
    with pytest.raises(CommandError) as refused:
        call_command(
            "add_judge",
            "--project",
            slug,
            "--name",
            "x",
            "--url",
            url,
            "--model",
            "m",
            "--api-key",
            "sk-123",
        )
    assert refused.value.returncode == 2 and "env:NAME" in str(refused.value)
    call_command("judge", "--project", slug, "--set", "calib", "--judge", "loose")
    assert "60 candidates judged, 60 graded" in capsys.readouterr().out
    assert AIJudgement.objects.filter(judge__name="loose", grade__isnull=False).count() == 60
    call_command("plant_judge_canaries", "--project", slug, "--set", "calib", "--judge", "loose")
    assert "canaries planted" in capsys.readouterr().out
    assert JudgeCanaryResult.objects.filter(judge__name="loose").exists()
    call_command(
        "judge_calibration",
        "--project",
        slug,
        "--set",
        "calib",
        "--judge",
        "loose",
        "--json",
        "--bootstrap",
        "200",
    )
    report = json.loads(capsys.readouterr().out)
    assert report["against_gold"]["items"] == 60 and report["bias"]["above"] > 0.5
    # The lenient judge grades stuffed keywords and restated questions 1: canaries catch it.
    assert report["canaries"]["restated"]["failed"] and report["unfit"]
    with pytest.raises(CommandError) as unknown:
        call_command("judge", "--project", slug, "--set", "calib", "--judge", "ghost")
    assert unknown.value.returncode == 2 and "add_judge" in str(unknown.value)


def test_a_judge_with_errors_exits_1(worker, project, world, llm, settings):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    url = f"{llm.url}/malformed/v1/chat/completions"
    call_command(
        "add_judge", "--project", project.slug, "--name", "bad", "--url", url, "--model", "m"
    )
    with pytest.raises(SystemExit) as exit_code:
        call_command(
            "judge", "--project", project.slug, "--set", "calib", "--judge", "bad", "--sample", "3"
        )
    assert exit_code.value.code == 1
    # Every item sent is an error. The sample of three is drawn by the ids, so it may hold a
    # passage outside the judge's access groups, which is never sent and has no row.
    rows = AIJudgement.objects.filter(judge__name="bad")
    assert 1 <= rows.count() <= 3 and not rows.filter(error="").exists()
