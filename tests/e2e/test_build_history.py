"""A lead follows a retriever's figures per gold set in Chromium (issue 33 item 7): the chooser
(a GET form, the newest gold set by default), a history that survives a newer gold set, the
words for one or two points, and scoring the current build on an older gold set (a job)."""

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from corpus.services import documents, retrieval
from evaluation.models import IndexEvaluation
from evaluation.services.gold_sets import finalise_gold_set
from tests.e2e.conftest import log_in
from tests.factories import PASSWORD, MembershipFactory, UserFactory, labelled_question_set

pytestmark = pytest.mark.e2e


def _figures(retriever, gold_set, built_at, recall, change):
    k = retriever.project.k_sent_to_model
    return IndexEvaluation.objects.create(
        retriever=retriever,
        gold_set=gold_set,
        built_at=built_at,
        change=change,
        k=k,
        metrics={f"recall@{k}": recall, "ndcg@10": recall / 2},
        questions=3,
    )


def test_a_lead_chooses_the_gold_set_and_scores_the_current_build_on_it(
    worker, transactional_db, live_server, page, project
):
    people = {}
    for name, role in (("ann", "labeller"), ("bob", "labeller"), ("lea", "lead"), ("ada", "admin")):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lea"]
    )
    first = finalise_gold_set(question_set=question_set, user=people["ada"])
    second = finalise_gold_set(question_set=question_set, user=people["ada"])
    scheme = documents.add_chunking_scheme(project=project, name="doc", strategy="document")
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    now = retrieval.build_index(retriever=bm25).built_at
    # Two older builds on v1 only; on v2 three builds, the current one among them.
    _figures(bm25, first, now - timedelta(days=9), 0.40, "first build")
    _figures(bm25, first, now - timedelta(days=5), 0.55, "chunking")
    for days, recall, change in ((5, 0.5, "chunking"), (2, 0.6, "embeddings"), (0, 0.7, "corpus")):
        _figures(bm25, second, now - timedelta(days=days), recall, change)

    log_in(page, live_server, "lea", PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/retrievers/{bm25.pk}/")
    chooser = page.get_by_label("Gold set")
    expect(chooser).to_have_value(str(second.pk))  # the newest by default
    builds = page.locator("#retriever-builds")
    expect(builds.locator("svg polyline")).to_have_count(2)  # three points: a plot
    expect(builds.locator("tbody tr")).to_have_count(3)

    chooser.select_option(str(first.pk))
    page.get_by_role("button", name="Show its history").click()
    page.wait_for_url(f"**/retrievers/{bm25.pk}/?gold_set={first.pk}*")
    expect(page.get_by_label("Gold set")).to_have_value(str(first.pk))
    builds = page.locator("#retriever-builds")
    expect(builds).to_contain_text("Not enough builds yet to draw over time")
    expect(builds.locator("svg polyline")).to_have_count(0)
    expect(builds.locator("tbody tr")).to_have_count(2)
    expect(builds).to_contain_text(f"the current build, not scored on {first} yet.")

    builds.get_by_role("button", name=f"Score the current build on {first}").click()
    # The job page follows the worker; then the lead goes back to v1's history.
    expect(page.locator("body")).to_contain_text("recall@", timeout=60_000)
    page.goto(f"{live_server.url}/p/{project.slug}/retrievers/{bm25.pk}/?gold_set={first.pk}")
    builds = page.locator("#retriever-builds")
    expect(builds.locator("svg polyline")).to_have_count(2)
    expect(builds.locator("tbody tr")).to_have_count(3)
    expect(builds).not_to_contain_text("not scored on")
    # The build scored on v2 only is named, with why it cannot be scored on v1.
    expect(builds).to_contain_text(
        f"its index was replaced, so it cannot be scored on {first}; it has figures on {second}."
    )
    assert IndexEvaluation.objects.filter(gold_set=first, built_at=now).count() == 1
