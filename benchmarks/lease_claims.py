"""What leases add to "next question": the release of lapsed leases each claim runs first,
timed against the claim itself in the same process and database (a ratio; absolute times on a
shared machine vary):

    .venv/bin/python benchmarks/lease_claims.py [--questions 5000] [--held 2500] [--rounds 40]
        [--database postgres|sqlite] [--pg-name goldset_bench_leases]

A pool of ``--questions`` single-slot questions; ``--held`` of them claimed by labellers whose
leases are still running (the release's index scan finds them and leaves them), and each round
a fresh labeller claims one more. Printed: the median wall and CPU milliseconds of
`release_lapsed_leases(project=...)` alone (nothing to release, the common case), and of
`claim_assignment` (release included), over ``--rounds`` rounds, and the release's share.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from grading_requests import configure  # noqa: E402 - sets Django up first


def world(questions: int, held: int):
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from corpus.models import Membership, Project
    from labelling.models import Assignment, Pool, Question, QuestionSet

    User = get_user_model()
    project = Project.objects.create(slug="bench-leases", name="Bench", lease_minutes=60)
    question_set = QuestionSet.objects.create(project=project, name="bench")
    pool = Pool.objects.create(question_set=question_set, name="p", state="ready")
    made = Question.objects.bulk_create(
        [
            Question(question_set=question_set, external_id=f"q{i}", text=f"question {i}")
            for i in range(questions)
        ]
    )
    holders = User.objects.bulk_create([User(username=f"h{i}") for i in range(held)])
    Membership.objects.bulk_create(
        [Membership(project=project, user=u, role="labeller") for u in holders]
    )
    until = timezone.now() + timezone.timedelta(minutes=60)
    Assignment.objects.bulk_create(
        [
            Assignment(
                pool=pool,
                question=q,
                slot=1,
                labeller=holders[i] if i < held else None,
                assigned_at=until if i < held else None,
                lease_expires_at=until if i < held else None,
            )
            for i, q in enumerate(made)
        ],
        batch_size=2000,
    )
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=5000)
    parser.add_argument("--held", type=int, default=2500)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--pg-name", default="goldset_bench_leases")
    args = parser.parse_args()
    configure(args.database, args.pg_name, debug=False)

    from django.contrib.auth import get_user_model

    from corpus.models import Membership
    from labelling.services import assignments, leases

    project = world(args.questions, args.held)
    User = get_user_model()
    release_ms, release_cpu, claim_ms, claim_cpu = [], [], [], []
    for n in range(args.rounds):
        user = User.objects.create(username=f"bench-{n}")
        Membership.objects.create(project=project, user=user, role="labeller")
        wall, cpu = time.perf_counter(), time.process_time()
        assert leases.release_lapsed_leases(project=project) == 0
        release_ms.append((time.perf_counter() - wall) * 1000)
        release_cpu.append((time.process_time() - cpu) * 1000)
        wall, cpu = time.perf_counter(), time.process_time()
        assert assignments.claim_assignment(project=project, labeller=user) is not None
        claim_ms.append((time.perf_counter() - wall) * 1000)
        claim_cpu.append((time.process_time() - cpu) * 1000)
    release, claim = statistics.median(release_ms), statistics.median(claim_ms)
    print(
        f"{args.questions} slots, {args.held} held with running leases, {args.rounds} rounds, "
        f"{args.database}"
    )
    for name, wall_ms, cpu_ms in [
        ("release alone", release, statistics.median(release_cpu)),
        ("claim (+release)", claim, statistics.median(claim_cpu)),
    ]:
        print(f"{name:<18} wall p50 {wall_ms:7.2f} ms  CPU p50 {cpu_ms:6.2f} ms")
    print(f"release share of a claim: {release / claim:.0%}")


if __name__ == "__main__":
    main()
