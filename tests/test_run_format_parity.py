"""A run file reads the same in the app and in the CLI: the same ranked rows, and the same
problems with the same lines and messages (the app lists them all, the CLI stops at the first).

Both go through goldeval.formats.runfiles; these tests hold the two entry points to it, the
labelling run import and `python -m goldeval`, so neither can drift into a reader of its own
again."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from corpus.models import Document
from corpus.services import retrieval
from goldeval.cli import main as evaluation_cli
from goldeval.formats.runs import RunFormatError, read_run
from goldset.errors import ServiceError
from labelling.models import RunResult
from labelling.services.questions import InputRejected
from labelling.services.run_import import import_run
from tests.factories import QuestionFactory, QuestionSetFactory, add_documents

REPO = Path(__file__).resolve().parents[1]
TREC_SHAPE = "expected 'qid Q0 docid rank score tag' (a JSONL run starts with '{')"

GOOD_RUNS = {
    "ties-comments-extra-columns.trec": (
        "# made by hand\n"
        "q1 Q0 leave 1 2.5 sys\n"
        "q1 Q0 pension 2 2.5 sys\n"  # ties as trec_eval orders them: docno descending
        "q2 Q0 parking 1 0.5 sys trailing text is ignored\n"
        "\n"
        "q1 Q0 parking 3 9 sys\n"  # the score ranks, not the rank column
        "q2 Q0 leave 7 1e1 sys\n"
    ),
    "crlf.trec": "q3 Q0 pension 1 -1 sys\r\nq3 Q0 leave 2 -0.5 sys\r\n",
    "offsets-and-refusals.jsonl": (
        json.dumps(
            {
                "question_id": "q1",
                "results": [
                    {"doc_id": "leave", "start": 0, "end": 10, "score": 1},
                    {"doc_id": "pension"},
                    {"doc_id": "parking", "start": 5, "end": 9, "score": 0.25},
                ],
                "refused": False,
            }
        )
        + "\n# a comment\n\n"
        + json.dumps({"question_id": "q2", "results": [], "refused": True})
        + "\n"
        # A raw U+2028 and U+0085 inside a string do not end the line.
        + '{"question_id": "q3", "note": "a\u2028b\u0085c", "results": [{"doc_id": "leave"}]}\n'
    ),
    "bom-crlf.jsonl": "\ufeff"
    + json.dumps({"question_id": "q2", "results": [{"doc_id": "parking", "score": 3}]})
    + "\r\n",
}

BAD_RUNS = {
    "every-kind.jsonl": (
        [
            {"question_id": "q1", "results": [{"doc_id": "leave", "score": 0.5}]},
            '{"question_id": "q2", "results": [',
            {"question_id": "q2", "results": [{"start": 0, "end": 4}, {"doc_id": "leave"}]},
            {
                "question_id": "q3",
                "results": [
                    {"doc_id": "pension", "start": 9, "end": 3},
                    {"doc_id": "parking", "start": 2},
                    {"doc_id": "leave", "start": 1.5, "end": 3},
                    {"doc_id": "parking", "score": "high"},
                ],
            },
            {"question_id": "q1", "results": []},
            [1, 2],
            {"results": []},
            {"question_id": "q4", "results": {"doc_id": "leave"}},
            {"question_id": "q5", "results": [], "refused": "yes"},
            {"question_id": "q6", "results": ["leave"]},
        ],
        [
            (2, "not valid JSON (Expecting value)"),
            (3, "result 1 needs a doc_id"),
            (4, "result 1 (pension) needs whole-number offsets with 0 <= start < end"),
            (4, "result 2 (parking) needs both start and end, or neither"),
            (4, "result 3 (leave) needs whole-number offsets with 0 <= start < end"),
            (4, "result 4 (parking) has a score that is not a number"),
            (5, "question 'q1' already given on line 1"),
            (6, "expected a JSON object"),
            (7, "question_id must be a non-empty string"),
            (8, "results must be a list"),
            (9, "refused must be true or false"),
            (10, "result 1 must be a JSON object"),
        ],
    ),
    "every-kind.trec": (
        [
            "q1 Q0 leave 1 2.0 sys",
            "q1 Q0 pension 2",
            "# a comment",
            "q2 Q0 parking 1 high sys",
            "q2 Q0 leave 2 1.0 sys",
            "q3 Q0 leave",
        ],
        [(2, TREC_SHAPE), (4, "score 'high' is not a number"), (6, TREC_SHAPE)],
    ),
    "repeated-question.jsonl": (
        [
            {"question_id": "q2", "results": [{"doc_id": "leave"}]},
            {"question_id": "q2", "results": [{"doc_id": "parking"}]},
        ],
        [(2, "question 'q2' already given on line 1")],
    ),
    # A question's first line counts even when that line is refused.
    "repeat-of-a-refused-line.jsonl": (
        [
            {"question_id": "q1", "results": {"doc_id": "leave"}},
            {"question_id": "q1", "results": [{"doc_id": "leave"}]},
        ],
        [(1, "results must be a list"), (2, "question 'q1' already given on line 1")],
    ),
    # The first line tells the format: after a TREC line, a JSON line is a bad TREC line.
    "json-inside-trec.trec": (
        ["# comments do not count", "q1 Q0 leave 1 2.0 sys", '{"question_id": "q1"}'],
        [(3, TREC_SHAPE)],
    ),
}


def file_text(lines) -> str:
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)


@pytest.fixture
def team(project):
    add_documents(
        project,
        ("leave", "Staff get 25 days of annual leave; unused days carry over."),
        ("pension", "The employer pays 8 percent of salary into the pension."),
        ("parking", "Parking permits come from the facilities desk."),
    )
    question_set = QuestionSetFactory(project=project, name="staff")
    for external_id in ("q1", "q2", "q3"):
        QuestionFactory(question_set=question_set, external_id=external_id)
    # No chunking scheme: a result without offsets stays one row, its whole document.
    retriever = retrieval.add_retriever(project=project, name="team", kind="run")
    return retriever, question_set


@pytest.fixture
def gold(tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text(
        "".join(
            json.dumps({"question_id": q, "question": "?", "answerable": False}) + "\n"
            for q in ("q1", "q2", "q3")
        )
    )
    return path


def app_rows(retriever) -> list[tuple]:
    return list(
        RunResult.objects.filter(retriever=retriever)
        .order_by("question__external_id", "rank")
        .values_list("question__external_id", "rank", "version__document__doc_id", "start", "end")
    )


def cli_rows(data: bytes) -> list[tuple]:
    """The CLI's rankings as the app stores them: a whole document is [0, its length)."""
    lengths = {d.doc_id: len(d.latest_version.text) for d in Document.objects.all()}
    run = read_run(data, name="run")
    return sorted(
        (question_id, rank, doc_id, start or 0, lengths[doc_id] if end is None else end)
        for question_id, ranking in run.rankings.items()
        for rank, (doc_id, start, end) in enumerate(ranking.passages, start=1)
    )


@pytest.mark.parametrize("name", sorted(GOOD_RUNS))
def test_a_good_run_gives_the_same_rows_in_the_app_and_the_cli(team, gold, tmp_path, capsys, name):
    retriever, question_set = team
    data = GOOD_RUNS[name].encode()
    result = import_run(retriever=retriever, question_set=question_set, data=data, name=name)
    rows = app_rows(retriever)
    assert rows == cli_rows(data)
    assert result.results == len(rows) > 0
    path = tmp_path / name
    path.write_bytes(data)
    assert (
        evaluation_cli(["evaluate", "--gold", str(gold), "--run", str(path), "--no-baseline"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["runs"][path.stem]


def test_the_rows_are_ranked_as_the_format_says(team):
    retriever, question_set = team
    name = "ties-comments-extra-columns.trec"
    import_run(retriever=retriever, question_set=question_set, data=GOOD_RUNS[name], name=name)
    assert [(q, rank, doc) for q, rank, doc, _, _ in app_rows(retriever)] == [
        ("q1", 1, "parking"),
        ("q1", 2, "pension"),
        ("q1", 3, "leave"),
        ("q2", 1, "leave"),
        ("q2", 2, "parking"),
    ]


@pytest.mark.parametrize("name", sorted(BAD_RUNS))
def test_a_bad_run_gives_the_same_problems_in_the_app_and_the_cli(
    team, gold, tmp_path, capsys, name
):
    retriever, question_set = team
    lines, expected = BAD_RUNS[name]
    data = file_text(lines).encode()
    with pytest.raises(InputRejected) as rejected:
        import_run(retriever=retriever, question_set=question_set, data=data, name=name)
    assert [(p.line, p.error) for p in rejected.value.problems] == expected
    assert not RunResult.objects.exists()

    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(RunFormatError) as first:
        read_run(data, name="run", source=path)
    assert (first.value.line, first.value.message) == expected[0]
    code = evaluation_cli(["evaluate", "--gold", str(gold), "--run", str(path), "--no-baseline"])
    line, message = expected[0]
    assert (code, capsys.readouterr().err) == (2, f"error: {path}:{line}: {message}\n")


@pytest.mark.parametrize("bad", range(2, len(BAD_RUNS["every-kind.jsonl"][0]) + 1))
def test_each_kind_of_bad_line_is_the_first_problem_the_cli_reports(team, bad):
    """Each bad line of every-kind.jsonl after its good first line, on its own: the CLI stops
    at exactly what the app reports first."""
    retriever, question_set = team
    lines, expected = BAD_RUNS["every-kind.jsonl"]
    data = file_text([lines[0], lines[bad - 1]]).encode()
    own = [(2, message) for line, message in expected if line == bad]
    with pytest.raises(InputRejected) as rejected:
        import_run(retriever=retriever, question_set=question_set, data=data, name="one.jsonl")
    assert [(p.line, p.error) for p in rejected.value.problems] == own
    with pytest.raises(RunFormatError) as first:
        read_run(data, name="one")
    assert (first.value.line, first.value.message) == own[0]


def test_python_m_evaluation_reports_the_first_problem_the_app_lists(team, gold, tmp_path):
    """The same, in a fresh interpreter without Django, as a team's CI runs it."""
    retriever, question_set = team
    lines, expected = BAD_RUNS["every-kind.jsonl"]
    path = tmp_path / "run.jsonl"
    path.write_text(file_text(lines))
    with pytest.raises(InputRejected) as rejected:
        import_run(
            retriever=retriever, question_set=question_set, data=path.read_bytes(), name=path.name
        )
    first = rejected.value.problems[0]
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    completed = subprocess.run(
        [sys.executable, "-m", "evaluation", "evaluate", "--gold", str(gold), "--run", str(path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    assert completed.stderr == f"error: {path}:{first.line}: {first.error}\n"


def test_bytes_that_are_not_utf8_name_the_same_byte(team):
    retriever, question_set = team
    data = b"\xef\xbb\xbfq1 Q0 leave 1 2.0 sys\nq1 Q0 caf\xe9 2 1.0 sys\n"
    with pytest.raises(ServiceError) as app:
        import_run(retriever=retriever, question_set=question_set, data=data, name="run.trec")
    with pytest.raises(RunFormatError) as cli:
        read_run(data, name="run")
    # Counted in the file as given, byte-order mark included.
    assert str(app.value) == "run.trec is not UTF-8 text (byte 34 is not valid)."
    assert cli.value.message == "not UTF-8 text (byte 34 is not valid)"
