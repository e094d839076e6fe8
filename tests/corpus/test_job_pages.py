"""Job pages and job lists count over what the viewer may see (issue 32, item 4).

Each kind of job that counts documents runs twice: before a document restricted to
hr-confidential arrives, and again after. A lead and an admin outside the group read the second
run's page, its row in the jobs list, the project page's recent jobs and the retriever's
recent builds exactly as they read the first (job ids and names aside); a member of the group
reads the larger figures. An upload restricted to the group is no job of theirs at all.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from django.urls import reverse

from corpus import jobs
from corpus.job_display import view_job
from corpus.models import Document, Job
from corpus.services import documents, projects, retrieval
from labelling.models import QuestionSet
from labelling.services import pools
from tests.factories import QuestionFactory, add_documents, login
from tests.search_server import IndexedDocument, SearchServer

LEAVE = (
    "Annual leave\n\nEmployees receive 25 days of paid annual leave per calendar year.\n\n"
    "Up to five unused days carry over with form HR-F-112."
)
VPN = (
    "VPN access\n\nInstall the NW-VPN client from the software centre.\n\n"
    "The VPN disconnects after twelve hours without activity."
)
SALARIES = (
    "Salary bands\n\nBand C pays 52,000 to 61,000 euros per year of annual salary.\n\n"
    "Band D pays 60,000 to 72,000 euros per year; leave days do not change the band."
)
HTMX = {"HTTP_HX_REQUEST": "true"}
NOISE = re.compile(
    rb'name="csrfmiddlewaretoken" value="[^"]+"|"X-CSRFToken": "[^"]+"'
    rb"|/jobs/\d+/|\d{4}-\d\d-\d\d \d\d:\d\d|<title>.*?</title>"
    rb"|[A-Z][a-z]+\.? \d+, \d{4}, [^<]*?[ap]\.m\."
)
TRACES = (b"salaries", b"Band C", b"52,000", b"hr-confidential")


@pytest.fixture
def team(project, member):
    people = {
        "leo": member("lead", username="leo"),
        "ada": member("admin", username="ada"),
        "ina": member("lead", username="ina"),
    }
    projects.set_access_group_members(
        project=project, name="hr-confidential", users=[people["ina"]]
    )
    add_documents(project, ("leave", LEAVE), ("vpn", VPN))
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=40, overlap=0
    )
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    return {**people, "scheme": scheme, "bm25": bm25}


def restricted_document_arrives(project):
    add_documents(project, ("salaries", SALARIES, ["hr-confidential"]))


def seen(user, project, job) -> dict[str, bytes]:
    """Everything a viewer reads of ``job``: its page, its htmx progress, its row in the jobs
    list, the project page's line and (for an index build) the retriever page's line."""
    browser = login(user)
    slug = project.slug
    page = browser.get(reverse("corpus:show-job", args=[slug, job.pk]))
    partial = browser.get(reverse("corpus:show-job", args=[slug, job.pk]), **HTMX)
    listed = browser.get(reverse("corpus:list-jobs", args=[slug])).content.decode()
    row = re.search(rf'<tr><td><a href="[^"]*/jobs/{job.pk}/">.*?</tr>', listed, re.S)
    project_page = browser.get(reverse("corpus:show-project", args=[slug])).content.decode()
    line = re.search(rf'<li><a href="[^"]*/jobs/{job.pk}/">.*?</li>', project_page, re.S)
    found = {
        "page": page.status_code == 200 and page.content,
        "htmx": partial.status_code == 200 and partial.content,
        "row": row.group(0).encode() if row else b"",
        "recent": line.group(0).encode() if line else b"",
    }
    if job.kind == "build_index":
        shown = browser.get(
            reverse("corpus:show-retriever", args=[slug, job.params["retriever_id"]])
        ).content.decode()
        build = re.search(rf'<li><a href="[^"]*/jobs/{job.pk}/">.*?</li>', shown, re.S)
        found["build"] = build.group(0).encode() if build else b""
    return {key: NOISE.sub(b"", value or b"") for key, value in found.items()}


def assert_outsiders_read_the_same(team, project, before, after, *, names=()):
    """``after`` (run with the restricted document) reads as ``before`` (run without it) to
    the lead and the admin outside the group; the member of the group reads more."""
    for who in ("leo", "ada"):
        first, second = seen(team[who], project, before), seen(team[who], project, after)
        for old, new in names:
            first = {k: v.replace(old, new) for k, v in first.items()}
        assert second == first, who
        assert second["page"] and second["row"]
        for body in second.values():
            for trace in TRACES:
                assert trace not in body, (who, trace)
    insider = seen(team["ina"], project, after)
    assert insider["page"] != seen(team["leo"], project, after)["page"]


def run(job: Job) -> Job:
    jobs.task_named(job.task)(job.pk)
    job.refresh_from_db()
    assert job.state == "succeeded", (job.message, job.errors)
    return job


def test_chunking_counts_only_the_documents_the_viewer_may_see(project, team):
    before = run(documents.start_chunking(scheme=team["scheme"]))
    restricted_document_arrives(project)
    after = run(documents.start_chunking(scheme=team["scheme"]))
    assert (after.done, after.total) == (3, 3)
    assert_outsiders_read_the_same(team, project, before, after)
    assert b"3 of 3" in seen(team["ina"], project, after)["page"]
    assert b"2 of 2" in seen(team["leo"], project, after)["page"]


def test_an_index_build_counts_only_the_passages_the_viewer_may_see(project, team):
    before = run(retrieval.start_index_build(retriever=team["bm25"]))
    restricted_document_arrives(project)
    after = run(retrieval.start_index_build(retriever=team["bm25"]))
    assert after.total > before.total
    assert_outsiders_read_the_same(team, project, before, after)
    assert f"{after.done} of {after.total}".encode() in seen(team["ina"], project, after)["page"]


def upload(browser, project, name: str, lines: list[dict], **fields):
    data = io.BytesIO("".join(json.dumps(line) + "\n" for line in lines).encode())
    data.name = name
    response = browser.post(
        reverse("corpus:upload-documents", args=[project.slug]), {"files": [data], **fields}
    )
    assert response.status_code == 302, response.content.decode()
    return run(Job.objects.filter(kind="import_uploads").order_by("-pk").first())


def test_an_upload_counts_only_the_documents_the_viewer_may_see(project, team):
    """A JSONL naming the group on one of its records: "1 new" for outsiders, "2 new" for
    the group; re-imported with new text, "1 updated" and "2 updated"."""
    browser = login(team["ina"])
    public = {"doc_id": "faq", "text": "Frequently asked questions about leave."}
    secret = {"doc_id": "salaries", "text": SALARIES, "access_groups": ["hr-confidential"]}
    before = upload(browser, project, "batch.jsonl", [public])
    after = upload(browser, project, "batch.jsonl", [{**public, "doc_id": "faq-2"}, secret])
    assert "2 new" in after.message
    assert_outsiders_read_the_same(team, project, before, after)
    assert b"2 new" in seen(team["ina"], project, after)["page"]
    assert b"1 new, 0 updated" in seen(team["ada"], project, after)["page"]
    changed = upload(
        browser,
        project,
        "batch.jsonl",
        [{**public, "text": "Changed."}, {**secret, "text": SALARIES + " Revised."}],
    )
    assert "2 updated" in changed.message
    assert b"1 updated" in seen(team["leo"], project, changed)["page"]


def test_an_upload_restricted_to_a_group_is_not_the_outsiders_job(project, team):
    """Restricted on the form: for those outside the group, no row, no page (404), no line on
    the project page; the member who uploaded it and the rest of the group see it."""
    from corpus.models import AccessGroup

    group = AccessGroup.objects.get(project=project, name="hr-confidential")
    slug = project.slug
    lists = {
        who: login(team[who]).get(reverse("corpus:list-jobs", args=[slug]))
        for who in ("leo", "ada")
    }
    job = upload(
        login(team["ina"]),
        project,
        "salaries.jsonl",
        [{"doc_id": "salaries", "text": SALARIES}],
        access_groups=[group.pk],
    )
    assert Document.objects.get(doc_id="salaries").access_groups.get() == group
    for who in ("leo", "ada"):
        browser = login(team[who])
        for headers in ({}, HTMX):
            page = browser.get(reverse("corpus:show-job", args=[slug, job.pk]), **headers)
            assert page.status_code == 404
        listed = browser.get(reverse("corpus:list-jobs", args=[slug]))
        assert NOISE.sub(b"", listed.content) == NOISE.sub(b"", lists[who].content)
        assert b"salaries" not in browser.get(reverse("corpus:show-project", args=[slug])).content
    colleague = login(team["ina"]).get(reverse("corpus:show-job", args=[slug, job.pk]))
    assert colleague.status_code == 200 and b"1 new" in colleague.content


def questions(project, name: str) -> QuestionSet:
    question_set = QuestionSet.objects.create(project=project, name=name)
    QuestionFactory(question_set=question_set, external_id="q1", text="annual leave days salary")
    QuestionFactory(question_set=question_set, external_id="q2", text="salary band pays euros")
    return question_set


def pool(question_set, name, retrievers) -> Job:
    """A pool built as its tasks build it: every batch's hits, the last one merging them."""
    made = pools.start_pool(question_set=question_set, name=name, retrievers=retrievers, depth=3)
    for _, retriever_id, ids in pools._batches(made):
        retriever = next(r for r in retrievers if r.pk == retriever_id)
        pools.record_pool_hits(pool=made, retriever=retriever, question_ids=ids)
    made.job.refresh_from_db()
    assert made.job.state == "succeeded", (made.job.message, made.job.errors)
    return made.job


def test_a_pool_counts_only_the_candidates_the_viewer_may_see(project, team):
    retrieval.build_index(retriever=team["bm25"])
    before = pool(questions(project, "faq"), "first", [team["bm25"]])
    restricted_document_arrives(project)
    retrieval.build_index(retriever=team["bm25"])
    after = pool(questions(project, "faq-2"), "secon", [team["bm25"]])
    assert after.result["candidates"] > before.result["candidates"]
    assert_outsiders_read_the_same(team, project, before, after, names=[(b"first", b"secon")])


@pytest.fixture
def server(settings):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    server = SearchServer(
        documents=[
            IndexedDocument("leave", LEAVE),
            IndexedDocument("vpn", VPN),
        ],
    ).start()
    yield server
    server.stop()


def test_a_pool_with_an_http_retriever_names_and_counts_no_hidden_document(
    project, team, server, monkeypatch
):
    """The team's system returns the restricted document with offsets past the end of
    Goldset's text: the warning about it, its results' placement and its candidates are
    neither shown nor counted to outsiders; the group sees them."""
    ours = retrieval.add_retriever(
        project=project,
        name="ours",
        kind="http",
        scheme=team["scheme"],
        endpoint={
            "preset": "elasticsearch",
            "url": f"{server.url}/policies/_search",
            "mapping": {"start": "_start", "end": "_end"},
        },
    )
    original = server._elasticsearch

    def with_offsets(handler, body):  # the team's salary text is longer than Goldset's
        server._json = lambda h, payload: SearchServer._json(
            server,
            h,
            {
                "hits": {
                    "hits": [
                        {**hit, "_start": 0, "_end": 300 if hit["_id"] == "salaries" else 10}
                        for hit in payload["hits"]["hits"]
                    ]
                }
            },
        )
        try:
            original(handler, body)
        finally:
            del server._json

    monkeypatch.setattr(server, "_elasticsearch", with_offsets)
    before = pool(questions(project, "faq"), "first", [ours])
    restricted_document_arrives(project)
    server.documents.append(IndexedDocument("salaries", SALARIES + " " * 100 + "(2026)"))
    after = pool(questions(project, "faq-2"), "secon", [ours])
    assert "a restricted document" in json.dumps(after.errors)
    assert after.message != before.message
    assert_outsiders_read_the_same(team, project, before, after, names=[(b"first", b"secon")])
    insider = seen(team["ina"], project, after)["page"].decode()
    assert "past the end of a restricted document" in insider


def test_a_job_that_names_no_restricted_document_reads_the_same_to_everyone(project, team):
    job = run(documents.start_chunking(scheme=team["scheme"]))
    for who in ("leo", "ada", "ina"):
        shown = view_job(job, team[who])
        assert (shown.message, shown.done, shown.total) == (job.message, job.done, job.total)


def test_shares_of_a_deleted_document_are_left_out_and_figures_never_go_below_zero(project, team):
    restricted_document_arrives(project)
    job = run(documents.start_chunking(scheme=team["scheme"]))
    secret = Document.objects.get(doc_id="salaries")
    assert str(secret.pk) in job.result["shares"]
    secret.delete()
    for who in ("leo", "ina"):
        shown = view_job(job, team[who])
        assert (shown.done, shown.total) == (2, 2)
    job.result["shares"][str(secret.pk)] = {"total": 99, "done": 99}
    assert view_job(job, team["leo"]).total == 0
