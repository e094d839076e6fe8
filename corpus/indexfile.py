"""The index artefact's file format (one .npz): a searcher and the passage of each position.

Format 2 stores the searcher's arrays flat (prefixed ``searcher.``) beside the passages' arrays,
written straight to the file they go to; format 1 (before issue 19) nested the searcher's own
.npz as one bytes array, and is still read. Django-free: corpus.services.retrieval stores the file
through corpus.services.artifacts.
"""

from __future__ import annotations

import zipfile
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import BinaryIO

import numpy as np

from corpus.embedding import VectorIndex
from goldeval.bm25 import BM25Index
from goldset.errors import ServiceError

_PASSAGE_FORMAT = 2
_SEARCHER = "searcher."


@dataclass(frozen=True)
class LoadedIndex:
    """An Index artefact in memory: its searcher and which passage each position is."""

    index_id: int
    built_at: datetime | None
    searcher: BM25Index | VectorIndex
    version_ids: np.ndarray
    document_ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.version_ids)

    def of_documents(self, documents: Collection[int]) -> np.ndarray:
        """One bool per passage: whether its document is one of ``documents`` (pks)."""
        return self._among(self._documents, documents)

    def of_versions(self, versions: Collection[int]) -> np.ndarray:
        """One bool per passage: whether its document version is one of ``versions`` (pks)."""
        return self._among(self._versions, versions)

    # Each distinct id once and, per passage, which one it is: a search that hides some
    # documents then tests their ten thousand ids, not the million passages' (np.isin on the
    # passages cost a few milliseconds per search at 1,000,000).
    @cached_property
    def _documents(self) -> tuple[np.ndarray, np.ndarray]:
        return np.unique(self.document_ids, return_inverse=True)

    @cached_property
    def _versions(self) -> tuple[np.ndarray, np.ndarray]:
        return np.unique(self.version_ids, return_inverse=True)

    @staticmethod
    def _among(ids: tuple[np.ndarray, np.ndarray], wanted: Collection[int]) -> np.ndarray:
        distinct, of_passage = ids
        if not wanted:
            return np.zeros(len(of_passage), dtype=bool)
        return np.isin(distinct, np.fromiter(wanted, dtype=np.int64, count=len(wanted)))[of_passage]


def pack(
    handle: BinaryIO,
    searcher: BM25Index | VectorIndex,
    passages: list[tuple[int, int, int, int, str, str]],
) -> None:
    """Write the artefact: the searcher's arrays (prefixed) and each position's passage, flat in
    one .npz, so nothing is first copied into a bytes object of its own."""
    np.savez(
        handle,
        format=np.int64(_PASSAGE_FORMAT),
        kind=np.str_("bm25" if isinstance(searcher, BM25Index) else "embedding"),
        **{f"{_SEARCHER}{name}": array for name, array in searcher.to_arrays().items()},
        version_ids=np.array([p[0] for p in passages], dtype=np.int64),
        document_ids=np.array([p[1] for p in passages], dtype=np.int64),
        starts=np.array([p[2] for p in passages], dtype=np.int64),
        ends=np.array([p[3] for p in passages], dtype=np.int64),
    )


def unpack(
    index_id: int, built_at: datetime | None, handle: BinaryIO, *, rebuild: str
) -> LoadedIndex:
    try:
        with np.load(handle, allow_pickle=False) as stored:
            version = int(stored["format"])
            if version not in (1, _PASSAGE_FORMAT):
                raise ServiceError(f"This index was stored by another Goldset version. {rebuild}")
            kind = str(stored["kind"])
            searcher_type = BM25Index if kind == "bm25" else VectorIndex
            if version == 1:  # the searcher's own .npz bytes inside (before issue 19)
                searcher = searcher_type.from_bytes(stored["searcher"].tobytes())
            else:
                searcher = searcher_type.from_arrays(
                    {
                        name.removeprefix(_SEARCHER): stored[name]
                        for name in stored.files
                        if name.startswith(_SEARCHER)
                    }
                )
            arrays = {
                name: stored[name] for name in ("version_ids", "document_ids", "starts", "ends")
            }
    except (KeyError, ValueError, OSError, zipfile.BadZipFile) as exc:
        raise ServiceError(f"The stored index is unreadable ({exc}). {rebuild}") from exc
    return LoadedIndex(index_id=index_id, built_at=built_at, searcher=searcher, **arrays)
