"""With ``--compat trec_eval``, bpref, infAP, AP and the condensed measures equal pytrec_eval's per
query on random graded qrels (grades -1 to 3: -1 is in the pool but unjudged) and TREC runs with
ties, repeats and unknown questions; the condensed ones against pytrec_eval's
``judged_docs_only_flag`` (trec_eval -J). The files go through ``python -m goldeval evaluate``
in process, as in test_trec_eval_property.py.
"""

from __future__ import annotations

import json

import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldeval.cli import main

KS = (1, 3, 5, 10)
DOCS = [f"d{n}" for n in range(12)]
SCORES = [0.5, 1.0, 1.0, 2.25, 3.0, 3.0]
PLAIN = {"bpref": "bpref", "infAP": "infap", "map": "ap"}
CONDENSED = {
    **{f"P_{k}": f"condensed_precision@{k}" for k in KS},
    **{f"ndcg_cut_{k}": f"condensed_ndcg@{k}" for k in KS},
    "recip_rank": "condensed_mrr@1000",
    "map": "condensed_ap",
}

qrels_strategy = st.dictionaries(
    st.sampled_from([f"q{n}" for n in range(6)]),
    st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), min_size=1, max_size=8),
    min_size=1,
    max_size=5,
)
run_strategy = st.dictionaries(
    st.sampled_from([f"q{n}" for n in range(8)]),
    st.lists(st.tuples(st.sampled_from(DOCS), st.sampled_from(SCORES)), min_size=1, max_size=14),
    min_size=1,
    max_size=7,
)


def evaluate(tmp_path, capsys, qrels, run, threshold):
    qrels_path = tmp_path / "qrels.trec"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, grades in qrels.items() for d, g in grades.items())
    )
    run_path = tmp_path / "run.trec"
    run_path.write_text(
        "".join(
            f"{q} Q0 {d} {rank} {score} sys\n"
            for q, results in run.items()
            for rank, (d, score) in enumerate(results, start=1)
        )
    )
    status = main(
        [
            "evaluate",
            "--gold",
            str(qrels_path),
            "--run",
            str(run_path),
            "--compat",
            "trec_eval",
            "--threshold",
            str(threshold),
            "--k",
            ",".join(map(str, KS)),
            "--mrr-cutoff",
            "1000",
            "--per-question",
            "--incomplete",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    return json.loads(out)["runs"]["run"]["per_question"]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(qrels=qrels_strategy, run=run_strategy, threshold=st.integers(1, 2))
def test_bpref_infap_and_condensed_equal_pytrec_eval(tmp_path, capsys, qrels, run, threshold):
    ours = evaluate(tmp_path, capsys, qrels, run, threshold)
    # What a run file means to trec_eval: one score per document, the best of its lines.
    as_trec_eval = {
        q: {d: max(s for doc, s in results if doc == d) for d, _ in results}
        for q, results in run.items()
    }
    plain = pytrec_eval.RelevanceEvaluator(
        qrels, {"bpref", "infAP", "map"}, relevance_level=threshold
    ).evaluate(as_trec_eval)
    condensed = pytrec_eval.RelevanceEvaluator(
        qrels,
        {"P.1,3,5,10", "ndcg_cut.1,3,5,10", "recip_rank", "map"},
        relevance_level=threshold,
        judged_docs_only_flag=True,
    ).evaluate(as_trec_eval)
    assert set(ours) == set(plain)
    for question_id, values in plain.items():
        for name, ours_name in PLAIN.items():
            assert ours[question_id][ours_name] == pytest.approx(values[name], abs=1e-12), (
                question_id,
                name,
            )
        for name, ours_name in CONDENSED.items():
            assert ours[question_id][ours_name] == pytest.approx(
                condensed[question_id][name], abs=1e-12
            ), (question_id, name)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    grades=st.dictionaries(st.sampled_from(DOCS), st.integers(0, 2), min_size=1),
    order=st.permutations(DOCS),
)
def test_infap_is_ap_when_every_passage_is_judged(tmp_path, capsys, grades, order):
    ranking = [d for d in order if d in grades]  # every retrieved document judged
    run = {"q": [(d, float(len(ranking) - i)) for i, d in enumerate(ranking)]}
    ours = evaluate(tmp_path, capsys, {"q": grades}, run, 1)["q"]
    assert ours["infap"] == pytest.approx(ours["ap"], abs=1e-4)
    assert ours["condensed_ap"] == ours["ap"]
    assert all(ours[f"unjudged@{k}"] == 0.0 for k in KS)
