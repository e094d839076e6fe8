import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan, Passage, UnanchoredSpan
from goldeval.formats.runs import Ranking, Run
from goldeval.scoring.metrics import MetricOptions, evaluate_run, first_reaching_ranks


def span(doc_id, grade, start=None, end=None, **extra):
    return GoldSpan(doc_id=doc_id, start=start, end=end, grade=grade, **extra)


def question(question_id, *spans, judged=()):
    return GoldQuestion(
        question_id=question_id,
        question=f"text of {question_id}",
        answerable=any(s.grade >= 1 for s in spans),
        spans=tuple(spans),
        judged=tuple(judged),
    )


def gold_of(*questions, unanchored=()):
    return Gold(questions={q.question_id: q for q in questions}, unanchored=list(unanchored))


def run_of(rankings, *, refused=None):
    run = Run(name="run")
    for question_id, passages in rankings.items():
        run.rankings[question_id] = Ranking(
            passages=[p if isinstance(p, Passage) else Passage(*p) for p in passages],
            refused=None if refused is None else refused.get(question_id, False),
        )
    return run


def scores(gold, run, **options):
    return evaluate_run(gold=gold, run=run, options=MetricOptions(**options))


SEED_GOLD = gold_of(question("q1", span("A", 2), span("B", 1)))
SEED_RUN = run_of({"q1": ["X", "A", "Y", "B", "Z"]})


def test_seed_worked_example():
    result = scores(SEED_GOLD, SEED_RUN, ks=(3, 5))
    assert result.metrics["recall@3"] == 0.5
    assert result.metrics["recall@5"] == 1.0
    assert result.metrics["mrr@10"] == 0.5
    assert round(result.metrics["ndcg@5"], 4) == 0.6399
    assert round(result.metrics["ndcg@3"], 4) == 0.5213
    assert result.metrics["precision@3"] == pytest.approx(1 / 3)
    assert result.metrics["precision@5"] == pytest.approx(2 / 5)


def test_seed_worked_example_linear_gain():
    result = scores(SEED_GOLD, SEED_RUN, ks=(3,), gain="linear")
    assert round(result.metrics["ndcg@3"], 4) == 0.4796


def test_ndcg_formula_by_hand():
    # DCG = (2^2-1)/log2(3) + (2^1-1)/log2(5); ideal = 3/log2(2) + 1/log2(3).
    result = scores(SEED_GOLD, SEED_RUN, ks=(5,))
    expected = (3 / math.log2(3) + 1 / math.log2(5)) / (3 + 1 / math.log2(3))
    assert result.metrics["ndcg@5"] == pytest.approx(expected)


def test_ideal_dcg_counts_relevant_units_never_retrieved():
    gold = gold_of(question("q1", span("A", 2), span("B", 2), span("C", 2)))
    perfect_but_short = run_of({"q1": ["A"]})
    result = scores(gold, perfect_but_short, ks=(3,))
    ideal = 3 + 3 / math.log2(3) + 3 / math.log2(4)
    assert result.metrics["ndcg@3"] == pytest.approx(3 / ideal)
    assert result.metrics["recall@3"] == pytest.approx(1 / 3)


def test_near_duplicate_chunks_of_one_span_earn_nothing_extra():
    gold = gold_of(question("q1", span("d", 2, 100, 400), span("e", 1, 0, 50)))
    one_chunk = run_of({"q1": [("d", 100, 400), ("e", 0, 50)]})
    duplicates = [("d", 90 + i, 300 + i) for i in range(5)]
    five_chunks = run_of({"q1": [*duplicates, ("e", 0, 50)]})
    single = scores(gold, one_chunk, ks=(1, 5, 6))
    repeated = scores(gold, five_chunks, ks=(1, 5, 6))
    # The four repeats are not credited: precision counts one relevant passage in the top 5,
    # and nDCG@5 stays below what two distinct relevant passages would give.
    assert repeated.metrics["recall@5"] == 0.5
    assert repeated.metrics["precision@5"] == pytest.approx(1 / 5)
    ideal = 3 + 1 / math.log2(3)
    assert repeated.metrics["ndcg@5"] == pytest.approx(3 / ideal)
    assert repeated.metrics["recall@6"] == 1.0
    assert single.metrics["ndcg@1"] == repeated.metrics["ndcg@1"]
    assert repeated.metrics["ndcg@6"] < single.metrics["ndcg@6"]


def test_a_passage_reaching_two_spans_takes_the_higher_grade_and_reaches_both():
    gold = gold_of(question("q1", span("d", 1, 0, 100), span("d", 2, 150, 300)))
    run = run_of({"q1": [("d", 50, 200), ("d", 0, 300)]})
    result = scores(gold, run, ks=(1, 2))
    assert result.metrics["recall@1"] == 1.0
    assert result.metrics["ndcg@1"] == pytest.approx(3 / 3)
    # The second passage reaches nothing new.
    assert result.metrics["precision@2"] == 0.5


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=999), max_size=12, unique=True))
def test_rechunking_the_same_text_scores_the_same_recall(cuts):
    gold = gold_of(
        question("q1", span("d", 2, 120, 410), span("d", 1, 600, 640), span("other", 1, 0, 10))
    )
    bounds = [0, *sorted(cuts), 1000]
    pieces = [("d", start, end) for start, end in zip(bounds, bounds[1:], strict=False)]
    whole = scores(gold, run_of({"q1": [("d", 0, 1000)]}), ks=(len(pieces),))
    cut = scores(gold, run_of({"q1": pieces}), ks=(len(pieces),))
    key = f"recall@{len(pieces)}"
    assert cut.metrics[key] == whole.metrics[key] == pytest.approx(2 / 3)


def test_whole_document_span_and_ranged_passage_meet():
    gold = gold_of(question("q1", span("d", 2)), question("q2", span("d", 1, 10, 20)))
    run = run_of({"q1": [("d", 500, 600)], "q2": [("d",)]})
    result = scores(gold, run, ks=(1,))
    assert result.per_question["q1"]["recall@1"] == 1.0
    assert result.per_question["q2"]["recall@1"] == 1.0


def test_min_overlap():
    gold = gold_of(question("q1", span("d", 1, 100, 200)))
    run = run_of({"q1": [("d", 195, 300), ("d", 150, 160)]})
    assert scores(gold, run, ks=(1,), min_overlap=1).metrics["recall@1"] == 1.0
    strict = scores(gold, run, ks=(1, 2), min_overlap=10)
    assert strict.metrics["recall@1"] == 0.0
    assert strict.metrics["recall@2"] == 1.0
    assert strict.metrics["mrr@10"] == 0.5


def test_other_documents_never_reach_a_span():
    gold = gold_of(question("q1", span("d", 2, 0, 100)))
    run = run_of({"q1": [("e", 0, 100), ("d", 100, 200)]})
    result = scores(gold, run, ks=(2,))
    assert result.metrics["recall@2"] == 0.0  # touching [100, 200) does not overlap [0, 100)


def test_mrr_cutoff():
    gold = gold_of(question("q1", span("A", 1)))
    run = run_of({"q1": [f"x{i}" for i in range(10)] + ["A"]})
    assert scores(gold, run).metrics["mrr@10"] == 0.0
    assert scores(gold, run, mrr_cutoff=11).metrics["mrr@11"] == pytest.approx(1 / 11)


def test_threshold_decides_recall_mrr_precision_but_ndcg_keeps_every_grade():
    gold = gold_of(question("q1", span("A", 2), span("B", 1)))
    run = run_of({"q1": ["B", "A"]})
    result = scores(gold, run, ks=(1, 2), threshold=2, gain="linear")
    assert result.metrics["recall@1"] == 0.0  # B (grade 1) is not relevant at threshold 2
    assert result.metrics["recall@2"] == 1.0
    assert result.metrics["mrr@10"] == 0.5
    assert result.metrics["precision@2"] == 0.5
    ideal = 2 + 1 / math.log2(3)
    assert result.metrics["ndcg@2"] == pytest.approx((1 + 2 / math.log2(3)) / ideal)


def test_unanswerable_questions_are_reported_apart():
    gold = gold_of(
        question("q1", span("A", 1)),
        question("q2", span("A", 0)),  # judged, nothing relevant
        question("q3"),
        question("q4", span("C", 2)),
    )
    run = run_of(
        {"q1": ["A"], "q2": ["A"], "q3": [], "q4": ["x"]},
        refused={"q2": True, "q3": False, "q4": True},
    )
    result = scores(gold, run, ks=(1,))
    assert result.questions == 4
    assert result.answerable == 2
    assert result.metrics["recall@1"] == 0.5  # q1 and q4 only
    assert result.unanswerable.questions == 2
    assert result.unanswerable.refusal_accuracy == 0.5
    assert result.unanswerable.wrongly_refused == 0.5
    assert set(result.per_question) == {"q1", "q4"}
    assert result.unanswerable_questions == ["q2", "q3"]


def test_refusal_figures_are_none_when_the_run_does_not_say():
    gold = gold_of(question("q1", span("A", 1)), question("q2"))
    result = scores(gold, run_of({"q1": ["A"], "q2": []}))
    assert result.unanswerable.questions == 1
    assert result.unanswerable.refusal_accuracy is None
    assert result.unanswerable.wrongly_refused is None


def test_the_threshold_never_changes_answerability():
    # Issue 13, defect 1: q1's only evidence is grade 1. At threshold 2 it stays answerable and
    # keeps its place: recall undefined (counted apart), precision and MRR 0, nDCG as always.
    gold = gold_of(question("q1", span("A", 1)), question("q2", span("A", 2)))
    result = scores(gold, run_of({"q1": ["A"], "q2": ["A"]}), threshold=2, ks=(1,))
    assert result.answerable == 2
    assert result.unanswerable.questions == 0
    assert result.recall_undefined == 1
    assert result.per_question["q1"] == {
        "recall@1": None,
        "precision@1": 0.0,
        "mrr@10": 0.0,
        "ndcg@1": 1.0,
        "judged@1": 1.0,
    }
    assert result.metrics["recall@1"] == 1.0  # q2 alone
    assert result.metrics["precision@1"] == 0.5
    assert result.metrics["mrr@10"] == 0.5
    assert result.metrics["ndcg@1"] == 1.0


def test_a_run_refusing_a_low_grade_question_is_not_rewarded_at_a_higher_threshold():
    gold = gold_of(question("q1", span("A", 1)), question("q2", span("A", 2)), question("q3"))
    rankings = {"q1": ["A"], "q2": ["A"], "q3": []}
    right = run_of(rankings, refused={"q3": True})
    wrong = run_of(rankings, refused={"q1": True, "q3": True})
    for threshold in (1, 2):
        good = scores(gold, right, threshold=threshold)
        bad = scores(gold, wrong, threshold=threshold)
        assert good.unanswerable.questions == bad.unanswerable.questions == 1
        assert good.unanswerable.refusal_accuracy == bad.unanswerable.refusal_accuracy == 1.0
        assert good.unanswerable.wrongly_refused == 0.0
        assert bad.unanswerable.wrongly_refused == 0.5


def test_a_missing_question_scores_zero_and_is_counted():
    gold = gold_of(question("q1", span("A", 1)), question("q2", span("B", 1)), question("q3"))
    result = scores(gold, run_of({"q1": ["A"]}), ks=(1,))
    assert result.missing == 2
    assert result.missing_questions == ["q2", "q3"]
    assert result.metrics["recall@1"] == 0.5
    assert result.per_question["q2"] == dict.fromkeys(MetricOptions(ks=(1,)).metric_names(), 0.0)


def test_judged_at_k():
    gold = gold_of(
        question("q1", span("d", 2, 0, 100), judged=[Passage("d", 300, 400), Passage("e")])
    )
    run = run_of({"q1": [("d", 50, 60), ("x",), ("d", 350, 380), ("e", 5, 9), ("d", 500, 600)]})
    result = scores(gold, run, ks=(1, 2, 4, 5, 10))
    assert result.metrics["judged@1"] == 1.0
    assert result.metrics["judged@2"] == 0.5
    assert result.metrics["judged@4"] == 0.75
    assert result.metrics["judged@5"] == 0.6
    # Only five passages were returned, so five is the divisor at k = 10.
    assert result.metrics["judged@10"] == 0.6


def test_judged_counts_grade_zero_documents_at_document_level():
    gold = gold_of(question("q1", span("A", 1), span("B", 0)))
    result = scores(gold, run_of({"q1": ["B", "Z"]}), ks=(2,))
    assert result.metrics["judged@2"] == 0.5
    assert result.metrics["recall@2"] == 0.0


def test_unanchored_span_counts_but_cannot_be_reached():
    lost = span("d", 1, 0, 10, version=1, quote="gone")
    gold = gold_of(
        question("q1", span("d", 2, 50, 90), lost),
        unanchored=[UnanchoredSpan("q1", lost, corpus_version=2)],
    )
    result = scores(gold, run_of({"q1": [("d", 0, 100)]}), ks=(1,))
    assert result.metrics["recall@1"] == 0.5


def test_metric_names_follow_the_options():
    names = MetricOptions(ks=(5, 1), mrr_cutoff=20).metric_names()
    assert names == [
        "recall@1",
        "recall@5",
        "precision@1",
        "precision@5",
        "mrr@20",
        "ndcg@1",
        "ndcg@5",
        "judged@1",
        "judged@5",
    ]


@pytest.mark.parametrize(
    "options",
    [
        {"ks": ()},
        {"ks": (0,)},
        {"threshold": 0},
        {"gain": "log"},
        {"mrr_cutoff": 0},
        {"min_overlap": 0},
    ],
)
def test_bad_options_are_refused(options):
    with pytest.raises(ValueError):
        MetricOptions(**options)


def test_no_answerable_question_gives_no_averages():
    result = scores(gold_of(question("q1")), run_of({"q1": ["A"]}))
    assert result.answerable == 0
    assert all(value is None for value in result.metrics.values())


# --- first_reaching_ranks: the reach rule the evaluation page shows, the metrics' own ---------


def ranks(q, passages, *, depth=10, min_overlap=1):
    return first_reaching_ranks(
        q, [Passage(*p) for p in passages], depth=depth, min_overlap=min_overlap
    )


def test_first_reaching_ranks_whole_document_spans_and_passages():
    q = question("q", span("A", 2), span("B", 1, 10, 20), span("C", 0))
    assert ranks(q, [("X",), ("B",), ("A", 5, 6), ("A",), ("C",)]) == [3, 2, None]
    assert ranks(q, [("A", 5, 6)], min_overlap=2) == [None, None, None]  # 1 char < 2
    assert ranks(q, [("B",)], min_overlap=11) == [None, None, None]  # the span is 10 long


def test_first_reaching_ranks_min_overlap_edges_and_touching_passages():
    q = question("q", span("A", 1, 10, 20))
    assert ranks(q, [("A", 0, 10), ("A", 20, 30)]) == [None]  # touching on both sides
    assert ranks(q, [("A", 0, 10), ("A", 19, 30)]) == [2]  # one shared character
    assert ranks(q, [("A", 0, 12), ("A", 17, 30)], min_overlap=3) == [2]  # exactly 3
    assert ranks(q, [("A", 0, 12)], min_overlap=3) == [None]  # 2 < 3


def test_first_reaching_ranks_credit_each_span_once_at_its_first_rank_within_depth():
    q = question("q", span("A", 2, 0, 100), span("A", 1, 100, 200))
    passages = [("A", 10, 20), ("A", 10, 20), ("A", 50, 150), ("A", 150, 160)]
    assert ranks(q, passages) == [1, 3]
    assert ranks(q, passages, depth=2) == [1, None]


passages_strategy = st.lists(
    st.one_of(
        st.tuples(st.sampled_from("AB")),
        st.tuples(st.sampled_from("AB"), st.integers(0, 40), st.integers(1, 12)).map(
            lambda t: (t[0], t[1], t[1] + t[2])
        ),
    ),
    max_size=12,
)
spans_strategy = st.lists(
    st.one_of(
        st.tuples(st.sampled_from("AB"), st.integers(0, 2)).map(lambda t: span(t[0], t[1])),
        st.tuples(
            st.sampled_from("AB"), st.integers(0, 2), st.integers(0, 40), st.integers(1, 12)
        ).map(lambda t: span(t[0], t[1], t[2], t[2] + t[3])),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=400, deadline=None)
@given(
    spans_strategy,
    passages_strategy,
    st.integers(1, 4),
    st.integers(1, 3),
    st.integers(1, 2),
)
def test_first_reaching_ranks_agree_with_evaluate_run(spans, passages, min_overlap, depth, t):
    q = question("q", *spans)
    ks = tuple(range(1, depth + 1))
    options = MetricOptions(ks=ks, min_overlap=min_overlap, threshold=t, mrr_cutoff=depth)
    result = evaluate_run(gold=gold_of(q), run=run_of({"q": passages}), options=options)
    found = ranks(q, passages, depth=depth, min_overlap=min_overlap)
    relevant = [rank for s, rank in zip(q.spans, found, strict=True) if s.grade >= t]
    assert [rank for s, rank in zip(q.spans, found, strict=True) if s.grade < 1] == [None] * sum(
        s.grade < 1 for s in q.spans
    )
    if not any(s.grade >= 1 for s in q.spans):
        assert result.unanswerable_questions == ["q"]
        return
    assert result.unanswerable_questions == []
    if not relevant:
        assert all(result.per_question["q"][f"recall@{k}"] is None for k in ks)
        assert result.per_question["q"][f"mrr@{depth}"] == 0.0
        return
    for k in ks:
        reached = sum(1 for rank in relevant if rank is not None and rank <= k)
        assert result.per_question["q"][f"recall@{k}"] == reached / len(relevant)
    first = min((rank for rank in relevant if rank is not None), default=None)
    assert result.per_question["q"][f"mrr@{depth}"] == (0.0 if first is None else 1 / first)
