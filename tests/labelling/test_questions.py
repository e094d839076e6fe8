"""Question import: byte-for-byte text, duplicates flagged never dropped, all or nothing."""

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from goldset.errors import ServiceError
from labelling.models import Question, QuestionSet
from labelling.services.questions import InputRejected, import_questions
from tests.factories import login

REPO = Path(__file__).resolve().parents[2]
DEMO_QUESTIONS = REPO / "demo" / "data" / "questions.jsonl"

# Typos, odd case, doubled spaces, trailing punctuation and whitespace, non-ASCII, an embedded
# line break: all of it is the question.
AWKWARD = [
    "how many days holiday can i carry over to next year??",
    "Whats  the limit for dinner when your travelling ",
    "Café budget — is the per diem €45 or €50?\nasking for a trip to Zürich",
]


def csv_bytes(rows, header="id,question,source,tags") -> bytes:
    lines = [header]
    for row in rows:
        lines.append(",".join('"' + str(v).replace('"', '""') + '"' for v in row))
    return ("\r\n".join(lines) + "\r\n").encode("utf-8")


def test_csv_text_is_stored_byte_for_byte_with_source_and_tags(project):
    data = csv_bytes(
        [
            ("h1", AWKWARD[0], "slack", "hr;leave"),
            ("f1", AWKWARD[1], "", "finance, travel"),
            ("f2", AWKWARD[2], "tickets", ""),
        ]
    )
    result = import_questions(
        project=project, set_name="staff", data=data, format="csv", source="survey"
    )
    assert (result.created, result.duplicates) == (3, 0)
    questions = list(Question.objects.order_by("pk"))
    assert [q.text for q in questions] == AWKWARD
    assert [q.text.encode() for q in questions] == [t.encode() for t in AWKWARD]
    assert [q.external_id for q in questions] == ["h1", "f1", "f2"]
    assert [q.source for q in questions] == ["slack", "survey", "tickets"]
    assert [q.tags for q in questions] == [["hr", "leave"], ["finance", "travel"], []]


def test_duplicates_are_flagged_never_dropped(project):
    first = import_questions(
        project=project,
        set_name="staff",
        data="how do i reset my VPN token?\nwhere is the canteen\nwhere is the canteen\n",
        format="lines",
    )
    # A line repeated in one file is two questions: the second is flagged, not dropped.
    assert (first.created, first.duplicates) == (3, 1)
    again = import_questions(
        project=project,
        set_name="staff",
        data="How do I  reset my vpn token?\nhow do i reset my VPN token?\n",
        format="lines",
    )
    # The near-duplicate is new and flagged; the identical line is the question already there.
    assert (again.created, again.duplicates, again.unchanged) == (1, 1, 1)
    original = Question.objects.get(text="how do i reset my VPN token?", duplicate_of=None)
    duplicates = Question.objects.filter(duplicate_of=original).order_by("pk")
    assert [q.text for q in duplicates] == ["How do I  reset my vpn token?"]
    assert Question.objects.count() == 4
    assert len(set(Question.objects.values_list("external_id", flat=True))) == 4


@pytest.mark.parametrize("format", ["lines", "csv", "jsonl"])
def test_importing_the_same_questions_again_adds_nothing(project, format):
    texts = ["where is the canteen", "Where is the  canteen", "where is the canteen", "vpn?"]
    data = {
        "lines": "\n".join(texts) + "\n",
        "csv": "question\n" + "\n".join(texts) + "\n",
        "jsonl": "".join(json.dumps({"question": t}) + "\n" for t in texts),
    }[format]
    first = import_questions(project=project, set_name="staff", data=data, format=format)
    assert (first.created, first.duplicates) == (4, 2)
    before = list(
        Question.objects.order_by("pk").values_list("external_id", "text", "duplicate_of")
    )
    for _ in range(2):
        again = import_questions(project=project, set_name="staff", data=data, format=format)
        assert (again.created, again.unchanged, again.duplicates) == (0, 4, 0)
    assert (
        list(Question.objects.order_by("pk").values_list("external_id", "text", "duplicate_of"))
        == before
    )
    # A file with one line more adds that line only, numbered after the others.
    more = import_questions(
        project=project,
        set_name="staff",
        data=data.replace("vpn?", "vpn?\nthe printer")
        if format != "jsonl"
        else data + json.dumps({"question": "the printer"}) + "\n",
        format=format,
    )
    assert (more.created, more.unchanged) == (1, 4)
    assert Question.objects.order_by("pk").last().external_id == "q005"


def test_the_demo_questions_import_verbatim_without_the_test_hints(project):
    records = [json.loads(line) for line in DEMO_QUESTIONS.read_text().splitlines()]
    result = import_questions(
        project=project, set_name="demo", data=DEMO_QUESTIONS.read_bytes(), format="jsonl"
    )
    assert result.created == len(records) >= 30
    stored = {q.external_id: q for q in Question.objects.all()}
    for record in records:
        question = stored[record["id"]]
        assert question.text == record["question"]
        assert question.source == record["source"] and question.tags == record["tags"]
    assert sum(not r["answerable"] for r in records) == 4
    again = import_questions(
        project=project, set_name="demo", data=DEMO_QUESTIONS.read_bytes(), format="jsonl"
    )
    assert (again.created, again.unchanged) == (0, len(records))


@pytest.mark.parametrize(
    ("data", "format", "message"),
    [
        (b"", "csv", "has no questions"),
        (b"\n\n  \n", "lines", "has no questions"),
        (b"", "jsonl", "has no questions"),
        (b"id,title,body\n1,a,b\n", "csv", "needs a 'question' (or 'text') column"),
        ("caf\u00e9?".encode("latin-1"), "lines", "not UTF-8"),
    ],
)
def test_unusable_files_say_why_and_write_nothing(project, data, format, message):
    with pytest.raises(ServiceError, match=re.escape(message)):
        import_questions(project=project, set_name="staff", data=data, format=format)
    assert not QuestionSet.objects.exists() and not Question.objects.exists()


def test_bad_lines_are_reported_with_their_line_and_nothing_is_written(project):
    data = "\n".join(
        [
            json.dumps({"id": "a", "question": "fine question"}),
            "{not json",
            json.dumps({"id": "b", "text": ""}),
            json.dumps({"id": "a", "question": "same id again"}),
            json.dumps({"id": "c", "query": "wrong key"}),
        ]
    )
    with pytest.raises(InputRejected) as rejected:
        import_questions(project=project, set_name="staff", data=data, format="jsonl")
    assert [(p.line, p.error) for p in rejected.value.problems] == [
        (2, "not valid JSON (Expecting property name enclosed in double quotes)"),
        (3, "the question text is empty"),
        (4, "question id 'a' already used on line 1"),
        (5, "needs a 'question' (or 'text') key"),
    ]
    assert not Question.objects.exists() and not QuestionSet.objects.exists()


def test_an_existing_id_with_different_text_is_refused(project):
    import_questions(
        project=project, set_name="staff", data=csv_bytes([("q1", "a", "", "")]), format="csv"
    )
    with pytest.raises(InputRejected, match="already in staff with different text"):
        import_questions(
            project=project,
            set_name="staff",
            data=csv_bytes([("q2", "b", "", ""), ("q1", "A", "", "")]),
            format="csv",
        )
    assert list(Question.objects.values_list("external_id", "text")) == [("q1", "a")]


# Command ---------------------------------------------------------------------------------


def test_import_questions_command_and_its_exit_codes(project, tmp_path, capsys):
    good = tmp_path / "questions.csv"
    good.write_bytes(csv_bytes([("q1", AWKWARD[0], "", ""), ("q2", AWKWARD[0].upper(), "", "")]))
    call_command("import_questions", str(good), "--project", project.slug, "--set", "staff")
    assert "2 new questions, 0 already there, 1 flagged as duplicates" in capsys.readouterr().out
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(CommandError, match="has no questions") as error:
        call_command("import_questions", str(empty), "--project", project.slug, "--set", "x")
    assert error.value.returncode == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "ok"}\n[1, 2]\n')
    with pytest.raises(CommandError, match="1 problems") as error:
        call_command("import_questions", str(bad), "--project", project.slug, "--set", "x")
    assert error.value.returncode == 2
    assert "bad.jsonl, line 2: expected a JSON object" in capsys.readouterr().err
    (tmp_path / "questions.xlsx").write_bytes(b"PK")
    with pytest.raises(CommandError, match="Cannot tell the format"):
        call_command(
            "import_questions",
            str(tmp_path / "questions.xlsx"),
            "--project",
            project.slug,
            "--set",
            "x",
        )
    assert QuestionSet.objects.filter(name="x").count() == 0


# Pages -----------------------------------------------------------------------------------


def test_a_lead_pastes_questions_and_sees_them_verbatim(project, member):
    client = login(member("lead"))
    pasted = "\r\n".join([AWKWARD[0], AWKWARD[1], AWKWARD[0]])  # browsers send CRLF
    response = client.post(
        reverse("labelling:import-questions", args=[project.slug]),
        {"set_name": "staff", "pasted": pasted, "source": "workshop"},
    )
    question_set = QuestionSet.objects.get(name="staff")
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "labelling:show-question-set", args=[project.slug, question_set.pk]
    )
    assert list(Question.objects.order_by("pk").values_list("text", flat=True)) == [
        AWKWARD[0],
        AWKWARD[1],
        AWKWARD[0],
    ]
    page = client.get(response["Location"]).content.decode()
    assert "Whats  the limit for dinner when your travelling " in page
    assert "duplicate of q001" in page


def test_an_uploaded_file_with_problems_shows_each_line(project, member):
    client = login(member("lead"))
    upload = SimpleUploadedFile("q.jsonl", b'{"question": "ok"}\n{"question": 3}\n')
    response = client.post(
        reverse("labelling:import-questions", args=[project.slug]),
        {"set_name": "staff", "file": upload},
    )
    body = response.content.decode()
    assert response.status_code == 400
    assert "Nothing was imported" in body and "the question text is empty" in body
    assert not Question.objects.exists()
    wrong = SimpleUploadedFile("q.csv", b"title,body\na,b\n")
    response = client.post(
        reverse("labelling:import-questions", args=[project.slug]),
        {"set_name": "staff", "file": wrong},
    )
    assert (
        response.status_code == 400 and "needs a &#x27;question&#x27;" in response.content.decode()
    )


def test_labellers_read_question_sets_but_cannot_import(project, member):
    import_questions(project=project, set_name="staff", data="a question?", format="lines")
    client = login(member("labeller"))
    listing = client.get(reverse("labelling:list-question-sets", args=[project.slug]))
    assert listing.status_code == 200 and "staff" in listing.content.decode()
    assert "Import questions" not in listing.content.decode()
    url = reverse("labelling:import-questions", args=[project.slug])
    assert client.get(url).status_code == 403
    assert client.post(url, {"set_name": "x", "pasted": "q"}).status_code == 403
    assert Question.objects.count() == 1


# Values no column can hold ---------------------------------------------------------------------

BAD_QUESTION_LINES = {
    "text NUL": '{"id": "q2", "question": "carry\\u0000over"}',
    "text surrogate": '{"id": "q2", "question": "carry \\ud800 over"}',
    "text too long": json.dumps({"id": "q2", "question": "w" * 10_001}),
    "text number": '{"id": "q2", "question": 1e400}',
    "id NUL": '{"id": "q\\u00002", "question": "fine"}',
    "id bidi": '{"id": "q\\u202e2", "question": "fine"}',
    "id too long": json.dumps({"id": "q" * 256, "question": "fine"}),
    "id object": '{"id": {"a": 1}, "question": "fine"}',
    "id float": '{"id": NaN, "question": "fine"}',
    "source too long": json.dumps({"id": "q2", "question": "fine", "source": "s" * 201}),
    "source NUL": '{"id": "q2", "question": "fine", "source": "s\\u0000"}',
    "tag too long": json.dumps({"id": "q2", "question": "fine", "tags": ["t" * 101]}),
    "tag number": '{"id": "q2", "question": "fine", "tags": [1e400]}',
    "nested": '{"id": "q2", "question": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "digits": '{"id": ' + "1" * 5000 + ', "question": "fine"}',
}


@pytest.mark.parametrize("case", sorted(BAD_QUESTION_LINES))
def test_a_value_no_column_can_hold_is_its_lines_error_on_every_way_in(
    project, member, tmp_path, capsys, case
):
    data = (
        '{"id": "q1", "question": "fine question"}\n' + BAD_QUESTION_LINES[case] + "\n"
    ).encode()
    with pytest.raises(InputRejected) as rejected:
        import_questions(project=project, set_name="staff", data=data, format="jsonl")
    [problem] = rejected.value.problems
    assert problem.line == 2 and "\x00" not in problem.error and len(problem.error) < 600
    # manage.py import_questions: the line on stderr, exit 2, nothing written.
    path = tmp_path / "questions.jsonl"
    path.write_bytes(data)
    with pytest.raises(CommandError) as error:
        call_command("import_questions", str(path), "--project", project.slug, "--set", "staff")
    assert error.value.returncode == 2
    assert "questions.jsonl, line 2: " in capsys.readouterr().err
    # The page: the line listed, nothing written.
    client = login(member("lead"))
    response = client.post(
        reverse("labelling:import-questions", args=[project.slug]),
        {"set_name": "staff", "file": SimpleUploadedFile("questions.jsonl", data)},
    )
    assert response.status_code == 400
    assert "<td>2</td>" in response.content.decode()
    assert not Question.objects.exists() and not QuestionSet.objects.exists()
