"""The production loop in real Chromium: the weekly task draws a sample; the lead is told and
opens it; a labeller grades it; the misses report shows what production missed; the admin
promotes the misses and finalises the next gold set version (v1 unchanged)."""

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from corpus.services import documents, retrieval
from evaluation.models import GoldSet
from evaluation.services.gold_sets import finalise_gold_set
from labelling.models import Candidate, Pool
from labelling.services.assignments import plan_assignments
from production.services import draws as production
from production.services import sampling as sampling_services
from production.services.traces import receive_traces
from tests.conftest import wait_for_job
from tests.e2e.conftest import after_the_job, log_in
from tests.factories import (
    PASSWORD,
    POLICY_TEXT,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    add_documents,
    labelled_question_set,
)

pytestmark = pytest.mark.e2e

NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
TRAVEL = "Travel costs are paid back monthly after the trip report is filed."
QUESTIONS = {
    "t-0": ("how many days of annual leave carry over", "leave"),
    "t-1": ("when are travel costs paid back", "travel"),
}


def world():
    project = ProjectFactory(slug="acme", name="Acme gold")
    people = {}
    roles = {
        "lea": "lead",
        "lina": "labeller",
        "ada": "admin",
        "ann": "labeller",
        "bob": "labeller",
    }
    for name, role in roles.items():
        people[name] = UserFactory(username=name, email=f"{name}@example.com")
        MembershipFactory(project=project, user=people[name], role=role)
    add_documents(project, ("leave", POLICY_TEXT), ("travel", TRAVEL))
    scheme = documents.add_chunking_scheme(
        project=project, name="w", strategy="fixed", size=400, overlap=0
    )
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=bm25)
    hr = labelled_question_set(project, ann=people["ann"], bob=people["bob"], lead=people["lea"])
    v1 = finalise_gold_set(question_set=hr, user=people["ada"])
    items = [
        {
            "trace_id": trace_id,
            "occurred_at": (NOW - timedelta(hours=1)).isoformat(),
            "user": "customer-42",
            "question": text,
            "retrieved": [{"doc_id": "leave", "rank": 1, "score": 2.0}],  # leave, whatever asked
            "refused": False,
        }
        for trace_id, (text, _) in QUESTIONS.items()
    ]
    receive_traces(project=project, items=items)
    spec = sampling_services.check_rule(filters={}, strategy="uniform", size=10, seed=1)
    sampling_services.save_sampling_rule(
        project=project, user=people["lea"], name="weekly", spec=spec
    )
    return project, people, hr, v1


def test_the_weekly_sample_is_labelled_its_misses_shown_and_promoted_into_v2(
    worker, transactional_db, live_server, page
):
    project, people, hr, v1 = world()
    v1_checksum = v1.checksum
    (made,) = production.draw_weekly_samples(now=NOW).opened  # what Celery beat runs weekly
    wait_for_job(made.pool.job)
    pool = Pool.objects.get(pk=made.pool.pk)
    assert pool.state == "ready"
    plan_assignments(pool=pool, labellers=[people["lina"]], double_share=0.0, user=people["lea"])

    # The lead is told by a banner and opens the sample.
    log_in(page, live_server, "lea", PASSWORD)
    page.goto(f"{live_server.url}/p/acme/sets/")
    banner = page.locator(".banner")
    expect(banner).to_contain_text("New production sample")
    banner.get_by_role("link", name="production-2026-W49").click()
    expect(page.locator("h1")).to_contain_text("production-2026-W49")
    expect(page.locator("body")).to_contain_text("when are travel costs paid back")
    expect(page.locator("body")).not_to_contain_text("customer-42")

    # The labeller grades both questions with the keyboard.
    context = page.context.browser.new_context()
    labeller = context.new_page()
    labeller.set_default_timeout(20_000)
    log_in(labeller, live_server, "lina", PASSWORD)
    for text, relevant in QUESTIONS.values():
        labeller.goto(f"{live_server.url}/p/acme/queue/")
        labeller.get_by_role("link", name=text).click()
        expect(labeller.locator("#question-text")).to_have_text(text)
        cards = labeller.locator("li.candidate")
        expect(cards.nth(0)).to_have_class(lambda_has("current"))
        for index in range(cards.count()):
            candidate = Candidate.objects.select_related("version__document").get(
                pk=int(cards.nth(index).get_attribute("data-candidate"))
            )
            if index:
                labeller.keyboard.press("j")
            grade = "2" if candidate.version.document.doc_id == relevant else "0"
            labeller.keyboard.press(grade)
            expect(cards.nth(index)).to_have_class(lambda_has(f"grade-{grade}"))
        labeller.keyboard.press("a")  # answerable
        expect(labeller.locator("#question-progress")).to_contain_text("done")
    context.close()

    # The misses report: production never retrieved the travel passage; BM25 did.
    page.goto(f"{live_server.url}/p/acme/samples/{made.sample.pk}/misses/")
    report = page.locator("main")
    expect(report).to_contain_text("when are travel costs paid back")
    expect(report).to_contain_text("production did not retrieve it")
    expect(report).to_contain_text("bm25 found it at rank 1")
    expect(report).to_contain_text("recall@5")
    # One sample is one moment: its figures are written, not drawn on an empty time axis.
    expect(page.locator("figure.plot .plot-few")).to_contain_text(
        "Not enough labelled samples yet to draw over time: recall@5 "
    )
    expect(page.locator("figure.plot svg polyline")).to_have_count(0)

    # The admin promotes the misses, then finalises v2.
    admin = page.context.browser.new_context().new_page()
    admin.set_default_timeout(20_000)
    log_in(admin, live_server, "ada", PASSWORD)
    admin.goto(f"{live_server.url}/p/acme/samples/{made.sample.pk}/misses/")
    admin.get_by_role("link", name="Add to the next gold set version").click()
    admin.get_by_label("Into the question set").select_option(label="hr")
    admin.get_by_label("Only the misses").check()
    admin.get_by_role("button", name="Add to the next version").click()
    expect(admin.locator(".messages")).to_contain_text(
        "Added 1 question to hr: v2 will hold them when it is finalised; v1 stays as it is."
    )
    admin.goto(f"{live_server.url}/p/acme/gold-sets/")
    admin.get_by_role("button", name="Finalise hr as a new gold set").click()
    after_the_job(admin, admin.locator("h1", has_text="Gold set hr v2"))

    v2 = GoldSet.objects.get(question_set=hr, number=2)
    assert [q["trace_id"] for q in v2.manifest["production_questions"]] == ["t-1"]
    assert v2.manifest["questions"] == v1.manifest["questions"] + 1
    assert GoldSet.objects.get(pk=v1.pk).checksum == v1_checksum


def lambda_has(name):
    import re

    return re.compile(rf"(^|\s){name}(\s|$)")
