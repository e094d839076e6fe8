"""Issue 13: figures that no threshold or input quirk changes silently, and conventions named.

Each test is a minimal case through ``python -m goldeval evaluate`` (in process: the command's
``main``), asserting on what a user sees: the exit status, the report and the warnings.
"""

from __future__ import annotations

import json

import pytest

from goldeval.cli import main


def write(path, text, *, bom=False):
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    return path


def evaluate(capsys, *arguments):
    status = main(["evaluate", *map(str, arguments), "--no-baseline"])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def report_of(capsys, *arguments):
    status, out, err = evaluate(capsys, *arguments, "--per-question")
    assert status == 0, err
    return json.loads(out), err


# --- defect 2: repeated and conflicting judgments ----------------------------------------------


def test_identical_qrels_lines_count_once_with_a_warning_naming_the_lines(tmp_path, capsys):
    qrels = write(tmp_path / "qrels.trec", "q 0 A 2\nq 0 B 1\nq 0 A 2\n")
    run = write(tmp_path / "run.trec", "q Q0 A 1 2.0 s\n")
    report, err = report_of(capsys, "--gold", qrels, "--run", run, "--k", "1")
    # A and B are two relevant units, not three.
    assert report["runs"]["run"]["metrics"]["recall@1"] == 0.5
    assert "1 repeated identical judgment(s) counted once (line 3 repeats line 1)" in err


def test_conflicting_qrels_grades_exit_2_naming_both_lines(tmp_path, capsys):
    qrels = write(tmp_path / "qrels.trec", "q 0 A 2\nq 0 B 1\nq 0 A 1\n")
    run = write(tmp_path / "run.trec", "q Q0 A 1 2.0 s\n")
    status, out, err = evaluate(capsys, "--gold", qrels, "--run", run)
    assert status == 2 and out == ""
    assert f"{qrels}:3: document 'A' of question 'q' is graded 1 here and 2 on line 1" in err


def test_beir_tsv_follows_the_same_rule(tmp_path, capsys):
    qrels = tmp_path / "test.tsv"
    write(qrels, "query-id\tcorpus-id\tscore\nq\tA\t1\nq\tA\t1\nq\tB\t2\n")
    run = write(tmp_path / "run.trec", "q Q0 A 1 2.0 s\n")
    report, err = report_of(capsys, "--gold", qrels, "--run", run, "--k", "1")
    assert report["runs"]["run"]["metrics"]["recall@1"] == 0.5
    assert "line 3 repeats line 2" in err
    write(qrels, "query-id\tcorpus-id\tscore\nq\tA\t1\nq\tA\t2\n")
    status, _, err = evaluate(capsys, "--gold", qrels, "--run", run)
    assert status == 2 and f"{qrels}:3: " in err and "on line 2" in err


def test_gold_jsonl_repeated_identical_spans_count_once(tmp_path, capsys):
    span = {"doc_id": "A", "start": 0, "end": 10, "grade": 2}
    other = {"doc_id": "B", "grade": 1}
    gold = write(
        tmp_path / "gold.jsonl",
        json.dumps({"question_id": "q", "spans": [span, other, span]}) + "\n",
    )
    run = write(tmp_path / "run.jsonl", '{"question_id": "q", "results": [{"doc_id": "A"}]}\n')
    report, err = report_of(capsys, "--gold", gold, "--run", run, "--k", "1")
    assert report["runs"]["run"]["metrics"]["recall@1"] == 0.5
    assert f"{gold}:1: question 'q': 1 repeated identical span(s) counted once" in err
    conflicting = {**span, "grade": 1}
    write(gold, json.dumps({"question_id": "q", "spans": [span, conflicting]}) + "\n")
    status, _, err = evaluate(capsys, "--gold", gold, "--run", run)
    assert status == 2
    assert f"{gold}:1: question 'q': span 2 grades [0, 10) of 'A' 1, span 1 grades it 2" in err


# --- defect 1: answerability is the gold's verdict ----------------------------------------------


def test_answerability_does_not_depend_on_the_threshold(tmp_path, capsys):
    qrels = write(tmp_path / "qrels.trec", "q1 0 A 1\nq2 0 B 2\nq3 0 C 0\n")
    run = write(tmp_path / "run.trec", "q1 Q0 A 1 1.0 s\nq2 Q0 B 1 1.0 s\n")
    report, _ = report_of(capsys, "--gold", qrels, "--run", run, "--k", "1", "--threshold", "2")
    scored = report["runs"]["run"]
    assert (scored["answerable"], scored["unanswerable"]["questions"]) == (2, 1)
    assert scored["recall_undefined"] == 1
    q1 = scored["per_question"]["q1"]
    assert (q1["answerable"], q1["recall@1"], q1["precision@1"], q1["mrr@10"]) == (
        True,
        None,
        0.0,
        0.0,
    )
    assert q1["ndcg@1"] == 1.0  # every grade >= 1 gains, as in trec_eval
    assert scored["metrics"]["recall@1"] == 1.0  # q2 alone
    assert scored["metrics"]["mrr@10"] == 0.5  # q1 keeps its place with 0


def test_markdown_counts_the_questions_without_recall(tmp_path, capsys):
    qrels = write(tmp_path / "qrels.trec", "q1 0 A 1\nq2 0 B 2\n")
    run = write(tmp_path / "run.trec", "q1 Q0 A 1 1.0 s\n")
    status, out, _ = evaluate(
        capsys, "--gold", qrels, "--run", run, "--threshold", "2", "--format", "markdown"
    )
    assert status == 0
    assert "| recall undefined (no units at the threshold) | 1 |" in out


# --- convention 3: ties ---------------------------------------------------------------------------


def test_ties_follow_trec_eval_by_default_and_file_order_when_asked(tmp_path, capsys):
    qrels = write(tmp_path / "qrels.trec", "q 0 a 2\nq 0 b 1\nq 0 c 0\n")
    run = write(tmp_path / "run.trec", "q Q0 a 1 5.0 s\nq Q0 b 2 5.0 s\nq Q0 c 3 5.0 s\n")
    report, _ = report_of(capsys, "--gold", qrels, "--run", run, "--k", "1")
    values = report["runs"]["run"]["per_question"]["q"]
    assert (values["mrr@10"], values["ndcg@1"]) == (0.5, 0.0)
    assert report["runs"]["run"]["ties"] == (
        "TREC runs: score descending, ties by docno descending (trec_eval's order)"
    )
    report, _ = report_of(capsys, "--gold", qrels, "--run", run, "--k", "1", "--ties", "file")
    assert report["runs"]["run"]["per_question"]["q"]["mrr@10"] == 1.0
    assert report["runs"]["run"]["ties"] == "TREC runs: score descending, ties in file order"


def test_scores_as_trec_eval_9_and_pytrec_eval_store_them_when_asked(tmp_path, capsys):
    import pytrec_eval

    qrels = write(tmp_path / "qrels.trec", "q 0 a 1\n")
    run = write(tmp_path / "run.trec", "q Q0 b 1 1.0 s\nq Q0 a 2 1.000000001 s\n")
    report, _ = report_of(capsys, "--gold", qrels, "--run", run)
    assert report["runs"]["run"]["per_question"]["q"]["mrr@10"] == 1.0  # doubles: a first
    report, _ = report_of(capsys, "--gold", qrels, "--run", run, "--scores", "float32")
    assert report["runs"]["run"]["per_question"]["q"]["mrr@10"] == 0.5  # a tie: b first
    assert report["runs"]["run"]["ties"].endswith("scores as single-precision floats (trec_eval 9)")
    reference = pytrec_eval.RelevanceEvaluator({"q": {"a": 1}}, {"recip_rank"}).evaluate(
        {"q": {"b": 1.0, "a": 1.000000001}}
    )
    assert reference["q"]["recip_rank"] == 0.5


def test_jsonl_runs_keep_list_order_whatever_the_ties_rule(tmp_path, capsys):
    qrels = write(tmp_path / "qrels.trec", "q 0 a 2\nq 0 b 1\nq 0 c 0\n")
    results = [{"doc_id": d, "score": 5.0} for d in "abc"]
    run = write(tmp_path / "run.jsonl", json.dumps({"question_id": "q", "results": results}))
    report, _ = report_of(capsys, "--gold", qrels, "--run", run)
    assert report["runs"]["run"]["per_question"]["q"]["mrr@10"] == 1.0
    assert report["runs"]["run"]["ties"] == "JSONL run: list order"


def test_the_ordering_rule_is_printed_in_markdown(tmp_path, capsys):
    qrels = write(tmp_path / "qrels.trec", "q 0 a 2\n")
    run = write(tmp_path / "run.trec", "q Q0 a 1 5.0 s\n")
    status, out, _ = evaluate(capsys, "--gold", qrels, "--run", run, "--format", "markdown")
    assert status == 0
    assert "Order of run: TREC runs: score descending, ties by docno descending" in out
    assert "Convention: goldset: means over the gold set's answerable questions" in out


# --- convention 4: run questions the gold set does not know --------------------------------------


def test_unknown_run_questions_are_skipped_and_named_unless_strict(tmp_path, capsys):
    qrels = write(tmp_path / "qrels.trec", "q1 0 A 1\n")
    run = write(tmp_path / "run.trec", "q1 Q0 A 1 1.0 s\nq7 Q0 A 1 1.0 s\nq8 Q0 B 1 1.0 s\n")
    report, err = report_of(capsys, "--gold", qrels, "--run", run)
    assert report["runs"]["run"]["skipped_questions"] == ["q7", "q8"]
    assert report["runs"]["run"]["metrics"]["recall@1"] == 1.0
    assert f"warning: {run}: 2 question(s) not in the gold set skipped ('q7', 'q8')" in err
    status, out, err = evaluate(capsys, "--gold", qrels, "--run", run, "--strict")
    assert status == 2 and out == ""
    assert f"{run}:2: question 'q7' is not in the gold set" in err


# --- convention 5: repeated passages -------------------------------------------------------------


def test_a_repeated_passage_counts_once_at_its_first_rank(tmp_path, capsys):
    gold = write(
        tmp_path / "gold.jsonl",
        json.dumps(
            {
                "question_id": "q",
                "spans": [
                    {"doc_id": "A", "start": 0, "end": 10, "grade": 1},
                    {"doc_id": "A", "start": 20, "end": 30, "grade": 1},
                ],
            }
        ),
    )
    results = [
        {"doc_id": "A", "start": 0, "end": 10},
        {"doc_id": "A", "start": 0, "end": 10},  # dropped
        {"doc_id": "A", "start": 20, "end": 30},  # other offsets: a distinct passage, now rank 2
    ]
    run = write(tmp_path / "run.jsonl", json.dumps({"question_id": "q", "results": results}))
    report, err = report_of(capsys, "--gold", gold, "--run", run, "--k", "2")
    values = report["runs"]["run"]["per_question"]["q"]
    assert values["recall@2"] == 1.0 and values["precision@2"] == 1.0
    assert report["runs"]["run"]["repeats_dropped"] == 1
    assert "1 repeated passage(s) in a ranking dropped after their first occurrence" in err


def test_a_repeated_trec_line_keeps_its_best_score(tmp_path, capsys):
    qrels = write(tmp_path / "qrels.trec", "q 0 a 1\nq 0 b 1\n")
    run = write(tmp_path / "run.trec", "q Q0 a 1 1.0 s\nq Q0 b 2 2.0 s\nq Q0 a 3 3.0 s\n")
    report, err = report_of(capsys, "--gold", qrels, "--run", run, "--k", "2")
    assert report["runs"]["run"]["per_question"]["q"]["precision@2"] == 1.0
    assert report["runs"]["run"]["repeats_dropped"] == 1


# --- convention 6: means --------------------------------------------------------------------------


def test_compat_trec_eval_averages_over_questions_in_both_run_and_qrels(tmp_path, capsys):
    # q1 found, q2 missing from the run, q3 without relevant documents (in the run).
    qrels = write(tmp_path / "qrels.trec", "q1 0 A 1\nq2 0 B 1\nq3 0 C 0\n")
    run = write(tmp_path / "run.trec", "q1 Q0 A 1 1.0 s\nq3 Q0 C 1 1.0 s\n")
    default, _ = report_of(capsys, "--gold", qrels, "--run", run, "--k", "1")
    assert default["runs"]["run"]["metrics"]["recall@1"] == 0.5  # q1, q2 (missing: 0)
    assert default["convention"].startswith("goldset:")
    trec, _ = report_of(capsys, "--gold", qrels, "--run", run, "--k", "1", "--compat", "trec_eval")
    assert trec["runs"]["run"]["metrics"]["recall@1"] == 0.5  # q1 (1) and q3 (0)
    assert set(trec["runs"]["run"]["per_question"]) == {"q1", "q3"}
    assert trec["runs"]["run"]["per_question"]["q3"]["ndcg@1"] == 0.0
    assert trec["convention"].startswith("trec_eval: means over the questions in both")
    every, _ = report_of(
        capsys, "--gold", qrels, "--run", run, "--k", "1", "--compat", "trec_eval-c"
    )
    assert every["runs"]["run"]["metrics"]["recall@1"] == pytest.approx(1 / 3)
    assert every["convention"].startswith("trec_eval -c: means over every question")


def test_compat_trec_eval_uses_linear_gain_unless_told(tmp_path, capsys):
    qrels = write(tmp_path / "qrels.trec", "q 0 A 2\nq 0 B 1\n")
    run = write(tmp_path / "run.trec", "q Q0 X 1 5 s\nq Q0 A 2 4 s\nq Q0 Y 3 3 s\n")
    linear, _ = report_of(
        capsys, "--gold", qrels, "--run", run, "--k", "3", "--compat", "trec_eval"
    )
    assert linear["runs"]["run"]["metrics"]["ndcg@3"] == pytest.approx(0.4796, abs=1e-4)
    exp, _ = report_of(
        capsys, "--gold", qrels, "--run", run, "--k", "3", "--compat", "trec_eval", "--gain", "exp"
    )
    assert exp["runs"]["run"]["metrics"]["ndcg@3"] == pytest.approx(0.5213, abs=1e-4)


# --- convention 7: bad input exits 2 with file and line -------------------------------------------


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("name", "gold_text", "run_name", "run_text", "fragment"),
    [
        (
            "qrels",
            "q 0 A ²\n",
            "run.trec",
            "q Q0 A 1 1 s\n",
            "qrels:1: grade '²' is not an integer",
        ),
        ("qrels", "q 0 A 1\nq 0 B +-1\n", "run.trec", "q Q0 A 1 1 s\n", "qrels:2: grade '+-1'"),
        ("qrels", "q 0 A 1\n", "run.trec", "q Q0 A 1 nan s\n", "run.trec:1: score 'nan' is not a"),
        ("qrels", "q 0 A 1\n", "run.trec", "q Q0 B 2 1 s\nq Q0 A 1 -inf s\n", "run.trec:2: score"),
        ("qrels", "q 0 A 1\n", "run.trec", "q Q0 A 1 1e999 s\n", "run.trec:1: score '1e999'"),
        (
            "qrels",
            "q 0 A 1\n",
            "run.jsonl",
            '{"question_id": "q", "results": [{"doc_id": "A", "score": NaN}]}\n',
            "run.jsonl:1: result 1 (A) has a score of nan: give a finite number",
        ),
        (
            "qrels",
            "q 0 A 1\n",
            "run.jsonl",
            '{"question_id": "q", "results": []}\n{"question_id": "r", "results": ' + DEEP + "}\n",
            "run.jsonl:2: not usable JSON (nested too deeply)",
        ),
        (
            "gold.jsonl",
            '{"question_id": "q", "spans": ' + DEEP + "}\n",
            "run.trec",
            "q Q0 A 1 1 s\n",
            "gold.jsonl:1: not usable JSON (nested too deeply)",
        ),
    ],
)
def test_bad_input_exits_2_with_file_and_line(
    tmp_path, capsys, name, gold_text, run_name, run_text, fragment
):
    gold = write(tmp_path / name, gold_text)
    run = write(tmp_path / run_name, run_text)
    status, out, err = evaluate(capsys, "--gold", gold, "--run", run)
    assert status == 2 and out == ""
    assert f"{tmp_path}/{fragment}" in err
    assert "Traceback" not in err


def test_a_deeply_nested_manifest_exits_2(tmp_path, capsys):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    write(bundle / "gold.jsonl", '{"question_id": "q", "spans": [{"doc_id": "A", "grade": 1}]}\n')
    write(bundle / "manifest.json", DEEP)
    run = write(tmp_path / "run.trec", "q Q0 A 1 1 s\n")
    status, _, err = evaluate(capsys, "--gold", bundle, "--run", run)
    assert status == 2
    assert f"{bundle}/manifest.json: not usable JSON (nested too deeply)" in err


@pytest.mark.parametrize("bar", ["nan", "inf", "-inf"])
def test_a_fail_under_bar_that_is_not_finite_is_refused(tmp_path, capsys, bar):
    qrels = write(tmp_path / "qrels.trec", "q 0 A 1\n")
    run = write(tmp_path / "run.trec", "q Q0 A 1 1 s\n")
    status, out, err = evaluate(
        capsys, "--gold", qrels, "--run", run, "--fail-under", f"mrr@10={bar}"
    )
    assert status == 2 and out == ""
    assert f"--fail-under: '{bar}' is not a finite number" in err


def test_a_gold_jsonl_with_a_byte_order_mark_reads_as_jsonl(tmp_path, capsys):
    gold = write(
        tmp_path / "gold.jsonl",
        '{"question_id": "q", "spans": [{"doc_id": "A", "grade": 1}]}\n',
        bom=True,
    )
    run = write(tmp_path / "run.trec", "q Q0 A 1 1 s\n")
    report, _ = report_of(capsys, "--gold", gold, "--run", run)
    assert report["runs"]["run"]["metrics"]["mrr@10"] == 1.0
