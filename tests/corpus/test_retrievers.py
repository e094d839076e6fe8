"""Retrievers through the service, the jobs, the commands and the pages.

The embedding tests use the real all-MiniLM-L6-v2 model (loaded once per process).
"""

import json

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from corpus.models import (
    AccessGroup,
    Chunk,
    ChunkingScheme,
    Document,
    DocumentVersion,
    EmbeddingCache,
    Index,
    IndexState,
    Job,
    Retriever,
)
from corpus.onnx_encoder import best_runtime
from corpus.services import documents, projects, retrieval, search_mask
from goldeval.bm25 import BM25Index
from goldeval.formats.runs import load_run
from goldset.errors import ServiceError
from labelling.models import QuestionSet
from tests.conftest import wait_for_job
from tests.factories import QuestionFactory, UserFactory, add_documents, login

LEAVE = (
    "Annual leave\n\n"
    "Employees receive 25 days of paid annual leave per calendar year. Up to five unused days "
    "may be carried over into the next year with form HR-F-112.\n\n"
    "Leave requests are approved by the line manager in the HR portal."
)
EXPENSES = (
    "Expense claims under FIN-PROC-022\n\n"
    "Dinner while travelling is reimbursed up to 45 euros per evening. Claims go through the "
    "expenses portal within 30 days.\n\n"
    "Receipts must be attached as photos or PDF files."
)
VPN = (
    "VPN access\n\n"
    "Install the NW-VPN client from the software centre. Sign in with your network account and "
    "approve the multi-factor prompt.\n\n"
    "The VPN disconnects after twelve hours without activity."
)
SALARIES = (
    "Salary bands\n\n"
    "Band C pays 52,000 to 61,000 euros per year of salary. Band D pays 60,000 to 72,000 euros "
    "per year of salary.\n\n"
    "Salary bands are reviewed every January by the pay committee."
)


@pytest.fixture
def scheme(project):
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=120, overlap=0
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
def bm25(project, scheme):
    retriever = retrieval.add_retriever(
        project=project, name="bm25", kind="bm25", scheme=scheme, stem=True, stopwords=True
    )
    retrieval.build_index(retriever=retriever)
    return retriever


@pytest.fixture
def minilm(project, scheme):
    retriever = retrieval.add_retriever(
        project=project, name="minilm", kind="embedding", scheme=scheme
    )
    retrieval.build_index(retriever=retriever)
    return retriever


def doc_ids(hits):
    return [hit.doc_id for hit in hits]


# Configuration and bad input -------------------------------------------------------------


def test_add_retriever_rejects_bad_configurations_and_writes_nothing(project, scheme, tmp_path):
    empty = documents.add_chunking_scheme(project=project, name="empty", strategy="document")
    Chunk.objects.filter(scheme=empty).delete()
    cases = [
        ({"name": "x", "kind": "bm25", "scheme": empty}, "has no chunks"),
        ({"name": "x", "kind": "bm25"}, "needs a chunking scheme"),
        ({"name": "Not A Slug", "kind": "bm25", "scheme": scheme}, "slug"),
        ({"name": "x", "kind": "bm25", "scheme": scheme, "b": 1.5}, "b between 0 and 1"),
        ({"name": "x", "kind": "sparql", "scheme": scheme}, "Unknown retriever kind"),
        (
            {
                "name": "x",
                "kind": "embedding",
                "scheme": scheme,
                "model_path": str(tmp_path / "no"),
            },
            "No embedding model folder",
        ),
        (
            {"name": "x", "kind": "embedding", "scheme": scheme, "model_path": str(tmp_path)},
            "not a sentence-transformers model folder",
        ),
    ]
    for kwargs, message in cases:
        with pytest.raises(ServiceError, match=message):
            retrieval.add_retriever(project=project, **kwargs)
    assert not Retriever.objects.exists()


def test_bm25_settings_are_stored_and_a_build_needs_chunks(project, scheme):
    retriever = retrieval.add_retriever(
        project=project, name="kw", kind="bm25", scheme=scheme, stem=True, k1=1.2, b=0.75
    )
    assert retriever.params == {
        "k1": 1.2,
        "b": 0.75,
        "stem": True,
        "stopwords": False,
        "idf": "lucene",
        "title": False,
    }
    Chunk.objects.filter(scheme=scheme).delete()
    with pytest.raises(ServiceError, match="has no chunks"):
        retrieval.build_index(retriever=retriever)
    assert not Index.objects.filter(state=IndexState.READY).exists()


def test_new_retrievers_use_lucene_idf_and_older_ones_keep_okapi(project, scheme):
    new = retrieval.add_retriever(project=project, name="kw", kind="bm25", scheme=scheme)
    okapi = retrieval.add_retriever(
        project=project, name="okapi", kind="bm25", scheme=scheme, idf="okapi"
    )
    older = retrieval.add_retriever(project=project, name="older", kind="bm25", scheme=scheme)
    Retriever.objects.filter(pk=older.pk).update(params={"k1": 0.9, "b": 0.4})
    older.refresh_from_db()
    for retriever, idf in ((new, "lucene"), (okapi, "okapi"), (older, "okapi")):
        retrieval.build_index(retriever=retriever)
        assert retrieval.load_index(retriever).searcher.idf == idf
    (lucene_hits,) = retrieval.retrieve(retriever=new, questions=["annual leave"], k=1)
    (okapi_hits,) = retrieval.retrieve(retriever=okapi, questions=["annual leave"], k=1)
    assert lucene_hits[0].doc_id == okapi_hits[0].doc_id
    assert lucene_hits[0].score != okapi_hits[0].score
    with pytest.raises(ServiceError, match="idf is one of lucene, okapi"):
        retrieval.add_retriever(project=project, name="x", kind="bm25", scheme=scheme, idf="tf")


def test_a_bm25_retriever_can_index_the_document_title_with_each_passage(project, scheme):
    Document.objects.filter(project=project).update(title="Holiday entitlement")
    plain = retrieval.add_retriever(project=project, name="plain", kind="bm25", scheme=scheme)
    titled = retrieval.add_retriever(
        project=project, name="titled", kind="bm25", scheme=scheme, title=True
    )
    for retriever in (plain, titled):
        retrieval.build_index(retriever=retriever)
    assert retrieval.retrieve(retriever=plain, questions=["entitlement"], k=3) == [[]]
    (hits,) = retrieval.retrieve(retriever=titled, questions=["entitlement"], k=3)
    assert hits
    # Offsets still point into the document text, never into the title.
    version = DocumentVersion.objects.get(pk=hits[0].version_id)
    assert "entitlement" not in version.text[hits[0].start : hits[0].end].lower()


# Searching ---------------------------------------------------------------------------------


def test_bm25_finds_codes_and_returns_passages_with_offsets(project, bm25):
    (hits,) = retrieval.retrieve(retriever=bm25, questions=["whats the limit in fin-proc-022"], k=3)
    top = hits[0]
    assert top.doc_id == "expenses" and top.rank == 1
    text = Document.objects.get(doc_id="expenses").latest_version.text
    assert text[top.start : top.end].startswith("Expense claims under FIN-PROC-022")
    index = bm25.active_index
    assert (
        index.state == IndexState.READY
        and index.passages == Chunk.objects.filter(scheme=bm25.scheme).count()
    )


def test_embedding_ranks_a_paraphrase_above_unrelated_text(project, minilm):
    (hits,) = retrieval.retrieve(
        retriever=minilm, questions=["how many vacation days do i get each year"], k=3
    )
    assert hits[0].doc_id == "leave"
    assert (
        "25 days of paid annual leave"
        in Document.objects.get(doc_id="leave").latest_version.text[hits[0].start : hits[0].end]
    )
    assert hits[0].score > hits[1].score
    index = minilm.active_index
    # New embedding retrievers use the ONNX build by default (issue 19), run by this machine's
    # best runtime (issue 37: OpenVINO bf16 where the CPU has it, else onnxruntime int8).
    assert minilm.params["backend"] == "onnx-int8"
    runtime = best_runtime()
    assert index.model_name == f"sentence-transformers/all-MiniLM-L6-v2 ({runtime})"
    assert index.dimension == 384
    assert index.model_version.startswith("sha256:") and f"+{runtime}:" in index.model_version


def test_the_loaded_index_is_cached_in_process_memory(project, bm25, django_assert_num_queries):
    first = retrieval.load_index(bm25)
    with django_assert_num_queries(1):  # which index is active; the artefact is not read again
        assert retrieval.load_index(bm25) is first


# Access ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["bm25", "minilm"])
def test_a_restricted_document_never_comes_back_to_someone_outside_its_group(
    request, project, member, kind
):
    retriever = request.getfixturevalue(kind)
    outsider, insider = member("lead"), member("labeller")
    projects.set_access_group_members(project=project, name="hr-confidential", users=[insider])
    question = ["salary bands per year: days, hours?"]
    (for_insider,) = retrieval.retrieve(retriever=retriever, questions=question, k=3, user=insider)
    assert for_insider[0].doc_id == "salaries"
    (for_outsider,) = retrieval.retrieve(
        retriever=retriever, questions=question, k=3, user=outsider
    )
    assert "salaries" not in doc_ids(for_outsider)
    # Filtered before the cut: k results still come back, ranked 1..k.
    assert len(for_outsider) == 3 and [h.rank for h in for_outsider] == [1, 2, 3]
    (headless,) = retrieval.retrieve(retriever=retriever, questions=question, k=3)
    assert headless[0].doc_id == "salaries"  # a pool is built for the whole project


def test_only_the_newest_version_of_a_searchable_document_is_returned(project, bm25):
    add_documents(project, ("leave", LEAVE.replace("25 days", "27 days")))
    (hits,) = retrieval.retrieve(retriever=bm25, questions=["annual leave days"], k=10)
    newest = Document.objects.get(doc_id="leave").latest_version_id
    assert {h.version_id for h in hits if h.doc_id == "leave"} <= {newest}
    version = DocumentVersion.objects.get(pk=Document.objects.get(doc_id="vpn").latest_version_id)
    DocumentVersion.objects.filter(pk=version.pk).update(quality_flagged=True)
    (hits,) = retrieval.retrieve(retriever=bm25, questions=["NW-VPN client"], k=10)
    assert "vpn" not in doc_ids(hits)


# Incremental indexing and staleness ------------------------------------------------------


def test_adding_one_document_embeds_only_that_documents_passages(project, minilm, monkeypatch):
    assert EmbeddingCache.objects.count() == Chunk.objects.filter(scheme=minilm.scheme).count()
    encoded: list[str] = []
    encoder_type = type(retrieval._encoder(minilm))  # the int8 ONNX build by default
    original = encoder_type.encode

    def counting(self, texts):
        encoded.extend(texts)
        return original(self, texts)

    monkeypatch.setattr(encoder_type, "encode", counting)
    first_index = minilm.active_index_id
    add_documents(project, ("badges", "Office badges\n\nLost badges are replaced at reception."))
    new_version = Document.objects.get(doc_id="badges").latest_version
    assert retrieval.stale_documents(minilm).count() == 1
    retrieval.build_index(retriever=minilm)
    new_chunks = [
        new_version.text[c.start : c.end] for c in Chunk.objects.filter(version=new_version)
    ]
    assert encoded == new_chunks  # the other documents' passages came from the cache
    minilm.refresh_from_db()
    assert minilm.active_index_id != first_index
    assert not Index.objects.filter(pk=first_index).exists()  # the old artefact is gone
    assert retrieval.stale_documents(minilm).count() == 0
    assert new_version.__class__.objects.get(pk=new_version.pk).indexed_at is not None
    encoded.clear()
    (hits,) = retrieval.retrieve(retriever=minilm, questions=["I lost my badge"], k=1)
    assert hits[0].doc_id == "badges" and encoded == ["I lost my badge"]


def test_a_changed_document_makes_the_index_stale_until_rebuilt(project, bm25):
    assert not retrieval.stale_documents(bm25).exists()
    add_documents(project, ("vpn", VPN + "\n\nThe helpdesk resets VPN tokens."))
    assert list(retrieval.stale_documents(bm25).values_list("doc_id", flat=True)) == ["vpn"]
    retrieval.build_index(retriever=bm25)
    bm25.refresh_from_db()
    assert not retrieval.stale_documents(bm25).exists()


def test_a_failed_build_keeps_the_active_index(project, bm25, monkeypatch):
    active = bm25.active_index_id

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(BM25Index, "build", broken)
    with pytest.raises(RuntimeError):
        retrieval.build_index(retriever=bm25)
    bm25.refresh_from_db()
    assert bm25.active_index_id == active
    assert Index.objects.filter(retriever=bm25, state=IndexState.FAILED).count() == 1


def test_index_builds_run_as_jobs_through_the_queue(worker, project, scheme):
    retriever = retrieval.add_retriever(project=project, name="kw", kind="bm25", scheme=scheme)
    job = wait_for_job(retrieval.start_index_build(retriever=retriever))
    assert job.state == "succeeded", job.message
    assert job.done == job.total == Chunk.objects.filter(scheme=scheme).count()
    retriever.refresh_from_db()
    assert retriever.active_index.passages == job.total


# Commands ----------------------------------------------------------------------------------


def test_commands_add_build_and_retrieve_a_run_that_evaluation_reads(
    worker, project, scheme, tmp_path
):
    slug = project.slug
    call_command(
        "add_retriever",
        "--project",
        slug,
        "--name",
        "kw",
        "--kind",
        "bm25",
        "--chunking",
        "paragraphs",
        "--stem",
        "--stopwords",
        "--k1",
        "1.2",
        "--b",
        "0.75",
    )
    call_command("build_index", "--project", slug, "--retriever", "kw")
    question_set = QuestionSet.objects.create(project=project, name="faq")
    QuestionFactory(question_set=question_set, external_id="q1", text="VPN client install")
    QuestionFactory(question_set=question_set, external_id="q2", text="dinner limit")
    out = tmp_path / "runs" / "kw.jsonl"
    call_command(
        "retrieve",
        "--project",
        slug,
        "--set",
        "faq",
        "--retriever",
        "kw",
        "--k",
        "2",
        "--out",
        str(out),
    )
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["question_id"] for line in lines] == ["q1", "q2"]
    assert lines[0]["results"][0]["doc_id"] == "vpn"
    assert set(lines[0]["results"][0]) == {"doc_id", "start", "end", "score"}
    run = load_run(out)
    assert run.rankings["q2"].passages[0].doc_id == "expenses"


def test_commands_exit_2_with_a_clear_message(project, scheme, tmp_path):
    slug = project.slug
    bad = [
        (
            [
                "add_retriever",
                "--project",
                slug,
                "--name",
                "x",
                "--kind",
                "bm25",
                "--chunking",
                "nope",
            ],
            "No chunking scheme 'nope'",
        ),
        (
            [
                "add_retriever",
                "--project",
                slug,
                "--name",
                "x",
                "--kind",
                "embedding",
                "--chunking",
                "paragraphs",
                "--model",
                str(tmp_path / "missing"),
            ],
            "No embedding model folder",
        ),
        (["build_index", "--project", slug, "--retriever", "ghost"], "No retriever 'ghost'"),
        (
            [
                "retrieve",
                "--project",
                slug,
                "--set",
                "none",
                "--retriever",
                "ghost",
                "--out",
                str(tmp_path / "x"),
            ],
            "No retriever",
        ),
    ]
    for args, message in bad:
        with pytest.raises(CommandError, match=message) as error:
            call_command(*args)
        assert error.value.returncode == 2
    call_command(
        "add_retriever",
        "--project",
        slug,
        "--name",
        "kw",
        "--kind",
        "bm25",
        "--chunking",
        "paragraphs",
    )
    QuestionSet.objects.create(project=project, name="faq")
    with pytest.raises(CommandError, match="no built index yet") as error:
        call_command(
            "retrieve",
            "--project",
            slug,
            "--set",
            "faq",
            "--retriever",
            "kw",
            "--out",
            str(tmp_path / "x.jsonl"),
        )
    assert error.value.returncode == 2 and not (tmp_path / "x.jsonl").exists()
    assert Retriever.objects.count() == 1


# Pages -------------------------------------------------------------------------------------


def test_a_lead_adds_a_retriever_and_builds_it_from_the_pages(worker, project, scheme, member):
    client = login(member("lead"))
    response = client.post(
        reverse("corpus:add-retriever", args=[project.slug]),
        {"name": "kw", "kind": "bm25", "scheme": scheme.pk, "stem": "on", "k1": "0.9", "b": "0.4"},
    )
    retriever = Retriever.objects.get(name="kw")
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "corpus:show-retriever", args=[project.slug, retriever.pk]
    )
    page = client.get(response["Location"]).content.decode()
    assert "No index yet" in page and "Build the index" in page
    response = client.post(reverse("corpus:build-index", args=[project.slug, retriever.pk]))
    job = wait_for_job(Job.objects.get(kind="build_index"))
    assert job.state == "succeeded"
    assert response["Location"] == reverse("corpus:show-job", args=[project.slug, job.pk])
    add_documents(project, ("badges", "Office badges\n\nLost badges are replaced at reception."))
    page = client.get(reverse("corpus:show-retriever", args=[project.slug, retriever.pk]))
    body = page.content.decode()
    assert "1 document changed or added since" in body and "badges" in body


def test_retriever_pages_show_errors_and_keep_labellers_out_of_changes(project, scheme, member):
    admin = login(member("admin"))  # only admins may point at a model folder on the server
    response = admin.post(
        reverse("corpus:add-retriever", args=[project.slug]),
        {"name": "vec", "kind": "embedding", "scheme": scheme.pk, "model_path": "/no/such/model"},
    )
    assert response.status_code == 400 and "No embedding model folder" in response.content.decode()
    lead_form = login(member("lead")).get(reverse("corpus:add-retriever", args=[project.slug]))
    assert "model_path" not in lead_form.content.decode()
    retriever = retrieval.add_retriever(project=project, name="kw", kind="bm25", scheme=scheme)
    labeller = login(member("labeller"))
    listing = labeller.get(reverse("corpus:list-retrievers", args=[project.slug]))
    assert listing.status_code == 200 and "kw" in listing.content.decode()
    assert "Add a retriever" not in listing.content.decode()
    assert labeller.get(reverse("corpus:add-retriever", args=[project.slug])).status_code == 403
    assert (
        labeller.post(reverse("corpus:build-index", args=[project.slug, retriever.pk])).status_code
        == 403
    )
    assert not Job.objects.exists()
    stranger = login(UserFactory())
    url = reverse("corpus:show-retriever", args=[project.slug, retriever.pk])
    assert stranger.get(url).status_code == 404


def test_staleness_never_names_a_document_the_viewer_cannot_see(project, bm25, member):
    add_documents(project, ("salaries", SALARIES + "\n\nBand E is new.", ["hr-confidential"]))
    page = login(member("lead")).get(reverse("corpus:show-retriever", args=[project.slug, bm25.pk]))
    body = page.content.decode()
    assert "salaries" not in body and "up to date" in body


def test_an_embedding_retriever_can_store_float16_vectors(project, scheme, minilm):
    half = retrieval.add_retriever(
        project=project, name="half", kind="embedding", scheme=scheme, vectors="float16"
    )
    assert half.params == {"vectors": "float16", "backend": "onnx-int8"}
    index = retrieval.build_index(retriever=half)
    assert index.artifact_size < 0.8 * minilm.active_index.artifact_size
    question = ["how many vacation days do i get each year"]
    (hits,) = retrieval.retrieve(retriever=half, questions=question, k=3)
    (full,) = retrieval.retrieve(retriever=minilm, questions=question, k=3)
    assert [h.doc_id for h in hits] == [h.doc_id for h in full]
    with pytest.raises(ServiceError, match="float32 or float16"):
        retrieval.add_retriever(
            project=project, name="x", kind="embedding", scheme=scheme, vectors="int8"
        )


def test_vectors_are_stored_once_per_model_and_text(project, minilm):
    rows = EmbeddingCache.objects.all()
    assert rows.count() == len(
        set(Chunk.objects.filter(scheme=minilm.scheme).values_list("text_hash", flat=True))
    )
    vector = np.frombuffer(bytes(rows.first().vector), dtype=np.float32)
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-4
    assert set(rows.values_list("model_version", flat=True)) == {minilm.active_index.model_version}
    assert ChunkingScheme.objects.count() == 1


def test_the_access_filter_agrees_with_the_document_querysets(project, scheme, member):
    """retrieve() works the filter out from the few blocking rows; it must say what the
    QuerySets say: the newest version of a searchable document the user may see."""
    from tests.factories import POLICY_TEXT

    table = "\n".join(f"| {i} | {i * 3.5:.2f} | {i * 7} |" for i in range(60))
    add_documents(
        project,
        ("policy", POLICY_TEXT),
        ("policy-copy", POLICY_TEXT + " Questions go to the HR desk."),
        ("rates", table),
        ("rates-accepted", "\n".join(f"| {i} | {i * 4.5:.2f} |" for i in range(500, 560))),
    )
    retriever = retrieval.add_retriever(project=project, name="kw", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=retriever)
    admin = member("admin")
    documents.accept_quality(
        version=Document.objects.get(doc_id="rates-accepted").latest_version, user=admin
    )
    add_documents(project, ("vpn", VPN + "\n\nChanged after the build."))
    insider, outsider = member("labeller"), member("lead")
    projects.set_access_group_members(project=project, name="hr-confidential", users=[insider])
    docs = Document.objects.filter(project=project)
    assert docs.filter(duplicate_group__isnull=False).count() == 2
    assert docs.filter(latest_version__quality_flagged=True).count() == 2
    loaded = retrieval.load_index(retriever)
    for user in (None, insider, outsider, UserFactory()):
        allowed = docs.searchable()
        if user is not None:
            allowed = docs.searchable_for(user).visible_to(user)
        newest = set(allowed.values_list("latest_version_id", flat=True))
        expected = np.isin(loaded.version_ids, list(newest))
        mask = search_mask.allowed_passages(retriever, loaded, user)
        assert np.array_equal(np.ones(len(loaded), bool) if mask is None else mask, expected)
    # A test user is a set of groups (permission replays, index evaluations): the same filter
    # as a member with exactly those groups, and with a user as well, the groups both have.
    hr = AccessGroup.objects.get(project=project, name="hr-confidential").pk
    as_outsider = search_mask.allowed_passages(retriever, loaded, outsider)
    as_insider = search_mask.allowed_passages(retriever, loaded, insider)
    assert as_outsider is not None and not np.array_equal(as_outsider, as_insider)
    for user, groups, same_as in [
        (None, (), as_outsider),
        (None, {hr}, as_insider),
        (insider, (), as_outsider),
        (insider, {hr}, as_insider),
        (outsider, {hr}, as_outsider),
    ]:
        mask = search_mask.allowed_passages(retriever, loaded, user, groups=groups)
        assert np.array_equal(mask, same_as), (user, groups)
