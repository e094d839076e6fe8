"""Answer runs into the database (service, command, upload page) and reference answers."""

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from answers.models import (
    Answer,
    AnswerPassage,
    AnswerRun,
    AnswerSentence,
    ReferenceAnswer,
    ReferenceFact,
)
from answers.services.gold import answers_gold_records
from answers.services.runs import (
    FactInput,
    import_answers,
    record_reference_answer,
    run_answer_import,
    start_answer_import,
)
from answers.tasks import import_answers as import_answers_task
from corpus.models import AccessGroup, Job, JobState
from goldset.errors import ServiceError
from labelling.services.judgement_import import import_judgements
from labelling.services.questions import InputRejected
from tests.factories import QuestionFactory, QuestionSetFactory, add_documents, login

LEAVE = "Employees receive 25 days of paid annual leave per calendar year."
SALARIES = "Band C pays 52,000 to 61,000 euros per year."


@pytest.fixture
def questions(project):
    add_documents(project, ("leave", LEAVE), ("salaries", SALARIES, ["hr-confidential"]))
    question_set = QuestionSetFactory(project=project, name="staff")
    QuestionFactory(question_set=question_set, external_id="q1", text="how many leave days")
    QuestionFactory(question_set=question_set, external_id="q2", text="is there a gym")
    return question_set


def jsonl(*records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


GOOD = jsonl(
    {
        "question_id": "q1",
        "answer": "You get 25 days. Ask HR for more.",
        "refused": False,
        "sentences": [
            {"start": 0, "end": 16, "citations": [{"doc_id": "leave", "start": 0, "end": 46}]},
            {"start": 17, "end": 33},
        ],
        "context": [{"doc_id": "salaries"}, {"doc_id": "leave", "start": 0, "end": 46}],
        "system": "rag",
        "version": "3",
    },
    {"question_id": "q2", "answer": "", "refused": True},
)


def test_an_answer_run_is_stored_with_sentences_citations_and_context(questions):
    result = import_answers(question_set=questions, data=GOOD, run_name="rag-v3")
    run = AnswerRun.objects.get()
    assert (run.name, run.system, run.system_version) == ("rag-v3", "rag", "3")
    assert (result.answers, result.refused, result.sentences, result.citations) == (2, 1, 2, 1)
    answer = Answer.objects.get(question__external_id="q1")
    assert answer.text == "You get 25 days. Ask HR for more." and not answer.refused
    assert len(answer.key) == 64
    assert list(answer.sentences.values_list("start", "end")) == [(0, 16), (17, 33)]
    context = answer.passages.filter(role="context").order_by("position")
    assert [(p.version.document.doc_id, p.start, p.end) for p in context] == [
        ("salaries", None, None),
        ("leave", 0, 46),
    ]
    (citation,) = AnswerPassage.objects.filter(role="citation")
    assert citation.sentence.position == 0 and citation.version.document.doc_id == "leave"


def test_answers_without_sentences_are_split(questions):
    data = jsonl({"question_id": "q1", "answer": "One. Two!", "refused": False})
    result = import_answers(question_set=questions, data=data, run_name="split")
    assert result.split == 1
    assert list(AnswerSentence.objects.values_list("start", "end")) == [(0, 4), (5, 9)]
    assert not Answer.objects.get().sentences_given


def test_every_bad_line_is_reported_and_nothing_is_written(questions):
    bad = jsonl(
        {"question_id": "q9", "answer": "x", "refused": False},
        {"question_id": "q1", "answer": "x"},
        {
            "question_id": "q2",
            "answer": "x",
            "refused": False,
            "context": [{"doc_id": "leave", "start": 0, "end": 999}],
        },
        {"question_id": "q2", "answer": "x", "refused": False},
    )
    with pytest.raises(InputRejected) as error:
        import_answers(question_set=questions, data=bad, run_name="bad", source="bad.jsonl")
    assert [str(p) for p in error.value.problems] == [
        "bad.jsonl, line 1: question 'q9' is not in the question set",
        "bad.jsonl, line 2: question 'q1': refused is required (true or false)",
        "bad.jsonl, line 3: question 'q2': context passage 1 [0, 999) is outside document "
        "'leave' (65 characters)",
        "bad.jsonl, line 4: question 'q2' already given on line 3",
    ]
    with pytest.raises(InputRejected, match="holds no answers"):
        import_answers(question_set=questions, data=b"", run_name="empty")
    assert not AnswerRun.objects.exists() and not Answer.objects.exists()


def test_a_document_hidden_from_the_uploader_is_an_unknown_document(questions, member):
    lead = member("lead")
    hidden = import_answers(
        question_set=questions, data=GOOD, run_name="rag", user=lead, source="a.jsonl"
    )
    missing = import_answers(
        question_set=questions,
        data=GOOD.replace(b"salaries", b"salariez"),
        run_name="rag-2",
        user=lead,
        source="a.jsonl",
    )
    # Left out, counted and named, in words that do not tell hidden from missing.
    assert hidden.warning == (
        "a.jsonl: 1 unknown document id of 2 named, left out with their citations and context "
        "('salaries')"
    )
    assert missing.warning == hidden.warning.replace("salaries", "salariez")
    context = Answer.objects.get(run=hidden.run, question__external_id="q1").passages
    assert list(context.values_list("version__document__doc_id", flat=True)) == [
        "leave",
        "leave",
    ]
    AccessGroup.objects.get(name="hr-confidential").members.add(lead)
    result = import_answers(question_set=questions, data=GOOD, run_name="rag-3", user=lead)
    assert result.warning == "" and AnswerRun.objects.get(name="rag-3").created_by == lead


def test_an_answer_run_naming_no_known_document_is_refused(questions, member):
    only_unknown = jsonl(
        {
            "question_id": "q1",
            "answer": "x",
            "refused": False,
            "context": [{"doc_id": "salaries"}, {"doc_id": "ghost"}],
        }
    )
    with pytest.raises(ServiceError) as error:
        import_answers(
            question_set=questions,
            data=only_unknown,
            run_name="rag",
            user=member("lead"),
            source="a.jsonl",
        )
    assert str(error.value) == (
        "a.jsonl names no document the corpus has: 2 unknown document ids ('salaries', "
        "'ghost'). Nothing was imported."
    )
    assert not AnswerRun.objects.exists()


def test_run_names_are_unique_per_set(questions):
    import_answers(question_set=questions, data=GOOD, run_name="rag")
    with pytest.raises(ServiceError, match="already has an answer run named 'rag'"):
        import_answers(question_set=questions, data=GOOD, run_name="rag")


def test_the_import_answers_command_and_its_exit_codes(questions, project, tmp_path, capsys):
    path = tmp_path / "rag-v3.jsonl"
    path.write_bytes(GOOD)
    call_command("import_answers", str(path), "--project", project.slug, "--set", "staff")
    assert "Answer run rag-v3 for staff: 2 answers (1 refused), 2 sentences, 1 citations." in (
        capsys.readouterr().out
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(jsonl({"question_id": "q1", "answer": "x", "refused": "no"}))
    with pytest.raises(CommandError, match="1 problems") as error:
        call_command("import_answers", str(bad), "--project", project.slug, "--set", "staff")
    assert error.value.returncode == 2
    assert f"{bad}, line 1: question 'q1': refused must be true or false" in (
        capsys.readouterr().err
    )
    with pytest.raises(CommandError, match="No question set 'nope'") as error:
        call_command("import_answers", str(path), "--project", project.slug, "--set", "nope")
    assert error.value.returncode == 2
    assert AnswerRun.objects.count() == 1


def test_a_lead_uploads_an_answer_run_in_the_browser_and_a_job_imports_it(
    questions, project, member
):
    client = login(member("lead"))
    url = reverse("answers:list-answer-runs", args=[project.slug, questions.pk])
    bad = jsonl(
        {"question_id": "q1", "answer": "x"},
        {"question_id": "q2", "answer": "", "refused": True},
        {"question_id": "q9", "answer": "", "refused": True},
    )
    response = client.post(url, {"name": "rag", "file": SimpleUploadedFile("bad.jsonl", bad)})
    # The request only queues the job; its page says what went wrong, line by line.
    assert response.status_code == 302 and "/jobs/" in response["Location"]
    job = Job.objects.get(kind="import_answers")
    assert job.task == "answers.tasks.import_answers" and job.state == JobState.QUEUED
    assert not AnswerRun.objects.exists()
    import_answers_task(job.pk)  # the worker's part, run here (its task, by the name on the row)
    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert "Nothing was imported: 2 lines to fix" in job.message
    assert [(e["line"], e["source"]) for e in job.errors] == [(1, "bad.jsonl"), (3, "bad.jsonl")]
    page = client.get(response["Location"]).content.decode()
    assert "refused is required" in page and "q9" in page
    assert not AnswerRun.objects.exists() and not Answer.objects.exists()

    leave_only = jsonl({"question_id": "q2", "answer": "", "refused": True})
    response = client.post(url, {"name": "rag", "file": SimpleUploadedFile("a.jsonl", leave_only)})
    assert response.status_code == 302 and "/jobs/" in response["Location"]
    job = Job.objects.filter(kind="import_answers").latest("pk")
    import_answers_task(job.pk)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.message
    assert (job.done, job.total) == (3, 3)
    page = client.get(response["Location"]).content.decode()
    assert "Answer run rag: 1 answers (1 refused), 0 citations." in page
    assert "Open the answer runs of staff" in page
    assert "<td>rag</td>" in client.get(url).content.decode()
    # A name already taken is said at once, with no job.
    response = client.post(url, {"name": "rag", "file": SimpleUploadedFile("a.jsonl", leave_only)})
    assert response.status_code == 400
    assert "already has an answer run named" in response.content.decode()
    assert Job.objects.filter(kind="import_answers").count() == 2


def test_a_retried_answer_import_finds_its_run_written(questions, project, member):
    lead = member("lead")
    job = start_answer_import(
        question_set=questions, data=GOOD, run_name="rag", source="good.jsonl", user=lead
    )
    run_answer_import(job)  # the job reads as its uploader: a hidden document is unknown
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and "'salaries'" in job.errors[0]["error"]
    AnswerRun.objects.all().delete()
    AccessGroup.objects.get(name="hr-confidential").members.add(lead)
    job = start_answer_import(
        question_set=questions, data=GOOD, run_name="rag", source="good.jsonl", user=lead
    )
    run_answer_import(job)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    job.state = JobState.RUNNING
    job.save()
    run_answer_import(job)  # the worker died after the commit; the job is run again
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and AnswerRun.objects.count() == 1
    assert Answer.objects.count() == 2


def test_labellers_cannot_upload_answers_or_edit_reference_answers(questions, project, member):
    client = login(member("labeller"))
    url = reverse("answers:list-answer-runs", args=[project.slug, questions.pk])
    assert client.get(url).status_code == 403
    response = client.post(url, {"name": "rag", "file": SimpleUploadedFile("a.jsonl", GOOD)})
    assert response.status_code == 403 and not AnswerRun.objects.exists()
    question = questions.questions.get(external_id="q1")
    edit = reverse("answers:edit-reference-answer", args=[project.slug, questions.pk, question.pk])
    assert client.get(edit).status_code == 403


# Reference answers ---------------------------------------------------------------------------


def test_reference_answers_are_versioned_and_an_unchanged_save_adds_no_version(questions, member):
    lead = member("lead")
    question = questions.questions.get(external_id="q1")
    first = record_reference_answer(
        question=question,
        facts=[FactInput("25 days a year"), FactInput("ask HR", vital=False), FactInput("  ")],
        user=lead,
    )
    assert first.version == 1
    assert list(first.facts.values_list("text", "vital")) == [
        ("25 days a year", True),
        ("ask HR", False),
    ]
    same = record_reference_answer(
        question=question,
        facts=[FactInput("25 days a year"), FactInput("ask HR", False)],
        user=lead,
    )
    assert same.pk == first.pk
    second = record_reference_answer(question=question, facts=[FactInput("25 days")], user=lead)
    assert second.version == 2
    # The old version and its facts stay, since grades point at them.
    assert ReferenceAnswer.objects.count() == 2 and ReferenceFact.objects.count() == 3


def test_a_lead_writes_reference_facts_in_the_browser(questions, project, member):
    client = login(member("lead"))
    question = questions.questions.get(external_id="q1")
    url = reverse("answers:edit-reference-answer", args=[project.slug, questions.pk, question.pk])
    page = client.get(url).content.decode()
    assert "how many leave days" in page and 'name="facts-0-text"' in page
    data = {
        "facts-TOTAL_FORMS": "3",
        "facts-INITIAL_FORMS": "0",
        "facts-0-text": "25 days of paid leave",
        "facts-0-vital": "1",
        "facts-1-text": "<b>per calendar year</b>",
        "facts-1-vital": "0",
        "facts-2-text": "",
        "facts-2-vital": "1",
    }
    response = client.post(url, data)
    assert response.status_code == 302
    reference = ReferenceAnswer.objects.get(question=question)
    assert list(reference.facts.values_list("text", "vital")) == [
        ("25 days of paid leave", True),
        ("<b>per calendar year</b>", False),
    ]
    page = client.get(url).content.decode()
    assert "&lt;b&gt;per calendar year&lt;/b&gt;" in page and "now v1" in page
    listing = client.get(
        reverse("answers:list-answer-runs", args=[project.slug, questions.pk])
    ).content.decode()
    assert "v1" in listing and "Edit facts" in listing


def test_a_lead_links_reference_facts_to_the_questions_gold_spans(questions, project, member):
    """The fact editor offers the question's gold spans as quoted text (only on documents the
    lead may see); ticked ones are stored on the fact and go into answers-gold.jsonl."""
    lead = member("lead")
    votes = jsonl(
        {
            "question_id": "q1",
            "labeller": "ann",
            "doc_id": "leave",
            "start": 0,
            "end": 33,
            "grade": 2,
        },
        {
            "question_id": "q1",
            "labeller": "ann",
            "doc_id": "salaries",
            "start": 0,
            "end": 6,
            "grade": 1,
        },
    )
    assert not import_judgements(project=project, name="v.jsonl", data=votes).errors
    question = questions.questions.get(external_id="q1")
    client = login(lead)
    url = reverse("answers:edit-reference-answer", args=[project.slug, questions.pk, question.pk])
    page = client.get(url).content.decode()
    assert "“Employees receive 25 days of paid”" in page  # the gold span's quote, escaped text
    assert "Band C" not in page and "salaries" not in page  # hidden from this lead
    data = {
        "facts-TOTAL_FORMS": "2",
        "facts-INITIAL_FORMS": "0",
        "facts-0-text": "25 days of paid leave",
        "facts-0-vital": "1",
        "facts-0-spans": "leave|1|0|33",
        "facts-1-text": "per calendar year",
        "facts-1-vital": "0",
    }
    assert client.post(url, data).status_code == 302
    facts = list(ReferenceAnswer.objects.get(question=question).facts.all())
    assert facts[0].spans == [{"doc_id": "leave", "version": 1, "start": 0, "end": 33}]
    assert facts[1].spans == []
    page = client.get(url).content.decode()
    assert re.search(r'value="leave\|1\|0\|33"[^>]*checked', page)
    # A span that is not the question's gold is refused, with nothing saved.
    response = client.post(url, {**data, "facts-1-spans": "leave|1|0|5"})
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert ReferenceAnswer.objects.filter(question=question).count() == 1
    # In the bundle's answers-gold.jsonl, with the fact.
    (record,) = [r for r in answers_gold_records(questions) if r["kind"] == "reference"]
    assert record["facts"][0]["spans"] == [{"doc_id": "leave", "start": 0, "end": 33}]

    # A lead who may see the salaries document sees its span too; saving keeps the link to it
    # for a lead who may not.
    AccessGroup.objects.get(name="hr-confidential").members.add(lead)
    page = client.get(url).content.decode()
    assert "“Band C”" in page
    assert client.post(url, {**data, "facts-0-spans": ["leave|1|0|33", "salaries|1|0|6"]})
    facts = list(ReferenceAnswer.objects.filter(question=question).latest("version").facts.all())
    assert len(facts[0].spans) == 2
    AccessGroup.objects.get(name="hr-confidential").members.remove(lead)
    page = client.get(url).content.decode()
    assert "Band C" not in page and "1 linked span not shown" in page
    client.post(url, {**data, "facts-0-text": "25 paid days"})
    facts = list(ReferenceAnswer.objects.filter(question=question).latest("version").facts.all())
    assert facts[0].text == "25 paid days" and len(facts[0].spans) == 2
