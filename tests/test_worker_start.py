"""What a web worker does before its first request (`goldset.worker_start.settle`)."""

import gc
import importlib
import weakref

import pytest

from goldset.worker_start import settle


class _Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the collector frees it


@pytest.fixture
def settled():
    yield settle
    gc.unfreeze()  # give the test process its collector back


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
