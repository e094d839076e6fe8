import math
from collections import Counter

import bm25s
import numpy as np
import pytest
from bm25s.tokenization import Tokenized
from rank_bm25 import BM25Okapi

from goldeval.bm25 import BM25Index, BM25IndexError, top_k
from goldeval.text.analysis import Analyzer

PASSAGES = [
    "Annual leave is 25 days per year; carry-over needs approval under HR-POL-014.",
    "Parental leave: employees with one year of service may take up to 16 weeks.",
    "Expense claims must be filed within 30 days using form AB1234.",
    "The expense policy covers travel, meals and lodging for business trips.",
    "Remote work requests go to your manager and HR for approval.",
    "",
    "Leave leave leave: the word repeats so that term frequency saturates.",
    "Security badges are issued by facilities; lost badges cost 20 euros.",
    "Travel booked outside the portal is not reimbursed without approval.",
    "ISO-9001 audits happen every spring; the quality team prepares evidence.",
    "Approval workflows: manager approval first, then finance approval.",
    "A short one.",
]

QUERIES = [
    "annual leave",
    "leave leave approval",  # repeated query term counts twice, as in BM25Okapi
    "HR-POL-014 carry-over",
    "expense form AB1234",
    "quantum chromodynamics",  # no term in the corpus
    "the the approval of travel",  # terms in more than half the passages get the epsilon floor
    "",
]


def okapi_scores(passages, queries, analyzer, k1, b):
    okapi = BM25Okapi([analyzer.tokens(p) for p in passages], k1=k1, b=b)
    return [okapi.get_scores(analyzer.tokens(q)) for q in queries]


@pytest.mark.parametrize(
    ("analyzer", "k1", "b"),
    [
        (Analyzer(), 0.9, 0.4),
        (Analyzer(stem=True, stopwords=True), 0.9, 0.4),
        (Analyzer(stem=True), 1.5, 0.75),
        (Analyzer(), 1.2, 0.0),
        (Analyzer(), 2.0, 0.9),  # b=1 makes rank-bm25 divide 0 by 0 on the empty passage
    ],
)
def test_scores_equal_rank_bm25_okapi(analyzer: Analyzer, k1: float, b: float) -> None:
    index = BM25Index.build(PASSAGES, analyzer=analyzer, k1=k1, b=b, idf="okapi")
    expected = okapi_scores(PASSAGES, QUERIES, analyzer, k1, b)
    for query, okapi in zip(QUERIES, expected, strict=True):
        assert np.allclose(index.scores(query), okapi, rtol=0, atol=1e-5), query


def test_negative_idf_is_floored_like_rank_bm25() -> None:
    # "common" occurs in 4 of 5 passages: raw IDF < 0, replaced by epsilon * average IDF.
    passages = ["common alpha", "common beta", "common gamma", "common delta", "epsilon"]
    index = BM25Index.build(passages, analyzer=Analyzer(), idf="okapi")
    (okapi,) = okapi_scores(passages, ["common alpha"], Analyzer(), 0.9, 0.4)
    assert np.allclose(index.scores("common alpha"), okapi, rtol=0, atol=1e-5)
    assert index.scores("common")[0] > 0


def test_lucene_idf_equals_a_hand_computed_example() -> None:
    # N = 4 passages of lengths 2, 3, 1, 2 (avgdl 2); "leave" is in passages 0 and 1 (df 2).
    passages = ["leave policy", "leave leave approval", "badges", "travel approval"]
    index = BM25Index.build(passages, analyzer=Analyzer(), k1=0.9, b=0.4)
    assert index.idf == "lucene"
    idf = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))  # ln 2 = 0.6931
    # passage 0: tf 1, dl 2 -> norm 0.9 * (0.6 + 0.4 * 2 / 2) = 0.9
    # passage 1: tf 2, dl 3 -> norm 0.9 * (0.6 + 0.4 * 3 / 2) = 1.08
    expected = [idf * 1 * 1.9 / (1 + 0.9), idf * 2 * 1.9 / (2 + 1.08), 0.0, 0.0]
    assert expected[:2] == pytest.approx([0.693147, 0.855182], abs=1e-6)
    assert np.allclose(index.scores("leave"), expected, rtol=0, atol=1e-6)
    # A term in more than half the passages keeps a positive weight (Okapi's would be negative
    # before its floor): "common" in 4 of 5 -> ln(1 + 1.5 / 4.5) = ln(4/3).
    common = BM25Index.build(
        ["common alpha", "common beta", "common gamma", "common delta", "epsilon"],
        analyzer=Analyzer(),
    )
    # dl 2 = avgdl 1.8 * 10/9 -> norm 0.9 * (0.6 + 0.4 * 2 / 1.8)
    norm = 0.9 * (0.6 + 0.4 * 2 / 1.8)
    assert common.scores("common")[0] == pytest.approx(math.log(4 / 3) * 1.9 / (1 + norm))


@pytest.mark.parametrize(
    ("analyzer", "k1", "b"),
    [(Analyzer(), 0.9, 0.4), (Analyzer(stem=True, stopwords=True), 1.2, 0.75)],
)
def test_lucene_scores_equal_bm25s(analyzer: Analyzer, k1: float, b: float) -> None:
    """bm25s's method="lucene" scores tf / (tf + norm), as Lucene 8+ does: ours keep the classic
    (k1 + 1) numerator (as the Cranfield reference run and rank-bm25 do), a constant factor that
    changes no ranking."""
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in analyzer.tokens(p)] for p in PASSAGES]
    oracle = bm25s.BM25(method="lucene", k1=k1, b=b)
    oracle.index(Tokenized(ids=ids, vocab=vocab), show_progress=False)
    index = BM25Index.build(PASSAGES, analyzer=analyzer, k1=k1, b=b, idf="lucene")
    for query in QUERIES:
        known = [vocab[t] for t in analyzer.tokens(query) if t in vocab]
        expected = oracle.get_scores(known) * (k1 + 1) if known else np.zeros(len(PASSAGES))
        assert np.allclose(index.scores(query), expected, rtol=1e-5, atol=1e-5), query


def test_search_ranks_best_first_and_skips_passages_without_query_terms() -> None:
    index = BM25Index.build(PASSAGES, analyzer=Analyzer(stem=True))
    hits = index.search("expense claims", k=10)
    assert [i for i, _ in hits] == [2, 3]
    assert hits[0][1] > hits[1][1] > 0
    assert index.search("quantum", k=5) == []
    assert index.search("", k=5) == []


def test_code_query_finds_exactly_that_code() -> None:
    index = BM25Index.build(PASSAGES, analyzer=Analyzer(stem=True, stopwords=True))
    assert [i for i, _ in index.search("hr-pol-014", k=3)] == [0]
    assert [i for i, _ in index.search("ISO-9001", k=3)] == [9]


def test_top_k_matches_full_sort_with_ties_to_lower_index() -> None:
    passages = ["apple pie"] * 6 + ["apple"] * 3 + ["pie crust", "banana"]
    index = BM25Index.build(passages, analyzer=Analyzer())
    for k in range(1, 13):
        hits = index.search("apple pie", k=k)
        scores = index.scores("apple pie")
        matched = [i for i in range(len(passages)) if i != 10]
        expected = sorted(matched, key=lambda i: (-scores[i], i))[:k]
        assert [i for i, _ in hits] == expected
        assert [s for _, s in hits] == pytest.approx([scores[i] for i in expected])


def test_allowed_mask_applies_before_top_k() -> None:
    index = BM25Index.build(PASSAGES, analyzer=Analyzer())
    unrestricted = [i for i, _ in index.search("approval leave", k=3)]
    allowed = np.ones(len(PASSAGES), dtype=bool)
    allowed[unrestricted[:2]] = False
    restricted = index.search("approval leave", k=3, allowed=allowed)
    assert len(restricted) == 3
    assert not {i for i, _ in restricted} & set(unrestricted[:2])
    all_matches = index.search("approval leave", k=100)
    expected = [hit for hit in all_matches if allowed[hit[0]]][:3]
    assert restricted == expected


def test_allowed_mask_must_fit_the_index() -> None:
    index = BM25Index.build(PASSAGES, analyzer=Analyzer())
    with pytest.raises(BM25IndexError, match="one entry per passage"):
        index.search("leave", k=3, allowed=np.ones(3, dtype=bool))
    with pytest.raises(BM25IndexError, match="boolean"):
        index.search("leave", k=3, allowed=np.ones(len(PASSAGES)))
    with pytest.raises(BM25IndexError, match="k must be"):
        index.search("leave", k=0)


def test_search_many_equals_search() -> None:
    index = BM25Index.build(PASSAGES, analyzer=Analyzer(stem=True))
    allowed = np.arange(len(PASSAGES)) % 2 == 0
    assert index.search_many(QUERIES, k=4, allowed=allowed) == [
        index.search(q, k=4, allowed=allowed) for q in QUERIES
    ]


def test_bytes_round_trip_keeps_settings_and_scores() -> None:
    for idf in ("lucene", "okapi"):
        analyzer = Analyzer(stem=True, stopwords=True)
        index = BM25Index.build(PASSAGES, analyzer=analyzer, k1=1.2, b=0.6, idf=idf)
        loaded = BM25Index.from_bytes(index.to_bytes())
        assert loaded.analyzer == Analyzer(stem=True, stopwords=True)
        assert (loaded.k1, loaded.b, loaded.idf, len(loaded)) == (1.2, 0.6, idf, len(PASSAGES))
        for query in QUERIES:
            assert np.array_equal(loaded.scores(query), index.scores(query))
            assert loaded.search(query, k=5) == index.search(query, k=5)


def test_empty_corpus_and_empty_passages() -> None:
    for passages in ([], ["", "  !! "]):
        index = BM25Index.build(passages, analyzer=Analyzer())
        assert len(index) == len(passages)
        assert index.search("leave", k=3) == []
        assert BM25Index.from_bytes(index.to_bytes()).search("leave", k=3) == []


def test_bad_parameters_and_bytes_are_refused() -> None:
    with pytest.raises(BM25IndexError, match="k1"):
        BM25Index.build(PASSAGES, analyzer=Analyzer(), b=1.5)
    with pytest.raises(BM25IndexError, match="idf is one of lucene, okapi"):
        BM25Index.build(PASSAGES, analyzer=Analyzer(), idf="tfidf")
    with pytest.raises(BM25IndexError, match="not a stored BM25 index"):
        BM25Index.from_bytes(b"not an index")


def zipf_passages(count: int, seed: int = 5) -> list[str]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(400)]
    weights = 1.0 / np.arange(1, 401) ** 1.1
    weights /= weights.sum()
    return [
        " ".join(rng.choice(words, size=int(rng.integers(5, 60)), p=weights)) for _ in range(count)
    ]


def test_scores_are_the_term_at_a_time_sums_bit_for_bit() -> None:
    # The compiled matvec must add the weights in query-term order, exactly as summing each
    # term's row into the scores one after another does: ties and rank order depend on it.
    passages = zipf_passages(3000)
    for idf in ("lucene", "okapi"):
        index = BM25Index.build(passages, analyzer=Analyzer(), idf=idf)
        arrays = index.to_arrays()
        vocabulary = arrays["vocabulary"].tobytes().decode().split("\n")
        row_of = {term: row for row, term in enumerate(vocabulary)}
        indptr, indices, data = arrays["indptr"], arrays["indices"], arrays["data"]
        for query in ["w0 w1", "w3 w0 w3 w250", "w399 w7 w1 w1 w1 w0 w2", "w9"]:
            expected = np.zeros(len(passages))
            for term, count in Counter(query.split()).items():
                lo, hi = indptr[row_of[term]], indptr[row_of[term] + 1]
                expected[indices[lo:hi]] += count * data[lo:hi].astype(np.float64)
            assert np.array_equal(index.scores(query), expected), (idf, query)


def test_a_zero_weight_still_matches() -> None:
    # Okapi's IDF is exactly 0 for a term in half the passages: those passages contain a query
    # term, so they are results (score 0), as before scores were summed by a matrix product.
    index = BM25Index.build(["common a", "common b", "c", "d"], analyzer=Analyzer(), idf="okapi")
    assert index.search("common", k=5) == [(0, 0.0), (1, 0.0)]
    assert index.search("common zzz", k=5, allowed=np.array([False, True, True, True])) == [
        (1, 0.0)
    ]


@pytest.mark.parametrize("k", [1, 7, 100, 999])
def test_top_k_of_many_tied_candidates_equals_a_full_sort(k: int) -> None:
    # Enough candidates for top_k to cut below a sampled k-th score first; few distinct scores,
    # so the cut falls inside long runs of ties.
    rng = np.random.default_rng(k)
    scores = rng.integers(0, 40, size=200_000).astype(np.float64) / 7
    candidates = np.flatnonzero(rng.random(len(scores)) < 0.6)
    expected = sorted(candidates.tolist(), key=lambda i: (-scores[i], i))[:k]
    hits = top_k(scores, candidates, k=k)
    assert [i for i, _ in hits] == expected
    assert [s for _, s in hits] == [scores[i] for i in expected]
