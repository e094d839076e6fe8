"""Lowering a worker's CPU priority so that labellers' requests come first (Linux).

`nice -n 10 celery worker` is not enough on its own. Linux shares the CPU between groups of
processes first and only then between the processes of a group. A container or a systemd
service is its own cgroup, and a process that leads its own session (a service, `setsid`, a
terminal of its own) is its own "autogroup". A nice value only ranks a process inside its
group, so a niced index build in one group still takes an equal share against the web
processes in another. `benchmarks/labelling_load.py` shows the difference in labellers'
latency (docs/benchmarks.md).

`give_way()` does what a process can do for itself without privileges:

- SCHED_IDLE for itself and everything it starts later (the pool's children, the encoder's
  threads): inside its group it runs only on CPU time nothing else wants, and a request that
  wakes up preempts it at once;
- if it leads its own session, the lowest autogroup weight (nice 19 in /proc/self/autogroup),
  so the whole group gives way to other groups. A process that shares its session with others
  (started from a shell beside the web server) leaves the group alone: lowering it would slow
  those others too.

Cgroups are the orchestrator's to weigh: docker-compose's `cpu_shares`, systemd's `CPUWeight=`
(docs/operations/scale-out.md).
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
AUTOGROUP = PROC / "self" / "autogroup"
LOWEST_NICE = 19


def autogroup_nice(pid: int | str = "self", *, proc: Path = PROC) -> int | None:
    """A process's autogroup weight as a nice value; None in the root group, which has none.

    Processes whose session began before autogroups existed (pid 1's, and on some machines
    everything a CI runner starts) stay in the root group, where the kernel prints nothing.
    """
    text = (proc / str(pid) / "autogroup").read_text().split()
    return int(text[-1]) if text else None


def give_way() -> list[str]:
    """Lower this process's CPU priority as far as it can; what was done, for the log."""
    done = []
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        done.append("SCHED_IDLE")
    except (AttributeError, OSError):  # not Linux, or refused: a nice value is what is left
        os.nice(LOWEST_NICE - os.nice(0))
        done.append(f"nice {LOWEST_NICE}")
    if AUTOGROUP.exists():
        if os.getsid(0) == os.getpid():
            try:
                AUTOGROUP.write_text(str(LOWEST_NICE))
                done.append(f"autogroup nice {LOWEST_NICE}")
            except OSError as exc:
                done.append(f"autogroup left as it is ({exc.strerror})")
        else:
            done.append("autogroup shared with this session's other processes: left as it is")
    return done
