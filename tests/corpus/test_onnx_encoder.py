"""The ONNX encoder: built offline from the packaged model's torch weights, run by OpenVINO in
bf16 where the CPU has it or by onnxruntime as int8; each runtime's vectors agree with the torch
model's, each is a model version of its own, and retrievers can use it."""

import itertools
import os
import shutil

import numpy as np
import pytest
from django.urls import reverse

from corpus import jobs, onnx_encoder
from corpus.embedding import Encoder
from corpus.models import EmbeddingCache, Job, JobState, Retriever
from corpus.onnx_encoder import BACKEND, OPENVINO_BF16, OnnxEncoder, best_runtime
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


# Varied texts: empty, one word, long past the model's 256 tokens (truncated, as
# sentence-transformers truncates), non-ASCII scripts, code-like strings, odd whitespace.
VARIED = [
    "",
    " ",
    "leave",
    "VPN",
    "HR-POL-014 §3.2",
    "Ünïcödé Straße: Übergangsfrist für Überstunden",
    "Les congés payés sont de 25 jours ouvrés par an.",
    "年次有給休暇は毎年二十五日付与されます。",
    "Отпуск по уходу за ребёнком оформляется через отдел кадров.",
    "إجازة سنوية مدفوعة الأجر لمدة خمسة وعشرين يوما",
    "emoji 🙂🚀 in a question?",
    "tab\tseparated\tvalues\nand a new line",
    "SELECT * FROM leave WHERE days > 25;",
    "https://intranet.example.com/policies/hr/leave?id=14#section-3",
    "a " * 600,
    " ".join(f"word{n}" for n in range(400)),
    ("Employees receive 25 days of paid annual leave per calendar year. " * 30).strip(),
    ("Die Reisekostenrichtlinie gilt für alle Dienstreisen. " * 40).strip(),
] + TEXTS[::6][:32]


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="session")
def fast(cache_dir):
    """The encoder this machine runs (OpenVINO bf16 where the CPU has bf16)."""
    encoder = OnnxEncoder(cache_dir=cache_dir)
    assert encoder.info.dimension == 384  # builds the model once for the session
    return encoder


@pytest.fixture(scope="session")
def int8(cache_dir):
    """onnxruntime's int8 build: what a CPU without bf16 (or without OpenVINO) runs."""
    encoder = OnnxEncoder(cache_dir=cache_dir, runtime=BACKEND)
    assert encoder.info.dimension == 384
    return encoder


@pytest.fixture(scope="session")
def runtimes(fast, int8):
    return {fast.runtime: fast, BACKEND: int8}


def test_openvino_is_installed_where_ci_runs():
    # The bf16 runtime's tests skip on a CPU without bf16 (rightly); a missing install must
    # not pass for such a CPU where CI runs (`make install` brings the encoder extra).
    if os.environ.get("CI"):
        import openvino  # noqa: F401


@pytest.mark.parametrize("runtime", [OPENVINO_BF16, BACKEND])
def test_vectors_agree_with_the_torch_model_on_varied_texts(runtimes, runtime):
    if runtime not in runtimes:
        pytest.skip(f"this CPU or install has no {runtime}")  # not this machine: it has both
    encoder = runtimes[runtime]
    assert len(VARIED) >= 50
    fp32 = Encoder().encode(VARIED)
    vectors = encoder.encode(VARIED)
    assert vectors.shape == (len(VARIED), 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    cosines = np.sum(fp32 * vectors, axis=1)
    assert cosines.mean() >= 0.99
    assert cosines.min() >= 0.95
    # Past 256 tokens the text is cut as the torch model cuts it: what follows changes nothing.
    long = VARIED[16]
    cut, longer = encoder.encode([long, long + " Unrelated: the VPN client."])
    assert np.allclose(cut, longer, atol=1e-6)
    assert float(cut @ fp32[16]) >= 0.99
    # Order-preserving. int8's dynamic quantization scales activations per batch, so a text's
    # vector depends a little on the texts encoded with it.
    alone = encoder.encode(VARIED[5:8])
    assert np.sum(alone * vectors[5:8], axis=1).min() >= 0.99
    assert np.allclose(encoder.encode(VARIED[5:8]), alone, atol=1e-6)  # deterministic


def test_vectors_agree_with_the_torch_model_on_200_texts(fast):
    texts = TEXTS[:200]
    assert len(set(texts)) == 200
    cosines = np.sum(Encoder().encode(texts) * fast.encode(texts), axis=1)
    assert cosines.mean() >= 0.99


def test_the_best_runtime_on_a_cpu_with_bf16_is_openvino():
    import openvino

    capabilities = openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    assert best_runtime() == (OPENVINO_BF16 if "BF16" in capabilities else BACKEND)


def test_each_runtime_is_a_model_version_of_its_own_built_once(fast, int8, cache_dir):
    fp32 = Encoder().info
    assert fast.info.version.startswith(f"{fp32.version}+{fast.runtime}:")
    assert int8.info.version.startswith(f"{fp32.version}+onnx-int8:")
    assert len({fp32.version, fast.info.version, int8.info.version}) == 3
    assert fast.info.dimension == int8.info.dimension == fp32.dimension
    built = fast.model_file.stat().st_mtime_ns
    again = OnnxEncoder(cache_dir=cache_dir, threads=1)
    assert again.info == fast.info
    assert again.model_file.stat().st_mtime_ns == built
    assert sorted(cache_dir.rglob("*.onnx")) == sorted({fast.model_file, int8.model_file})
    with pytest.raises(ValueError, match="runtime is"):
        OnnxEncoder(cache_dir=cache_dir, runtime="int4")


def test_a_retriever_on_the_onnx_build_never_mixes_with_torch_vectors(project, settings, fast):
    settings.GOLDSET_MODEL_CACHE_DIR = fast.cache_dir
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=120, overlap=0
    )
    add_documents(
        project,
        ("leave", "Employees receive 25 days of paid annual leave per calendar year."),
        ("vpn", "Install the NW-VPN client and approve the multi-factor prompt."),
    )
    quick = retrieval.add_retriever(
        project=project, name="fast", kind="embedding", scheme=scheme, backend="onnx-int8"
    )
    torch = retrieval.add_retriever(
        project=project, name="torch", kind="embedding", scheme=scheme, backend="torch"
    )
    assert (quick.params["backend"], torch.params["backend"]) == ("onnx-int8", "torch")
    fast_index = retrieval.build_index(retriever=quick)
    torch_index = retrieval.build_index(retriever=torch)
    assert fast_index.model_version == fast.info.version != torch_index.model_version
    assert fast_index.model_name.endswith(f"({fast.runtime})")
    assert set(EmbeddingCache.objects.values_list("model_version", flat=True)) == {
        fast_index.model_version,
        torch_index.model_version,
    }
    (hits,) = retrieval.retrieve(retriever=quick, questions=["how many vacation days"], k=2)
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


def test_an_index_of_the_int8_encoder_is_refused_by_the_bf16_one_until_rebuilt(
    project, settings, fast, int8, monkeypatch
):
    """The int8-only encoder of issue 19 built the indexes that exist; a worker on a bf16 CPU
    now encodes with OpenVINO, whose vectors differ a little: the old index is never searched
    with them (nor its cached vectors reused) until it is rebuilt."""
    if fast.runtime == BACKEND:
        pytest.skip("this machine runs the int8 encoder itself")
    settings.GOLDSET_MODEL_CACHE_DIR = fast.cache_dir
    scheme = documents.add_chunking_scheme(
        project=project, name="paragraphs", strategy="paragraph", size=120, overlap=0
    )
    add_documents(project, ("leave", "Employees receive 25 days of paid annual leave."))
    retriever = retrieval.add_retriever(
        project=project, name="minilm", kind="embedding", scheme=scheme, backend="onnx-int8"
    )
    monkeypatch.setattr(onnx_encoder, "best_runtime", lambda: BACKEND)  # an older worker
    old = retrieval.build_index(retriever=retriever)
    assert old.model_version == int8.info.version
    retrieval.retrieve(retriever=retriever, questions=["vacation days"], k=1)
    monkeypatch.undo()
    with pytest.raises(ServiceError, match="model of minilm changed since its index was built"):
        retrieval.retrieve(retriever=retriever, questions=["vacation days"], k=1)
    new = retrieval.build_index(retriever=retriever)
    assert new.model_version == fast.info.version
    assert set(EmbeddingCache.objects.values_list("model_version", flat=True)) == {
        int8.info.version,
        fast.info.version,
    }
    (hits,) = retrieval.retrieve(retriever=retriever, questions=["vacation days"], k=1)
    assert hits[0].doc_id == "leave"


def test_an_index_build_says_it_is_preparing_the_encoder_while_it_is_made(
    project, member, settings, fast, tmp_path, monkeypatch, client
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
        shutil.copy(fast.model_file, target)

    monkeypatch.setattr(onnx_encoder, "build_int8", build)
    monkeypatch.setattr(onnx_encoder, "export_fp32", build)
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
