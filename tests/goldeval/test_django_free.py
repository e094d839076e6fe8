"""RAG teams run the evaluation module in their own CI, where Django is neither configured nor
necessarily installed. Setting sys.modules["django"] = None makes any `import django` fail, so an
indirect import anywhere in the module (or in corpus' BM25 used by the baseline) shows up here."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GUARD = "import sys; sys.modules['django'] = None; "


def run_python(code, *, cwd=REPO):
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_guard_really_blocks_django():
    result = run_python(GUARD + "import django")
    assert result.returncode != 0
    assert "ModuleNotFoundError" in result.stderr or "ImportError" in result.stderr


def test_import_without_settings_or_django():
    result = run_python("import goldeval.scoring.metrics, goldeval.cli")
    assert result.returncode == 0, result.stderr
    modules = (
        "goldeval.scoring.metrics, goldeval.cli, goldeval.formats.gold, goldeval.formats.runs, "
        "goldeval.scoring.compare, goldeval.scoring.report, goldeval.scoring.baseline, "
        "goldeval.formats.bundle, goldeval.scoring.permission_replay, goldeval.cli.permissions, "
        "corpus.httpsearch, corpus.httpguard, "
        # The file formats the CLI reads, and the question files read the same way.
        "goldeval.formats.textfiles, goldeval.formats.runfiles, goldeval.formats.questions, "
        # Answer runs and their scores.
        "goldeval.formats.answers, goldeval.scoring.answers, goldeval.formats.answer_gold, "
        "goldeval.scoring.answers_report, goldeval.cli.answers, "
        # Index health (issue 17): the manifest format and the checks.
        "goldeval.formats.manifests, goldeval.scoring.health, goldeval.cli.health"
    )
    result = run_python(GUARD + f"import {modules}")
    assert result.returncode == 0, result.stderr


def test_full_evaluation_with_baseline_without_django(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "gold.jsonl").write_text(
        json.dumps(
            {
                "question_id": "q1",
                "question": "annual leave days",
                "spans": [{"doc_id": "d1", "grade": 2}],
            }
        )
        + "\n"
    )
    (bundle / "corpus.jsonl").write_text(
        json.dumps(
            {"doc_id": "d1", "version": 1, "title": "Leave", "text": "25 days of annual leave"}
        )
        + "\n"
        + json.dumps({"doc_id": "d2", "version": 1, "title": "Parking", "text": "Permits"})
        + "\n"
    )
    code = GUARD + (
        "from goldeval.cli import main; "
        f"sys.exit(main(['evaluate', '--gold', {str(bundle)!r}, '--k', '1']))"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["runs"]["bm25-baseline"]["metrics"]["recall@1"] == 1.0


def test_the_bundle_is_written_and_read_back_without_django():
    code = GUARD + (
        "import datetime\n"
        "from types import SimpleNamespace as S\n"
        "from goldeval.text.chunking import ChunkSpec\n"
        "from goldeval.formats.bundle import BundleInfo, CorpusVersion, build_bundle\n"
        "from goldeval.formats.gold import read_bundle\n"
        "span = S(doc_id='d1', version=1, start=0, end=5, grade=2, quote='25 da')\n"
        "question = S(question_id='q1', text='leave', answerable=True, spans=[span],"
        " judged=[('d1', 1, 0, 23)])\n"
        "bundle = build_bundle(info=BundleInfo(project='p', question_set='s', number=1,"
        " created_by=None, created_at=datetime.datetime(2025, 1, 1), min_span_f1=0.5),"
        " questions=[question], corpus=[CorpusVersion('d1', 1, 'Leave',"
        " '25 days of annual leave', 'hash')], texts={('d1', 1): '25 days of annual leave'},"
        " schemes={'whole': ChunkSpec(strategy='document')}, votes=[])\n"
        "gold = read_bundle(bundle.files)\n"
        "assert gold.questions['q1'].spans[0].end == 5\n"
        "assert bundle.files['qrels-whole.trec'] == b'q1 0 d1#0 2\\n', bundle.files\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr


def test_index_health_runs_without_django(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "gold.jsonl").write_text('{"question_id": "q1", "spans": []}\n')
    (bundle / "corpus.jsonl").write_text('{"doc_id": "d1", "version": 1, "text": "Leave"}\n')
    manifest = tmp_path / "index.csv"
    manifest.write_text(
        "doc_id,indexed_at,embedding_model,dimension\nd1,2026-11-30T00:00:00Z,minilm,384\n"
    )
    code = (
        GUARD + "from goldeval.cli import main; "
        f"raise SystemExit(main(['health', '--gold', {str(bundle)!r}, "
        f"'--manifest', {str(manifest)!r}, '--format', 'json']))"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["index"]["rows"] == 1
