"""Index artifacts through Django's storage API: round trip, checksum, missing/damaged files,
cleanup, and the data migration of artifacts stored in the database before issue 19."""

import hashlib
import io

import numpy as np
import pytest
from django.core.files.storage import storages
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from corpus.models import Index, IndexState, Retriever
from corpus.services import artifacts, documents, retrieval
from goldeval.bm25 import BM25Index
from goldset.errors import ServiceError
from labelling.models import QuestionSet
from tests.factories import QuestionFactory, add_documents

TEXTS = [
    ("leave", "Annual leave is 25 days a year.\n\nCarry-over needs form HR-F-112."),
    ("expenses", "Dinner is reimbursed up to 45 euros.\n\nClaims go through FIN-PROC-022."),
    ("vpn", "Install the NW-VPN client.\n\nIt disconnects after twelve idle hours."),
]


@pytest.fixture(autouse=True)
def artifact_folder(settings, tmp_path):
    """A storage folder per test: test databases reuse ids, and names here must be exact."""
    settings.STORAGES = {
        **settings.STORAGES,
        "artifacts": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "artifacts")},
        },
    }
    return tmp_path / "artifacts"


@pytest.fixture
def bm25(project):
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=120, overlap=0
    )
    add_documents(project, *TEXTS)
    retriever = retrieval.add_retriever(
        project=project, name="kw", kind="bm25", scheme=scheme, stem=True
    )
    retrieval.build_index(retriever=retriever)
    retriever.refresh_from_db()
    return retriever


def fresh_process():
    """Forget the indexes this process loaded, as another web process would not have them."""
    with retrieval._loaded_lock:
        retrieval._loaded.clear()


def test_the_artifact_is_a_file_in_storage_with_its_checksum_on_the_row(bm25):
    index = bm25.active_index
    storage = storages["artifacts"]
    assert index.artifact_name.startswith(f"indexes/retriever-{bm25.pk}/")
    with storage.open(index.artifact_name, "rb") as handle:
        data = handle.read()
    assert index.artifact_size == len(data) == storage.size(index.artifact_name)
    assert index.artifact_sha256 == hashlib.sha256(data).hexdigest()
    before = retrieval.retrieve(retriever=bm25, questions=["dinner euros", "vpn client"], k=2)
    fresh_process()
    after = retrieval.retrieve(retriever=bm25, questions=["dinner euros", "vpn client"], k=2)
    assert after == before
    assert after[0][0].doc_id == "expenses"


def test_any_storage_backend_works(project, settings):
    settings.STORAGES = {
        **settings.STORAGES,
        "artifacts": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    }
    scheme = documents.add_chunking_scheme(project=project, name="docs", strategy="document")
    add_documents(project, *TEXTS)
    retriever = retrieval.add_retriever(project=project, name="kw", kind="bm25", scheme=scheme)
    index = retrieval.build_index(retriever=retriever)
    assert storages["artifacts"].exists(index.artifact_name)
    fresh_process()
    (hits,) = retrieval.retrieve(retriever=retriever, questions=["twelve idle hours"], k=1)
    assert hits[0].doc_id == "vpn"


def test_a_missing_file_says_so_and_how_to_rebuild(bm25, project):
    storages["artifacts"].delete(bm25.active_index.artifact_name)
    fresh_process()
    with pytest.raises(ServiceError) as error:
        retrieval.retrieve(retriever=bm25, questions=["leave"], k=1)
    message = str(error.value)
    assert "is missing from the artifact storage" in message
    assert bm25.active_index.artifact_name in message
    assert f"manage.py build_index --project {project.slug} --retriever kw" in message
    # The rebuild path: a new build replaces the broken index and search works again.
    retrieval.build_index(retriever=bm25)
    (hits,) = retrieval.retrieve(retriever=bm25, questions=["annual leave"], k=1)
    assert hits[0].doc_id == "leave"


def test_a_damaged_file_is_refused_before_it_is_read(bm25):
    index = bm25.active_index
    storage = storages["artifacts"]
    with storage.open(index.artifact_name, "rb") as handle:
        data = bytearray(handle.read())
    data[len(data) // 2] ^= 0xFF
    storage.delete(index.artifact_name)
    storage.save(index.artifact_name, io.BytesIO(bytes(data)))
    fresh_process()
    with pytest.raises(ServiceError, match="is damaged: .* expected .* Rebuild it"):
        retrieval.load_index(bm25)


def test_the_retrieve_command_exits_2_with_the_message(bm25, project, tmp_path):
    question_set = QuestionSet.objects.create(project=project, name="faq")
    QuestionFactory(question_set=question_set, text="annual leave")
    storages["artifacts"].delete(bm25.active_index.artifact_name)
    fresh_process()
    with pytest.raises(CommandError, match="missing from the artifact storage") as error:
        call_command(
            "retrieve",
            "--project",
            project.slug,
            "--set",
            "faq",
            "--retriever",
            "kw",
            "--out",
            str(tmp_path / "run.jsonl"),
        )
    assert error.value.returncode == 2


def test_a_rebuild_removes_the_old_file_and_a_failed_build_leaves_none(
    bm25, monkeypatch, django_capture_on_commit_callbacks, artifact_folder
):
    storage = storages["artifacts"]
    old = bm25.active_index.artifact_name
    with django_capture_on_commit_callbacks(execute=True):
        new = retrieval.build_index(retriever=bm25)
    assert storage.exists(new.artifact_name)
    assert not storage.exists(old)
    assert list(Index.objects.filter(retriever=bm25)) == [new]

    # The build fails after its file is stored, while switching to it (the second clock read
    # is inside the switch's transaction): the file goes, the row says failed.
    real_now, calls = retrieval.timezone.now, []

    def now_then_fail():
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("database went away")
        return real_now()

    monkeypatch.setattr(retrieval.timezone, "now", now_then_fail)
    with pytest.raises(RuntimeError):
        retrieval.build_index(retriever=bm25)
    monkeypatch.undo()
    failed = Index.objects.get(retriever=bm25, state=IndexState.FAILED)
    assert failed.artifact_name == ""
    assert sorted(p.name for p in (artifact_folder / f"indexes/retriever-{bm25.pk}").iterdir()) == [
        new.artifact_name.rsplit("/", 1)[1]
    ]
    bm25.refresh_from_db()
    assert bm25.active_index == new


def test_artifacts_stored_in_the_database_move_to_storage(transactional_db):
    """The data migration: an index artifact in the old bytea column (format 1, the searcher's
    .npz nested as bytes) becomes a file with its checksum, and still searches."""
    executor = MigrationExecutor(connection)
    executor.migrate([("corpus", "0007_issue16_http_retriever")])
    apps = executor.loader.project_state([("corpus", "0007_issue16_http_retriever")]).apps
    Project = apps.get_model("corpus", "Project")
    Retriever = apps.get_model("corpus", "Retriever")
    OldIndex = apps.get_model("corpus", "Index")
    project = Project.objects.create(slug="old", name="Old")
    retriever = Retriever.objects.create(project=project, name="kw", kind="bm25", params={})
    searcher = BM25Index.build([t for _, t in TEXTS], analyzer=retrieval.Analyzer(), idf="okapi")
    buffer = io.BytesIO()
    np.savez(
        buffer,
        format=np.int64(1),
        kind=np.str_("bm25"),
        searcher=np.frombuffer(searcher.to_bytes(), dtype=np.uint8),
        version_ids=np.arange(3, dtype=np.int64),
        document_ids=np.arange(3, dtype=np.int64),
        starts=np.zeros(3, dtype=np.int64),
        ends=np.full(3, 10, dtype=np.int64),
    )
    old_bytes = buffer.getvalue()
    old = OldIndex.objects.create(retriever=retriever, state="ready", artifact=old_bytes)
    empty = OldIndex.objects.create(retriever=retriever, state="failed", artifact=b"")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    moved = Index.objects.get(pk=old.pk)
    assert moved.artifact_name == f"indexes/retriever-{retriever.pk}/index-{old.pk}.npz"
    assert moved.artifact_size == len(old_bytes)
    assert moved.artifact_sha256 == hashlib.sha256(old_bytes).hexdigest()
    assert Index.objects.get(pk=empty.pk).artifact_name == ""
    with artifacts.open_artifact(
        artifact=artifacts.StoredArtifact(
            name=moved.artifact_name, size=moved.artifact_size, sha256=moved.artifact_sha256
        ),
        what="the old index",
        rebuild="",
    ) as handle:
        loaded = retrieval.indexfile.unpack(moved.pk, None, handle, rebuild="")
    assert loaded.searcher.idf == "okapi"
    assert loaded.searcher.search("dinner euros", k=1)[0][0] == 1
    storages["artifacts"].delete(moved.artifact_name)


def test_deleting_a_retriever_in_the_admin_takes_its_file(
    bm25, admin_client, django_capture_on_commit_callbacks
):
    storage = storages["artifacts"]
    name = bm25.active_index.artifact_name
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(f"/admin/corpus/retriever/{bm25.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Index.objects.filter(retriever_id=bm25.pk).exists()
    assert not storage.exists(name)


def test_deleting_index_rows_in_bulk_takes_every_file(
    bm25, project, django_capture_on_commit_callbacks, artifact_folder
):
    other = retrieval.add_retriever(
        project=project, name="kw2", kind="bm25", scheme=bm25.scheme, stem=False
    )
    retrieval.build_index(retriever=other)
    names = list(Index.objects.values_list("artifact_name", flat=True))
    assert len(names) == 2 and all(storages["artifacts"].exists(n) for n in names)
    with django_capture_on_commit_callbacks(execute=True):
        Index.objects.filter(retriever__project=project).delete()
    assert not any(storages["artifacts"].exists(n) for n in names)
    assert not [p for p in artifact_folder.rglob("*") if p.is_file()]


def test_a_deletion_that_rolls_back_keeps_the_file(bm25):
    name, pk = bm25.active_index.artifact_name, bm25.pk
    with pytest.raises(RuntimeError), transaction.atomic():
        bm25.delete()
        raise RuntimeError("changed my mind")
    assert storages["artifacts"].exists(name)
    fresh_process()
    kept = Retriever.objects.get(pk=pk)
    assert retrieval.retrieve(retriever=kept, questions=["vpn client"], k=1)[0][0].doc_id == "vpn"
