"""The command line as a CI job runs it: a fresh interpreter with no Django settings."""

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

DOCUMENTS = [
    {
        "doc_id": "leave",
        "version": 2,
        "title": "Annual leave",
        "text": "Staff get 25 days of annual leave. "
        "Unused leave may be carried over with approval.",
    },
    {
        "doc_id": "pension",
        "version": 1,
        "title": "Pensions",
        "text": "The employer pays 8 percent of salary into the pension scheme every month.",
    },
    {
        "doc_id": "parking",
        "version": 1,
        "title": "Parking",
        "text": "Parking permits are issued by the facilities desk on the ground floor.",
    },
]
QUESTIONS = [
    {
        "question_id": "q1",
        "question": "how many days of annual leave do staff get",
        "answerable": True,
        "spans": [
            {
                "doc_id": "leave",
                "start": 0,
                "end": 34,
                "grade": 2,
                "version": 2,
                "quote": "Staff get 25 days of annual leave.",
            }
        ],
        "judged": [{"doc_id": "pension"}],
    },
    {
        "question_id": "q2",
        "question": "what percent does the employer pay into the pension",
        "answerable": True,
        "spans": [{"doc_id": "pension", "grade": 1}],
    },
    {"question_id": "=q3", "question": "is there a gym", "answerable": False, "spans": []},
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


@pytest.fixture
def bundle(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    write_jsonl(folder / "gold.jsonl", QUESTIONS)
    write_jsonl(folder / "corpus.jsonl", DOCUMENTS)
    (folder / "manifest.json").write_text('{"gold_set": "v1"}')
    return folder


@pytest.fixture
def good_run(tmp_path):
    return write_jsonl(
        tmp_path / "good.jsonl",
        [
            {"question_id": "q1", "results": [{"doc_id": "leave", "start": 0, "end": 40}]},
            {"question_id": "q2", "results": [{"doc_id": "parking"}, {"doc_id": "pension"}]},
            {"question_id": "=q3", "results": [], "refused": True},
        ],
    )


@pytest.fixture
def weak_run(tmp_path):
    return write_jsonl(
        tmp_path / "weak.jsonl",
        [{"question_id": "q1", "results": [{"doc_id": "parking"}, {"doc_id": "leave"}]}],
    )


def evaluate(*arguments):
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, "-m", "goldeval", "evaluate", *map(str, arguments)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_json_report_with_baseline(bundle, good_run, weak_run):
    result = evaluate(
        "--gold",
        bundle,
        "--run",
        good_run,
        "--run",
        f"weak={weak_run}",
        "--k",
        "1,3",
        "--per-question",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert list(report["runs"]) == ["good", "weak", "bm25-baseline"]
    good = report["runs"]["good"]
    assert good["questions"] == 3
    assert good["answerable"] == 2
    assert good["missing"] == 0
    assert good["metrics"]["recall@1"] == 0.5
    assert good["metrics"]["recall@3"] == 1.0
    assert good["metrics"]["mrr@10"] == 0.75
    assert good["unanswerable"] == {"questions": 1, "refusal_accuracy": 1.0, "wrongly_refused": 0.0}
    assert good["per_question"]["=q3"] == {"answerable": False, "missing": False, "refused": True}
    assert good["per_question"]["q2"]["mrr@10"] == 0.5
    weak = report["runs"]["weak"]
    assert weak["missing"] == 2
    assert weak["metrics"]["recall@1"] == 0.0
    assert weak["unanswerable"]["refusal_accuracy"] is None
    # BM25 finds both answers at rank 1 on this tiny corpus.
    assert report["runs"]["bm25-baseline"]["metrics"]["recall@1"] == 1.0
    pairs = {(c["a"], c["b"]) for c in report["comparisons"]}
    assert pairs == {("good", "weak"), ("good", "bm25-baseline"), ("weak", "bm25-baseline")}
    first = next(c for c in report["comparisons"] if c["metric"] == "recall@1")
    assert first["delta"] == 0.5
    assert 0 < first["p_value"] <= 1


def test_no_baseline(bundle, good_run):
    result = evaluate("--gold", bundle, "--run", good_run, "--no-baseline")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert list(report["runs"]) == ["good"]
    assert report["comparisons"] == []
    assert "per_question" not in report["runs"]["good"]


def test_markdown_and_csv(bundle, good_run, weak_run):
    markdown = evaluate(
        "--gold",
        bundle,
        "--run",
        good_run,
        "--run",
        weak_run,
        "--no-baseline",
        "--format",
        "markdown",
        "--k",
        "1",
    )
    assert markdown.returncode == 0, markdown.stderr
    assert "| recall@1 | 0.5000 | 0.0000 |" in markdown.stdout
    assert "## Comparisons" in markdown.stdout

    table = evaluate(
        "--gold",
        bundle,
        "--run",
        good_run,
        "--no-baseline",
        "--format",
        "csv",
        "--k",
        "1",
        "--per-question",
    )
    assert table.returncode == 0, table.stderr
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    assert {
        "kind": "summary",
        "run": "good",
        "against": "",
        "question_id": "",
        "metric": "recall@1",
        "value": "0.5",
        "p_value": "",
    } in rows
    question_ids = {row["question_id"] for row in rows if row["kind"] == "question"}
    # A question id that a spreadsheet would run as a formula is escaped.
    assert question_ids == {"q1", "q2", "'=q3"}


def test_fail_under_exits_1_and_names_run_and_metric(bundle, good_run, weak_run):
    result = evaluate(
        "--gold",
        bundle,
        "--run",
        good_run,
        "--run",
        weak_run,
        "--fail-under",
        "recall@3=0.9",
        "--fail-under",
        "mrr@10=0.3",
    )
    assert result.returncode == 1
    assert "below bar: weak: recall@3" in result.stderr
    assert "below bar: weak: mrr@10" in result.stderr
    assert "below bar: good:" not in result.stderr
    # Two questions detect nothing: good passes its bars by less than that, and is told so.
    assert "note: good: mrr@10" in result.stderr
    # The baseline is a reference, not a gated system.
    assert "bm25-baseline:" not in result.stderr
    json.loads(result.stdout)


def test_fail_under_passes(bundle, good_run):
    result = evaluate(
        "--gold", bundle, "--run", good_run, "--no-baseline", "--fail-under", "recall@10=0.9"
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("run_lines", "fragment"),
    [
        (
            ['{"question_id": "q1", "results": []}', '{"question_id": "q9", "results": []}'],
            "good.jsonl:2: question 'q9' is not in the gold set (without --strict",
        ),
        (
            ['{"question_id": "q1", "results": []}', '{"question_id": "q2", "results": ['],
            "good.jsonl:2: not valid JSON",
        ),
        (
            ['{"question_id": "q1", "results": [{"doc_id": "leave", "start": 0, "end": 9999}]}'],
            "good.jsonl:1: passage of 'leave' ends at 9999",
        ),
    ],
)
def test_bad_run_exits_2_with_file_and_line(bundle, tmp_path, run_lines, fragment):
    run = tmp_path / "good.jsonl"
    run.write_text("\n".join(run_lines) + "\n")
    result = evaluate("--gold", bundle, "--run", run, "--strict")
    assert result.returncode == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_bad_gold_exits_2(tmp_path, good_run):
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"question_id": "q1", "spans": []}\n{"question_id": \n')
    result = evaluate("--gold", gold, "--run", good_run)
    assert result.returncode == 2
    assert "gold.jsonl:2:" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_fail_under_metric_exits_2(bundle, good_run):
    result = evaluate("--gold", bundle, "--run", good_run, "--fail-under", "ndcg@7=0.5")
    assert result.returncode == 2
    assert "unknown metric 'ndcg@7'" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_run_file_exits_2(bundle, tmp_path):
    result = evaluate("--gold", bundle, "--run", tmp_path / "absent.jsonl")
    assert result.returncode == 2
    assert "no such file" in result.stderr


def test_qrels_gold_with_trec_run(tmp_path):
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("1 0 A 2\n1 0 B 1\n1 0 C 0\n")
    run = tmp_path / "system.trec"
    run.write_text("1 Q0 X 1 5 s\n1 Q0 A 2 4 s\n1 Q0 Y 3 3 s\n1 Q0 B 4 2 s\n1 Q0 Z 5 1 s\n")
    result = evaluate("--gold", qrels, "--run", run, "--k", "3,5", "--gain", "linear")
    assert result.returncode == 0, result.stderr
    metrics = json.loads(result.stdout)["runs"]["system"]["metrics"]
    assert metrics["recall@5"] == 1.0
    assert round(metrics["ndcg@3"], 4) == 0.4796


def test_spans_that_cannot_be_reanchored_are_reported(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    lost = {
        "doc_id": "leave",
        "start": 0,
        "end": 20,
        "grade": 1,
        "version": 1,
        "quote": "Holiday entitlement",
    }
    write_jsonl(folder / "gold.jsonl", [{**QUESTIONS[0], "spans": [*QUESTIONS[0]["spans"], lost]}])
    old = {**DOCUMENTS[0], "version": 1, "text": "Holiday entitlement is 20 days."}
    write_jsonl(folder / "corpus.jsonl", [old, *DOCUMENTS])
    run = write_jsonl(
        tmp_path / "one.jsonl", [{"question_id": "q1", "results": [{"doc_id": "leave"}]}]
    )
    result = evaluate("--gold", folder, "--run", run, "--no-baseline", "--k", "1")
    assert result.returncode == 0, result.stderr
    assert "could not be re-anchored in version 2" in result.stderr
    # The lost span still counts as relevant, so a perfect passage reaches half of the units.
    assert json.loads(result.stdout)["runs"]["one"]["metrics"]["recall@1"] == 0.5


def test_a_grade_the_gain_cannot_hold_exits_2_without_a_traceback(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 2000\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d2 1 1.0 r\n")
    result = evaluate("--gold", qrels, "--run", run)
    assert result.returncode == 2
    assert "qrels.txt:2: grade 2000 is out of range" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("old_text", "old_quote", "diff"),
    [
        # The facts changed: 24 became 25 days.
        (
            "Staff get 24 days of annual leave.",
            "Staff get 24 days of annual leave.",
            "[-24-] {+25+}",
        ),
        # It only moved: the same words at another offset are no warning.
        ("Intro. Staff get 25 days of annual leave.", "Staff get 25 days of annual leave.", None),
    ],
)
def test_reanchored_spans_whose_words_changed_are_warned_with_a_word_diff(
    tmp_path, old_text, old_quote, diff
):
    folder = tmp_path / "bundle"
    folder.mkdir()
    start = old_text.index(old_quote)
    span = {
        "doc_id": "leave",
        "start": start,
        "end": start + len(old_quote),
        "grade": 2,
        "version": 1,
        "quote": old_quote,
    }
    write_jsonl(folder / "gold.jsonl", [{**QUESTIONS[0], "spans": [span]}])
    write_jsonl(
        folder / "corpus.jsonl", [{**DOCUMENTS[0], "version": 1, "text": old_text}, *DOCUMENTS]
    )
    run = write_jsonl(
        tmp_path / "one.jsonl", [{"question_id": "q1", "results": [{"doc_id": "leave"}]}]
    )
    result = evaluate("--gold", folder, "--run", run, "--no-baseline", "--k", "1")
    assert result.returncode == 0, result.stderr
    assert "could not be re-anchored" not in result.stderr
    if diff is None:
        assert "the facts changed" not in result.stderr
    else:
        assert "re-anchored from version 1 to 2 but its text changed" in result.stderr
        assert f"Staff get {diff} days of annual leave." in result.stderr


def test_the_zip_the_page_downloads_scores_as_its_folder(bundle, good_run, tmp_path):
    import zipfile

    zipped = tmp_path / "gold-set-v1.zip"
    with zipfile.ZipFile(zipped, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member in sorted(bundle.iterdir()):
            archive.writestr(f"gold-set-v1/{member.name}", member.read_bytes())
    from_folder = evaluate("--gold", bundle, "--run", good_run, "--no-baseline")
    from_zip = evaluate("--gold", zipped, "--run", good_run, "--no-baseline")
    assert from_zip.returncode == 0, from_zip.stderr
    assert "not UTF-8" not in from_zip.stderr
    assert json.loads(from_zip.stdout)["runs"] == json.loads(from_folder.stdout)["runs"]


# Unknown document ids (issue 33 item 5) ------------------------------------------------------


def test_a_run_naming_unknown_documents_is_scored_with_a_warning(bundle, tmp_path):
    run = write_jsonl(
        tmp_path / "mixed.jsonl",
        [
            {"question_id": "q1", "results": [{"doc_id": "ghost"}, {"doc_id": "leave"}]},
            {"question_id": "q2", "results": [{"doc_id": "spectre"}, {"doc_id": "ghost"}]},
        ],
    )
    result = evaluate("--gold", bundle, "--run", run, "--no-baseline")
    assert result.returncode == 0, result.stderr
    assert (
        "mixed.jsonl: 2 unknown document ids of 3 named, kept in the ranking as not relevant "
        "('ghost', 'spectre')" in result.stderr
    )
    # Kept at their ranks: leave is found at rank 2, not promoted to rank 1.
    report = json.loads(result.stdout)
    assert report["runs"]["mixed"]["metrics"]["mrr@10"] == 0.25


def test_a_run_naming_no_known_document_exits_2_and_a_trec_run_too(bundle, tmp_path):
    jsonl_run = write_jsonl(
        tmp_path / "other.jsonl", [{"question_id": "q1", "results": [{"doc_id": "ghost"}]}]
    )
    trec_run = tmp_path / "other.trec"
    trec_run.write_text("q1 Q0 ghost 1 2.0 t\nq2 Q0 spectre 1 1.0 t\n")
    for path, ids in ((jsonl_run, "1 unknown document id ('ghost')"), (trec_run, "2 unknown")):
        result = evaluate("--gold", bundle, "--run", path, "--no-baseline")
        assert result.returncode == 2 and result.stdout == ""
        assert f"the run names no document the corpus has: {ids}" in result.stderr
        assert "Traceback" not in result.stderr


def test_without_a_corpus_listing_nothing_is_said_of_document_ids(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", QUESTIONS)
    run = write_jsonl(
        tmp_path / "run.jsonl", [{"question_id": "q1", "results": [{"doc_id": "ghost"}]}]
    )
    result = evaluate("--gold", gold, "--run", run, "--no-baseline")
    assert result.returncode == 0 and "unknown document" not in result.stderr
