"""goldset.batching: ids in batches under SQLite's bound-parameter cap."""

import pytest

from goldset.batching import ID_BATCH, in_batches


def test_batches_keep_order_and_cover_every_id_once():
    ids = list(range(2 * ID_BATCH + 1))
    batches = list(in_batches(ids))
    assert [len(b) for b in batches] == [ID_BATCH, ID_BATCH, 1]
    assert [i for b in batches for i in b] == ids


def test_any_iterable_and_size():
    assert list(in_batches((c for c in "abcde"), size=2)) == [["a", "b"], ["c", "d"], ["e"]]
    assert list(in_batches([])) == []
    with pytest.raises(ValueError, match="at least one"):
        list(in_batches([1], size=0))
