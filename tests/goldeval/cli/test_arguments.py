"""Every numeric option of every ``python -m goldeval`` subcommand: an absurd value is an
argument error (exit 2, the option named), never a MemoryError (exit 1, the "below the bar"
code) or a traceback; the cost of scoring follows the run, not the cut-off; an empty run, an
empty gold file and a grade out of range are bad input with FILE:LINE."""

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from goldeval.cli import main
from goldeval.formats.gold import load_gold
from goldeval.formats.runs import read_run
from goldeval.scoring.metrics import MetricOptions, evaluate_run
from tests.goldeval.scoring.test_permission_replay import bundle as permission_bundle

REPO = Path(__file__).resolve().parents[3]

EVALUATE = ["evaluate", "--gold", "g", "--run", "r"]
ANSWERS = ["answers", "--gold", "g"]
PERMISSIONS = ["permissions", "--gold", "g", "--acl", "a"]
HEALTH = ["health", "--gold", "g", "--manifest", "m"]

ABSURD = [
    (EVALUATE, "--k", "1000000000"),
    (EVALUATE, "--k", "10,1000000000"),
    (EVALUATE, "--k", "0"),
    (EVALUATE, "--k", "1e3"),
    (EVALUATE, "--mrr-cutoff", "1e8"),
    (EVALUATE, "--mrr-cutoff", "100000000"),
    (EVALUATE, "--mrr-cutoff", "0"),
    (EVALUATE, "--min-overlap", "1000000000000"),
    (EVALUATE, "--min-overlap", "-1"),
    (EVALUATE, "--threshold", "5000"),
    (EVALUATE, "--threshold", "11"),
    (EVALUATE, "--threshold", "0"),
    (EVALUATE, "--seed", "-1"),
    (EVALUATE, "--seed", str(2**64)),
    (EVALUATE, "--seed", "1e3"),
    (ANSWERS, "--min-overlap", "1000000000"),
    (ANSWERS, "--seed", "-1"),
    (PERMISSIONS, "--k", "1000000000"),
    (PERMISSIONS, "--min-overlap", "0"),
    (HEALTH, "--k", "1000000000"),
    (HEALTH, "--max-stale", "2"),
    (HEALTH, "--max-stale", "nan"),
    (HEALTH, "--max-crowding", "-0.1"),
    (HEALTH, "--max-lag-days", "-1"),
    (HEALTH, "--max-lag-days", "inf"),
]


@pytest.mark.parametrize(("command", "option", "value"), ABSURD)
def test_an_absurd_number_is_an_argument_error_naming_the_option(command, option, value, capsys):
    with pytest.raises(SystemExit) as exit:
        main([*command, f"{option}={value}"])
    assert exit.value.code == 2
    error = capsys.readouterr().err
    assert f"argument {option}" in error and "Traceback" not in error


@pytest.mark.parametrize(
    "value", ["ndcg@10=nan", "ndcg@10=inf", "ndcg@10=x", "ndcg@10", "nope@3=0.5"]
)
def test_a_bar_that_is_no_number_is_bad_input(value, capsys):
    assert main([*EVALUATE, "--fail-under", value]) == 2
    assert "--fail-under" in capsys.readouterr().err


def five_line_run():
    lines = "".join(f"q1 Q0 d{n} {n} {10 - n} t\n" for n in range(1, 6))
    return read_run(lines.encode(), name="five")


def test_scoring_costs_what_the_run_holds_whatever_the_cut_off(tmp_path):
    gold_path = tmp_path / "qrels"
    gold_path.write_text("q1 0 d2 2\nq1 0 d9 1\n")
    gold = load_gold(gold_path)
    huge = MetricOptions(ks=(1, 10**9), mrr_cutoff=10**9)
    tracemalloc.start()
    try:
        evaluation = evaluate_run(gold=gold, run=five_line_run(), options=huge)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000  # bytes; a list sized by the cut-off would be gigabytes
    assert evaluation.metrics[f"recall@{10**9}"] == 0.5
    assert evaluation.metrics[f"mrr@{10**9}"] == 0.5
    small = evaluate_run(gold=gold, run=five_line_run(), options=MetricOptions(ks=(1, 5)))
    assert evaluation.metrics[f"ndcg@{10**9}"] == small.metrics["ndcg@5"]


def cli(*arguments):
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, "-m", "goldeval", *map(str, arguments)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def bundle(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "gold.jsonl").write_text(
        json.dumps(
            {
                "question_id": "q1",
                "question": "annual leave days",
                "spans": [{"doc_id": "leave", "start": 0, "end": 12, "grade": 2}],
            }
        )
        + "\n"
    )
    (folder / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"doc_id": doc_id, "version": 1, "title": doc_id, "text": text}) + "\n"
            for doc_id, text in (
                ("leave", "Annual leave is 25 days."),
                ("parking", "Parking permits at the desk."),
            )
        )
    )
    return folder


def test_the_deepest_cut_offs_allowed_score_a_short_run_and_its_baseline(bundle, tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 parking 1 2 t\nq1 Q0 leave 2 1 t\n")
    result = cli(
        "evaluate", "--gold", bundle, "--run", run, "--k", "1,100000", "--mrr-cutoff", "100000"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)["runs"]
    assert report["run"]["metrics"]["recall@100000"] == 1.0
    assert report["run"]["metrics"]["mrr@100000"] == 0.5
    assert report["bm25-baseline"]["metrics"]["recall@100000"] == 1.0


@pytest.mark.parametrize(
    "content",
    ["", "\n\n  \n", "# nothing yet\n", "\r\r", "# a comment\r\n\r\n"],
    ids=["empty", "blank lines", "a comment", "CR blank lines", "CRLF comment"],
)
@pytest.mark.parametrize("suffix", [".trec", ".jsonl"])
def test_an_empty_run_is_bad_input_naming_the_file(bundle, tmp_path, content, suffix):
    run = tmp_path / f"empty{suffix}"
    run.write_text(content, newline="")
    result = cli("evaluate", "--gold", bundle, "--run", run)
    assert result.returncode == 2
    assert f"error: {run}: the run holds no ranking" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_run_of_empty_rankings_is_a_run(bundle, tmp_path):
    run = tmp_path / "nothing.jsonl"
    run.write_text('{"question_id": "q1", "results": []}\n')
    result = cli("evaluate", "--gold", bundle, "--run", run, "--no-baseline")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["runs"]["nothing"]["metrics"]["recall@10"] == 0.0


@pytest.mark.parametrize("content", ["", "\n", "# only a comment\n"])
def test_an_empty_gold_file_is_bad_input_naming_the_file(tmp_path, content):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(content)
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d 1 1 t\n")
    result = cli("evaluate", "--gold", gold, "--run", run)
    assert result.returncode == 2
    assert f"error: {gold}: no" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("name", "content", "line"),
    [
        ("gold.jsonl", '{"question_id": "q1", "spans": [{"doc_id": "d", "grade": 5000}]}\n', 1),
        ("gold.jsonl", '\n{"question_id": "q1", "spans": [{"doc_id": "d", "grade": -1}]}\n', 2),
        ("qrels", "q1 0 d 1\nq1 0 e 5000\n", 2),
        ("qrels", "q1 0 d 1\rq1 0 e 1.5\r", 2),
        ("qrels", "q1 0 HR\u3000policy 1\n", 1),
    ],
)
def test_a_bad_gold_line_is_named_with_file_and_line(tmp_path, name, content, line):
    gold = tmp_path / name
    gold.write_text(content, newline="")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d 1 1 t\n")
    result = cli("evaluate", "--gold", gold, "--run", run)
    assert result.returncode == 2
    assert f"error: {gold}:{line}: " in result.stderr and "Traceback" not in result.stderr


def test_another_space_in_a_run_is_named_with_file_and_line(bundle, tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 leave 1 2 t\nq1 Q0 HR\u00a0policy 2 1 t\n")
    result = cli("evaluate", "--gold", bundle, "--run", run)
    assert result.returncode == 2
    assert f"error: {run}:2: U+00A0 (NO-BREAK SPACE)" in result.stderr


@pytest.mark.parametrize("content", ["", "\n", "# no results yet\r"])
def test_an_empty_run_of_a_test_user_is_bad_input_not_a_pass(tmp_path, content, capsys):
    """An empty run would pass --fail-on-leak: nothing retrieved, nothing leaked."""
    folder = permission_bundle.__wrapped__(tmp_path)
    empty = tmp_path / "bob.trec"
    empty.write_text(content, newline="")
    arguments = ["permissions", "--gold", folder, "--acl", tmp_path / "acl.json", "--fail-on-leak"]
    assert main([*map(str, arguments), f"--run-as=bob={empty}"]) == 2
    assert f"error: {empty}: the run holds no ranking" in capsys.readouterr().err
