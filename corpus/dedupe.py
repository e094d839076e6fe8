"""Near-duplicate detection for documents at ingestion.

A document's signature is a MinHash over its lower-cased word 3-shingles,
stored as ``4 * NUM_PERM`` bytes (little-endian uint32). Signatures are only
comparable with signatures made by the same code: the seed, the shingle hash
(CRC-32 of the UTF-8 shingle) and datasketch's "affine32" permutation scheme
are fixed here, so they are stable across processes and machines. Changing any
of them means recomputing every stored signature.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Hashable, Iterable
from functools import lru_cache

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSH

NUM_PERM = 128
SEED = 1
_SCHEME = "affine32"
_HASH_DTYPE = np.dtype("<u4")
_WORD = re.compile(r"\w+")

# The LSH only proposes candidates; every candidate is then checked against the
# threshold with the full signature. So the bands are chosen to miss almost no
# pair at the threshold (probability >= 99.5%), accepting more candidates to
# check, rather than datasketch's default balance of misses and false hits
# (which finds only ~30% of pairs exactly at 0.9 with 128 permutations).
_TARGET_RECALL = 0.995


def shingles(text: str, *, size: int = 3) -> set[str]:
    """Lower-cased word n-grams of ``text``, words joined by single spaces.

    A text of fewer than ``size`` words yields its whole word sequence as one
    shingle, so short texts still get a meaningful signature.
    """
    if size < 1:
        raise ValueError(f"Shingle size must be at least 1, not {size}.")
    words = _WORD.findall(text.lower())
    if not words:
        return set()
    if len(words) <= size:
        return {" ".join(words)}
    return {" ".join(words[i : i + size]) for i in range(len(words) - size + 1)}


def signature(text: str, *, num_perm: int = NUM_PERM) -> bytes:
    """MinHash signature of ``text``; two empty texts share the same signature."""
    minhash = MinHash(
        num_perm=num_perm,
        seed=SEED,
        hashfunc=_hash_shingle,
        permutations=_permutations(num_perm),
        scheme=_SCHEME,
    )
    minhash.update_batch(shingles(text))
    return minhash.hashvalues.astype(_HASH_DTYPE, copy=False).tobytes()


def estimated_jaccard(a: bytes, b: bytes) -> float:
    """Share of MinHash positions on which two signatures agree."""
    values_a, values_b = _hash_values(a), _hash_values(b)
    if len(values_a) != len(values_b):
        raise ValueError(
            f"Cannot compare signatures of {len(values_a)} and {len(values_b)} permutations."
        )
    return float(np.count_nonzero(values_a == values_b)) / len(values_a)


class NearDuplicateIndex:
    """Finds stored signatures whose estimated Jaccard similarity reaches a threshold."""

    def __init__(self, *, threshold: float = 0.9, num_perm: int = NUM_PERM) -> None:
        _check_threshold(threshold)
        if num_perm < 2:
            raise ValueError(
                f"A near-duplicate index needs at least 2 permutations, not {num_perm}."
            )
        self.threshold = threshold
        self.num_perm = num_perm
        self._lsh = MinHashLSH(num_perm=num_perm, params=_band_params(threshold, num_perm))
        self._signatures: dict[Hashable, np.ndarray] = {}
        self._positions: dict[Hashable, int] = {}

    def __len__(self) -> int:
        return len(self._signatures)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._signatures

    def add(self, key: Hashable, sig: bytes) -> None:
        if key in self._signatures:
            raise ValueError(f"The near-duplicate index already holds {key!r}.")
        values = self._checked_values(sig)
        self._lsh.insert(key, _lean_minhash(values), check_duplication=False)
        self._signatures[key] = values
        self._positions[key] = len(self._positions)

    def matches(self, sig: bytes) -> list[Hashable]:
        """Keys whose estimated Jaccard similarity to ``sig`` is at least the
        threshold, in the order they were added."""
        values = self._checked_values(sig)
        candidates = self._lsh.query(_lean_minhash(values))
        if not candidates:
            return []
        # The LSH is tuned to over-propose, so each candidate is verified.
        verified = {
            key
            for key in candidates
            if np.count_nonzero(self._signatures[key] == values) / self.num_perm >= self.threshold
        }
        return sorted(verified, key=self._positions.__getitem__)

    def _checked_values(self, sig: bytes) -> np.ndarray:
        values = _hash_values(sig)
        if len(values) != self.num_perm:
            raise ValueError(
                f"Signature has {len(values)} permutations; this index expects {self.num_perm}."
            )
        return values


def group_near_duplicates(
    items: Iterable[tuple[Hashable, bytes]], *, threshold: float = 0.9
) -> list[list[Hashable]]:
    """Groups of two or more keys linked by near-duplicate pairs.

    Similarity is not transitive, so a group is a connected component: A and
    C share a group when A~B and B~C, even if A and C are further apart.
    Members keep input order; groups are ordered by their first member.
    """
    _check_threshold(threshold)
    keys: list[Hashable] = []
    position: dict[Hashable, int] = {}
    parent: list[int] = []
    index: NearDuplicateIndex | None = None

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for key, sig in items:
        if key in position:
            raise ValueError(f"Duplicate key {key!r} in near-duplicate grouping.")
        if index is None:
            index = NearDuplicateIndex(threshold=threshold, num_perm=len(_hash_values(sig)))
        me = len(keys)
        position[key] = me
        keys.append(key)
        parent.append(me)
        for other in index.matches(sig):
            # Union towards the smaller index keeps each root at its group's
            # first member, which gives the ordering for free.
            a, b = root(me), root(position[other])
            parent[max(a, b)] = min(a, b)
        index.add(key, sig)

    groups: dict[int, list[Hashable]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(root(i), []).append(key)
    return [members for _, members in sorted(groups.items()) if len(members) >= 2]


def _check_threshold(threshold: float) -> None:
    if not 0 < threshold <= 1:
        raise ValueError(
            f"Near-duplicate threshold must be above 0 and at most 1, not {threshold!r}."
        )


def _hash_shingle(shingle: str) -> int:
    # CRC-32 is deterministic (unlike hash()) and several times faster than the
    # default SHA-1; datasketch's affine32 scheme pre-mixes it with the
    # MurmurHash3 finaliser, so its weak avalanche does not bias the minimum.
    return zlib.crc32(shingle.encode("utf-8"))


@lru_cache(maxsize=8)
def _permutations(num_perm: int) -> np.ndarray:
    # Generating permutations costs more than hashing a short text; share them.
    permutations = MinHash(num_perm=num_perm, seed=SEED, scheme=_SCHEME).permutations
    permutations.setflags(write=False)
    return permutations


@lru_cache(maxsize=32)
def _band_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows): the most rows per band that still finds a pair at the
    threshold with probability >= _TARGET_RECALL, keeping at least 2 bands."""
    best = (num_perm, 1)
    for rows in range(1, num_perm // 2 + 1):
        bands = num_perm // rows
        if 1 - (1 - threshold**rows) ** bands >= _TARGET_RECALL:
            best = (bands, rows)
    return best


def _hash_values(sig: bytes) -> np.ndarray:
    if len(sig) == 0 or len(sig) % _HASH_DTYPE.itemsize:
        raise ValueError(
            f"A signature is a non-empty multiple of {_HASH_DTYPE.itemsize} bytes, "
            f"not {len(sig)} bytes."
        )
    return np.frombuffer(sig, dtype=_HASH_DTYPE).astype(np.uint32)


def _lean_minhash(values: np.ndarray) -> LeanMinHash:
    return LeanMinHash(seed=SEED, hashvalues=values, scheme=_SCHEME)
