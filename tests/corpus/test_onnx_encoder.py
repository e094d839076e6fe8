"""The int8 ONNX encoder: built offline from the packaged model's torch weights, its vectors
agree with the torch model's, it is a model version of its own, and retrievers can use it."""

import itertools
import shutil

import numpy as np
import pytest
from django.urls import reverse

from corpus import jobs, onnx_encoder
from corpus.embedding import Encoder
from corpus.models import EmbeddingCache, Job, JobState, Retriever
from corpus.onnx_encoder import OnnxEncoder
from corpus.services import documents, retrieval
from goldset.errors import ServiceError
from tests.factories import add_documents

SUBJECTS = [
    "Annual leave",
    "Parental leave",
    "The expense policy",
    "Remote work",
    "The VPN client",
    "Security badges",
    "Travel booking",
    "The pension plan",
    "Overtime",
    "Sick leave",
]
PREDICATES = [
    "needs approval from your line manager before it starts",
    "is described in policy HR-POL-014, section 3.2",
    "changed on 1 January; the old rules apply to requests made before then",
    "can be claimed within 30 days through the portal, with receipts attached as PDF",
    "is not available to contractors or temporary staff",
    "what is the limit per year and who decides on exceptions?",
    "covers trains, flights and hotels booked through the travel desk",
    "requires form AB1234 signed by HR and finance",
    "is paid at 150% after 40 hours in a week, 200% on public holidays",
    "disconnects after twelve hours without activity; sign in again with MFA",
]
TEXTS = [f"{s} {p}." for s, p in itertools.product(SUBJECTS, PREDICATES)]
TEXTS += [
    f"Q: does {s.lower()} apply to me? A: {p}" for s, p in itertools.product(SUBJECTS, PREDICATES)
]


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="session")
def int8(cache_dir):
    encoder = OnnxEncoder(cache_dir=cache_dir)
    assert encoder.info.dimension == 384  # builds the int8 model once for the session
    return encoder


def test_vectors_agree_with_the_torch_model_on_200_texts(int8):
    texts = TEXTS[:200]
    assert len(set(texts)) == 200
    fp32 = Encoder().encode(texts)
    vectors = int8.encode(texts)
    assert vectors.shape == (200, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    cosines = np.sum(fp32 * vectors, axis=1)
    assert cosines.mean() >= 0.98
    # Order-preserving. Dynamic quantization scales activations per batch, so a text's vector
    # depends a little on the texts encoded with it (fp32's only through float rounding).
    alone = int8.encode(texts[5:8])
    assert np.sum(alone * vectors[5:8], axis=1).min() >= 0.99
    assert np.allclose(int8.encode(texts[5:8]), alone, atol=1e-6)  # deterministic


def test_it_is_a_model_version_of_its_own_built_once(int8, cache_dir):
    fp32 = Encoder().info
    assert int8.info.version.startswith(fp32.version + "+onnx-int8:")
    assert int8.info.version != fp32.version
    assert int8.info.dimension == fp32.dimension
    built = int8.model_file.stat().st_mtime_ns
    again = OnnxEncoder(cache_dir=cache_dir, threads=1)
    assert again.info == int8.info
    assert again.model_file.stat().st_mtime_ns == built
    assert list(cache_dir.rglob("*.onnx")) == [int8.model_file]


def test_a_retriever_on_the_int8_build_never_mixes_with_torch_vectors(project, settings, int8):
    settings.GOLDSET_MODEL_CACHE_DIR = int8.cache_dir
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=120, overlap=0
    )
    add_documents(
        project,
        ("leave", "Employees receive 25 days of paid annual leave per calendar year."),
        ("vpn", "Install the NW-VPN client and approve the multi-factor prompt."),
    )
    fast = retrieval.add_retriever(
        project=project, name="fast", kind="embedding", scheme=scheme, backend="onnx-int8"
    )
    torch = retrieval.add_retriever(
        project=project, name="torch", kind="embedding", scheme=scheme, backend="torch"
    )
    assert (fast.params["backend"], torch.params["backend"]) == ("onnx-int8", "torch")
    fast_index = retrieval.build_index(retriever=fast)
    torch_index = retrieval.build_index(retriever=torch)
    assert fast_index.model_version == int8.info.version != torch_index.model_version
    assert fast_index.model_name.endswith("(onnx-int8)")
    assert set(EmbeddingCache.objects.values_list("model_version", flat=True)) == {
        fast_index.model_version,
        torch_index.model_version,
    }
    (hits,) = retrieval.retrieve(retriever=fast, questions=["how many vacation days"], k=2)
    assert hits[0].doc_id == "leave"
    # Switching the encoder under a built index is refused until it is rebuilt.
    Retriever.objects.filter(pk=torch.pk).update(params={**torch.params, "backend": "onnx-int8"})
    torch.refresh_from_db()
    with pytest.raises(ServiceError, match="model of torch changed since its index was built"):
        retrieval.retrieve(retriever=torch, questions=["vpn"], k=1)
    with pytest.raises(ServiceError, match="torch or onnx-int8"):
        retrieval.add_retriever(
            project=project, name="x", kind="embedding", scheme=scheme, backend="int4"
        )


def test_an_index_build_says_it_is_preparing_the_encoder_while_it_is_made(
    project, member, settings, int8, tmp_path, monkeypatch, client
):
    """The export takes minutes on a busy machine with the count at 0: the job's page says why
    meanwhile, and only while the encoder is made (once per model and cache folder)."""
    settings.GOLDSET_MODEL_CACHE_DIR = tmp_path / "cache"  # nothing built here yet
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=120, overlap=0
    )
    add_documents(project, ("leave", "Employees receive 25 days of paid annual leave."))
    retriever = retrieval.add_retriever(
        project=project, name="minilm", kind="embedding", scheme=scheme, backend="onnx-int8"
    )
    client.force_login(member("lead"))
    seen = []

    def build(model_path, target):
        # Instead of the minute-long export, the session's build: the page is read meanwhile.
        job = Job.objects.get(kind="build_index", state=JobState.RUNNING)
        page = client.get(reverse("corpus:show-job", args=[project.slug, job.pk]))
        seen.append(page.content.decode())
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(int8.model_file, target)

    monkeypatch.setattr(onnx_encoder, "build_int8", build)
    first = retrieval.start_index_build(retriever=retriever)
    jobs.run(first.pk, retrieval.run_index_build)
    (page,) = seen
    assert "Preparing the encoder (once)" in page
    assert "Running" in page
    first.refresh_from_db()
    assert first.state == JobState.SUCCEEDED
    assert "Preparing" not in first.message
    # Built: the next build says nothing of it.
    second = retrieval.start_index_build(retriever=retriever)
    jobs.run(second.pk, retrieval.run_index_build)
    second.refresh_from_db()
    assert second.state == JobState.SUCCEEDED
    assert len(seen) == 1
