"""Measures for incomplete judgements (issue 34): hand-worked cases, span semantics, and
trec_eval 10's own test files (bpref, infAP, map, unj, rbp, rbp_resid, and -M)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan, Passage, load_gold
from goldeval.formats.runs import Ranking, Run, load_run
from goldeval.scoring.incomplete import incomplete_metric_names, with_incomplete_measures
from goldeval.scoring.metrics import MetricOptions, evaluate_run
from tests.goldeval.scoring.test_trec_eval import DATA, presorted_run


def span(doc_id, grade, start=None, end=None):
    return GoldSpan(doc_id=doc_id, start=start, end=end, grade=grade)


def question(question_id, *spans, judged=(), pooled_unjudged=()):
    return GoldQuestion(
        question_id=question_id,
        question=f"text of {question_id}",
        answerable=any(s.grade >= 1 for s in spans),
        spans=tuple(spans),
        judged=tuple(Passage(*p) if isinstance(p, tuple) else Passage(p) for p in judged),
        pooled_unjudged=tuple(Passage(p) for p in pooled_unjudged),
    )


def run_of(rankings):
    run = Run(name="run")
    for question_id, passages in rankings.items():
        run.rankings[question_id] = Ranking(
            passages=[Passage(*p) if isinstance(p, tuple) else Passage(p) for p in passages]
        )
    return run


def scored(gold, run, persistences=(0.5, 0.8), **options):
    options = MetricOptions(**options)
    evaluation = evaluate_run(gold=gold, run=run, options=options)
    return with_incomplete_measures(
        evaluation, gold=gold, run=run, options=options, persistences=persistences
    )


# The seed example with two judged non-relevant documents and two nobody judged (X, Y).
SEED = Gold(
    questions={
        "q1": question("q1", span("A", 2), span("B", 1), judged=["A", "B", "N1", "N2"]),
    }
)
SEED_RUN = run_of({"q1": ["X", "A", "N1", "Y", "B", "N2"]})


def test_worked_example():
    m = scored(SEED, SEED_RUN, ks=(3, 5, 10)).metrics
    # AP: A at rank 2 (1/2), B at rank 5 (2/5), over R = 2.
    assert m["ap"] == pytest.approx((1 / 2 + 2 / 5) / 2)
    # bpref: nothing judged non-relevant above A (1); N1 above B: 1 - min(1, 2) / min(2, 2).
    assert m["bpref"] == pytest.approx((1 + 0.5) / 2)
    # infAP: at A (j = 1) nothing judged above: 1/2; at B (j = 4) A, N1 above, both judged:
    # 1/5 + 4/5 * 2/4 * (1 + e) / (2 + 2e).
    e = 0.00001
    assert m["infap"] == pytest.approx((1 / 2 + 1 / 5 + 4 / 5 * 0.5 * (1 + e) / (2 + 2 * e)) / 2)
    # Condensed: A, N1, B, N2.
    assert m["condensed_ap"] == pytest.approx((1 + 2 / 3) / 2)
    assert m["condensed_precision@3"] == pytest.approx(2 / 3)
    assert m["condensed_mrr@10"] == 1.0
    ideal = 3 + 1 / math.log2(3)
    assert m["condensed_ndcg@3"] == pytest.approx((3 + 1 / math.log2(4)) / ideal)
    assert round(m["condensed_ndcg@3"], 4) == 0.9639
    # Plain figures beside them, for contrast.
    assert m["precision@3"] == pytest.approx(1 / 3)
    assert m["mrr@10"] == 0.5
    # unjudged@k: X and Y; a ranking of 6 is filled with judged passages up to k = 10.
    assert m["unjudged@3"] == pytest.approx(1 / 3)
    assert m["unjudged@5"] == pytest.approx(2 / 5)
    assert m["unjudged@10"] == pytest.approx(2 / 10)
    # RBP: gains grade / top grade (A 1, B 0.5) at ranks 2 and 5.
    assert m["rbp_p0.5"] == pytest.approx(0.5 * (0.5 + 0.5 * 0.5**4))
    assert m["rbp_p0.8"] == pytest.approx(0.2 * (0.8 + 0.5 * 0.8**4))
    # Residual: the unjudged X (rank 1) and Y (rank 4), and all past rank 6.
    assert m["rbp_residual_p0.5"] == pytest.approx(0.5**6 + 0.5 * (1 + 0.5**3))
    assert m["rbp_residual_p0.8"] == pytest.approx(0.8**6 + 0.2 * (1 + 0.8**3))


def test_names_cover_every_value():
    options = MetricOptions(ks=(3, 5, 10))
    result = scored(SEED, SEED_RUN, ks=(3, 5, 10))
    for name in incomplete_metric_names(options):
        assert name in result.metrics
        assert name in result.per_question["q1"]
    # The plain measures are kept.
    assert result.metrics["recall@5"] == 1.0


def test_threshold_moves_a_relevant_document_to_judged_non_relevant():
    m = scored(SEED, SEED_RUN, ks=(5,), threshold=2).metrics
    # R = 1 (A); B is judged non-relevant now, but below A.
    assert m["bpref"] == 1.0
    assert m["ap"] == pytest.approx(1 / 2)
    assert m["condensed_ap"] == 1.0


def test_ranking_judged_throughout_has_condensed_equal_to_plain_and_infap_equal_to_ap():
    run = run_of({"q1": ["N1", "A", "N2", "B"]})
    m = scored(SEED, run, ks=(1, 3, 5)).metrics
    for k in (1, 3, 5):
        assert m[f"condensed_precision@{k}"] == m[f"precision@{k}"]
        assert m[f"condensed_ndcg@{k}"] == m[f"ndcg@{k}"]
        assert m[f"unjudged@{k}"] == 0.0
    assert m["condensed_ap"] == m["ap"]
    assert m["infap"] == pytest.approx(m["ap"], abs=1e-4)


def test_near_duplicate_chunk_is_judged_and_earns_nothing():
    # One span of grade 2, one of grade 0; three judged candidates.
    gold = Gold(
        questions={
            "q": question(
                "q",
                span("D", 2, 0, 100),
                span("D", 0, 200, 300),
                judged=[("D", 0, 150), ("D", 180, 320), ("D", 400, 500)],
            )
        }
    )
    run = run_of(
        {
            "q": [
                ("D", 400, 420),  # a judged candidate: judged non-relevant
                ("D", 50, 120),  # reaches the grade-2 span
                ("D", 60, 130),  # the same span again: judged, no credit
                ("D", 600, 700),  # nobody judged it
                ("D", 250, 260),  # the grade-0 span: judged non-relevant
            ]
        }
    )
    m = scored(gold, run, ks=(2, 5)).metrics
    assert m["unjudged@5"] == pytest.approx(1 / 5)
    assert m["ap"] == pytest.approx(1 / 2)
    # Condensed: non-relevant, hit, duplicate, non-relevant.
    assert m["condensed_precision@2"] == pytest.approx(1 / 2)
    assert m["condensed_mrr@10"] == pytest.approx(1 / 2)
    # N = 2 (the two candidates reaching no relevant span; the grade-0 span lies inside one),
    # R = 1: one non-relevant above the hit: 1 - min(1, 1) / min(2, 1) = 0.
    assert m["bpref"] == 0.0


def test_min_overlap_decides_what_is_judged():
    gold = Gold(questions={"q": question("q", span("D", 1, 0, 100), judged=[("D", 0, 100)])})
    run = run_of({"q": [("D", 95, 110)]})
    assert scored(gold, run, ks=(1,)).metrics["unjudged@1"] == 0.0
    assert scored(gold, run, ks=(1,), min_overlap=10).metrics["unjudged@1"] == 1.0


def test_spans_below_threshold_outside_candidates_count_as_judged_non_relevant():
    # A gold JSONL without judged candidates: N is its grade-0 span, so one non-relevant
    # passage above the hit costs min(1, 1) / min(1, 1) = all of it.
    gold = Gold(questions={"q": question("q", span("D", 2, 0, 10), span("E", 0, 0, 10))})
    run = run_of({"q": [("E", 0, 5), ("D", 0, 5)]})
    assert scored(gold, run, ks=(2,)).metrics["bpref"] == 0.0
    run = run_of({"q": [("D", 0, 5), ("E", 0, 5)]})
    assert scored(gold, run, ks=(2,)).metrics["bpref"] == 1.0


def test_pooled_unjudged_documents_count_for_infap_only():
    gold = Gold(
        questions={
            "q": question("q", span("A", 1), span("B", 1), judged=["A", "B"], pooled_unjudged=["P"])
        }
    )
    inside = scored(gold, run_of({"q": ["A", "P", "B"]}), ks=(3,)).metrics
    outside = scored(gold, run_of({"q": ["A", "X", "B"]}), ks=(3,)).metrics
    assert inside["unjudged@3"] == outside["unjudged@3"] == pytest.approx(1 / 3)
    assert inside["bpref"] == outside["bpref"] == 1.0
    # At B (j = 2): in the pool above it 2 of 2 (P sampled out) versus 1 of 2 (X outside).
    assert inside["infap"] > outside["infap"]


def test_missing_questions_follow_the_convention():
    gold = Gold(questions={**SEED.questions, "q2": question("q2", span("C", 1), judged=["C"])})
    goldset = scored(gold, SEED_RUN, ks=(5,)).per_question["q2"]
    assert goldset["bpref"] == goldset["rbp_p0.5"] == goldset["unjudged@5"] == 0.0
    assert goldset["rbp_residual_p0.5"] == 1.0  # nothing retrieved: everything unknown
    filled = scored(gold, SEED_RUN, ks=(5,), compat="trec_eval-c").per_question["q2"]
    assert set(filled.values()) == {0.0}
    assert "q2" not in scored(gold, SEED_RUN, ks=(5,), compat="trec_eval").per_question


def test_question_without_relevant_units_scores_zero():
    gold = Gold(questions={"q": question("q", span("A", 1), judged=["A", "N"])})
    m = scored(gold, run_of({"q": ["N", "A"]}), ks=(2,), threshold=2).metrics
    assert m["ap"] == m["bpref"] == m["infap"] == m["condensed_ap"] == 0.0


def test_max_passages_scores_only_the_first_n():
    long = scored(SEED, SEED_RUN, ks=(3, 10), max_passages=3).metrics
    short = scored(SEED, run_of({"q1": ["X", "A", "N1"]}), ks=(3, 10)).metrics
    assert long == short
    assert long["recall@10"] == 0.5


def test_persistences_are_checked():
    with pytest.raises(ValueError, match="persistence"):
        scored(SEED, SEED_RUN, persistences=(1.0,))


# --- trec_eval 10 on its own test files ---------------------------------------------------------

TREC_MEASURES = {
    "map": "ap",
    "bpref": "bpref",
    "infAP": "infap",
    "unj_5": "unjudged@5",
    "unj_10": "unjudged@10",
    "unj_20": "unjudged@20",
    "rbp": "rbp_p0.9",  # trec_eval's default persistence
    "rbp_resid": "rbp_residual_p0.9",
}
# Under -M100 the cut-offs past 100 are where the truncation shows.
CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
PLAIN = {
    **{f"P_{k}": f"precision@{k}" for k in CUTS},
    **{f"recall_{k}": f"recall@{k}" for k in CUTS},
    **{f"ndcg_cut_{k}": f"ndcg@{k}" for k in CUTS},
    "recip_rank": "mrr@1000",
}


def trec_eval_output(name: str) -> dict[tuple[str, str], float]:
    values = {}
    for line in (DATA / name).read_text().splitlines():
        measure, topic, value = line.split()
        if measure in TREC_MEASURES or measure in PLAIN:
            values[(measure, topic)] = float(value)
    return values


@pytest.mark.parametrize(
    ("qrels", "results", "expected", "threshold", "compat", "max_passages"),
    [
        ("qrels.test", "results.test", "out.test.aq", 1, "trec_eval", None),
        # Graded 0-4 and -1 (in the pool, unjudged) with -l2.
        ("qrels.rel_level", "results.test", "out.test.aql", 2, "trec_eval", None),
        ("qrels.test", "results.trunc", "out.test.aqc", 1, "trec_eval-c", None),
        # -M100: at most 100 documents per topic.
        ("qrels.test", "results.trunc", "out.test.aqcM", 1, "trec_eval-c", 100),
    ],
)
def test_equal_to_trec_eval_on_its_test_files(
    tmp_path, qrels, results, expected, threshold, compat, max_passages
):
    gold = load_gold(DATA / qrels)
    run = load_run(presorted_run(DATA / results, tmp_path / "run.trec"))
    result = scored(
        gold,
        run,
        persistences=(0.9,),
        ks=CUTS,
        gain="linear",
        threshold=threshold,
        mrr_cutoff=1000,
        compat=compat,
        max_passages=max_passages,
    )
    values = trec_eval_output(expected)
    assert len(values) == 4 * (len(TREC_MEASURES) + len(PLAIN))
    for (measure, topic), value in values.items():
        name = TREC_MEASURES.get(measure) or PLAIN[measure]
        ours = result.metrics[name] if topic == "all" else result.per_question[topic][name]
        assert ours == pytest.approx(value, abs=5e-5), (measure, topic)


def test_bpref_figures_named_in_the_issue(tmp_path):
    gold = load_gold(DATA / "qrels.test")
    run = load_run(presorted_run(DATA / "results.test", tmp_path / "run.trec"))
    result = scored(gold, run, ks=(10,), gain="linear", compat="trec_eval")
    assert round(result.metrics["bpref"], 4) == 0.1981
    bprefs = [round(result.per_question[t]["bpref"], 4) for t in ("301", "302", "303")]
    assert bprefs == [0.1230, 0.4712, 0.0000]
    # No document of these topics is sampled out of the pool: infAP is MAP to 4 decimals.
    assert round(result.metrics["infap"], 4) == round(result.metrics["ap"], 4) == 0.1785


# --- the class: unjudged passages never move the measures built to ignore them ---------------

passage_strategy = st.tuples(
    st.sampled_from(["D", "E"]), st.integers(0, 90), st.integers(1, 30)
).map(lambda t: (t[0], t[1], t[1] + t[2]))


@settings(max_examples=200, deadline=None)
@given(
    spans=st.lists(
        st.tuples(
            st.sampled_from(["D", "E"]), st.integers(0, 90), st.integers(1, 30), st.integers(0, 2)
        ),
        min_size=1,
        max_size=5,
    ),
    judged=st.lists(passage_strategy, max_size=4),
    ranking=st.lists(passage_strategy, max_size=12),
    strangers=st.lists(st.tuples(st.integers(0, 12), st.integers(0, 500)), max_size=6),
    min_overlap=st.integers(1, 5),
    threshold=st.integers(1, 2),
)
def test_unjudged_passages_leave_bpref_and_condensed_measures_unchanged(
    spans, judged, ranking, strangers, min_overlap, threshold
):
    gold = Gold(
        questions={
            "q": question("q", *(span(d, g, s, s + n) for d, s, n, g in spans), judged=judged)
        }
    )
    # Passages of a document nobody judged, slipped in anywhere.
    mixed = list(ranking)
    for position, start in strangers:
        mixed.insert(min(position, len(mixed)), ("U", start, start + 10))
    options = {"ks": (1, 3, 5, 10), "min_overlap": min_overlap, "threshold": threshold}
    plain = scored(gold, run_of({"q": ranking}), **options).per_question.get("q")
    with_strangers = scored(gold, run_of({"q": mixed}), **options).per_question.get("q")
    if plain is None:  # no span of grade >= 1: unanswerable, not averaged
        return
    for name in ("bpref", "condensed_ap", "condensed_mrr@10") + tuple(
        f"condensed_{m}@{k}" for m in ("precision", "ndcg") for k in (1, 3, 5, 10)
    ):
        assert with_strangers[name] == pytest.approx(plain[name]), name
    # ...and unjudged@k counts them (with whatever else nobody judged).
    for k in (1, 3, 5, 10):
        unjudged_strangers = sum(1 for p in mixed[:k] if p[0] == "U")
        assert with_strangers[f"unjudged@{k}"] * k >= unjudged_strangers - 1e-9
