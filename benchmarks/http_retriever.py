"""The HTTP retriever's client and the permission replay's core, on this machine.

1. Throughput of `corpus.httpsearch.SearchClient` against the suite's test server on 127.0.0.1
   answering after a fixed delay (a stand-in for a search cluster's latency), at concurrency 1
   and at the configured concurrency: the ratio shows the concurrency limit doing its work.
2. The replay core (`goldeval.scoring.permission_replay.replay_permissions`) on generated data: 300
   questions x 5 test users x 100 results, with side channels, against 10,000 documents.

    .venv/bin/python benchmarks/http_retriever.py [--questions 200] [--delay 0.02] [--repeats 3]

No target is set by the issue; the figures are for README.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpus.httpendpoint import Endpoint, with_preset  # noqa: E402
from corpus.httpguard import HostPolicy  # noqa: E402
from corpus.httpsearch import Query, SearchClient  # noqa: E402
from goldeval.scoring.permission_replay import (  # noqa: E402
    AccessSnapshot,
    DocumentAccess,
    Result,
    TestUser,
    replay_permissions,
)
from tests.search_server import IndexedDocument, SearchServer  # noqa: E402


def throughput(*, questions: int, delay: float, concurrency: int, repeats: int) -> None:
    words = ["leave", "vpn", "salary", "band", "expenses", "receipts", "dinner", "travel"]
    rng = random.Random(1)
    server = SearchServer(
        documents=[
            IndexedDocument(f"d{i}", " ".join(rng.choices(words, k=40)) + ".") for i in range(500)
        ],
        delay=delay,
    ).start()
    try:
        queries = [Query(" ".join(rng.sample(words, 3)), k=10) for _ in range(questions)]
        figures = {}
        for workers in (1, concurrency):
            endpoint = Endpoint.from_dict(
                with_preset("elasticsearch", url=f"{server.url}/p/_search", concurrency=workers)
            )
            times = []
            for _ in range(repeats):
                with SearchClient(endpoint=endpoint, policy=HostPolicy(["127.0.0.1"])) as client:
                    started = time.perf_counter()
                    answers = client.search_many(queries)
                    times.append(time.perf_counter() - started)
                assert all(a.ok for a in answers), answers[0].error
            figures[workers] = statistics.median(times)
            print(
                f"concurrency {workers:>2}: {questions} questions in {figures[workers]:.2f} s "
                f"({questions / figures[workers]:.0f} questions/s, server delay "
                f"{delay * 1000:.0f} ms)"
            )
        print(f"speed-up at concurrency {concurrency}: {figures[1] / figures[concurrency]:.2f}x")
    finally:
        server.stop()


def replay(*, repeats: int) -> None:
    rng = random.Random(2)
    documents = {
        f"d{i}": DocumentAccess(frozenset({f"g{i % 7}"}) if i % 3 == 0 else frozenset())
        for i in range(10_000)
    }
    users = [TestUser(f"u{n}", frozenset({f"g{n}"})) for n in range(4)]
    users.append(TestUser("admin", unrestricted=True))
    ids = list(documents)
    runs = {
        user.name: {
            f"q{q}": [Result(rng.choice(ids), score=100.0 - r) for r in range(100)]
            for q in range(300)
        }
        for user in users
    }
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        report = replay_permissions(
            snapshot=AccessSnapshot(documents), users=users, runs=runs, reference="admin"
        )
        times.append(time.perf_counter() - started)
    print(
        f"replay core: 300 questions x 5 users x 100 results in {statistics.median(times):.2f} s "
        f"({report.leaks} findings, {len(report.side_channels)} side-channel comparisons)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    throughput(
        questions=arguments.questions,
        delay=arguments.delay,
        concurrency=arguments.concurrency,
        repeats=arguments.repeats,
    )
    replay(repeats=arguments.repeats)


if __name__ == "__main__":
    main()
