import csv
import io
import json

from goldeval.scoring.compare import Comparison
from goldeval.scoring.metrics import RunEvaluation, UnanswerableReport
from goldeval.scoring.report import build_report, render


def evaluations():
    return {
        "dense|v2": RunEvaluation(
            questions=3,
            answerable=2,
            missing=1,
            metrics={"recall@5": 0.5, "mrr@10": 0.25},
            unanswerable=UnanswerableReport(questions=1, refusal_accuracy=1.0, wrongly_refused=0.5),
            per_question={
                "q1": {"recall@5": 1.0, "mrr@10": 0.5},
                "+q2": {"recall@5": 0.0, "mrr@10": 0.0},
            },
            refused={"q1": False, "q3": True},
            missing_questions=["+q2"],
            unanswerable_questions=["q3"],
        ),
        "bm25": RunEvaluation(
            questions=3,
            answerable=2,
            missing=0,
            metrics={"recall@5": 0.25, "mrr@10": 0.5},
            unanswerable=UnanswerableReport(
                questions=1, refusal_accuracy=None, wrongly_refused=None
            ),
            per_question={
                "q1": {"recall@5": 0.5, "mrr@10": 1.0},
                "+q2": {"recall@5": 0.0, "mrr@10": 0.0},
            },
            unanswerable_questions=["q3"],
        ),
    }


COMPARISONS = [Comparison(a="dense|v2", b="bm25", metric="recall@5", delta=0.25, p_value=0.5)]


def test_json_structure():
    report = json.loads(render(build_report(evaluations(), COMPARISONS), output_format="json"))
    assert report["runs"]["dense|v2"] == {
        "questions": 3,
        "answerable": 2,
        "missing": 1,
        "missing_questions": ["+q2"],
        "recall_undefined": 0,
        "metrics": {"recall@5": 0.5, "mrr@10": 0.25},
        "unanswerable": {"questions": 1, "refusal_accuracy": 1.0, "wrongly_refused": 0.5},
    }
    assert report["comparisons"] == [
        {"a": "dense|v2", "b": "bm25", "metric": "recall@5", "delta": 0.25, "p_value": 0.5}
    ]


def test_per_question_only_when_asked():
    report = build_report(evaluations(), [], per_question=True)
    rows = report["runs"]["dense|v2"]["per_question"]
    assert rows["+q2"] == {
        "answerable": True,
        "missing": True,
        "refused": None,
        "recall@5": 0.0,
        "mrr@10": 0.0,
    }
    assert rows["q3"] == {"answerable": False, "missing": False, "refused": True}
    assert "per_question" not in build_report(evaluations(), [])["runs"]["bm25"]


def test_markdown_tables():
    text = render(
        build_report(evaluations(), COMPARISONS, per_question=True), output_format="markdown"
    )
    assert "|  | dense\\|v2 | bm25 |" in text
    assert "| recall@5 | 0.5000 | 0.2500 |" in text
    assert "| refusal accuracy (unanswerable) | 1.0000 | — |" in text
    assert "| dense\\|v2 | bm25 | recall@5 | 0.2500 | 0.5000 |" in text
    assert "## Per question: dense\\|v2" in text
    assert "| q3 | no | no | yes | — | — |" in text


def test_csv_long_table_escapes_formula_cells():
    text = render(build_report(evaluations(), COMPARISONS, per_question=True), output_format="csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0] == {
        "kind": "summary",
        "run": "dense|v2",
        "against": "",
        "question_id": "",
        "metric": "questions",
        "value": "3",
        "p_value": "",
    }
    assert {
        "kind": "summary",
        "run": "bm25",
        "against": "",
        "question_id": "",
        "metric": "unanswerable.refusal_accuracy",
        "value": "",
        "p_value": "",
    } in rows
    assert {row["question_id"] for row in rows if row["kind"] == "question"} == {"q1", "'+q2", "q3"}
    assert rows[-1] == {
        "kind": "comparison",
        "run": "dense|v2",
        "against": "bm25",
        "question_id": "",
        "metric": "recall@5",
        "value": "0.25",
        "p_value": "0.5",
    }
