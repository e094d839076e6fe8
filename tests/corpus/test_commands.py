"""Every corpus step is scriptable, with exit codes CI can rely on (0 ok, 1 partial, 2 nothing)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.models import Chunk, ChunkingScheme, Document, Project
from labelling.models import ImportedJudgement, Question

REPO = Path(__file__).resolve().parents[2]
PROSE = "Annual leave is twenty-five working days; carry-over is capped at five days per year."


def test_create_project_and_repeated_slug(db):
    call_command("create_project", "hr", "--name", "HR gold")
    assert Project.objects.get(slug="hr").name == "HR gold"
    with pytest.raises(CommandError) as error:
        call_command("create_project", "hr")
    assert error.value.returncode == 2


def test_import_documents_from_a_folder_then_again_unchanged(project, tmp_path, capsys):
    (tmp_path / "leave.md").write_text(f"# Leave\n\n{PROSE}")
    (tmp_path / "vpn.html").write_text(
        "<html><title>VPN</title><body><p>Use the NW-VPN client.</p>"
        "<script>alert(1)</script></body></html>"
    )
    call_command("import_documents", str(tmp_path), "--project", project.slug)
    assert set(Document.objects.values_list("doc_id", flat=True)) == {"leave.md", "vpn.html"}
    assert "alert" not in Document.objects.get(doc_id="vpn.html").latest_version.text
    call_command("import_documents", str(tmp_path), "--project", project.slug)
    assert "0 new, 0 updated, 2 unchanged" in capsys.readouterr().out


def test_import_documents_partial_exits_1_and_names_the_bad_line(project, tmp_path, capsys):
    data = tmp_path / "docs.jsonl"
    data.write_text(json.dumps({"doc_id": "a", "text": PROSE}) + "\n{broken\n")
    with pytest.raises(SystemExit) as exit_:
        call_command("import_documents", str(data), "--project", project.slug)
    assert exit_.value.code == 1
    assert "docs.jsonl, line 2: not valid JSON" in capsys.readouterr().err
    assert Document.objects.filter(doc_id="a").exists()


def test_import_documents_nothing_imported_exits_2(project, tmp_path):
    data = tmp_path / "docs.csv"
    data.write_text("doc_id,title\na,b\n")
    with pytest.raises(CommandError, match="no 'text' column") as error:
        call_command("import_documents", str(data), "--project", project.slug)
    assert error.value.returncode == 2
    with pytest.raises(CommandError, match="No project"):
        call_command("import_documents", str(data), "--project", "nope")


def test_add_chunking_chunks_existing_documents(project, tmp_path):
    (tmp_path / "leave.txt").write_text(PROSE)
    call_command("import_documents", str(tmp_path), "--project", project.slug)
    call_command(
        "add_chunking",
        "--project",
        project.slug,
        "--name",
        "w5",
        "--strategy",
        "fixed",
        "--unit",
        "words",
        "--size",
        "5",
        "--overlap",
        "1",
    )
    assert Chunk.objects.filter(scheme=ChunkingScheme.objects.get(name="w5")).count() > 1
    with pytest.raises(CommandError) as error:
        call_command(
            "add_chunking",
            "--project",
            project.slug,
            "--name",
            "bad",
            "--strategy",
            "fixed",
            "--size",
            "5",
            "--overlap",
            "9",
        )
    assert error.value.returncode == 2


def test_import_beir_creates_documents_questions_and_judgements(project, tmp_path):
    (tmp_path / "corpus.jsonl").write_text(
        "\n".join(
            json.dumps({"_id": f"d{i}", "title": f"T{i}", "text": f"{PROSE} {i}"}) for i in range(3)
        )
    )
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "how many leave days?? "})
    )
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td9\t1\n"
    )
    with pytest.raises(SystemExit) as exit_:  # d9 is unknown: reported, the rest imported
        call_command("import_beir", str(tmp_path), "--project", project.slug, "--set", "beir-test")
    assert exit_.value.code == 1
    question = Question.objects.get(question_set__name="beir-test", external_id="q1")
    assert question.text == "how many leave days?? "
    judgement = ImportedJudgement.objects.get()
    assert (judgement.question, judgement.document.doc_id, judgement.grade) == (question, "d1", 2)


def test_commands_exit_codes_from_a_real_process(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.sqlite3'}", "DEBUG": "1"}
    env.pop("REDIS_URL", None)

    def run(*args):
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert run("migrate", "-v0").returncode == 0
    assert run("create_project", "cli").returncode == 0
    missing = run("import_documents", str(tmp_path / "nope"), "--project", "cli")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
