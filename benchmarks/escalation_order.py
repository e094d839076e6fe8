"""What ordering the adjudication queue costs at 60,000 candidates (issue 36 item 3).

    .venv/bin/python benchmarks/escalation_order.py [--questions 300] [--per-question 200]
                                                    [--documents 3000] [--repeats 7]

Django-free (`labelling.escalation`, `labelling.resolution`). A set of 300 questions with 200
candidates each, 500-character chunks every 400 characters of 3,000 documents, drawn so that
several questions pool the same text. The worst case for the order: every candidate undecided
(a set at the start of labelling), each with two votes. The reference, in the same process, is
the per-item gold rule (`resolve_item`) over the same items, which the queue runs anyway; the
figure is the order's extra time as a share of it. Medians of the repeats.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from labelling.escalation import questions_moved, vote_distance  # noqa: E402
from labelling.resolution import Vote, resolve_item  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--per-question", type=int, default=200)
    parser.add_argument("--documents", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(36)
    items = []
    for question in range(args.questions):
        for _ in range(args.per_question):
            version = rng.randrange(args.documents)
            start = 400 * rng.randrange(20)
            grades = (rng.randrange(3), rng.randrange(3))
            items.append((question, version, start, start + 500, grades))
    votes = [
        (Vote("ann", a, ((s, e),) if a else ()), Vote("bob", b, ((s, e),) if b else ()))
        for _, _, s, e, (a, b) in items
    ]

    def reference() -> None:
        for pair in votes:
            resolve_item(pair, planned_votes=2)

    def order() -> None:
        moved = questions_moved([(q, v, s, e) for q, v, s, e, _ in items])
        keyed = [
            (-vote_distance(grades), -moved[(q, v, s, e)], i)
            for i, (q, v, s, e, grades) in enumerate(items)
        ]
        keyed.sort()

    timings: dict[str, list[float]] = {"reference": [], "order": []}
    for _ in range(args.repeats):
        for name, work in (("reference", reference), ("order", order)):
            began = time.process_time()
            work()
            timings[name].append(time.process_time() - began)
    ref, extra = (statistics.median(timings[k]) for k in ("reference", "order"))
    print(f"{len(items):,} undecided items, {args.repeats} repeats, CPU medians")
    print(f"reference (the gold rule per item): {ref:.3f} s")
    print(f"queue order (questions moved, distance, sort): {extra:.3f} s = {extra / ref:.2f} x")


if __name__ == "__main__":
    main()
