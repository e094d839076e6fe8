"""``python -m goldeval evaluate --ai-judgements FILE|bundle`` (issue 35, 5b): the judge's figures
sit under their own keys, columns and rows, beside the human ones and never in them; the file
is read from a path or from the bundle (folder or zip); bad input exits 2 with a message."""

import csv
import io
import json
import os
import subprocess
import sys
import zipfile

import pytest

from goldeval.cli import main
from tests.goldeval.cli.test_cli import REPO

GOLD = [
    {
        "question_id": "q1",
        "spans": [{"doc_id": "a", "start": 0, "end": 10, "grade": 2}],
        "judged": [{"doc_id": "a", "start": 0, "end": 10}, {"doc_id": "b", "start": 0, "end": 10}],
    },
    {
        "question_id": "q2",
        "spans": [{"doc_id": "c", "start": 0, "end": 10, "grade": 1}],
        "judged": [{"doc_id": "c", "start": 0, "end": 10}],
    },
]
RUN = [
    {
        "question_id": "q1",
        "results": [{"doc_id": "a", "start": 0, "end": 10}, {"doc_id": "b", "start": 0, "end": 10}],
    },
    {
        "question_id": "q2",
        "results": [{"doc_id": "d", "start": 0, "end": 10}, {"doc_id": "c", "start": 0, "end": 10}],
    },
]


def judgement(question_id, doc_id, grade, judge="qwen"):
    return {
        "question_id": question_id,
        "doc_id": doc_id,
        "start": 0,
        "end": 10,
        "grade": grade,
        "judge": judge,
        "model": "qwen2.5",
        "prompt_version": 2,
    }


AI = [
    judgement("q1", "a", 2),
    judgement("q1", "b", 1),
    judgement("q2", "d", 2),
    judgement("q2", "c", 1),
]


def jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def files(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    jsonl(bundle / "gold.jsonl", GOLD)
    jsonl(bundle / "ai-judgements.jsonl", AI)
    return {
        "bundle": bundle,
        "run": jsonl(tmp_path / "run.jsonl", RUN),
        "ai": jsonl(tmp_path / "ai.jsonl", AI),
        "tmp": tmp_path,
    }


def evaluate(capsys, *arguments):
    code = main(["evaluate", "--k", "1,2", *map(str, arguments)])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_keeps_the_judges_figures_apart(files, capsys):
    code, out, _ = evaluate(
        capsys, "--gold", files["bundle"], "--run", files["run"], "--ai-judgements", files["ai"]
    )
    assert code == 0
    report = json.loads(out)
    assert report["ai_judgements"] == {
        "source": str(files["ai"]),
        "judge": "qwen",
        "models": ["qwen2.5"],
        "prompt_versions": [2],
        "judgements": 4,
    }
    run = report["runs"]["run"]
    # The human-only figures are what they are without the judge.
    code, plain, _ = evaluate(capsys, "--gold", files["bundle"], "--run", files["run"])
    assert run["metrics"] == json.loads(plain)["runs"]["run"]["metrics"]
    assert run["metrics"]["precision@2"] == pytest.approx(0.5)
    filled = run["ai_judgements"]
    assert (filled["holes"], filled["holes_filled"]) == (1, 1)
    assert (filled["questions"], filled["human_labelled_questions"], filled["depth"]) == (2, 1, 10)
    assert "1 of 1 hole(s)" in filled["note"]
    assert filled["judge_filled"]["precision@2"] == pytest.approx(0.75)
    ppi = filled["ppi"]["precision@2"]
    assert set(ppi) == {
        "estimate",
        "low",
        "high",
        "standard_error",
        "judge_only",
        "correction",
        "questions",
        "labelled",
    }
    assert ppi["estimate"] == pytest.approx(0.5) and ppi["low"] is None


def test_markdown_and_csv_give_the_judge_its_own_section_and_rows(files, capsys):
    base = ["--gold", files["bundle"], "--run", files["run"], "--ai-judgements", files["ai"]]
    _, markdown, _ = evaluate(capsys, *base, "--format", "markdown")
    runs, judge_part = markdown.split("## Holes filled by the AI judge qwen (not gold)")
    assert "judge-filled" not in runs and "| precision@2 | 0.5000 |\n" in runs
    assert "Note: 1 of 1 hole(s)" in judge_part
    assert (
        "| metric | human only | judge-filled | prediction-powered | 95 % interval |" in judge_part
    )
    assert "| precision@2 | 0.5000 | 0.7500 | 0.5000 | — |" in judge_part
    _, out, _ = evaluate(capsys, *base, "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    summary = {r[4]: r[5] for r in rows if r[0] == "summary"}
    assert summary["precision@2"] == "0.5"
    assert ["ai_judge_filled", "run", "qwen", "", "precision@2", "0.75", ""] in rows
    assert ["ai_ppi", "run", "qwen", "", "precision@2.estimate", "0.5", ""] in rows
    assert ["ai_holes", "run", "qwen", "", "holes_filled", "1", ""] in rows


def test_the_word_bundle_reads_the_bundles_own_file_from_a_folder_or_a_zip(files, capsys):
    zipped = files["tmp"] / "bundle.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        for name in ("gold.jsonl", "ai-judgements.jsonl"):
            archive.write(files["bundle"] / name, f"hr-faq-v1/{name}")
    for gold in (files["bundle"], zipped):
        code, out, _ = evaluate(
            capsys, "--gold", gold, "--run", files["run"], "--ai-judgements", "bundle"
        )
        assert code == 0
        assert json.loads(out)["runs"]["run"]["ai_judgements"]["holes_filled"] == 1


@pytest.mark.parametrize(
    ("setup", "arguments", "message"),
    [
        (None, ["--judge", "qwen"], "--judge: give the judgements with --ai-judgements"),
        ("no-file", ["--ai-judgements", "bundle"], "the gold set has no ai-judgements.jsonl"),
        ("two", ["--ai-judgements", "AI"], "several judges; choose one with --judge (other, qwen)"),
        ("two", ["--ai-judgements", "AI", "--judge", "nobody"], "no judgement of 'nobody'"),
        ("bad", ["--ai-judgements", "AI"], "ai.jsonl:2: grade must be 0, 1 or 2, not 'high'"),
        ("empty", ["--ai-judgements", "AI"], "holds no judgement"),
        (None, ["--ai-judgements", "missing.jsonl"], "no such file"),
    ],
)
def test_bad_input_exits_2_with_a_message(files, capsys, setup, arguments, message):
    if setup == "no-file":
        (files["bundle"] / "ai-judgements.jsonl").unlink()
    elif setup == "two":
        jsonl(files["ai"], [*AI, judgement("q1", "a", 0, judge="other")])
    elif setup == "bad":
        jsonl(files["ai"], [AI[0], {**AI[1], "grade": "high"}])
    elif setup == "empty":
        files["ai"].write_text("")
    arguments = [str(files["ai"]) if a == "AI" else a for a in arguments]
    code, out, err = evaluate(capsys, "--gold", files["bundle"], "--run", files["run"], *arguments)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_several_files_are_read_as_one_and_may_not_disagree(files, capsys):
    # The bundle's grades of judged passages, and the team's own grades of the run's holes.
    jsonl(files["bundle"] / "ai-judgements.jsonl", [AI[0], AI[1], AI[3]])
    holes = jsonl(files["tmp"] / "holes.jsonl", [AI[2], AI[3]])
    base = ["--gold", files["bundle"], "--run", files["run"], "--ai-judgements", "bundle"]
    code, out, _ = evaluate(capsys, *base, "--ai-judgements", holes)
    assert code == 0
    report = json.loads(out)
    assert report["ai_judgements"]["judgements"] == 4
    assert (
        report["ai_judgements"]["source"] == f"{files['bundle'] / 'ai-judgements.jsonl'}, {holes}"
    )
    assert report["runs"]["run"]["ai_judgements"]["holes_filled"] == 1
    jsonl(holes, [AI[2], {**AI[3], "grade": 0}])
    code, out, err = evaluate(capsys, *base, "--ai-judgements", holes)
    assert code == 2 and "grades a passage of question 'q2' 1 in" in err


def test_the_right_judge_is_chosen_and_other_questions_are_warned_about(files, capsys):
    jsonl(files["ai"], [*AI, judgement("q1", "a", 0, judge="other"), judgement("q9", "a", 2)])
    code, out, err = evaluate(
        capsys,
        "--gold",
        files["bundle"],
        "--run",
        files["run"],
        "--ai-judgements",
        files["ai"],
        "--judge",
        "qwen",
    )
    assert code == 0
    assert json.loads(out)["ai_judgements"]["judgements"] == 4
    assert "1 AI judgement(s) of questions not in the gold set ignored" in err


def test_as_a_ci_job_runs_it(files):
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "goldeval",
            "evaluate",
            "--gold",
            str(files["bundle"]),
            "--run",
            str(files["run"]),
            "--ai-judgements",
            "bundle",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "ai_judgements" in json.loads(result.stdout)["runs"]["run"]
