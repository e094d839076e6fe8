"""Uploads naming document ids the corpus does not have, in Chromium (issue 33 item 5): a run
among known ids is stored and the page that follows says how many were unknown and which; a
run naming none is refused, with nothing stored."""

import pytest
from playwright.sync_api import expect

from corpus.services import retrieval
from evaluation.models import EvaluationRun
from evaluation.services import gold_sets
from labelling.models import RunResult
from tests.e2e.conftest import log_in
from tests.factories import PASSWORD, MembershipFactory, UserFactory, labelled_question_set

pytestmark = pytest.mark.e2e

MIXED = (
    '{"question_id": "q1", "results": [{"doc_id": "ghost"}, {"doc_id": "leave"}]}\n'
    '{"question_id": "q2", "results": [{"doc_id": "<i>spectre</i>"}, {"doc_id": "vpn"}]}\n'
)
NONE_KNOWN = '{"question_id": "q1", "results": [{"doc_id": "ghost"}]}\n'


def test_uploads_warn_of_unknown_documents_and_refuse_a_run_of_none(
    worker, transactional_db, live_server, page, project, tmp_path
):
    people = {}
    for name, role in (("ann", "labeller"), ("bob", "labeller"), ("lea", "lead"), ("ada", "admin")):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lea"]
    )
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["ada"])
    team = retrieval.add_retriever(project=project, name="team", kind="run")
    mixed, none_known = tmp_path / "mixed.jsonl", tmp_path / "other.jsonl"
    mixed.write_text(MIXED)
    none_known.write_text(NONE_KNOWN)
    log_in(page, live_server, "lea", PASSWORD)

    # The evaluation page: a job checks the run, then the figures page says what was unknown.
    evaluation = f"{live_server.url}/p/{project.slug}/evaluation/?gold_set={gold_set.pk}"
    page.goto(evaluation)
    page.get_by_label("Run file (JSONL or TREC)").set_input_files(str(mixed))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("h1")).to_have_text("Evaluation", timeout=60_000)
    expect(page.locator("body")).to_contain_text(
        "mixed.jsonl: 2 unknown document ids of 4 named, kept in the ranking as not relevant "
        "('ghost', '<i>spectre</i>')"
    )
    assert page.locator("main i").count() == 0  # the id is text, never markup
    assert EvaluationRun.objects.get().name == "mixed"
    page.goto(evaluation)
    page.get_by_label("Run file (JSONL or TREC)").set_input_files(str(none_known))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("body")).to_contain_text(
        "the run names no document the corpus has: 1 unknown document id ('ghost')",
        timeout=60_000,
    )
    assert EvaluationRun.objects.count() == 1

    # A run for pooling, on the retriever page: stored without the unknown ids, or refused.
    page.goto(f"{live_server.url}/p/{project.slug}/retrievers/{team.pk}/")
    page.get_by_label("Run file").set_input_files(str(mixed))
    page.get_by_role("button", name="Upload the run").click()
    expect(page.locator(".messages")).to_contain_text(
        "mixed.jsonl: 2 unknown document ids of 4 named, left out ('ghost', '<i>spectre</i>')."
    )
    assert set(RunResult.objects.values_list("version__document__doc_id", flat=True)) == {
        "leave",
        "vpn",
    }
    page.get_by_label("Run file").set_input_files(str(none_known))
    page.get_by_role("button", name="Upload the run").click()
    expect(page.locator("body")).to_contain_text(
        "other.jsonl names no document the corpus has: 1 unknown document id ('ghost'). "
        "Nothing was imported."
    )
    assert RunResult.objects.count() == 2
