"""`goldeval` installed alone, as a RAG team's CI installs it: `pip install ./goldeval` into a
fresh virtualenv that holds nothing of the app (no Django, no torch), then every CLI case that
the code before the redesign answered (tests/data/goldeval_standalone/, made at e7b2b4f from the
demo's exported gold set, runs, answers, manifest and permission replay files) answers the same:
stdout to the byte, the exit status, and stderr but for the program's new name.

Issue 34 changed the reports on purpose, and the expected stdout of the evaluate and answers
cases was written again from the new code: the power of the gold set and whether each comparison
is detectable, the missing questions named, faithfulness as Ragas defines it (the half credit
kept as faithfulness_graded), Strict Vital correctness, and a missing question counted as not
refused, as evaluate counts it. Every other figure is the same as before."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "goldeval_standalone"
CASES = json.loads((DATA / "cases.json").read_text())


@pytest.fixture(scope="module")
def goldeval_python(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("goldeval-alone")
    # A copy, so building the wheel leaves nothing behind in the repository.
    source = root / "goldeval"
    shutil.copytree(
        REPO / "goldeval",
        source,
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"),
    )
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    return python


def test_the_virtualenv_holds_goldeval_and_nothing_of_the_app(goldeval_python):
    for absent in ("django", "torch", "celery", "corpus", "labelling", "evaluation"):
        probe = subprocess.run(
            [str(goldeval_python), "-c", f"import {absent}"],
            cwd=DATA,  # not the repository: its folders would be importable from there
            capture_output=True,
            text=True,
        )
        assert probe.returncode != 0, f"{absent} is importable beside goldeval"
    listed = subprocess.run(
        [str(goldeval_python), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    names = {package["name"].lower() for package in json.loads(listed.stdout)}
    assert "goldeval" in names
    assert not names & {"django", "torch", "celery"}


@pytest.mark.parametrize("case", CASES["cases"], ids=[case["name"] for case in CASES["cases"]])
def test_every_cli_case_answers_as_before(goldeval_python, case):
    result = subprocess.run(
        [str(goldeval_python), "-m", "goldeval", *case["args"]],
        cwd=DATA,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == case["exit_status"], result.stderr
    assert result.stdout == (DATA / case["stdout"]).read_text()
    if "stderr" in case:
        # argparse wraps a usage line by the program's name, two characters shorter now.
        expected = (DATA / case["stderr"]).read_text().replace(CASES["prog"], "python -m goldeval")
        assert result.stderr.split() == expected.split()
