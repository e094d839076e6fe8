"""A worker started with GOLDSET_WORKER_PRIORITY=low gives way to labellers' requests: SCHED_IDLE
for itself and what it starts later, and the lowest weight for its autogroup when it leads its
own session (goldset.cpu_priority). Each case runs in a child process: the change cannot be
taken back without privileges, and the suite's own process must keep its priority."""

import json
import os
import subprocess
import sys

import pytest

from goldset.cpu_priority import AUTOGROUP, autogroup_nice
from tests.conftest import REPO
from tests.test_settings import run_manage

# Skipped on a laptop without them; CI (GOLDSET_REQUIRE_SERVICES=1) runs these and fails instead.
needs_autogroup = pytest.mark.skipif(
    not AUTOGROUP.exists() and os.environ.get("GOLDSET_REQUIRE_SERVICES") != "1",
    reason="Linux with autogroups",
)

CHILD = """
import json, os, threading
from goldset.cpu_priority import autogroup_nice, give_way
done = give_way()
policies = {}
thread = threading.Thread(target=lambda: policies.update(thread=os.sched_getscheduler(0)))
thread.start(); thread.join()
pid = os.fork()
if pid == 0:
    os._exit(0 if os.sched_getscheduler(0) == os.SCHED_IDLE else 1)
_, status = os.waitpid(pid, 0)
print(json.dumps({
    "done": done, "policy": os.sched_getscheduler(0), "idle": os.SCHED_IDLE,
    "thread": policies["thread"], "child_idle": status == 0,
    "autogroup": autogroup_nice(),
}))
"""


def give_way_in_a_child(*, own_session: bool) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=own_session,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@needs_autogroup
def test_a_session_leader_gives_way_with_its_threads_children_and_autogroup():
    seen = give_way_in_a_child(own_session=True)
    assert seen["done"] == ["SCHED_IDLE", "autogroup nice 19"]
    assert seen["policy"] == seen["idle"]
    assert seen["thread"] == seen["idle"], "a thread started later (the encoder's) inherits it"
    assert seen["child_idle"], "a process forked later (the pool's) inherits it"
    assert seen["autogroup"] == 19


@needs_autogroup
def test_a_process_sharing_its_session_leaves_the_group_to_the_others():
    before = autogroup_nice()  # None when the suite runs in the root group, as on some CI
    seen = give_way_in_a_child(own_session=False)
    assert seen["done"] == [
        "SCHED_IDLE",
        "autogroup shared with this session's other processes: left as it is",
    ]
    assert seen["policy"] == seen["idle"]
    assert seen["autogroup"] == before == autogroup_nice()
    assert os.sched_getscheduler(0) != os.SCHED_IDLE, "the suite's own process is untouched"


def test_a_process_in_the_root_group_has_no_autogroup_weight(tmp_path):
    # As the kernel prints them: one line for an autogroup, nothing for the root group.
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "autogroup").write_text("/autogroup-85 nice 19\n")
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "autogroup").write_text("")
    assert autogroup_nice(7, proc=tmp_path) == 19
    assert autogroup_nice(1, proc=tmp_path) is None


def test_an_unknown_priority_is_refused_at_start_with_the_allowed_values():
    result = run_manage("check", DEBUG="1", GOLDSET_WORKER_PRIORITY="fastest")
    assert result.returncode != 0
    assert "GOLDSET_WORKER_PRIORITY is 'fastest': set it to normal or low." in result.stderr
    for accepted in (" Low ", "normal", ""):  # empty, as a blank compose entry sets it
        assert run_manage("check", DEBUG="1", GOLDSET_WORKER_PRIORITY=accepted).returncode == 0
