"""Evaluation as a CI job runs it: a whole process per tool, from the files on disk to the figures.

    .venv/bin/python benchmarks/evaluate_processes.py [--questions 10000] [--depth 100]
                                                      [--rounds 5] [--no-ranx]

The same generated data as `benchmarks/evaluate.py` (10,000 questions x 100 ranked documents,
30 judged per question: a million run lines, 300,000 qrels lines) is written as TREC files, and
three commands are started in turn, one round after another (interleaved, so all three see the
same machine load):

- **ours**: ``python -m goldeval evaluate --gold qrels.trec --run run.trec --compat trec_eval
  --k 10 --mrr-cutoff 100 --no-baseline`` (its JSON report to /dev/null);
- **pytrec_eval**: ``parse_qrel`` + ``parse_run`` of the files, ``RelevanceEvaluator`` with
  recall_10, P_10, ndcg_cut_10 and recip_rank, ``evaluate``;
- **ranx**: ``Qrels.from_file`` + ``Run.from_file`` and ``evaluate`` with recall@10,
  precision@10, ndcg@10 and mrr@100, twice: with numba's cache warm (its compile excluded) and
  with an empty cache each time (its compile included).

Each child's CPU time (user + system, from the kernel's accounting of the finished child) and
wall time are taken; printed are the medians over the rounds and the ratios to pytrec_eval's.
Interpreter start and imports count, as they do in CI. Last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from evaluate import generate, write_trec_files  # noqa: E402

PYTREC = """
import sys, pytrec_eval
with open(sys.argv[1]) as q, open(sys.argv[2]) as r:
    qrels = pytrec_eval.parse_qrel(q)
    run = pytrec_eval.parse_run(r)
measures = {"recall.10", "P.10", "ndcg_cut.10", "recip_rank"}
result = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
assert result
"""

RANX = """
import sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
result = evaluate(qrels, run, ["recall@10", "precision@10", "ndcg@10", "mrr@100"])
assert result
"""


def timed(command: list[str], env: dict) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one child process run to its end (in the checkout its
    PYTHONPATH names)."""
    started = time.perf_counter()
    cwd = env.get("PYTHONPATH", str(HERE.parent))
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, cwd=cwd)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"{command[:4]} exited with {process.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-ranx", action="store_true", help="leave ranx out")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        help="also time `python -m goldeval` of another checkout (before/after a change)",
    )
    arguments = parser.parse_args()

    qrels, run = generate(questions=arguments.questions, depth=arguments.depth, seed=7)
    with tempfile.TemporaryDirectory() as folder:
        qrels_path, run_path = write_trec_files(qrels, run, Path(folder))
        files = [str(qrels_path), str(run_path)]
        env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
        warm_cache = Path(folder) / "numba-warm"
        commands = {
            "ours": (
                [sys.executable, "-m", "goldeval", "evaluate", "--gold", files[0], "--run"]
                + [files[1], "--compat", "trec_eval", "--k", "10", "--mrr-cutoff"]
                + [str(arguments.depth), "--no-baseline"],
                env,
            ),
            "pytrec_eval": ([sys.executable, "-c", PYTREC, *files], env),
        }
        for tree in arguments.tree:
            commands[f"ours ({tree})"] = (
                commands["ours"][0],
                {**os.environ, "PYTHONPATH": str(Path(tree).resolve())},
            )
        if not arguments.no_ranx:
            commands["ranx (compile excluded)"] = (
                [sys.executable, "-c", RANX, *files],
                {**env, "NUMBA_CACHE_DIR": str(warm_cache)},
            )
            timed(*commands["ranx (compile excluded)"])  # fills the warm cache
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        if not arguments.no_ranx:
            figures["ranx (compile included)"] = []
        for round_number in range(arguments.rounds):
            for name, (command, child_env) in commands.items():
                figures[name].append(timed(command, child_env))
            if not arguments.no_ranx:
                cold = Path(folder) / f"numba-cold-{round_number}"
                figures["ranx (compile included)"].append(
                    timed(
                        commands["ranx (compile excluded)"][0],
                        {**env, "NUMBA_CACHE_DIR": str(cold)},
                    )
                )

    medians = {
        name: (statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs))
        for name, runs in figures.items()
    }
    reference_cpu, reference_wall = medians["pytrec_eval"]
    print(
        f"{arguments.questions:,} questions x {arguments.depth} results, "
        f"median of {arguments.rounds} interleaved rounds, whole processes"
    )
    for name, (cpu, wall) in medians.items():
        print(
            f"{name:26} CPU {cpu:6.2f} s ({cpu / reference_cpu:4.2f}x pytrec_eval)  "
            f"wall {wall:6.2f} s ({wall / reference_wall:4.2f}x)"
        )
    print(
        json.dumps(
            {
                name: {
                    "cpu": round(cpu, 3),
                    "wall": round(wall, 3),
                    "cpu_ratio": round(cpu / reference_cpu, 3),
                    "wall_ratio": round(wall / reference_wall, 3),
                }
                for name, (cpu, wall) in medians.items()
            }
        )
    )


if __name__ == "__main__":
    main()
