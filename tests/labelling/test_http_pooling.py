"""Pooling with the team's live system (the HTTP retriever) beside BM25 and MiniLM, through the
real task queue in CI: every (retriever, rank, score) kept, results placed in the corpus, bad
answers failing the pool with one message per question, canaries never pooled."""

import pytest

from corpus.models import Document
from corpus.services import documents, retrieval
from labelling.models import Candidate, PoolHit, Provenance
from labelling.services import pools
from labelling.services.questions import plant_canaries
from tests.conftest import wait_for_job
from tests.factories import QuestionFactory, QuestionSetFactory, add_documents
from tests.search_server import IndexedDocument, RawServer, SearchServer

LEAVE = (
    "Annual leave\n\n"
    "Employees receive 25 days of paid annual leave per calendar year.\n\n"
    "Up to five unused days carry over with form HR-F-112."
)
EXPENSES = (
    "Expense claims\n\n"
    "Dinner while travelling is reimbursed up to 45 euros per evening.\n\n"
    "Receipts must be attached as photos or PDF files."
)
VPN = (
    "VPN access\n\n"
    "Install the NW-VPN client from the software centre and approve the multi-factor prompt.\n\n"
    "The VPN disconnects after twelve hours without activity."
)
SALARIES = "Salary bands\n\nBand C pays 52,000 to 61,000 euros per year."


@pytest.fixture
def corpus(project):
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=12, overlap=0
    )
    add_documents(
        project,
        ("leave", LEAVE),
        ("expenses", EXPENSES),
        ("vpn", VPN),
        ("salaries", SALARIES, ["hr-confidential"]),
    )
    return scheme


@pytest.fixture
def questions(project):
    question_set = QuestionSetFactory(project=project, name="staff")
    QuestionFactory(question_set=question_set, external_id="q1", text="how many annual leave days")
    QuestionFactory(question_set=question_set, external_id="q2", text="dinner limit travelling")
    QuestionFactory(question_set=question_set, external_id="q3", text="vpn client install")
    return question_set


@pytest.fixture
def server(settings):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    server = SearchServer(
        documents=[
            IndexedDocument("leave", LEAVE),
            IndexedDocument("expenses", EXPENSES.replace("45 euros", "45 EUR")),
            IndexedDocument("vpn", VPN),
            IndexedDocument("ghost", "Annual leave rules Goldset never imported."),
        ]
    ).start()
    yield server
    server.stop()


def test_pooling_with_http_beside_bm25_and_minilm_keeps_every_provenance(
    worker, project, corpus, questions, server
):
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=corpus)
    minilm = retrieval.add_retriever(
        project=project, name="minilm", kind="embedding", scheme=corpus
    )
    for retriever in (bm25, minilm):
        retrieval.build_index(retriever=retriever)
    ours = retrieval.add_retriever(
        project=project,
        name="ours",
        kind="http",
        scheme=corpus,
        endpoint={"preset": "elasticsearch", "url": f"{server.url}/policies/_search"},
    )
    pool = pools.start_pool(
        question_set=questions, name="p1", retrievers=[bm25, minilm, ours], depth=3
    )
    job = wait_for_job(pool.job, timeout=180)
    pool.refresh_from_db()
    assert job.state == "succeeded" and pool.state == "ready", (job.message, job.errors)
    assert job.done == job.total == 3  # one task per retriever and batch of questions

    hits = PoolHit.objects.filter(pool=pool)
    assert set(hits.values_list("retriever__name", flat=True)) == {"bm25", "minilm", "ours"}
    # Every candidate lists each retriever that found it, with its rank and score; the
    # team's hits are the exact sentences its highlighter returned, inside their candidate.
    q1 = Candidate.objects.filter(pool=pool, question__external_id="q1")
    found_by = {
        (p.retriever.name, p.rank)
        for p in Provenance.objects.filter(candidate__in=q1).select_related("retriever")
    }
    assert {("bm25", 1), ("minilm", 1), ("ours", 1)} <= found_by
    ours_top = Provenance.objects.get(candidate__in=q1, retriever=ours, rank=1)
    assert ours_top.score > 0
    leave = Document.objects.get(doc_id="leave").latest_version
    sentence = "Employees receive 25 days of paid annual leave per calendar year."
    assert leave.text[ours_top.start : ours_top.end] == sentence
    for candidate in Candidate.objects.filter(pool=pool):
        for p in candidate.provenance.all():
            assert candidate.start <= p.start < p.end <= candidate.end
    # An edited sentence ("45 EUR") was placed fuzzily; the unknown document was left out and
    # listed; the job says how each result was placed.
    assert "ours: " in job.message and "by fuzzy text" in job.message
    assert job.result["placed"]["ours"]["fuzzy"] >= 1
    assert any(e.get("doc_id") == "ghost" for e in job.errors)
    assert not hits.filter(retriever=ours, version__document__doc_id="ghost").exists()


def test_a_failing_endpoint_fails_the_pool_with_one_message_per_question(
    worker, project, corpus, questions, server
):
    ours = retrieval.add_retriever(
        project=project,
        name="ours",
        kind="http",
        endpoint={"preset": "elasticsearch", "url": f"{server.url}/wrongshape"},
    )
    pool = pools.start_pool(question_set=questions, name="p1", retrievers=[ours], depth=3)
    job = wait_for_job(pool.job, timeout=60)
    pool.refresh_from_db()
    assert job.state == "failed" and pool.state == "failed"
    assert "3 questions got no usable answer" in job.message
    assert sorted(e["source"] for e in job.errors) == ["question q1", "question q2", "question q3"]
    assert all("results path 'hits.hits'" in e["error"] for e in job.errors)
    assert not Candidate.objects.filter(pool=pool).exists()


def test_canaries_are_never_pooled(worker, project, corpus, questions, server):
    from corpus.models import AccessGroup

    AccessGroup.objects.get_or_create(project=project, name="hr-confidential")
    canaries = plant_canaries(project=project, group="hr-confidential", count=2, set_name="c")
    server.documents.append(IndexedDocument(canaries[0].doc_id, canaries[0].text))
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=corpus)
    retrieval.build_index(retriever=bm25)
    ours = retrieval.add_retriever(
        project=project,
        name="ours",
        kind="http",
        endpoint={"preset": "elasticsearch", "url": f"{server.url}/policies/_search"},
    )
    canary_set = canaries[0]
    QuestionFactory(question_set=questions, external_id="qc", text=canary_set.question)
    pool = pools.start_pool(question_set=questions, name="p1", retrievers=[bm25, ours], depth=5)
    job = wait_for_job(pool.job)
    assert job.state == "succeeded", job.message
    assert Document.objects.filter(is_canary=True).count() == 2
    assert not Candidate.objects.filter(pool=pool, version__document__is_canary=True).exists()
    # ... while a search that asks for them (a permission replay's) finds one at once.
    found = retrieval.retrieve(
        retriever=bm25, questions=[canary_set.question], k=1, with_canaries=True
    )
    assert found[0][0].doc_id == canary_set.doc_id


@pytest.mark.parametrize(
    "bad_result, field",
    [
        (b'{"doc_id": "vpn", "score": NaN}', "score"),
        (b'{"doc_id": "vpn", "score": 1e400}', "score"),
        (b'{"doc_id": "vpn\\u0000", "score": 1}', "doc id"),
    ],
)
def test_a_value_no_run_can_hold_fails_the_pool_naming_question_and_field(
    worker, project, corpus, questions, settings, bad_result, field
):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    server = RawServer()
    try:
        server.default = (200, {}, b'{"results": [{"doc_id": "leave", "score": 2.0}]}')
        server.bodies = {
            "vpn client install": (
                200,
                {},
                b'{"results": [{"doc_id": "leave", "score": 2}, ' + bad_result + b"]}",
            )
        }
        ours = retrieval.add_retriever(
            project=project,
            name="ours",
            kind="http",
            endpoint={
                "preset": "generic",
                "url": f"{server.url}/search?q={{{{question}}}}&k={{{{k}}}}",
                "mapping": {"start": "", "end": "", "text": ""},
            },
        )
        pool = pools.start_pool(question_set=questions, name="p1", retrievers=[ours], depth=3)
        job = wait_for_job(pool.job, timeout=60)
    finally:
        server.stop()
    pool.refresh_from_db()
    assert job.state == "failed" and pool.state == "failed"
    assert "1 question got no usable answer" in job.message
    [problem] = [e for e in job.errors if e["source"] == "question q3"]
    assert "result 2" in problem["error"] and field in problem["error"]
    assert not Candidate.objects.filter(pool=pool).exists()
    assert not Provenance.objects.filter(candidate__pool=pool).exists()
