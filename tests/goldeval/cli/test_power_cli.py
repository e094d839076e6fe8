"""``python -m goldeval power`` and the power-aware gates of ``evaluate``, as a CI job runs them."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from goldeval.cli import main
from goldeval.scoring.power import minimum_detectable_difference
from tests.goldeval.cli.test_cli import REPO, write_jsonl

QUESTIONS = 30


@pytest.fixture
def gold(tmp_path):
    """30 answerable questions, each with one relevant document ``d<i>``."""
    return write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {
                "question_id": f"q{i}",
                "question": f"question {i}",
                "answerable": True,
                "spans": [{"doc_id": f"d{i}", "grade": 1}],
            }
            for i in range(QUESTIONS)
        ],
    )


def ranked_at(tmp_path, name, ranks):
    """A run that puts question i's relevant document at rank ranks[i] (None: not at all)."""
    lines = []
    for i, rank in enumerate(ranks):
        results = [{"doc_id": f"noise{j}"} for j in range(10)]
        if rank is not None:
            results.insert(rank - 1, {"doc_id": f"d{i}"})
        lines.append({"question_id": f"q{i}", "results": results[:10]})
    return write_jsonl(tmp_path / f"{name}.jsonl", lines)


@pytest.fixture
def runs(tmp_path):
    rng = np.random.default_rng(5)
    strong = ranked_at(tmp_path, "strong", [1] * QUESTIONS)
    mixed = ranked_at(
        tmp_path, "mixed", [int(r) if r < 11 else None for r in rng.integers(1, 14, QUESTIONS)]
    )
    close = ranked_at(tmp_path, "close", [1] * (QUESTIONS - 1) + [2])
    return {"strong": strong, "mixed": mixed, "close": close}


def command(capsys, *arguments):
    code = main([*map(str, arguments)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_calculator_gives_the_reference_question_counts(capsys):
    for delta, needed in ((0.05, 34), (0.03, 90), (0.02, 199)):
        code, out, err = command(capsys, "power", "--sigma", "0.10", "--delta", delta)
        assert code == 0, err
        assert json.loads(out)["questions_needed"] == needed


def test_calculator_smallest_difference_of_a_set_size_in_markdown(capsys):
    code, out, _ = command(
        capsys, "power", "--sigma", "0.1", "--questions", "60", "--format", "markdown"
    )
    assert code == 0
    assert "| smallest detectable difference | 0.0368 |" in out


def test_power_from_runs_names_sigma_limit_and_discriminative_power(gold, runs, capsys):
    code, out, err = command(
        capsys,
        "power",
        "--gold",
        gold,
        "--runs",
        runs["strong"],
        runs["mixed"],
        runs["close"],
        "--measure",
        "ndcg@10",
        "--measure",
        "mrr@10",
        "--delta",
        "0.03",
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["runs"] == ["strong", "mixed", "close"]
    ndcg = report["measures"]["ndcg@10"]
    assert ndcg["questions"] == QUESTIONS and ndcg["runs"] == 3
    assert ndcg["minimum_detectable_difference"] == pytest.approx(
        minimum_detectable_difference(questions=QUESTIONS, sigma=ndcg["sigma_d"])
    )
    assert ndcg["questions_needed"] > 0
    pairs = {(p["a"], p["b"]): p for p in ndcg["pairs"]}
    assert pairs[("strong", "mixed")]["significant"] is True
    assert pairs[("strong", "close")]["significant"] is False
    assert 0 < pairs[("strong", "close")]["asl"] <= 1
    assert ndcg["discriminative_power"] == pytest.approx(2 / 3)
    assert set(report["measures"]) == {"ndcg@10", "mrr@10"}


def test_power_markdown_marks_pairs_below_the_limit(gold, runs, capsys):
    code, out, _ = command(
        capsys,
        "power",
        "--gold",
        gold,
        "--runs",
        runs["strong"],
        runs["close"],
        runs["mixed"],
        "--format",
        "markdown",
    )
    assert code == 0
    assert "discriminative power" in out
    strong_close = next(line for line in out.splitlines() if "| strong | close |" in line)
    assert "not detectable with this gold set" in strong_close


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--sigma", "0.1"], "--delta"),
        (["--sigma", "0.1", "--delta", "-0.03"], "delta"),
        (["--sigma", "0", "--delta", "0.03"], "sigma"),
        (["--sigma", "0.1", "--delta", "0.03", "--alpha", "2"], "alpha"),
        (["--sigma", "0.1", "--delta", "0.03", "--power", "1"], "power"),
        (["--sigma", "0.1", "--delta", "0.03", "--gold", "x"], "--sigma replaces"),
        (["--sigma", "1", "--delta", "0.000001"], "questions"),
        (["--gold", "GOLD", "--runs", "STRONG"], "at least two runs"),
        (["--gold", "GOLD", "--runs", "STRONG", "MIXED", "--measure", "f1"], "--measure"),
        (["--gold", "GOLD", "--runs", "STRONG", "MIXED", "--questions", "5"], "--questions"),
        (["--runs", "STRONG", "MIXED"], "--gold"),
    ],
)
def test_bad_input_exits_2_naming_the_option(gold, runs, capsys, arguments, message):
    replaced = [
        str({"GOLD": gold, "STRONG": runs["strong"], "MIXED": runs["mixed"]}.get(a, a))
        for a in arguments
    ]
    code, out, err = command(capsys, "power", *replaced)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert out == ""


def test_power_runs_in_a_fresh_interpreter_without_django(gold, runs):
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-m", "goldeval", "power", "--gold", str(gold), "--runs"]
        + [str(runs["strong"]), str(runs["mixed"])]
        + ["--measure", "ndcg@10", "--delta", "0.03"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["measures"]["ndcg@10"]["questions_needed"] > 0


# --- the gates of evaluate --------------------------------------------------------------------


def test_comparisons_and_report_name_what_the_gold_set_detects(gold, runs, capsys):
    code, out, err = command(
        capsys,
        "evaluate",
        "--gold",
        gold,
        "--run",
        runs["strong"],
        "--run",
        runs["close"],
        "--run",
        runs["mixed"],
        "--k",
        "10",
    )
    assert code == 0, err
    report = json.loads(out)
    limit = report["power"]["ndcg@10"]["minimum_detectable_difference"]
    assert limit > 0
    compared = {(c["a"], c["b"], c["metric"]): c for c in report["comparisons"]}
    close = compared[("strong", "close", "ndcg@10")]
    assert close["detectable"] is False and close["minimum_detectable_difference"] == limit
    assert compared[("strong", "mixed", "ndcg@10")]["detectable"] is True
    code, out, _ = command(
        capsys,
        "evaluate",
        "--gold",
        gold,
        "--run",
        runs["strong"],
        "--run",
        runs["close"],
        "--k",
        "10",
        "--format",
        "markdown",
    )
    assert "not detectable with this gold set" in out
    assert "## Power" in out
    code, out, _ = command(
        capsys, "evaluate", "--gold", gold, "--run", runs["strong"], "--run", runs["close"]
    )
    code, csv_out, _ = command(
        capsys,
        "evaluate",
        "--gold",
        gold,
        "--run",
        runs["strong"],
        "--run",
        runs["close"],
        "--format",
        "csv",
    )
    limit = json.loads(out)["power"]["ndcg@10"]["minimum_detectable_difference"]
    assert f"power,,,,ndcg@10.minimum_detectable_difference,{limit}," in csv_out


def test_fail_under_says_a_small_miss_is_not_detectable(gold, runs, capsys):
    code, _, err = command(
        capsys,
        "evaluate",
        "--gold",
        gold,
        "--run",
        runs["close"],
        "--run",
        runs["mixed"],
        "--k",
        "10",
        "--fail-under",
        "ndcg@10=0.999",
    )
    assert code == 1  # a bar is a bar
    close_line = next(line for line in err.splitlines() if line.startswith("below bar: close"))
    assert "not detectable with this gold set" in close_line
    mixed_line = next(line for line in err.splitlines() if line.startswith("below bar: mixed"))
    assert "not detectable" not in mixed_line  # far below: a real miss


def test_fail_under_notes_a_pass_by_less_than_the_gold_set_detects(gold, runs, capsys):
    code, _, err = command(
        capsys,
        "evaluate",
        "--gold",
        gold,
        "--run",
        runs["close"],
        "--run",
        runs["strong"],
        "--k",
        "10",
        "--fail-under",
        "ndcg@10=0.98",
    )
    assert code == 0
    assert "note: close: ndcg@10" in err and "not detectable with this gold set" in err


def test_fail_under_with_one_run_has_no_limit_to_name(gold, runs, capsys):
    code, _, err = command(
        capsys, "evaluate", "--gold", gold, "--run", runs["close"], "--fail-under", "ndcg@10=0.999"
    )
    assert code == 1
    assert "below bar: close" in err and "not detectable" not in err


def test_require_significant_passes_a_significant_improvement(gold, runs, capsys):
    code, _, err = command(
        capsys,
        "evaluate",
        "--gold",
        gold,
        "--run",
        runs["strong"],
        "--run",
        runs["mixed"],
        "--require-significant",
        "ndcg@10",
        "--require-significant",
        "mrr@10",
    )
    assert code == 0, err
    assert "not significant" not in err


def test_require_significant_fails_an_improvement_that_is_noise(gold, runs, capsys):
    code, _, err = command(
        capsys,
        "evaluate",
        "--gold",
        gold,
        "--run",
        runs["strong"],
        "--run",
        runs["close"],
        "--require-significant",
        "ndcg@10",
    )
    assert code == 1
    assert "not significant: strong: ndcg@10 improvement over close = +" in err
    assert "not detectable with this gold set" in err


def test_require_significant_fails_a_candidate_that_is_worse(gold, runs, capsys):
    code, _, err = command(
        capsys,
        "evaluate",
        "--gold",
        gold,
        "--run",
        runs["mixed"],
        "--run",
        runs["strong"],
        "--require-significant",
        "ndcg@10",
    )
    assert code == 1
    assert "mixed: ndcg@10 improvement over strong = -" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--require-significant", "f1"], "--require-significant: unknown metric 'f1'"),
        (["--require-significant", "ndcg@10", "--no-baseline"], "nothing to compare"),
    ],
)
def test_require_significant_bad_input_exits_2(gold, runs, capsys, extra, message):
    code, _, err = command(capsys, "evaluate", "--gold", gold, "--run", runs["strong"], *extra)
    assert code == 2
    assert message in err
