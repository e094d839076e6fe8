"""Large question imports run as jobs with progress, through the import page; importing the
same questions again is idempotent there too; limits Django enforces before any view get a
page that says what to do."""

from __future__ import annotations

import io
import json

from django.core.management import call_command
from django.urls import reverse

from corpus.models import Job, JobState
from labelling.models import Question, QuestionSet
from labelling.services.questions import LARGE_IMPORT_LINES
from tests.conftest import wait_for_job
from tests.factories import login

LINES = LARGE_IMPORT_LINES + 500


def big_file(count: int = LINES, *, bad_line: int | None = None) -> bytes:
    lines = []
    for number in range(1, count + 1):
        if number == bad_line:
            lines.append("{not json")
        else:
            lines.append(json.dumps({"question": f"question number {number}?", "tags": ["big"]}))
    return ("\n".join(lines) + "\n").encode()


def post_file(client, project, data: bytes, name: str = "many.jsonl"):
    upload = io.BytesIO(data)
    upload.name = name
    return client.post(
        reverse("labelling:import-questions", args=[project.slug]),
        {"set_name": "big", "file": upload, "source": "logs"},
    )


def test_a_large_file_is_imported_by_a_job_whose_page_shows_it(worker, project, member):
    client = login(member("lead"))
    response = post_file(client, project, big_file())
    assert response.status_code == 302 and "/jobs/" in response["Location"]
    job = wait_for_job(Job.objects.get(kind="import_questions"), timeout=180)
    assert job.state == JobState.SUCCEEDED, job.message
    assert (job.done, job.total) == (LINES, LINES)
    assert Question.objects.filter(question_set__name="big").count() == LINES
    first = Question.objects.filter(question_set__name="big").order_by("pk").first()
    assert (first.text, first.source, first.tags) == ("question number 1?", "logs", ["big"])
    page = client.get(response["Location"]).content.decode()
    assert f"{LINES} new questions, 0 already there" in page
    set_url = reverse(
        "labelling:show-question-set", args=[project.slug, QuestionSet.objects.get().pk]
    )
    assert set_url in page and "Open the question set big" in page
    # The same file again: a job that adds nothing.
    again = post_file(client, project, big_file())
    assert again.status_code == 302
    job = wait_for_job(Job.objects.filter(kind="import_questions").latest("pk"), timeout=180)
    assert job.state == JobState.SUCCEEDED and job.result["created"] == 0
    assert job.result["unchanged"] == LINES
    assert Question.objects.count() == LINES


def test_a_large_file_with_a_bad_line_imports_nothing_and_the_job_names_it(worker, project, member):
    client = login(member("lead"))
    response = post_file(client, project, big_file(bad_line=1234))
    job = wait_for_job(Job.objects.get(kind="import_questions"), timeout=180)
    assert job.state == JobState.FAILED
    assert "Nothing was imported: 1 line to fix" in job.message
    assert [(e["line"], e["source"]) for e in job.errors] == [(1234, "many.jsonl")]
    assert "not valid JSON" in job.errors[0]["error"]
    page = client.get(response["Location"]).content.decode()
    assert "1234" in page and "not valid JSON" in page
    assert not Question.objects.exists() and not QuestionSet.objects.exists()


def test_pasted_lines_over_the_threshold_go_to_a_job_and_are_idempotent(worker, project, member):
    client = login(member("lead"))
    pasted = "\n".join(f"pasted question {n}" for n in range(LINES)) + "\n"
    url = reverse("labelling:import-questions", args=[project.slug])
    for expected in (LINES, 0):
        response = client.post(url, {"set_name": "pasted", "pasted": pasted})
        assert response.status_code == 302 and "/jobs/" in response["Location"]
        job = wait_for_job(Job.objects.filter(kind="import_questions").latest("pk"), timeout=180)
        assert job.state == JobState.SUCCEEDED and job.result["created"] == expected
    assert Question.objects.count() == LINES


def test_small_imports_stay_in_the_request(project, member):
    client = login(member("lead"))
    response = post_file(client, project, big_file(3))
    assert response.status_code == 302 and "/sets/" in response["Location"]
    assert not Job.objects.exists() and Question.objects.count() == 3


def test_pasted_text_over_djangos_limit_gets_a_page_that_says_what_to_do(project, member, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    client = login(member("lead"))
    response = client.post(
        reverse("labelling:import-questions", args=[project.slug]),
        {"set_name": "pasted", "pasted": "a question?\n" * 2000},
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Pasted text has that limit: save it as a file and upload the file instead" in page
    assert not Question.objects.exists()


def test_too_many_files_for_django_get_a_page_that_says_what_to_do(project, member, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 60
    client = login(member("lead"))
    files = []
    for number in range(61):
        upload = io.BytesIO(b"text")
        upload.name = f"f{number}.txt"
        files.append(upload)
    response = client.post(
        reverse("corpus:upload-documents", args=[project.slug]), {"files": files}
    )
    assert response.status_code == 400
    assert "Upload at most 50 files at once" in response.content.decode()
    assert not Job.objects.exists()


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_import_questions_draws_a_progress_bar_on_a_terminal(project, tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_bytes(big_file(12_000))
    terminal = Terminal()
    call_command(
        "import_questions", str(path), "--project", project.slug, "--set", "big", stderr=terminal
    )
    drawn = terminal.getvalue()
    assert "\r" in drawn and "12,000/12,000 questions" in drawn and "100%" in drawn
    assert Question.objects.count() == 12_000
    # Not a terminal (a CI log): a plain line at each tenth, no carriage returns.
    log = io.StringIO()
    call_command(
        "import_questions", str(path), "--project", project.slug, "--set", "big", stderr=log
    )
    assert "\r" not in log.getvalue() and "100%" in log.getvalue()
