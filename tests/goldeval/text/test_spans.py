"""The one span-merge rule: ranges sharing a character merge (transitively); touching ones,
[0, 5) and [5, 10), stay two units, as the metrics (min_overlap 1) see them."""

from hypothesis import given, settings
from hypothesis import strategies as st

from goldeval.text.spans import merge_overlapping, merge_ranges, overlaps


def test_touching_ranges_do_not_overlap_and_stay_apart():
    assert not overlaps((0, 5), (5, 10)) and not overlaps((5, 10), (0, 5))
    assert merge_ranges([(5, 10), (0, 5)]) == [(0, 5), (5, 10)]


def test_ranges_sharing_one_character_merge():
    assert overlaps((0, 5), (4, 10)) and overlaps((4, 10), (0, 5))
    assert merge_ranges([(4, 10), (0, 5)]) == [(0, 10)]
    assert merge_ranges([(0, 10), (2, 3)]) == [(0, 10)]  # one inside the other
    assert merge_ranges([(3, 8), (3, 8)]) == [(3, 8)]


def test_merging_is_transitive_and_ordered_by_start():
    assert merge_ranges([(200, 300), (0, 100), (90, 210), (400, 500)]) == [(0, 300), (400, 500)]
    assert merge_ranges([]) == []


def test_groups_keep_their_members_in_offset_order():
    items = [("c", (90, 210)), ("a", (0, 100)), ("d", (210, 220)), ("b", (0, 100))]
    groups = merge_overlapping(items, offsets=lambda item: item[1])
    assert [(start, end, [name for name, _ in members]) for start, end, members in groups] == [
        (0, 210, ["a", "b", "c"]),
        (210, 220, ["d"]),
    ]


ranges = st.lists(
    st.tuples(st.integers(0, 60), st.integers(1, 15)).map(lambda p: (p[0], p[0] + p[1])),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(ranges)
def test_merged_ranges_cover_the_same_characters_and_never_share_one(given_ranges):
    merged = merge_ranges(given_ranges)
    covered = {c for start, end in given_ranges for c in range(start, end)}
    assert {c for start, end in merged for c in range(start, end)} == covered
    assert merged == sorted(merged)
    assert all(not overlaps(a, b) for a, b in zip(merged, merged[1:], strict=False))
    # Every given range sits inside exactly one merged range.
    for given_range in given_ranges:
        assert sum(s <= given_range[0] and given_range[1] <= e for s, e in merged) == 1
