"""Judgements imported from elsewhere (`manage.py import_judgements`) are outside data: every
number and string of a line is checked against what the columns and the scoring hold, and a bad
one is that line's error while nothing is written."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from labelling.models import Judgement, Span
from labelling.services.judgement_import import import_judgements
from tests.factories import POLICY_TEXT, QuestionFactory, QuestionSetFactory, add_documents

GOOD = {"question_id": "q1", "labeller": "carol", "doc_id": "leave", "grade": 2}


def _raw(**fields) -> str:
    """One line with raw JSON values (NaN, 1e400 and huge integers are not json.dumps')."""
    values = {key: json.dumps(value) for key, value in GOOD.items()}
    values.update(fields)
    return "{" + ", ".join(f'"{key}": {value}' for key, value in values.items()) + "}"


BAD_LINES = {
    "grade NaN": _raw(grade="NaN"),
    "grade Infinity": _raw(grade="Infinity"),
    "grade 1e400": _raw(grade="1e400"),
    "grade 2.0": _raw(grade="2.0"),
    "grade text": _raw(grade='"2"'),
    "grade true": _raw(grade="true"),
    "grade huge": _raw(grade="9" * 400),
    "grade 3": _raw(grade="3"),
    "grade -1": _raw(grade="-1"),
    "offsets NaN": _raw(start="NaN", end="10"),
    "offsets 1e400": _raw(start="0", end="1e400"),
    "offsets huge": _raw(start="0", end="9" * 400),
    "offsets negative": _raw(start="-1", end="10"),
    "offsets text": _raw(start='"0"', end='"10"'),
    "offsets one": _raw(start="0"),
    "labeller long": _raw(labeller=json.dumps("c" * 151)),
    "labeller NUL": _raw(labeller='"car\\u0000ol"'),
    "labeller surrogate": _raw(labeller='"car\\ud800ol"'),
    "labeller bidi": _raw(labeller='"car\\u202eol"'),
    "labeller number": _raw(labeller="5"),
    "labeller empty": _raw(labeller='"  "'),
    "question object": _raw(question_id='{"a": 1}'),
    "question NUL": _raw(question_id='"q1\\u0000"'),
    "question huge": _raw(question_id="9" * 400),
    "document NUL": _raw(doc_id='"leave\\u0000"'),
    "document list": _raw(doc_id="[1]"),
    "nested": '{"question_id": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "digits": '{"question_id": ' + "1" * 5000 + "}",
    "not an object": "[1, 2]",
}


@pytest.fixture
def question_set(project):
    add_documents(project, ("leave", POLICY_TEXT))
    question_set = QuestionSetFactory(project=project, name="hr")
    QuestionFactory(question_set=question_set, external_id="q1")
    return question_set


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_a_value_no_column_can_hold_is_its_lines_error_and_nothing_is_written(
    project, question_set, tmp_path, capsys, case
):
    data = (json.dumps(GOOD) + "\n" + BAD_LINES[case] + "\n").encode()
    users = get_user_model().objects.count()
    result = import_judgements(project=project, name="j.jsonl", data=data)
    assert [error.line for error in result.errors] == [2], result.errors
    assert "\x00" not in result.errors[0].error
    assert len(result.errors[0].error) < 600
    assert result.judgements == 0 and result.labellers_created == []
    # The command says the same on stderr, exits with an error and writes nothing either.
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    with pytest.raises(CommandError, match="1 bad line"):
        call_command("import_judgements", str(path), "--project", project.slug)
    assert "j.jsonl, line 2: " in capsys.readouterr().err
    assert not Judgement.objects.exists() and not Span.objects.exists()
    assert get_user_model().objects.count() == users


def test_values_inside_the_bounds_are_imported(project, question_set):
    length = len(POLICY_TEXT)
    lines = [
        GOOD,
        {**GOOD, "labeller": "d" * 150, "grade": 0},
        {**GOOD, "labeller": "erin", "start": 0, "end": length, "grade": 1},
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    result = import_judgements(project=project, name="j.jsonl", data=data)
    assert result.errors == [] and result.judgements == 3


def test_unknown_documents_are_left_out_with_a_warning_and_a_file_of_them_is_refused(
    project, question_set, tmp_path, capsys
):
    lines = [GOOD, {**GOOD, "doc_id": "ghost"}, {**GOOD, "labeller": "dan", "doc_id": "ghost"}]
    path = tmp_path / "j.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    call_command("import_judgements", str(path), "--project", project.slug)
    captured = capsys.readouterr()
    assert "Warning: j.jsonl: 1 unknown document id of 2 named, left out ('ghost')." in (
        captured.err
    )
    assert "Imported 1 judgements." in captured.out
    assert Judgement.objects.count() == 1
    path.write_text(json.dumps({**GOOD, "doc_id": "ghost"}))
    with pytest.raises(CommandError) as error:
        call_command("import_judgements", str(path), "--project", project.slug)
    assert error.value.returncode == 2
    assert str(error.value) == (
        "j.jsonl names no document the corpus has: 1 unknown document id ('ghost'). "
        "Nothing was imported."
    )
    assert Judgement.objects.count() == 1
