"""``python -m goldeval answers`` as a CI job runs it: scores, coverage, bars, bad input."""

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from goldeval.cli import main
from goldeval.formats.answers import read_answer_file
from tests.goldeval.cli.test_cli import DOCUMENTS, QUESTIONS, REPO, write_jsonl

# Against test_cli's gold: q1 (leave [0, 34)), q2 (pension, whole document), =q3 unanswerable.
GOOD = [
    {
        "question_id": "q1",
        "answer": "Staff get 25 days of annual leave.",
        "refused": False,
        "sentences": [
            {"start": 0, "end": 34, "citations": [{"doc_id": "leave", "start": 0, "end": 34}]}
        ],
        "context": [{"doc_id": "leave", "start": 0, "end": 34}],
    },
    {
        "question_id": "q2",
        "answer": "The employer pays 8 percent. Ask payroll.",
        "refused": False,
        "sentences": [
            {"start": 0, "end": 28, "citations": [{"doc_id": "pension"}]},
            {"start": 29, "end": 41, "citations": [{"doc_id": "parking"}]},
        ],
        "context": [{"doc_id": "parking"}, {"doc_id": "pension"}],
    },
    {"question_id": "=q3", "answer": "", "refused": True},
]
WEAK = [
    {**GOOD[0], "sentences": [{"start": 0, "end": 34, "citations": [{"doc_id": "parking"}]}]},
    {"question_id": "q2", "answer": "I cannot tell.", "refused": True, "context": []},
    {"question_id": "=q3", "answer": "There is a gym.", "refused": False},
]


@pytest.fixture
def bundle(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    write_jsonl(folder / "gold.jsonl", QUESTIONS)
    write_jsonl(folder / "corpus.jsonl", DOCUMENTS)
    return folder


def run(capsys, *arguments):
    code = main(["answers", *map(str, arguments)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_automatic_scores_of_two_runs_and_their_comparison(bundle, tmp_path, capsys):
    good = write_jsonl(tmp_path / "good.jsonl", GOOD)
    weak = write_jsonl(tmp_path / "weak.jsonl", WEAK)
    code, out, err = run(capsys, "--gold", bundle, "--answers", good, "--answers", f"w={weak}")
    assert code == 0, err
    report = json.loads(out)
    good_scores = report["runs"]["good"]["scores"]
    # q1: 1/1 citations on gold; q2: 1 of 2 (pension is gold, parking is not): (1 + 0.5) / 2.
    assert good_scores["gold_citation_precision"] == 0.75
    assert good_scores["refusal_recall"] == 1.0 and good_scores["over_refusal"] == 0.0
    # q1's evidence at rank 1 of 1, q2's at rank 2 of 2.
    assert good_scores["evidence_mean_rank"] == 1.5
    assert good_scores["faithfulness"] is None  # no judgements
    weak_scores = report["runs"]["w"]["scores"]
    assert weak_scores["gold_citation_precision"] == 0.0  # q1 cites parking; q2 refused
    assert weak_scores["over_refusal"] == 0.5
    assert weak_scores["over_refusal_evidence_not_in_context"] == 1.0  # q2: nothing sent
    assert weak_scores["refusal_recall"] == 0.0
    compared = {c["metric"]: c for c in report["comparisons"]}
    assert compared["over_refusal"]["a"] == "good" and compared["over_refusal"]["delta"] == -0.5
    assert "coverage" not in err


def _grades(answers_path, *, support="full"):
    answer = read_answer_file(answers_path.read_bytes()).answers["q1"]
    return [
        {
            "kind": "reference",
            "question_id": "q1",
            "facts": [
                {"fact_id": "f1", "text": "25 days", "importance": "vital"},
                {"fact_id": "f2", "text": "carry over", "importance": "okay"},
            ],
        },
        {
            "kind": "answer",
            "question_id": "q1",
            "answer_key": answer.key(),
            "claims": [
                {
                    "start": 0,
                    "end": 34,
                    "support": support,
                    "citations": [{"doc_id": "leave", "start": 0, "end": 34, "grade": 2}],
                }
            ],
            "facts": [{"fact_id": "f1", "present": "yes"}],
        },
    ]


def test_human_scores_from_the_bundles_judgements_with_coverage(bundle, tmp_path, capsys):
    good = write_jsonl(tmp_path / "good.jsonl", GOOD)
    write_jsonl(bundle / "answers-gold.jsonl", _grades(good, support="partial"))
    code, out, err = run(capsys, "--gold", bundle, "--answers", good)
    assert code == 0, err
    scores = json.loads(out)["runs"]["good"]["scores"]
    assert scores["faithfulness"] == 0.0  # q1 only: one claim, partial: not supported (Ragas)
    assert scores["faithfulness_graded"] == 0.5  # the half credit, named apart
    assert scores["correctness"] == 0.5  # q1: f1 yes, f2 absent; q2 has no reference
    assert scores["correctness_vital"] == 1.0
    assert "coverage: good: 1 of 2 answers to grade have human grades" in err


def test_the_zipped_bundle_carries_its_judgements_as_the_folder_does(bundle, tmp_path, capsys):
    import zipfile

    good = write_jsonl(tmp_path / "good.jsonl", GOOD)
    write_jsonl(bundle / "answers-gold.jsonl", _grades(good, support="partial"))
    zipped = tmp_path / "gold-set-v1.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        for member in sorted(bundle.iterdir()):
            archive.writestr(f"gold-set-v1/{member.name}", member.read_bytes())
    code, from_folder, err = run(capsys, "--gold", bundle, "--answers", good)
    assert code == 0, err
    code, from_zip, err = run(capsys, "--gold", zipped, "--answers", good)
    assert code == 0, err
    assert "coverage: good: 1 of 2 answers to grade have human grades" in err
    assert json.loads(from_zip)["runs"] == json.loads(from_folder)["runs"]


def test_fail_under_exits_1_and_names_the_run_and_score(bundle, tmp_path, capsys):
    good = write_jsonl(tmp_path / "good.jsonl", GOOD)
    judgements = write_jsonl(tmp_path / "grades.jsonl", _grades(good, support="partial"))
    arguments = ["--gold", bundle, "--answers", good, "--judgements", judgements]
    code, _, err = run(capsys, *arguments, "--fail-under", "faithfulness_graded=0.9")
    assert code == 1
    assert "below bar: good: faithfulness_graded = 0.5000 is below 0.9" in err
    code, _, err = run(capsys, *arguments, "--fail-under", "faithfulness_graded=0.5")
    assert code == 0, err
    code, _, err = run(capsys, *arguments, "--fail-under", "faithfulness=0.5")
    assert code == 1 and "below bar: good: faithfulness = 0.0000 is below 0.5" in err
    code, _, err = run(capsys, *arguments, "--fail-under", "over_refusal=0.1")
    assert code == 2 and "not a score where higher is better" in err
    # A NaN bar would never fail and an infinite one always: both refused, as for retrieval.
    for bar in ("faithfulness=nan", "faithfulness=inf"):
        code, _, err = run(capsys, *arguments, "--fail-under", bar)
        assert code == 2 and "is not a finite number" in err


def test_markdown_and_csv(bundle, tmp_path, capsys):
    good = write_jsonl(tmp_path / "good.jsonl", GOOD)
    code, out, _ = run(capsys, "--gold", bundle, "--answers", good, "--format", "markdown")
    assert code == 0
    assert "| gold citation precision (citations on gold spans) | 0.7500 |" in out
    assert "## Human-graded scores" in out
    code, out, _ = run(
        capsys, "--gold", bundle, "--answers", good, "--format", "csv", "--per-question"
    )
    rows = list(csv.DictReader(io.StringIO(out)))
    by_key = {(r["kind"], r["question_id"], r["metric"]): r["value"] for r in rows}
    assert by_key[("summary", "", "gold_citation_precision")] == "0.75"
    # A question id starting with "=" cannot run as a spreadsheet formula.
    assert by_key[("question", "'=q3", "refusal_recall")] == "1.0"


@pytest.mark.parametrize(
    "lines, fragment",
    [
        ([{**GOOD[0], "question_id": "nope"}], "good.jsonl:1: question 'nope' is not in"),
        ([GOOD[1], GOOD[1]], "good.jsonl:2: question 'q2' already given on line 1"),
        (
            [GOOD[1], {k: v for k, v in GOOD[0].items() if k != "refused"}],
            "good.jsonl:2: question 'q1': refused is required",
        ),
        (
            [{**GOOD[0], "context": [{"doc_id": "leave", "start": 0, "end": 999}]}],
            "good.jsonl:1: question 'q1': context passage 1 [0, 999) is outside document",
        ),
        (
            [
                {
                    **GOOD[0],
                    "context": [{"doc_id": "ghost"}],
                    "sentences": [{"start": 0, "end": 34, "citations": [{"doc_id": "ghost2"}]}],
                }
            ],
            "good.jsonl: the answer run names no document the corpus has: 2 unknown document "
            "ids ('ghost', 'ghost2')",
        ),
        (
            [{**GOOD[0], "sentences": [{"start": 0, "end": 99}]}],
            "sentence 1 [0, 99) is outside the answer (34 characters)",
        ),
        ([], "good.jsonl:1: the file holds no answers"),
    ],
)
def test_bad_answer_files_exit_2_with_file_and_line(bundle, tmp_path, capsys, lines, fragment):
    path = write_jsonl(tmp_path / "good.jsonl", lines)
    code, out, err = run(capsys, "--gold", bundle, "--answers", path)
    assert code == 2 and out == ""
    assert fragment in err


def test_missing_answers_argument_or_file_exit_2(bundle, tmp_path, capsys):
    assert run(capsys, "--gold", bundle)[0] == 2
    code, _, err = run(capsys, "--gold", bundle, "--answers", tmp_path / "none.jsonl")
    assert code == 2 and "none.jsonl: no such file" in err


def test_runs_in_a_fresh_interpreter_without_django(bundle, tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", GOOD)
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    code = (
        "import sys; sys.modules['django'] = None; from goldeval.cli import main; "
        f"sys.exit(main(['answers', '--gold', {str(bundle)!r}, '--answers', {str(good)!r}]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["runs"]["good"]["scores"]["refusal_recall"] == 1.0


def test_a_missing_question_counts_the_same_in_evaluate_and_answers(tmp_path, capsys):
    # Four unanswerable questions and one answerable: the run refuses two, answers one and
    # leaves one out. Both commands read the same file: refusal 2 / 4 in each, missing named.
    folder = tmp_path / "same"
    folder.mkdir()
    questions = [
        {"question_id": f"u{i}", "question": f"unanswerable {i}", "answerable": False}
        for i in range(4)
    ] + [
        {
            "question_id": "a",
            "question": "answerable",
            "answerable": True,
            "spans": [{"doc_id": "leave", "grade": 1}],
        }
    ]
    write_jsonl(folder / "gold.jsonl", questions)
    answers = write_jsonl(
        tmp_path / "rag.jsonl",
        [
            {"question_id": "u0", "answer": "", "refused": True},
            {"question_id": "u1", "answer": "", "refused": True},
            {"question_id": "u2", "answer": "There is a gym.", "refused": False},
            {"question_id": "a", "answer": "", "refused": True},
        ],
    )
    assert main(["evaluate", "--gold", str(folder), "--run", str(answers)]) == 0
    retrieval = json.loads(capsys.readouterr().out)["runs"]["rag"]
    assert main(["answers", "--gold", str(folder), "--answers", str(answers)]) == 0
    report = json.loads(capsys.readouterr().out)
    answer_run = report["runs"]["rag"]
    assert retrieval["unanswerable"]["refusal_accuracy"] == 2 / 4
    assert answer_run["scores"]["refusal_recall"] == 2 / 4
    assert retrieval["unanswerable"]["wrongly_refused"] == answer_run["scores"]["over_refusal"] == 1
    # Each report names the question and how it counted.
    assert answer_run["missing_questions"] == retrieval["missing_questions"] == ["u3"]
    assert "counts as not refused" in report["missing_rule"]
    assert (
        main(["answers", "--gold", str(folder), "--answers", str(answers), "--format", "markdown"])
        == 0
    )
    markdown = capsys.readouterr().out
    assert "Missing from rag (1): `u3`." in markdown
    assert "counts as not refused" in markdown
    assert (
        main(["answers", "--gold", str(folder), "--answers", str(answers), "--format", "csv"]) == 0
    )
    assert "\nmissing,rag,,u3,,,\n" in capsys.readouterr().out
    assert main(["evaluate", "--gold", str(folder), "--run", str(answers), "--format", "csv"]) == 0
    assert "\nmissing,rag,,u3,,,\n" in capsys.readouterr().out


def test_two_answer_runs_report_what_the_gold_set_detects(bundle, tmp_path, capsys):
    good = write_jsonl(tmp_path / "good.jsonl", GOOD)
    weak = write_jsonl(tmp_path / "weak.jsonl", WEAK)
    code, out, err = run(capsys, "--gold", bundle, "--answers", good, "--answers", weak)
    assert code == 0, err
    report = json.loads(out)
    # Over-refusal pairs q1 and q2 (both answered or refused in both runs).
    limit = report["power"]["over_refusal"]
    assert limit["runs"] == 2 and limit["questions"] == 2 and limit["sigma_d"] > 0
    compared = {c["metric"]: c for c in report["comparisons"]}
    # Two questions detect nothing realistic: the 0.5 difference is below the limit.
    assert compared["over_refusal"]["delta"] == -0.5
    assert compared["over_refusal"]["detectable"] is False
    # Gold citation precision pairs q1 alone (weak refused q2): no spread, no limit.
    assert report["power"]["gold_citation_precision"]["minimum_detectable_difference"] is None
    assert compared["gold_citation_precision"]["detectable"] is None
    code, out, _ = run(
        capsys, "--gold", bundle, "--answers", good, "--answers", weak, "--format", "markdown"
    )
    assert "not detectable with this gold set" in out and "## Power" in out


def test_answers_require_significant(bundle, tmp_path, capsys):
    good = write_jsonl(tmp_path / "good.jsonl", GOOD)
    weak = write_jsonl(tmp_path / "weak.jsonl", WEAK)
    both = ["--gold", bundle, "--answers", good, "--answers", weak]
    code, _, err = run(capsys, *both, "--require-significant", "gold_citation_precision")
    assert code == 1
    # Paired on q1 alone (weak refused q2): +1.0, but one question is never significant.
    assert "not significant: good: gold_citation_precision improvement over weak = +1.0000" in err
    # Lower is better for over-refusal: no "improvement" to require; one run: nothing to beat.
    code, _, err = run(capsys, *both, "--require-significant", "over_refusal")
    assert code == 2 and "not a compared score where higher is better" in err
    code, _, err = run(
        capsys, "--gold", bundle, "--answers", good, "--require-significant", "faithfulness"
    )
    assert code == 2 and "nothing to compare the first run with" in err


def test_an_answer_run_citing_unknown_documents_is_scored_with_a_warning(bundle, tmp_path, capsys):
    cited = {
        **GOOD[0],
        "sentences": [
            {
                "start": 0,
                "end": 34,
                "citations": [{"doc_id": "leave", "start": 0, "end": 34}, {"doc_id": "ghost"}],
            }
        ],
    }
    path = write_jsonl(tmp_path / "mixed.jsonl", [cited, GOOD[1], GOOD[2]])
    code, out, err = run(capsys, "--gold", bundle, "--answers", path)
    assert code == 0 and out
    assert (
        f"warning: {path}: 1 unknown document id of 4 named, kept, reaching no gold span "
        "('ghost')" in err
    )
