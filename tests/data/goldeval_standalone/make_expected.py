"""Make the inputs and expected outputs of `python -m evaluation`, as the code from before the
issue 31 redesign prints them, so the same command lines run through the Django-free `goldeval`
package (`python -m goldeval ARGS`, in a virtualenv holding only goldeval) can be compared.

Run it at commit e7b2b4f, from the repository's root, with PostgreSQL reachable as user
postgres::

    git switch --detach e7b2b4f
    export PGHOST=127.0.0.1 PGUSER=postgres
    .venv/bin/python tests/data/goldeval_standalone/make_expected.py

It restores `tests/data/pre_redesign/demo.sql.gz` (made by `make_dump.py` beside it) into a
scratch database (`goldset_standalone`, dropped afterwards) and writes `inputs/` from it as a
user gets them:

- `inputs/bundle/`: the newest gold set (demo v2) as `manage.py export_gold` writes it;
- `inputs/runs/bm25.jsonl`, `minilm.jsonl`: the runs the lead made of both built-in
  retrievers on that gold set (stored in the database); `bm25.trec`: the BM25 run as a
  document-level TREC run (each document once, at its best passage);
- `inputs/acl.json` (`manage.py export_acl`) and `inputs/replay/<test user>.jsonl`: the
  permission replay's runs;
- `inputs/answers/northwind-rag.jsonl`: the demo's answer run (as imported);
  `inputs/answers/cautious.jsonl`: the same run refusing a few more questions, to compare;
- `inputs/manifest.csv`: the team index's manifest as the demo makes it, at a fixed time.

Then it runs every case of `CASES` with `inputs/`'s folder as the working directory (paths are
relative, so outputs name no absolute path) and writes each one's stdout to `expected/NAME.txt`
(stderr, when there is any, to `expected/NAME.stderr.txt`) and `cases.json`: the arguments, the
working directory (this folder), the exit status and the files. Each case runs twice; a case
whose output differs between the runs stops the script.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DUMP = ROOT / "tests" / "data" / "pre_redesign" / "demo.sql.gz"
COMMIT = "e7b2b4f"
# The time the manifest is written and lags are measured to: fixed, so outputs are too.
NOW = "2026-12-01T12:00:00+00:00"
# Answers the "cautious" answer run refuses on top of the demo run's refusals.
CAUTIOUS_REFUSES = ("dq01", "dq02", "dq03", "dq04")

B = "inputs/bundle"
R = "inputs/runs"
A = "inputs/answers"
P = "inputs/replay"
USERS = ("admin-carol", "hr-alice", "outsider-bob")
AS = " ".join(f"--run-as {user}={P}/{user}.jsonl" for user in USERS)
BM25 = f"--gold {B} --run {R}/bm25.jsonl"
MANIFEST = f"--gold {B} --manifest inputs/manifest.csv --now {NOW}"
# name -> the arguments after `python -m evaluation` (split as a shell would; no quoting needed)
CASES = {
    "evaluate-json": f"evaluate {BM25}",
    "evaluate-markdown": f"evaluate {BM25} --format markdown",
    "evaluate-csv": f"evaluate {BM25} --format csv",
    "evaluate-per-question": f"evaluate {BM25} --per-question",
    "evaluate-two-runs": f"evaluate {BM25} --run {R}/minilm.jsonl",
    "evaluate-two-runs-markdown": f"evaluate --gold {B} --run bm25={R}/bm25.jsonl "
    f"--run minilm={R}/minilm.jsonl --format markdown --seed 7",
    "evaluate-options": f"evaluate --gold {B} --run {R}/minilm.jsonl --k 1,2,5,20 --gain linear "
    "--threshold 2 --mrr-cutoff 5 --min-overlap 20 --no-baseline",
    "evaluate-trec-run": f"evaluate --gold {B} --run {R}/bm25.trec --ties file --scores float32",
    "evaluate-compat-trec_eval": f"evaluate --gold {B} --run {R}/bm25.trec --compat trec_eval",
    "evaluate-compat-trec_eval-c": f"evaluate --gold {B} --run {R}/bm25.trec "
    "--compat trec_eval-c --format csv",
    "evaluate-gold-jsonl": f"evaluate --gold {B}/gold.jsonl --run {R}/bm25.jsonl --no-baseline",
    "evaluate-qrels": f"evaluate --gold {B}/qrels.trec --run {R}/bm25.trec --compat trec_eval",
    "evaluate-fail-under": f"evaluate {BM25} --fail-under ndcg@10=0.99 --fail-under recall@5=0.1 "
    "--no-baseline",
    "evaluate-strict": f"evaluate {BM25} --strict --no-baseline",
    "evaluate-missing-run": f"evaluate --gold {B} --run {R}/no-such-run.jsonl",
    "evaluate-bad-k": f"evaluate {BM25} --k 0",
    "answers-json": f"answers --gold {B} --answers {A}/northwind-rag.jsonl",
    "answers-markdown": f"answers --gold {B} --answers {A}/northwind-rag.jsonl --format markdown",
    "answers-csv-per-question": f"answers --gold {B} --answers {A}/northwind-rag.jsonl "
    "--format csv --per-question",
    "answers-compare": f"answers --gold {B} --answers {A}/northwind-rag.jsonl "
    f"--answers {A}/cautious.jsonl --seed 3",
    "answers-judgements-file": f"answers --gold {B}/gold.jsonl --answers {A}/northwind-rag.jsonl "
    f"--judgements {B}/answers-gold.jsonl --min-overlap 10",
    "answers-fail-under": f"answers --gold {B} --answers {A}/northwind-rag.jsonl "
    "--fail-under correctness=0.9",
    "health-json": f"health {MANIFEST}",
    "health-markdown-runs": f"health {MANIFEST} --run {R}/bm25.jsonl {AS} --k 5 --format markdown",
    "health-thresholds": f"health {MANIFEST} --max-stale 0.01 --max-lag-days 7 "
    "--max-crowding 0.2 --fail-on-model-mix",
    "permissions-json": f"permissions --gold {B} --acl inputs/acl.json {AS} --k 1,3,5 "
    "--format json",
    "permissions-markdown": f"permissions --gold {B} --acl inputs/acl.json {AS} "
    "--reference admin-carol --format markdown",
    "permissions-fail-on": f"permissions --gold {B} --acl inputs/acl.json {AS} --fail-on-leak "
    "--fail-on-unknown --fail-on-side-channel",
    "permissions-bad-acl": f"permissions --gold {B} --acl inputs/manifest.csv {AS}",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="goldset_standalone")
    parser.add_argument("--export", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.export:
        export()
        return
    pg = {**os.environ}
    pg.setdefault("PGHOST", "127.0.0.1")
    pg.setdefault("PGUSER", "postgres")
    subprocess.run(["dropdb", "--if-exists", args.database], check=True, env=pg)
    subprocess.run(["createdb", args.database], check=True, env=pg)
    try:
        subprocess.run(
            ["psql", "-v", "ON_ERROR_STOP=1", "-q", "-d", args.database],
            input=gzip.decompress(DUMP.read_bytes()),
            check=True,
            env=pg,
            capture_output=True,
        )
        shutil.rmtree(HERE / "inputs", ignore_errors=True)
        env = {
            **{k: v for k, v in pg.items() if k != "REDIS_URL"},
            "DATABASE_URL": f"postgres://{pg['PGUSER']}@{pg['PGHOST']}:5432/{args.database}",
            "DEBUG": "1",
            "GOLDSET_LOCAL_WORKER": "0",
        }
        subprocess.run([sys.executable, __file__, "--export"], check=True, env=env, cwd=ROOT)
    finally:
        subprocess.run(["dropdb", "--if-exists", args.database], check=True, env=pg)
    record_cases()


def export() -> None:
    """Write inputs/ from the restored database (Django set up on it)."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from evaluation.management.commands.load_demo import demo_index_manifest

    from corpus.models import Project
    from evaluation.models import EvaluationRun, GoldSet, PermissionReplayRun

    inputs = HERE / "inputs"
    gold_set = GoldSet.objects.filter(question_set__name="demo").order_by("-number").first()
    call_command("export_gold", project="demo", set_name="demo", out=inputs / "bundle")
    runs = inputs / "runs"
    runs.mkdir()
    for run in EvaluationRun.objects.filter(gold_set=gold_set):
        (runs / f"{run.name}.jsonl").write_bytes(bytes(run.content))
    (runs / "bm25.trec").write_text(trec_run((runs / "bm25.jsonl").read_text(), tag="bm25"))
    call_command("export_acl", project="demo", out=inputs / "acl.json")
    replay = inputs / "replay"
    replay.mkdir()
    for run in PermissionReplayRun.objects.filter(replay__gold_set=gold_set):
        (replay / f"{run.user_name}.jsonl").write_bytes(bytes(run.content))
    answers = inputs / "answers"
    answers.mkdir()
    demo = (ROOT / "demo" / "answers.jsonl").read_text()
    (answers / "northwind-rag.jsonl").write_text(demo)
    (answers / "cautious.jsonl").write_text(cautious(demo))
    project = Project.objects.get(slug="demo")
    manifest = demo_index_manifest(project, now=datetime.fromisoformat(NOW))
    (inputs / "manifest.csv").write_bytes(manifest)


def trec_run(jsonl: str, *, tag: str) -> str:
    """A JSONL run as a document-level TREC run: each document once, at its first passage."""
    lines = []
    for record in map(json.loads, jsonl.splitlines()):
        seen: list[str] = []
        for result in record["results"]:
            if result["doc_id"] not in seen:
                seen.append(result["doc_id"])
        for rank, doc_id in enumerate(seen, start=1):
            lines.append(f"{record['question_id']} Q0 {doc_id} {rank} {len(seen) - rank + 1} {tag}")
    return "\n".join(lines) + "\n"


def cautious(jsonl: str) -> str:
    out = []
    for record in map(json.loads, jsonl.splitlines()):
        if record["question_id"] in CAUTIOUS_REFUSES:
            record.update(
                answer="I could not find this in the documents I was given.",
                refused=True,
                sentences=[],
            )
        out.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(out) + "\n"


def record_cases() -> None:
    expected = HERE / "expected"
    shutil.rmtree(expected, ignore_errors=True)
    expected.mkdir()
    # The CLI as a RAG team's CI runs it: Django not configured, this checkout's code.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "DATABASE"))}
    env["PYTHONPATH"] = str(ROOT)
    cases = []
    for name, line in CASES.items():
        args = shlex.split(line)
        outcomes = [
            subprocess.run(
                [sys.executable, "-m", "evaluation", *args],
                cwd=HERE,
                env=env,
                capture_output=True,
                text=True,
            )
            for _ in range(2)
        ]
        first, second = ((o.returncode, o.stdout, o.stderr) for o in outcomes)
        if first != second:
            raise SystemExit(f"{name}: two runs printed different outputs")
        status, stdout, stderr = first
        (expected / f"{name}.txt").write_text(stdout)
        case = {"name": name, "args": args, "exit_status": status, "stdout": f"expected/{name}.txt"}
        if stderr:
            (expected / f"{name}.stderr.txt").write_text(stderr)
            case["stderr"] = f"expected/{name}.stderr.txt"
        cases.append(case)
        print(f"{name}: exit {status}, {len(stdout):,} characters")
    document = {
        "made_at_commit": COMMIT,
        "command": "python -m evaluation",
        "cwd": "tests/data/goldeval_standalone",
        # argparse's usage errors name the program: compare them with it replaced.
        "prog": "python -m evaluation",
        "cases": cases,
    }
    (HERE / "cases.json").write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
