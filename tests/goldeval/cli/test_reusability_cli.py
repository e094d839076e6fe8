"""``python -m goldeval reusability`` (issue 34): the leave-one-retriever-out report from qrels
and TREC runs, the unjudged warning as a CI gate, and bad input answered with exit 2."""

import json
import os
import subprocess
import sys

import pytest

from tests.goldeval.cli.test_cli import REPO


def reusability(*arguments):
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, "-m", "goldeval", "reusability", *map(str, arguments)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def trec(path, documents):
    path.write_text(
        "".join(f"q Q0 {d} {rank} {10 - rank} s\n" for rank, d in enumerate(documents, start=1))
    )
    return path


@pytest.fixture
def files(tmp_path):
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q 0 A 2\nq 0 B 1\nq 0 C 1\nq 0 N1 0\nq 0 N2 0\n")
    return {
        "gold": qrels,
        "r1": trec(tmp_path / "r1.trec", ["A", "N1", "C"]),
        "r2": trec(tmp_path / "r2.trec", ["A", "B", "N2"]),
        "new": trec(tmp_path / "new.trec", ["X", "Y", "A", "Z"]),
    }


def base(files):
    return ["--gold", files["gold"], "--pool", files["r1"], "--pool", files["r2"], "--depth", 2]


def test_json_report(files):
    result = reusability(*base(files), "--run", files["new"], "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    r1, r2 = report["retrievers"]
    assert (r1["name"], r1["unique_items"], r1["unique_relevant_units"]) == ("r1", 1, [])
    assert r2["unique_relevant_units"] == [
        {"question_id": "q", "doc_id": "B", "start": None, "end": None, "grade": 1}
    ]
    assert r2["difference"]["recall@10"] == pytest.approx(1 / 2 - 2 / 3)
    (new,) = report["runs"]
    assert new["unjudged@10"] == pytest.approx(0.3)
    assert new["condensed"]["condensed_mrr@10"] == 1.0
    assert "new: 30.0% of its top 10 passages were never judged" in result.stderr


def test_markdown_and_the_unjudged_gate(files):
    result = reusability(*base(files), "--run", files["new"])
    assert result.returncode == 0
    assert "## Leave one retriever out" in result.stdout
    assert "| r2 | 2 | 1 |" in result.stdout
    assert "- r2: 1\n  - question q: B, grade 1" in result.stdout
    assert "**Warning, new**: 30.0% of its top 10" in result.stdout
    gated = reusability(*base(files), "--run", files["new"], "--fail-on-unjudged")
    assert gated.returncode == 1
    fine = reusability(*base(files), "--run", files["r2"].parent / "r2.trec", "--fail-on-unjudged")
    assert fine.returncode == 2  # the name r2 is taken by a pooled run
    assert "two runs are named 'r2'" in fine.stderr


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (["--pool", "ONE"], "at least two retrievers"),
        (["--depth", "0"], "argument --depth: must be from 1 to"),
        (["--threshold", "x"], "argument --threshold: expected a whole number"),
        (["--run", "missing.trec"], "missing.trec: no such file"),
    ],
)
def test_bad_input_exits_2_naming_it(files, arguments, fragment):
    if arguments[:2] == ["--pool", "ONE"]:
        arguments = ["--gold", files["gold"], "--pool", files["r1"], "--depth", 2]
    else:
        arguments = base(files) + arguments
    result = reusability(*arguments)
    assert result.returncode == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_a_bundle_without_or_with_a_broken_pool_file_exits_2(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "gold.jsonl").write_text(
        '{"question_id": "q", "answerable": true, "spans": [{"doc_id": "A", "grade": 1}]}\n'
    )
    result = reusability("--gold", folder)
    assert result.returncode == 2
    assert "the gold set has no pool.jsonl" in result.stderr
    (folder / "pool.jsonl").write_text(
        '{"question_id": "q", "retriever": "r", "passages": [{"doc_id": "A", "rank": -1}]}\n'
    )
    result = reusability("--gold", folder)
    assert result.returncode == 2
    assert "pool.jsonl:1: rank must be a whole number >= 1" in result.stderr
    assert "Traceback" not in result.stderr
