"""``python -m goldeval evaluate`` reports the measures for incomplete judgements in every format,
gates on them, and takes trec_eval's -M (issue 34)."""

import csv
import io
import json

import pytest

from tests.goldeval.cli.test_cli import bundle, evaluate, good_run, weak_run  # noqa: F401
from tests.goldeval.scoring.test_trec_eval import DATA, presorted_run

NEW = ["ap", "bpref", "infap", "condensed_ap", "condensed_ndcg@10", "unjudged@10", "rbp_p0.8"]


def test_json_markdown_and_csv_carry_the_measures(bundle, good_run, weak_run):  # noqa: F811
    result = evaluate(
        "--gold", bundle, "--run", good_run, "--run", weak_run, "--per-question", "--incomplete"
    )
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)["runs"]
    for name in NEW + ["rbp_residual_p0.5", "condensed_mrr@10"]:
        assert name in runs["good"]["metrics"], name
    # q2 of the good run: "parking" (nobody judged it for q2) above "pension" (its evidence).
    q2 = runs["good"]["per_question"]["q2"]
    assert q2["unjudged@1"] == 1.0
    assert q2["precision@1"] == 0.0 and q2["condensed_precision@1"] == 1.0
    assert q2["mrr@10"] == 0.5 and q2["condensed_mrr@10"] == 1.0

    markdown = evaluate(
        "--gold", bundle, "--run", good_run, "--format", "markdown", "--incomplete"
    ).stdout
    assert "| bpref |" in markdown and "| unjudged@10 |" in markdown
    report = evaluate("--gold", bundle, "--run", good_run, "--format", "csv", "--incomplete").stdout
    rows = [row[:5] for row in csv.reader(io.StringIO(report))]
    assert ["summary", "good", "", "", "condensed_ndcg@10"] in rows


def test_the_measures_are_asked_for(bundle, good_run):  # noqa: F811
    # Without --incomplete the report is what it was: CI jobs that parse it see no change.
    result = evaluate("--gold", bundle, "--run", good_run)
    assert "bpref" not in json.loads(result.stdout)["runs"]["good"]["metrics"]


def test_fail_under_a_new_measure(bundle, good_run, weak_run):  # noqa: F811
    result = evaluate(
        "--gold",
        bundle,
        "--run",
        good_run,
        "--run",
        weak_run,
        "--incomplete",
        "--fail-under",
        "bpref=0.9",
    )
    assert result.returncode == 1
    assert "weak: bpref" in result.stderr
    assert "good:" not in result.stderr


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (["--rbp", "1.5"], "argument --rbp: every persistence must lie strictly between 0 and 1"),
        (["--rbp", "nan"], "argument --rbp: every persistence"),
        (["--rbp", "0.5,x"], "argument --rbp: expected comma-separated numbers"),
        (["-M", "0"], "argument -M/--max-passages: must be from 1 to"),
        (["--max-passages", "ten"], "argument -M/--max-passages: expected a whole number"),
        (["--incomplete", "--fail-under", "bpref@10=0.5"], "unknown metric 'bpref@10'"),
        (["--fail-under", "bpref=0.5"], "'bpref' is a measure for incomplete judgements: add"),
    ],
)
def test_bad_options_exit_2_naming_the_option(bundle, good_run, arguments, fragment):  # noqa: F811
    result = evaluate("--gold", bundle, "--run", good_run, *arguments)
    assert result.returncode == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_max_passages_truncates_every_ranking(tmp_path):
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("1 0 A 2\n1 0 B 1\n1 0 C 0\n")
    run = tmp_path / "system.trec"
    run.write_text("1 Q0 X 1 5 s\n1 Q0 A 2 4 s\n1 Q0 Y 3 3 s\n1 Q0 B 4 2 s\n1 Q0 Z 5 1 s\n")
    whole = evaluate("--gold", qrels, "--run", run, "--k", "5")
    cut = evaluate("--gold", qrels, "--run", run, "--k", "5", "-M", "2", "--incomplete")
    assert json.loads(whole.stdout)["runs"]["system"]["metrics"]["recall@5"] == 1.0
    metrics = json.loads(cut.stdout)["runs"]["system"]["metrics"]
    assert metrics["recall@5"] == 0.5
    assert metrics["ap"] == pytest.approx(0.5 / 2)


def test_trec_eval_aqcM_through_the_command_line(tmp_path):
    run = presorted_run(DATA / "results.trunc", tmp_path / "run.trec")
    result = evaluate(
        "--gold",
        DATA / "qrels.test",
        "--run",
        run,
        "--compat",
        "trec_eval-c",
        "-M",
        "100",
        "--incomplete",
        "--rbp",
        "0.9",
        "--k",
        "5,10,20",
        "--mrr-cutoff",
        "1000",
    )
    assert result.returncode == 0, result.stderr
    metrics = json.loads(result.stdout)["runs"]["run"]["metrics"]
    # out.test.aqcM (trec_eval -c -M100): map, bpref, infAP, rbp, rbp_resid, unj_20.
    expected = {
        "ap": 0.0947,
        "bpref": 0.1252,
        "infap": 0.0947,
        "rbp_p0.9": 0.1679,
        "rbp_residual_p0.9": 0.0220,
        "unjudged@20": 0.0333,
    }
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(value, abs=5e-5), name
