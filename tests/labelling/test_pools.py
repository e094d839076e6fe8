"""Runs and pools through the database: run import, pooling tasks, merging, provenance, pages."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from corpus.models import Chunk, Document, Job, Retriever
from corpus.services import documents, projects, retrieval
from goldset.errors import ServiceError
from labelling.models import Candidate, Pool, PoolHit, Provenance, Question, RunResult
from labelling.pooling import shuffled_order
from labelling.services import pools
from labelling.services.questions import InputRejected
from labelling.services.run_import import import_run
from tests.conftest import wait_for_job
from tests.factories import QuestionFactory, QuestionSetFactory, add_documents, login

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
SALARIES = (
    "Salary bands\n\n"
    "Band C pays 52,000 to 61,000 euros per year. Annual salary reviews happen in January."
)


def text_of(doc_id: str) -> str:
    return Document.objects.get(doc_id=doc_id).latest_version.text


def offsets(doc_id: str, phrase: str) -> tuple[int, int]:
    start = text_of(doc_id).index(phrase)
    return start, start + len(phrase)


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
def bm25(project, corpus):
    retriever = retrieval.add_retriever(
        project=project, name="bm25", kind="bm25", scheme=corpus, stem=True, stopwords=True
    )
    retrieval.build_index(retriever=retriever)
    return retriever


@pytest.fixture
def team(project, corpus):
    return retrieval.add_retriever(project=project, name="team", kind="run", scheme=corpus)


@pytest.fixture
def questions(project):
    question_set = QuestionSetFactory(project=project, name="staff")
    QuestionFactory(question_set=question_set, external_id="q1", text="how many annual leave days")
    QuestionFactory(question_set=question_set, external_id="q2", text="dinner limit travelling")
    QuestionFactory(question_set=question_set, external_id="q3", text="gym membership discount")
    return question_set


def jsonl(*records) -> bytes:
    return "\n".join(json.dumps(r) for r in records).encode()


def team_run(questions) -> dict:
    """q1: a passage straddling two BM25 chunks of `leave`, then `expenses` as a whole."""
    start, _ = offsets("leave", "paid annual leave")
    _, end = offsets("leave", "Up to five unused")
    return import_run(
        retriever=Retriever.objects.get(name="team"),
        question_set=questions,
        data=jsonl(
            {
                "question_id": "q1",
                "results": [
                    {"doc_id": "leave", "start": start, "end": end, "score": 0.9},
                    {"doc_id": "expenses", "score": 0.2},
                ],
            },
            {"question_id": "q2", "results": [{"doc_id": "expenses"}]},
        ),
        name="team.jsonl",
    )


# Run import ------------------------------------------------------------------------------


def test_a_jsonl_run_keeps_offsets_and_maps_whole_documents_to_their_chunks(
    project, team, questions
):
    result = team_run(questions)
    expense_chunks = list(
        Chunk.objects.filter(version__document__doc_id="expenses", scheme=team.scheme)
        .order_by("ordinal")
        .values_list("start", "end")
    )
    assert len(expense_chunks) == 3
    assert (result.questions, result.results) == (2, 3)
    assert result.passages == 1 + 2 * len(expense_chunks)
    q1 = RunResult.objects.filter(question__external_id="q1").order_by("rank", "start")
    first = q1[0]
    assert (first.rank, first.score) == (1, 0.9)
    assert text_of("leave")[first.start : first.end].startswith("paid annual leave")
    # A result without offsets stands for all of its document's chunks, at its own rank.
    assert [(r.rank, r.score, r.start, r.end) for r in q1[1:]] == [
        (2, 0.2, start, end) for start, end in expense_chunks
    ]


def test_a_trec_run_is_ranked_by_score_with_ties_in_file_order(project, corpus, questions):
    run = retrieval.add_retriever(project=project, name="docs", kind="run")  # no scheme
    trec = "q2 Q0 vpn 1 3.5 sys\nq2 Q0 leave 2 7.0 sys\nq2 Q0 expenses 3 7.0 sys\n"
    result = import_run(retriever=run, question_set=questions, data=trec, name="r.trec")
    rows = RunResult.objects.filter(retriever=run).order_by("rank")
    assert [(r.version.document.doc_id, r.rank, r.score) for r in rows] == [
        ("leave", 1, 7.0),
        ("expenses", 2, 7.0),
        ("vpn", 3, 3.5),
    ]
    # Without a chunking scheme a document-level result is the whole document.
    assert all((r.start, r.end) == (0, len(r.version.text)) for r in rows)
    assert result.whole_documents == 3


def test_a_bad_run_is_reported_by_line_and_leaves_the_previous_run_alone(project, team, questions):
    team_run(questions)
    before = list(RunResult.objects.values_list("pk", flat=True))
    length = len(text_of("vpn"))
    bad = jsonl(
        {"question_id": "q1", "results": [{"doc_id": "leave"}]},
        {"question_id": "q9", "results": [{"doc_id": "nope"}]},
        {"question_id": "q2", "results": [{"doc_id": "vpn", "start": 10, "end": length + 5}]},
        {"question_id": "q3", "results": [{"doc_id": "vpn", "start": 5}]},
    )
    with pytest.raises(InputRejected) as rejected:
        import_run(retriever=team, question_set=questions, data=bad, name="bad.jsonl")
    assert [(p.line, p.error) for p in rejected.value.problems] == [
        (2, "unknown question id 'q9'"),
        (3, f"offsets [10, {length + 5}) are outside 'vpn', which has {length} characters"),
        (4, "result 1 (vpn) needs both start and end, or neither"),
    ]
    with pytest.raises(InputRejected, match="line 1: expected 'qid Q0 docid rank score tag'"):
        import_run(retriever=team, question_set=questions, data="q1 leave 3\n", name="t")
    with pytest.raises(ServiceError, match="has no results"):
        import_run(retriever=team, question_set=questions, data=b"\n", name="empty.jsonl")
    assert list(RunResult.objects.values_list("pk", flat=True)) == before


# Pooling -----------------------------------------------------------------------------------


def test_pooling_merges_overlaps_keeps_every_provenance_and_shuffles_stably(
    worker, project, bm25, team, questions
):
    team_run(questions)
    pool = pools.start_pool(question_set=questions, name="p1", retrievers=[bm25, team], depth=10)
    job = wait_for_job(pool.job)
    pool.refresh_from_db()
    assert job.state == "succeeded" and pool.state == "ready", job.message
    assert job.done == job.total == 2  # one task per retriever and batch of questions

    q1 = Question.objects.get(external_id="q1")
    candidates = list(Candidate.objects.filter(pool=pool, question=q1).order_by("shuffle_rank"))
    leave = [c for c in candidates if c.version.document.doc_id == "leave"]
    # BM25 found the title and the two body paragraphs of `leave` (three chunks); the team's
    # passage straddles both body paragraphs, so those three passages became one candidate,
    # while the title, which overlaps neither, stays on its own.
    title, body = sorted(leave, key=lambda c: c.start)
    assert title.text == "Annual leave"
    assert body.text.startswith("Employees receive 25 days")
    assert body.text.endswith("form HR-F-112.")
    leave = [body]
    found_by = sorted(
        (p.retriever.name, p.rank) for p in Provenance.objects.filter(candidate=leave[0])
    )
    assert [name for name, _ in found_by].count("team") == 1
    assert [name for name, _ in found_by].count("bm25") >= 1
    assert ("team", 1) in found_by
    # Each candidate lists every passage behind it, each within the candidate.
    for candidate in Candidate.objects.filter(pool=pool):
        for p in candidate.provenance.all():
            assert candidate.start <= p.start < p.end <= candidate.end

    # The order labellers see is the seeded shuffle, and re-merging gives the same one.
    keys = [
        (c.version_id, c.start, c.end)
        for c in sorted(candidates, key=lambda c: (c.version_id, c.start))
    ]
    order = shuffled_order(keys, seed=f"pool-{pool.pk}-question-{q1.pk}")
    assert [(c.version_id, c.start, c.end) for c in candidates] == [keys[i] for i in order]
    before = list(
        Candidate.objects.filter(pool=pool).values_list(
            "version_id", "start", "end", "shuffle_rank"
        )
    )
    pools.merge_pool(pool)
    after = list(
        Candidate.objects.filter(pool=pool).values_list(
            "version_id", "start", "end", "shuffle_rank"
        )
    )
    assert sorted(after) == sorted(before)

    # A question nothing matches has an empty pool, not an error.
    assert not Candidate.objects.filter(pool=pool, question__external_id="q3").exists()


def test_pooling_tasks_are_idempotent_and_the_last_one_merges(
    project, bm25, team, questions, monkeypatch
):
    team_run(questions)
    monkeypatch.setattr(pools, "POOL_BATCH", 2)
    # Under the test transaction nothing is queued, so the tasks are played by hand, twice.
    pool = pools.start_pool(question_set=questions, name="p1", retrievers=[bm25, team], depth=3)
    batches = pools._batches(pool)
    assert len(batches) == 4 and pool.job.total == 4
    for _, retriever_id, ids in batches[:-1]:
        for _ in range(2):
            pools.record_pool_hits(
                pool=pool, retriever=Retriever.objects.get(pk=retriever_id), question_ids=ids
            )
    pool.refresh_from_db()
    assert pool.state == "building" and not Candidate.objects.filter(pool=pool).exists()
    hits = PoolHit.objects.filter(pool=pool).count()
    _, retriever_id, ids = batches[-1]
    pools.record_pool_hits(
        pool=pool, retriever=Retriever.objects.get(pk=retriever_id), question_ids=ids
    )
    pool.refresh_from_db()
    job = Job.objects.get(pk=pool.job_id)
    assert pool.state == "ready" and job.state == "succeeded" and job.done == 4
    assert PoolHit.objects.filter(pool=pool).count() >= hits
    assert PoolHit.objects.filter(pool=pool, rank__gt=3).count() == 0
    count = Candidate.objects.filter(pool=pool).count()
    pools.record_pool_hits(
        pool=pool, retriever=bm25, question_ids=batches[0][2]
    )  # a late redelivery
    assert Candidate.objects.filter(pool=pool).count() == count


def test_a_failing_retriever_fails_the_pool_with_its_reason(project, bm25, questions, monkeypatch):
    pool = pools.start_pool(question_set=questions, name="p1", retrievers=[bm25], depth=3)

    def broken(**kwargs):
        raise ServiceError("The stored index is unreadable: rebuild it.")

    monkeypatch.setattr(pools, "retrieve", broken)
    pools.record_pool_hits(pool=pool, retriever=bm25, question_ids=pools._batches(pool)[0][2])
    pool.refresh_from_db()
    assert pool.state == "failed"
    assert (
        Job.objects.get(pk=pool.job_id).message
        == "bm25: The stored index is unreadable: rebuild it."
    )


def test_start_pool_refuses_what_cannot_be_pooled(project, corpus, bm25, team, questions):
    unbuilt = retrieval.add_retriever(project=project, name="raw", kind="bm25", scheme=corpus)
    empty = QuestionSetFactory(project=project, name="empty")
    cases = [
        ({"retrievers": [unbuilt]}, "raw has no built index yet"),
        ({"retrievers": [team]}, "team has no run for staff"),
        ({"retrievers": []}, "at least one retriever"),
        ({"retrievers": [bm25], "depth": 0}, "between 1 and 1000"),
        ({"retrievers": [bm25], "name": "Bad Name"}, "slug"),
        ({"retrievers": [bm25], "question_set": empty}, "has no questions"),
    ]
    for kwargs, message in cases:
        arguments = {"question_set": questions, "name": "p", "depth": 10, **kwargs}
        with pytest.raises(ServiceError, match=message):
            pools.start_pool(**arguments)
    assert not Pool.objects.exists() and not Job.objects.filter(kind="build_pool").exists()


# Commands ----------------------------------------------------------------------------------


def test_pool_and_import_run_commands_with_their_exit_codes(
    worker, project, bm25, team, questions, tmp_path, capsys
):
    slug = project.slug
    run = tmp_path / "team.trec"
    run.write_text("q1 Q0 leave 1 2.0 team\nq2 Q0 expenses 1 1.0 team\n")
    call_command("import_run", str(run), "--project", slug, "--retriever", "team", "--set", "staff")
    assert "2 questions, 2 results" in capsys.readouterr().out
    call_command(
        "pool",
        "--project",
        slug,
        "--set",
        "staff",
        "--retrievers",
        "bm25,team",
        "--depth",
        "5",
        "--name",
        "first",
    )
    assert "Pool first:" in capsys.readouterr().out
    assert Pool.objects.get(name="first").state == "ready"
    call_command("pool", "--project", slug, "--set", "staff", "--retrievers", "bm25")
    assert Pool.objects.filter(name="staff-pool-2").exists()
    bad_run = tmp_path / "bad.jsonl"
    bad_run.write_text(json.dumps({"question_id": "q1", "results": [{"doc_id": "ghost"}]}))
    failures = [
        (
            [
                "import_run",
                str(bad_run),
                "--project",
                slug,
                "--retriever",
                "team",
                "--set",
                "staff",
            ],
            "bad.jsonl names no document the corpus has: 1 unknown document id \\('ghost'\\)",
        ),
        (
            ["import_run", str(run), "--project", slug, "--retriever", "bm25", "--set", "staff"],
            "not an uploaded run",
        ),
        (
            ["pool", "--project", slug, "--set", "staff", "--retrievers", "bm25,ghost"],
            "No retriever 'ghost'",
        ),
        (
            ["pool", "--project", slug, "--set", "nope", "--retrievers", "bm25"],
            "No question set 'nope'",
        ),
        (
            [
                "pool",
                "--project",
                slug,
                "--set",
                "staff",
                "--retrievers",
                "bm25",
                "--name",
                "first",
            ],
            "already has a pool named 'first'",
        ),
    ]
    for args, message in failures:
        with pytest.raises(CommandError, match=message) as error:
            call_command(*args)
        assert error.value.returncode == 2
    assert Pool.objects.count() == 2


# Pages -------------------------------------------------------------------------------------


@pytest.fixture
def ready_pool(project, bm25, team, questions):
    team_run(questions)
    pool = pools.start_pool(question_set=questions, name="p1", retrievers=[bm25, team], depth=10)
    for _, retriever_id, ids in pools._batches(pool):
        pools.record_pool_hits(
            pool=pool, retriever=Retriever.objects.get(pk=retriever_id), question_ids=ids
        )
    pool.refresh_from_db()
    assert pool.state == "ready"
    return pool


def test_the_pool_page_shows_provenance_to_leads_only(project, ready_pool, member):
    lead = login(member("lead"))
    url = reverse("labelling:show-pool", args=[project.slug, ready_pool.pk])
    body = lead.get(url).content.decode()
    assert "Found by it alone" in body and "Overlap between retrievers" in body
    assert "bm25 + team" in body
    admin = member("admin")
    projects.set_access_group_members(project=project, name="hr-confidential", users=[admin])
    summary = pools.summarize_pool(pool=ready_pool, user=admin, with_provenance=True)
    assert summary.stats.size == summary.size == Candidate.objects.filter(pool=ready_pool).count()
    assert summary.stats.overlap[("bm25", "team")] >= 1
    assert (
        sum(summary.stats.unique.values()) + summary.stats.overlap[("bm25", "team")] == summary.size
    )

    labeller = login(member("labeller"))
    body = labeller.get(url).content.decode()
    assert "Pool size per question" in body
    assert "Found by" not in body and "Overlap" not in body and "bm25" not in body
    q1 = Question.objects.get(external_id="q1")
    detail = reverse("labelling:show-pool-question", args=[project.slug, ready_pool.pk, q1.pk])
    for_labeller = labeller.get(detail).content.decode()
    assert "Found by" not in for_labeller and "rank" not in for_labeller
    assert "Found by: " in lead.get(detail).content.decode()

    # Stable across reloads.
    def candidates(page: str) -> str:
        return page[page.index('<ol class="candidates">') :]

    assert candidates(labeller.get(detail).content.decode()) == candidates(for_labeller)


def test_restricted_candidates_are_not_shown_or_counted_outside_their_group(
    project, corpus, bm25, questions, member
):
    q = QuestionFactory(question_set=questions, external_id="q4", text="annual salary bands")
    pool = pools.start_pool(question_set=questions, name="p2", retrievers=[bm25], depth=10)
    for _, retriever_id, ids in pools._batches(pool):
        pools.record_pool_hits(
            pool=pool, retriever=Retriever.objects.get(pk=retriever_id), question_ids=ids
        )
    hidden = Candidate.objects.filter(
        pool=pool, question=q, version__document__doc_id="salaries"
    ).count()
    assert hidden >= 1
    insider, outsider = member("labeller"), member("labeller")
    projects.set_access_group_members(project=project, name="hr-confidential", users=[insider])
    sizes = {
        user: dict(
            (question.external_id, size)
            for question, size in pools.summarize_pool(
                pool=pool, user=user, with_provenance=False
            ).sizes
        )
        for user in (insider, outsider)
    }
    assert sizes[outsider]["q4"] == sizes[insider]["q4"] - hidden
    detail = reverse("labelling:show-pool-question", args=[project.slug, pool.pk, q.pk])
    assert "salaries" not in login(outsider).get(detail).content.decode()
    assert "salaries" in login(insider).get(detail).content.decode()


def test_a_lead_creates_a_pool_and_uploads_a_run_from_the_pages(
    worker, project, bm25, team, questions, member
):
    client = login(member("lead"))
    upload = SimpleUploadedFile("team.trec", b"q1 Q0 leave 1 2.0 team\nq2 Q0 ghost 1 1.0 team\n")
    url = reverse("labelling:upload-run", args=[project.slug, team.pk])
    response = client.post(url, {"question_set": questions.pk, "file": upload}, follow=True)
    # One of two document ids is unknown: stored without it, and said.
    assert response.status_code == 200 and (
        "team.trec: 1 unknown document id of 2 named, left out (&#x27;ghost&#x27;)."
        in response.content.decode()
    )
    assert set(
        RunResult.objects.filter(retriever=team).values_list("version__document__doc_id", flat=True)
    ) == {"leave"}
    upload = SimpleUploadedFile("team.trec", b"q2 Q0 ghost 1 1.0 team\n")
    response = client.post(url, {"question_set": questions.pk, "file": upload})
    assert response.status_code == 400 and (
        "team.trec names no document the corpus has: 1 unknown document id (&#x27;ghost&#x27;)."
        in response.content.decode()
    )
    assert RunResult.objects.filter(retriever=team).exists()  # the previous run stays
    upload = SimpleUploadedFile("team.trec", b"q1 Q0 leave 1 2.0 team\n")
    response = client.post(url, {"question_set": questions.pk, "file": upload})
    assert response.status_code == 302 and RunResult.objects.filter(retriever=team).exists()

    form = client.get(reverse("labelling:add-pool", args=[project.slug]) + f"?set={questions.pk}")
    assert form.status_code == 200 and "bm25" in form.content.decode()
    response = client.post(
        reverse("labelling:add-pool", args=[project.slug]),
        {"question_set": questions.pk, "name": "web", "retrievers": [bm25.pk, team.pk], "depth": 5},
    )
    pool = Pool.objects.get(name="web")
    assert response["Location"] == reverse("labelling:show-pool", args=[project.slug, pool.pk])
    wait_for_job(pool.job)
    page = client.get(response["Location"]).content.decode()
    assert "Pool size per question" in page
    again = client.post(
        reverse("labelling:add-pool", args=[project.slug]),
        {"question_set": questions.pk, "name": "web", "retrievers": [bm25.pk], "depth": 5},
    )
    assert again.status_code == 400 and "already has a pool named" in again.content.decode()


def test_labellers_cannot_create_pools_or_upload_runs(project, bm25, team, questions, member):
    client = login(member("labeller"))
    assert client.get(reverse("labelling:add-pool", args=[project.slug])).status_code == 403
    response = client.post(
        reverse("labelling:add-pool", args=[project.slug]),
        {"question_set": questions.pk, "name": "x", "retrievers": [bm25.pk], "depth": 5},
    )
    assert response.status_code == 403
    upload = SimpleUploadedFile("team.trec", b"q1 Q0 leave 1 2.0 team\n")
    response = client.post(
        reverse("labelling:upload-run", args=[project.slug, team.pk]),
        {"question_set": questions.pk, "file": upload},
    )
    assert response.status_code == 403
    assert not Pool.objects.exists() and not RunResult.objects.exists()


# Scores a run can hold -------------------------------------------------------------------


@pytest.mark.parametrize(
    "score, trec_score",
    [
        ("NaN", "nan"),
        ("Infinity", "inf"),
        ("-Infinity", "-Infinity"),
        ("1e400", "1e400"),
        ("3.5e38", "3.5e38"),
        ("9" * 400, "9" * 400),
        ('"0.5"', "high"),
    ],
)
def test_a_run_score_no_reader_can_hold_is_its_lines_error_on_every_way_in(
    project, team, questions, member, tmp_path, capsys, score, trec_score
):
    team_run(questions)
    before = list(RunResult.objects.values_list("pk", "score"))
    record = '{"question_id": "q2", "results": [{"doc_id": "vpn", "score": ' + score + "}]}"
    files = {
        "bad.jsonl": ('{"question_id": "q1", "results": [{"doc_id": "leave"}]}\n' + record + "\n"),
        "bad.trec": f"q1 Q0 leave 1 2.0 team\nq2 Q0 vpn 1 {trec_score} team\n",
    }
    client = login(member("lead"))
    url = reverse("labelling:upload-run", args=[project.slug, team.pk])
    for name, content in files.items():
        # The service, as the page and the command call it.
        with pytest.raises(InputRejected) as rejected:
            import_run(retriever=team, question_set=questions, data=content, name=name)
        [problem] = rejected.value.problems
        assert problem.line == 2 and "score" in problem.error
        # The page: 400 with the line, nothing written.
        upload = SimpleUploadedFile(name, content.encode())
        response = client.post(url, {"question_set": questions.pk, "file": upload})
        html = response.content.decode()
        assert response.status_code == 400 and "<td>2</td><td>" in html and "score" in html
        # manage.py import_run: an error naming the line, nothing written.
        path = tmp_path / name
        path.write_text(content)
        with pytest.raises(CommandError, match="Nothing was imported: 1 problems"):
            call_command(
                "import_run",
                str(path),
                "--project",
                project.slug,
                "--retriever",
                "team",
                "--set",
                "staff",
            )
        assert f"{name}, line 2: " in capsys.readouterr().err
    assert list(RunResult.objects.values_list("pk", "score")) == before
