"""With ``--compat trec_eval``, every per-query and mean value equals pytrec_eval's and
ir_measures' on random graded document-level qrels and TREC runs with ties, repeated lines,
missing and unknown queries (issue 13). Nothing is skipped: both oracles are dev dependencies.

The files go through ``python -m goldeval evaluate`` (in process), so the readers (ties by
docno descending, repeats dropped, unknown questions skipped) are under test as much as the
metrics. pytrec_eval receives what a run file means to trec_eval: one score per document (the
best of a repeated document's lines, which is the one Goldset keeps) and every query of the run.
"""

from __future__ import annotations

import json
import math

import ir_measures
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldeval.cli import main

KS = (1, 3, 5, 10)
DOCS = [f"d{n}" for n in range(12)]
# Few, so ties are common; 1.000000001 ties with 1.0 in single precision, which is how
# pytrec_eval (trec_eval 9) stores scores: the run is read with --scores float32.
SCORES = [0.5, 1.0, 1.0, 1.000000001, 2.25, 3.0, 3.0]
TREC_MEASURES = {"recall.1,3,5,10", "P.1,3,5,10", "ndcg_cut.1,3,5,10", "recip_rank"}
IR_MEASURES = [
    *(ir_measures.R @ k for k in KS),
    *(ir_measures.P @ k for k in KS),
    *(ir_measures.nDCG @ k for k in KS),
    ir_measures.RR,
]


def ours_of(name: str) -> str:
    """Our metric name for a pytrec_eval one."""
    measure, _, k = name.rpartition("_")
    if name == "recip_rank":
        return "mrr@1000"
    return {"recall": "recall", "P": "precision", "ndcg_cut": "ndcg"}[measure] + f"@{k}"


def ir_name(measure) -> str:
    text = str(measure)
    if text == "RR":
        return "mrr@1000"
    family, _, k = text.partition("@")
    return {"R": "recall", "P": "precision", "nDCG": "ndcg"}[family] + f"@{k}"


qrels_strategy = st.dictionaries(
    st.sampled_from([f"q{n}" for n in range(6)]),
    st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1, max_size=6),
    min_size=1,
    max_size=5,
)
# Known and unknown (q6, q7) questions; rankings with repeated documents and tied scores.
run_strategy = st.dictionaries(
    st.sampled_from([f"q{n}" for n in range(8)]),
    st.lists(st.tuples(st.sampled_from(DOCS), st.sampled_from(SCORES)), min_size=1, max_size=14),
    min_size=1,
    max_size=7,
)


def qrels_lines(qrels, repeat):
    lines = [f"{q} 0 {d} {g}" for q, grades in qrels.items() for d, g in grades.items()]
    # Identical repeated lines count once (with a warning), as pytrec_eval keeps one.
    return lines + lines[:repeat]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(qrels=qrels_strategy, run=run_strategy, repeat=st.integers(0, 3), every=st.booleans())
def test_compat_trec_eval_equals_pytrec_eval_and_ir_measures(
    tmp_path, capsys, qrels, run, repeat, every
):
    qrels_path = tmp_path / "qrels.trec"
    qrels_path.write_text("\n".join(qrels_lines(qrels, repeat)) + "\n")
    run_path = tmp_path / "run.trec"
    run_path.write_text(
        "".join(
            f"{q} Q0 {d} {rank} {score} sys\n"
            for q, results in run.items()
            for rank, (d, score) in enumerate(results, start=1)
        )
    )
    compat = "trec_eval-c" if every else "trec_eval"
    status = main(
        [
            "evaluate",
            "--gold",
            str(qrels_path),
            "--run",
            str(run_path),
            "--compat",
            compat,
            "--scores",
            "float32",
            "--k",
            ",".join(map(str, KS)),
            "--mrr-cutoff",
            "1000",
            "--per-question",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    ours = json.loads(out)["runs"]["run"]

    as_trec_eval = {
        q: {d: max(s for doc, s in results if doc == d) for d, _ in results}
        for q, results in run.items()
    }
    reference = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES).evaluate(as_trec_eval)
    expected_questions = set(qrels) if every else set(reference)
    assert set(ours["per_question"]) == expected_questions
    for question_id, values in reference.items():
        for name, value in values.items():
            assert ours["per_question"][question_id][ours_of(name)] == pytest.approx(
                value, abs=1e-12
            ), (question_id, name)
    for question_id in expected_questions - set(reference):  # -c: missing from the run
        assert all(
            ours["per_question"][question_id][ours_of(name)] == 0.0 for name in TREC_MEASURES_FLAT
        )
    # Means: trec_eval's over its query set; -c over every qrels query, missing ones 0.
    count = len(qrels) if every else len(reference)
    for name in TREC_MEASURES_FLAT:
        total = math.fsum(values[name] for values in reference.values())
        expected = total / count if count else None
        got = ours["metrics"][ours_of(name)]
        assert got == (None if expected is None else pytest.approx(expected, abs=1e-12)), name

    # ir_measures on the same dicts scores a query of the qrels missing from the run as 0 and
    # averages over every qrels query: trec_eval -c's convention. Under trec_eval's, its values
    # of the questions both score are ours too.
    if not every:
        for metric in ir_measures.iter_calc(IR_MEASURES, qrels, as_trec_eval):
            if metric.query_id in reference:
                assert ours["per_question"][metric.query_id][ir_name(metric.measure)] == (
                    pytest.approx(metric.value, abs=1e-12)
                )
    if every:
        for metric in ir_measures.iter_calc(IR_MEASURES, qrels, as_trec_eval):
            assert ours["per_question"][metric.query_id][ir_name(metric.measure)] == (
                pytest.approx(metric.value, abs=1e-12)
            )
        for measure, value in ir_measures.calc_aggregate(IR_MEASURES, qrels, as_trec_eval).items():
            assert ours["metrics"][ir_name(measure)] == pytest.approx(value, abs=1e-12)


TREC_MEASURES_FLAT = [
    *(f"recall_{k}" for k in KS),
    *(f"P_{k}" for k in KS),
    *(f"ndcg_cut_{k}" for k in KS),
    "recip_rank",
]
