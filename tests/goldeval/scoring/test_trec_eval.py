"""Document-level figures equal trec_eval's, on trec_eval's own test files.

The expected values are trec_eval 10.0's stdout (see the README in the data folder). trec_eval
sorts each topic by score descending and breaks ties by docno descending; our TREC loader keeps
ties in file order, so the run is written pre-sorted the trec_eval way. trec_eval's nDCG uses the
qrels grades as linear gains (every grade >= 1, whatever the relevance level) with an ideal from
all judged documents; recip_rank has no cut-off (1000 covers the 500-document runs).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from goldeval.formats.gold import load_gold
from goldeval.formats.runs import load_run
from goldeval.scoring.metrics import MetricOptions, evaluate_run
from tests.conftest import REPO, SHARED_DATA

# The data sits in shared/ beside the clone; CI refuses to start without it (tests/conftest.py).
DATA = SHARED_DATA / "trec_eval_test"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"{DATA} is not present")

MEASURES = {
    "ndcg_cut_5": "ndcg@5",
    "ndcg_cut_10": "ndcg@10",
    "recall_5": "recall@5",
    "recall_10": "recall@10",
    "P_5": "precision@5",
    "P_10": "precision@10",
    "recip_rank": "mrr@1000",
}


def presorted_run(source: Path, target: Path) -> Path:
    """The run with lines in trec_eval's order: score descending, then docno descending."""
    rows = []
    for line in source.read_text().splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            rows.append((fields[0], float(fields[4]), fields[2], line))
    rows.sort(key=lambda row: (row[0], row[1], row[2]), reverse=True)
    target.write_text("".join(row[3] + "\n" for row in rows))
    return target


def expected_values(name: str) -> dict[tuple[str, str], float]:
    values = {}
    for line in (DATA / name).read_text().splitlines():
        measure, topic, value = line.split()
        if measure in MEASURES:
            values[(measure, topic)] = float(value)
    return values


@pytest.mark.parametrize(
    ("qrels", "results", "expected", "threshold"),
    [
        ("qrels.test", "results.test", "out.test.aq", 1),
        # Graded qrels 0-4 and -1 with trec_eval -l2: relevance from grade 2 up.
        ("qrels.rel_level", "results.test", "out.test.aql", 2),
        # Topic 302 is missing from the run; trec_eval -c averages it in as 0, as we do.
        ("qrels.test", "results.trunc", "out.test.aqc", 1),
    ],
)
def test_per_query_and_average_values_match_trec_eval(
    tmp_path, qrels, results, expected, threshold
):
    gold = load_gold(DATA / qrels)
    run = load_run(presorted_run(DATA / results, tmp_path / "run.trec"))
    options = MetricOptions(ks=(5, 10), gain="linear", threshold=threshold, mrr_cutoff=1000)
    evaluation = evaluate_run(gold=gold, run=run, options=options)
    values = expected_values(expected)
    assert len(values) == 4 * len(MEASURES)
    for (measure, topic), value in values.items():
        metric = MEASURES[measure]
        ours = (
            evaluation.metrics[metric] if topic == "all" else evaluation.per_question[topic][metric]
        )
        assert ours == pytest.approx(value, abs=5e-5), (measure, topic)


def test_the_command_line_gives_the_same_figures(tmp_path):
    run = presorted_run(DATA / "results.test", tmp_path / "run.trec")
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "evaluate",
            "--gold",
            str(DATA / "qrels.test"),
            "--run",
            str(run),
            "--gain",
            "linear",
            "--k",
            "5,10",
            "--mrr-cutoff",
            "1000",
            "--per-question",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)["runs"]["run"]
    for (measure, topic), value in expected_values("out.test.aq").items():
        metric = MEASURES[measure]
        ours = (
            report["metrics"][metric] if topic == "all" else report["per_question"][topic][metric]
        )
        assert ours == pytest.approx(value, abs=5e-5), (measure, topic)
