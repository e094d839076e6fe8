"""The compiled BM25 kernel (goldeval/_bm25kernel.c) ranks exactly as the exhaustive scorer does:
on random corpora, with and without a mask, with repeated and unknown query terms, Lucene and
Okapi IDF (whose floor gives zero and negative weights), any k, the same passages in the same
order with the same scores bit for bit, ties to the lower index; and so does the numpy path it
replaces where the install has no C compiler."""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldeval import bm25 as bm25_module
from goldeval.bm25 import BM25Index
from goldeval.text.analysis import Analyzer

kernel = bm25_module.bm25kernel


def test_the_kernel_is_built_where_ci_runs():
    # `make install` compiles it; without it every search runs on numpy (slower, same).
    if os.environ.get("CI") and kernel is None:
        pytest.fail("goldeval._bm25kernel was not built: run `make install`")


needs_kernel = pytest.mark.skipif(kernel is None, reason="the C kernel is not built here")


def exhaustive(index: BM25Index, query: str, k: int, allowed: np.ndarray | None) -> list:
    """Every passage scored term by term in query order, matched ones sorted by (-score, index)."""
    arrays = index.to_arrays()
    blob = arrays["vocabulary"].tobytes().decode("utf-8")
    row_of = {term: row for row, term in enumerate(blob.split("\n") if blob else [])}
    indptr, indices, data = arrays["indptr"], arrays["indices"], arrays["data"]
    scores = np.zeros(len(index))
    matched = np.zeros(len(index), dtype=bool)
    for term, count in Counter(index.analyzer.tokens(query)).items():
        if term in row_of:
            lo, hi = indptr[row_of[term]], indptr[row_of[term] + 1]
            scores[indices[lo:hi]] += data[lo:hi].astype(np.float64) * count
            matched[indices[lo:hi]] = True
    if allowed is not None:
        matched &= allowed
    ranked = sorted(np.flatnonzero(matched).tolist(), key=lambda i: (-scores[i], i))
    return [(i, float(scores[i])) for i in ranked[:k]]


def searched(index: BM25Index, query: str, k: int, allowed, *, compiled: bool) -> list:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25_module, "bm25kernel", kernel if compiled else None)
        return index.search(query, k=k, allowed=allowed)


WORDS = [f"w{i}" for i in range(8)]
passage_texts = st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)
query_texts = st.lists(st.sampled_from([*WORDS, "unknown", "w0 w0"]), max_size=7).map(" ".join)


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(
    passages=st.lists(passage_texts, min_size=1, max_size=40),
    query=query_texts,
    idf=st.sampled_from(["lucene", "okapi"]),
    k=st.integers(1, 45),
    mask=st.none() | st.lists(st.booleans(), min_size=40, max_size=40),
)
def test_kernel_ranks_as_the_exhaustive_scorer(passages, query, idf, k, mask):
    index = BM25Index.build(passages, analyzer=Analyzer(), k1=1.2, b=0.75, idf=idf)
    allowed = None if mask is None else np.array(mask[: len(passages)], dtype=bool)
    expected = exhaustive(index, query, k, allowed)
    assert searched(index, query, k, allowed, compiled=True) == expected
    assert searched(index, query, k, allowed, compiled=False) == expected


def zipf_passages(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)]
    weights = 1.0 / np.arange(1, 301) ** 1.1
    weights /= weights.sum()
    return [
        " ".join(rng.choice(words, size=int(rng.integers(0, 40)), p=weights)) for _ in range(count)
    ]


@needs_kernel
@pytest.mark.parametrize("idf", ["lucene", "okapi"])
def test_kernel_on_a_larger_corpus_with_masks(idf):
    # Thousands of passages: many blocks of the selection pass, long rows, runs of tied scores.
    passages = zipf_passages(5000, seed=11)
    index = BM25Index.build(passages, analyzer=Analyzer(), idf=idf)
    rng = np.random.default_rng(3)
    masks = [None, rng.random(len(passages)) < 0.5, rng.random(len(passages)) < 0.01]
    queries = ["w0", "w0 w1", "w1 w0 w1 w299", "w5 w17 w3 w3 w120 w0 w2", "w250", "nothing"]
    queries += [" ".join(rng.choice(passages[i].split() or ["w0"], size=3)) for i in range(20)]
    for query in queries:
        for k in (1, 10, 100, 6000):
            for allowed in masks:
                expected = exhaustive(index, query, k, allowed)
                assert searched(index, query, k, allowed, compiled=True) == expected, query


def query_terms(index: BM25Index, query: str) -> tuple[list[int], list[int]]:
    """The query's known terms (rows of the stored index) in query order, and their counts."""
    blob = index.to_arrays()["vocabulary"].tobytes().decode("utf-8")
    row_of = {term: row for row, term in enumerate(blob.split("\n") if blob else [])}
    known = Counter(t for t in index.analyzer.tokens(query) if t in row_of)
    return [row_of[t] for t in known], list(known.values())


def postings(index: BM25Index, dense_from: int | None):
    """The kernel's hold on the index; dense_from: the shortest row given a bitmap (None: the
    kernel's own choice)."""
    arrays = index.to_arrays()
    extra = {} if dense_from is None else {"dense_from": dense_from}
    return kernel.Postings(
        arrays["indptr"].astype(np.int64),
        arrays["indices"].astype(np.int32),
        arrays["data"],
        len(index),
        **extra,
    )


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(520, 3000),
    words=st.integers(2, 30),
    k=st.integers(1, 200),
    dense_from=st.sampled_from([None, 1, 50, 10**9]),
    masked=st.booleans(),
)
def test_long_rows_and_many_ties_rank_as_the_exhaustive_scorer(
    seed, size, words, k, dense_from, masked
):
    # Hundreds of passages touched by the first rows read, few words, so many exactly tied
    # sums: the k-th best is found through the buckets of kth_largest, and candidates are found
    # in rows with a bitmap (every row, some, or none of them).
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(words)]
    weights = 1.0 / np.arange(1, words + 1) ** 1.2
    weights /= weights.sum()
    passages = [
        " ".join(rng.choice(vocabulary, size=int(rng.integers(1, 12)), p=weights))
        for _ in range(size)
    ]
    index = BM25Index.build(passages, analyzer=Analyzer())
    held = postings(index, dense_from)
    allowed = rng.random(size) < 0.6 if masked else None
    for _ in range(4):
        query = " ".join(rng.choice(vocabulary, size=int(rng.integers(1, 6))))
        rows, counts = query_terms(index, query)
        assert held.search(rows, counts, k, allowed) == exhaustive(index, query, k, allowed)


@needs_kernel
def test_okapi_zero_and_negative_weights_still_match():
    # "common" and "x" are in 3 of 4 passages: their raw Okapi IDF is negative, and so is the
    # floor (a quarter of the mean IDF), so those passages score below zero and are still results.
    passages = ["common x", "x common", "common x", "d"]
    index = BM25Index.build(passages, analyzer=Analyzer(), idf="okapi")
    hits = searched(index, "common", 5, None, compiled=True)
    assert [i for i, _ in hits] == [0, 1, 2]
    assert all(score < 0 for _, score in hits)
    assert hits == exhaustive(index, "common", 5, None)
    half = BM25Index.build(["common a", "common b", "c", "d"], analyzer=Analyzer(), idf="okapi")
    assert searched(half, "common", 5, None, compiled=True) == [(0, 0.0), (1, 0.0)]


@needs_kernel
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_search_many_on_threads_equals_search(threads, monkeypatch):
    # The kernel's threads take the queries one at a time, while the calling thread builds
    # the lists of those finished, in order.
    monkeypatch.setattr(bm25_module, "_THREADS", threads)
    passages = zipf_passages(3000, seed=5)
    index = BM25Index.build(passages, analyzer=Analyzer())
    rng = np.random.default_rng(8)
    queries = [" ".join(rng.choice([f"w{i}" for i in range(300)], size=4)) for _ in range(150)]
    queries += ["", "unknown"]
    allowed = rng.random(len(passages)) < 0.7
    for mask in (None, allowed):
        many = index.search_many(queries, k=20, allowed=mask)
        assert many == [exhaustive(index, q, 20, mask) for q in queries]


@needs_kernel
def test_search_many_on_more_threads_than_queries():
    index = BM25Index.build(zipf_passages(400, seed=4), analyzer=Analyzer())
    held = postings(index, None)
    pairs = [query_terms(index, q) for q in ("w0 w2", "w9", "nothing", "w1 w1 w30")]
    alone = [held.search(rows, counts, 7) for rows, counts in pairs]
    for threads in (1, 2, 4, 16, 99):
        assert held.search_many(pairs, 7, None, threads) == alone
        assert held.search_many([], 7, None, threads) == []
    empty = kernel.Postings(
        np.array([0, 0], dtype=np.int64),
        np.array([], dtype=np.int32),
        np.array([], dtype=np.float32),
        0,
    )
    assert empty.search_many([([0], [1])] * 40, 5, None, 2) == [[]] * 40


@needs_kernel
def test_a_damaged_index_is_refused_not_read():
    indptr = np.array([0, 2], dtype=np.int64)
    data = np.array([1.0, 2.0], dtype=np.float32)
    with pytest.raises(ValueError, match="below size"):
        kernel.Postings(indptr, np.array([0, 5], dtype=np.int32), data, 3)
    with pytest.raises(ValueError, match="wrong type"):
        kernel.Postings(indptr, np.array([0, 1], dtype=np.int64), data, 3)
    with pytest.raises(ValueError, match="wrong type or length"):
        kernel.Postings(indptr, np.array([0], dtype=np.int32), data[:1], 3)
    for dense_from in (1, 3):  # the row with and without a bitmap
        held = kernel.Postings(indptr, np.array([0, 2], dtype=np.int32), data, 3, dense_from)
        with pytest.raises(ValueError, match="terms of the index"):
            held.search([1], [1], 5)
        assert held.search([0], [2], 5) == [(2, 4.0), (0, 2.0)]


def test_a_pickled_index_searches_alike():
    # The kernel's hold on the arrays is not copied; the copy makes its own on its first search.
    import pickle

    index = BM25Index.build(zipf_passages(500, seed=2), analyzer=Analyzer())
    before = index.search("w0 w3 w40", k=10)
    copy = pickle.loads(pickle.dumps(index))  # noqa: S301 - our own bytes
    assert copy.search("w0 w3 w40", k=10) == before
