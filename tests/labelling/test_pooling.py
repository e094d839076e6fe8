import random

import pytest

from labelling.pooling import (
    Hit,
    Passage,
    PoolingError,
    PoolStats,
    pool_question,
    pool_stats,
    shuffled_order,
)


def hit(retriever: str, rank: int, version_id: int, start: int, end: int, score=None) -> Hit:
    return Hit(retriever=retriever, rank=rank, score=score, passage=Passage(version_id, start, end))


def spans(candidates) -> list[tuple[int, int, int]]:
    return [(c.version_id, c.start, c.end) for c in candidates]


def test_depth_cut_keeps_ranks_up_to_depth_per_retriever() -> None:
    hits = [hit("bm25", rank, 1, rank * 100, rank * 100 + 50) for rank in range(1, 6)]
    hits += [hit("minilm", rank, 2, rank * 100, rank * 100 + 50) for rank in range(1, 6)]
    pool = pool_question(hits, depth=3)
    assert spans(pool) == [(1, 100, 150), (1, 200, 250), (1, 300, 350)] + [
        (2, 100, 150),
        (2, 200, 250),
        (2, 300, 350),
    ]
    assert len(pool_question(hits, depth=10)) == 10


def test_overlapping_passages_in_one_version_merge() -> None:
    pool = pool_question(
        [hit("bm25", 1, 7, 0, 100, 12.5), hit("minilm", 2, 7, 99, 180, 0.8)], depth=10
    )
    assert spans(pool) == [(7, 0, 180)]
    assert [(h.retriever, h.rank, h.score) for h in pool[0].provenance] == [
        ("bm25", 1, 12.5),
        ("minilm", 2, 0.8),
    ]


def test_touching_passages_and_other_versions_do_not_merge() -> None:
    # Half-open spans: [0, 100) and [100, 200) share no character.
    pool = pool_question(
        [hit("a", 1, 7, 0, 100), hit("b", 1, 7, 100, 200), hit("c", 1, 8, 50, 150)], depth=10
    )
    assert spans(pool) == [(7, 0, 100), (7, 100, 200), (8, 50, 150)]


def test_merging_is_transitive_through_a_chain() -> None:
    a, b, c = hit("x", 1, 3, 0, 100), hit("y", 1, 3, 90, 210), hit("z", 1, 3, 200, 300)
    assert a.passage.end <= c.passage.start  # a and c do not overlap directly
    for order in ([a, b, c], [c, a, b], [b, c, a]):
        pool = pool_question(order, depth=5)
        assert spans(pool) == [(3, 0, 300)]
        assert [h.retriever for h in pool[0].provenance] == ["x", "y", "z"]


def test_contained_passage_merges_without_shrinking() -> None:
    pool = pool_question([hit("a", 1, 1, 0, 500), hit("b", 1, 1, 10, 20)], depth=1)
    assert spans(pool) == [(1, 0, 500)]


def test_same_passage_from_several_retrievers_is_one_candidate_with_all_provenance() -> None:
    hits = [
        hit("minilm", 4, 5, 10, 60, 0.71),
        hit("bm25", 2, 5, 10, 60, 7.1),
        hit("team", 1, 5, 10, 60),
        hit("bm25", 1, 5, 40, 90, 9.3),
    ]
    (candidate,) = pool_question(hits, depth=5)
    assert (candidate.start, candidate.end) == (10, 90)
    assert [(h.retriever, h.rank) for h in candidate.provenance] == [
        ("bm25", 1),
        ("bm25", 2),
        ("minilm", 4),
        ("team", 1),
    ]
    assert candidate.retrievers == {"bm25", "minilm", "team"}


def test_pool_does_not_depend_on_the_order_of_hits() -> None:
    hits = [
        hit(r, rank, v, s, s + 40, float(rank))
        for r in ("bm25", "minilm")
        for rank, (v, s) in enumerate([(1, 0), (1, 30), (2, 500), (1, 300), (3, 0)], start=1)
    ]
    expected = pool_question(hits, depth=4)
    for seed in range(5):
        shuffled = hits[:]
        random.Random(seed).shuffle(shuffled)
        assert pool_question(shuffled, depth=4) == expected


def test_empty_pool_and_bad_input() -> None:
    assert pool_question([], depth=10) == []
    with pytest.raises(PoolingError, match="depth"):
        pool_question([], depth=0)
    with pytest.raises(PoolingError, match="start < end"):
        Passage(1, 10, 10)
    with pytest.raises(PoolingError, match="rank 0"):
        hit("bm25", 0, 1, 0, 10)


def test_shuffled_order_is_a_stable_seeded_permutation() -> None:
    keys = [(1, start, start + 50) for start in range(0, 2000, 100)]
    order = shuffled_order(keys, seed="question-42")
    assert sorted(order) == list(range(len(keys)))
    assert order == shuffled_order(list(keys), seed="question-42")  # same in any process
    assert order != list(range(len(keys)))
    assert order != shuffled_order(keys, seed="question-43")


def test_shuffled_order_of_keys_ignores_input_order_and_provenance() -> None:
    hits = [hit("bm25", rank, 1, rank * 100, rank * 100 + 60) for rank in range(1, 9)]
    hits += [hit("minilm", 9 - rank, 1, rank * 100 + 30, rank * 100 + 50) for rank in range(1, 9)]

    def shown(hit_order: list[Hit]) -> list[tuple[int, int, int]]:
        pool = pool_question(hit_order, depth=10)
        keys = [(c.version_id, c.start, c.end) for c in pool]
        return [keys[i] for i in shuffled_order(keys, seed="q7")]

    reordered = hits[::-1]
    assert shown(hits) == shown(reordered)
    # Ranks and scores are not in the key, so a different ranking of the same passages shows
    # the same order.
    reranked = [Hit(h.retriever, 9 - h.rank, 1.0, h.passage) for h in hits]
    assert shown(reranked) == shown(hits)
    keys = [(1, s, s + 10) for s in range(0, 300, 10)]
    permuted = keys[::-1]
    assert [keys[i] for i in shuffled_order(keys, seed="q")] == [
        permuted[i] for i in shuffled_order(permuted, seed="q")
    ]


def test_pool_stats_count_contributions_unique_and_overlap() -> None:
    hits = [
        hit("bm25", 1, 1, 0, 100),
        hit("minilm", 3, 1, 50, 120),  # merges with bm25's: found by both
        hit("bm25", 2, 2, 0, 100),  # bm25 only
        hit("bm25", 3, 3, 0, 100),  # bm25 only
        hit("minilm", 1, 4, 0, 100),  # minilm only
        hit("team", 1, 5, 0, 100),
        hit("minilm", 2, 5, 20, 40),  # team and minilm
        hit("bm25", 4, 5, 30, 60),  # ... and bm25
    ]
    stats = pool_stats(pool_question(hits, depth=10))
    assert stats == PoolStats(
        size=5,
        per_retriever={"bm25": 4, "minilm": 3, "team": 1},
        unique={"bm25": 2, "minilm": 1, "team": 0},
        overlap={("bm25", "minilm"): 2, ("bm25", "team"): 1, ("minilm", "team"): 1},
    )
    assert pool_stats([]) == PoolStats(size=0, per_retriever={}, unique={}, overlap={})
