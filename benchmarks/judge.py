"""The LLM judge's client on this machine: candidates judged per minute against the suite's
fake LLM on 127.0.0.1 answering after a fixed latency, at concurrency 1, 4 and 16.

    .venv/bin/python benchmarks/judge.py [--candidates 5000] [--latency 0.05]

Each candidate is one chat-completions call through `judges.client.JudgeClient` (the host
policy, retries and response cap of the HTTP retriever's client), its answer parsed; nothing is
stored (the job's database writes are the pooling benchmarks' business). At concurrency 1 and
50 ms, 5,000 candidates take over four minutes: on a shared machine use --candidates 1000.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpus.httpguard import HostPolicy  # noqa: E402
from judges.client import Item, JudgeClient, JudgeEndpoint  # noqa: E402
from judges.prompt import DEFAULT_PROMPT, render_prompt  # noqa: E402
from tests.llm_server import LLMServer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=5000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per answer")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    server = LLMServer(delay=args.latency).start()
    try:
        items = [
            Item(
                key=i,
                prompt=render_prompt(
                    DEFAULT_PROMPT,
                    question=f"How many days of leave carry over, case {i}?",
                    passage=f"Passage {i}: up to five days of unused leave carry over to March.",
                ),
            )
            for i in range(args.candidates)
        ]
        for workers in args.concurrency:
            endpoint = JudgeEndpoint(
                url=f"{server.url}/agree/v1/chat/completions", model="fake", concurrency=workers
            )
            client = JudgeClient(endpoint=endpoint, policy=HostPolicy(["127.0.0.1"]))
            started = time.perf_counter()
            outcomes = client.judge_many(items)
            elapsed = time.perf_counter() - started
            assert all(o.verdict is not None for o in outcomes), outcomes[0].error
            print(
                f"concurrency {workers:>2}: {len(items):,} candidates in {elapsed:.1f} s, "
                f"{len(items) / elapsed * 60:,.0f} candidates/minute "
                f"(latency {args.latency * 1000:.0f} ms)"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
