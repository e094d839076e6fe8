"""What a web worker does before its first request (`goldset.worker_start.settle`)."""

import gc
import importlib
import weakref

import numpy  # noqa: F401 - loads the BLAS whose threads settle limits
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from goldset.worker_start import settle


class _Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the collector frees it


def blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


@pytest.fixture
def settled():
    before = max(blas_threads(), default=None)
    yield settle
    gc.unfreeze()  # give the test process its collector back
    threadpool_limits(limits=before, user_api="blas")


def test_settle_freezes_what_the_worker_holds(settled):
    kept = _Node()
    settled()
    assert gc.get_freeze_count() > 0
    tracked = {id(o) for o in gc.get_objects()}
    # Full collections no longer walk the worker's long-lived objects.
    assert id(kept) not in tracked
    assert id(kept.__dict__) not in tracked


def test_settle_collects_garbage_first_so_none_is_frozen_for_good(settled):
    cycle = _Node()
    gone = weakref.ref(cycle)
    del cycle
    settled()
    assert gone() is None


def test_objects_made_after_settle_are_collected_as_before(settled):
    settled()
    cycle = _Node()
    gone = weakref.ref(cycle)
    del cycle
    gc.collect()
    assert gone() is None


def test_the_wsgi_entry_settles(settled):
    import goldset.wsgi

    gc.unfreeze()
    importlib.reload(goldset.wsgi)  # as a gunicorn worker loads it
    assert gc.get_freeze_count() > 0


def test_settle_keeps_numpys_blas_to_one_thread(settled):
    """A request's matrix product runs on the worker's own thread, not one per core."""
    assert blas_threads()  # numpy's BLAS is loaded and seen
    settled()
    assert blas_threads() == {1}
