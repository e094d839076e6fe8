"""The round trip of issue 6: a labelled question set → finalise → export → `python -m goldeval`
on the bundle with the BM25 run of `manage.py retrieve` gives the figures of the in-app page."""

import json
import os
import subprocess
import sys
from pathlib import Path

from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from corpus.models import Job
from corpus.services import documents, retrieval
from evaluation.models import EvaluationRun, GoldSet
from evaluation.scoreboard import format_figure
from labelling.models import Assignment, Verdict
from labelling.services.judgement_import import import_judgements
from tests.conftest import wait_for_job
from tests.factories import PASSWORD, QuestionFactory, QuestionSetFactory, add_documents

REPO = Path(__file__).resolve().parents[2]

DOCUMENTS = {
    "leave": (
        "Annual leave\n\n"
        "Employees receive 25 days of paid annual leave per calendar year. Up to five unused "
        "days may be carried over into the next year with form HR-F-112.\n\n"
        "Leave requests are approved by the line manager in the HR portal."
    ),
    "expenses": (
        "Expense claims under FIN-PROC-022\n\n"
        "Dinner while travelling is reimbursed up to 45 euros per evening. Claims go through "
        "the expenses portal within 30 days.\n\n"
        "Receipts must be attached as photos or PDF files."
    ),
    "vpn": (
        "VPN access\n\n"
        "Install the NW-VPN client from the software centre. Sign in with your network account "
        "and approve the multi-factor prompt.\n\n"
        "The VPN disconnects after twelve hours without activity."
    ),
    "parking": (
        "Parking\n\n"
        "Staff parking permits are issued by facilities for one year. Visitors park in bay C "
        "and sign in at reception.\n\n"
        "Electric vehicles charge at the north entrance."
    ),
    "travel": (
        "Travel booking\n\n"
        "Book travelling by train when the trip takes under four hours; there is no limit on "
        "train meals.\n\n"
        "Hotels are booked through the travel desk, never when travelling at short notice."
    ),
}
QUESTIONS = [
    ("q1", "how many leave days can i carry over to next year??"),
    ("q2", "dinner limit when travelling"),
    ("q3", "install vpn client"),
    ("q4", "where do visitors park"),
    ("q5", "gym membership discount"),
]


def _passage(doc_id: str, sentence: str) -> tuple[int, int]:
    start = DOCUMENTS[doc_id].index(sentence)
    return start, start + len(sentence)


def _votes() -> bytes:
    def vote(qid, labeller, doc_id, grade, sentence=None):
        line = {"question_id": qid, "labeller": labeller, "doc_id": doc_id, "grade": grade}
        if sentence:
            line["start"], line["end"] = _passage(doc_id, sentence)
        return json.dumps(line)

    carry = "Up to five unused days may be carried over into the next year with form HR-F-112."
    approve = "Leave requests are approved by the line manager in the HR portal."
    lines = [
        # q1 is double-labelled: ann and bob agree on every item.
        vote("q1", "ann", "leave", 2, carry),
        vote("q1", "bob", "leave", 2, carry),
        vote("q1", "ann", "leave", 1, approve),
        vote("q1", "bob", "leave", 1, approve),
        vote("q1", "ann", "vpn", 0),
        vote("q1", "bob", "vpn", 0),
        vote("q2", "ann", "expenses", 2, "Dinner while travelling is reimbursed up to 45 euros"),
        vote("q2", "ann", "leave", 0),
        vote("q3", "ann", "vpn", 2, "Install the NW-VPN client from the software centre."),
        vote("q3", "ann", "vpn", 1, "approve the multi-factor prompt"),
        vote("q4", "ann", "parking", 1, "Visitors park in bay C and sign in at reception."),
        vote("q4", "ann", "leave", 0),
        vote("q5", "ann", "leave", 0),  # q5 gets the verdict "unanswerable" below
    ]
    return ("\n".join(lines) + "\n").encode()


def test_export_and_cli_give_the_figures_of_the_page(worker, project, member, tmp_path):
    admin = member("admin", username="ada")
    slug = project.slug
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=20, overlap=0
    )
    add_documents(project, *DOCUMENTS.items())
    retriever = retrieval.add_retriever(
        project=project, name="bm25", kind="bm25", scheme=scheme, stem=True, stopwords=True
    )
    wait_for_job(retrieval.start_index_build(retriever=retriever, user=admin))

    # A labelled question set: imported votes, one verdict.
    question_set = QuestionSetFactory(project=project, name="faq")
    for external_id, text in QUESTIONS:
        QuestionFactory(question_set=question_set, external_id=external_id, text=text)
    result = import_judgements(project=project, name="votes.jsonl", data=_votes(), set_name="faq")
    assert result.errors == [] and result.judgements == 13
    Verdict.objects.create(
        assignment=Assignment.objects.get(question__external_id="q5"), outcome="unanswerable"
    )

    # Finalise on the page, as an admin.
    client = Client()
    assert client.login(username="ada", password=PASSWORD)
    response = client.post(reverse("evaluation:finalise-gold-set", args=[slug, question_set.pk]))
    assert response.status_code == 302, response.content.decode()[:2000]
    job = wait_for_job(Job.objects.get(kind="finalise_gold_set"))
    assert job.state == "succeeded", job.message
    gold_set = GoldSet.objects.get()
    assert (gold_set.manifest["answerable"], gold_set.manifest["unanswerable"]) == (4, 1)

    # Export and the BM25 run, from the command line.
    bundle, run_file = tmp_path / "bundle", tmp_path / "bm25.jsonl"
    call_command("export_gold", "--project", slug, "--set", "faq", "--out", str(bundle))
    call_command(
        "retrieve", "--project", slug, "--set", "faq", "--retriever", "bm25", "--out", str(run_file)
    )
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "evaluate",
            "--gold",
            str(bundle),
            "--run",
            f"bm25={run_file}",
            "--format",
            "json",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    cli = json.loads(completed.stdout)["runs"]
    assert set(cli) == {"bm25", "bm25-baseline"}

    # The same retriever, run from the evaluation page (a job), then the page's figures.
    response = client.post(
        reverse("evaluation:start-retriever-run", args=[slug, gold_set.pk]),
        {"retriever": retriever.pk},
    )
    assert response.status_code == 302
    wait_for_job(Job.objects.get(kind="evaluation_run"))
    run = EvaluationRun.objects.get(gold_set=gold_set)
    assert (run.name, run.source, run.questions, run.depth) == ("bm25", "retriever", 5, 20)
    page = client.get(
        reverse("evaluation:show-evaluation", args=[slug]),
        {"shown": "1", "gold_set": gold_set.pk, "run": run.pk, "baseline": "1"},
    )
    assert page.status_code == 200
    # The page shows the report the run's job stored (four decimals, as the CLI's markdown).
    report = page.context["report"]
    assert [r["name"] for r in report["runs"]] == ["bm25", "bm25-baseline"]
    rows = {row["name"]: row["values"] for row in report["metric_rows"]}
    html = page.content.decode()
    for index, name in enumerate(["bm25", "bm25-baseline"]):
        figures = cli[name]
        counts = [rows[label][index] for label in ("questions", "answerable", "missing from run")]
        assert counts == [str(figures[key]) for key in ("questions", "answerable", "missing")]
        assert rows["unanswerable questions"][index] == str(figures["unanswerable"]["questions"])
        for metric, value in figures["metrics"].items():
            if metric in rows:
                assert rows[metric][index] == format_figure(value), (name, metric)
        assert f"{figures['metrics']['recall@5']:.4f}" in html
    # Neither all zeros nor all ones: the comparison means something.
    assert 0 < cli["bm25"]["metrics"]["recall@1"] < 1 and 0 < cli["bm25"]["metrics"]["ndcg@5"] < 1
