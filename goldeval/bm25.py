"""A sparse BM25 index at 100,000-passage scale, with Lucene's IDF or rank-bm25's BM25Okapi IDF.

``idf="lucene"`` (the default) is ``ln(1 + (N - df + 0.5) / (df + 0.5))``, the IDF of Lucene's
BM25Similarity, which Pyserini/Anserini (and so BEIR's BM25 figures) and bm25s's default use: it
is never negative, so no floor is needed. ``idf="okapi"`` is rank-bm25's BM25Okapi:
``ln((N - df + 0.5) / (df + 0.5))`` with negatives floored at EPSILON times the mean IDF.
Term-frequency saturation and length normalisation are the same in both.

Every (term, passage) BM25 weight is computed once at build time and stored term-major (CSR, one
row per term), so scoring a query is the sum of a few sparse rows. rank-bm25 recomputes the weights
for every passage on every query, which is what makes it slow and large at this scale.
Weights are stored as float32 (their rounding error is far inside the agreement with rank-bm25
the tests pin) to halve the stored index.

Searches run in a small C kernel (goldeval/_bm25kernel.c) when the install could compile it: the
same sums bit for bit, the same ranking and ties, several times faster, on the float32 weights
as stored. Without it (no C compiler at install time) they run on numpy/scipy, which widen the
weights to float64 once (see _weights) so that scoring adds no conversion per query.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

import numpy as np
import scipy.sparse

from goldeval.text.analysis import Analyzer

try:  # the compiled search kernel (goldeval/_bm25kernel.c), if the install built it
    from goldeval import _bm25kernel as bm25kernel
except ImportError:  # pragma: no cover - an install without a C compiler
    bm25kernel = None

# rank_bm25.BM25Okapi's floor for negative IDF, as a fraction of the average IDF.
EPSILON = 0.25
_FORMAT = 1
IDF_KINDS = ("lucene", "okapi")
# Passages are tokenized in batches so the per-token Python lists never hold the whole corpus.
_BATCH = 8192
# top_k samples before it partitions once there are more than this many candidates per place.
_SAMPLED_CUT = 64
# search_many runs the kernel on this many threads, once a batch has at least _PARALLEL_FROM
# queries (below that, starting threads costs more).
_THREADS = min(4, os.cpu_count() or 1)
_PARALLEL_FROM = 32


class BM25IndexError(ValueError):
    """Bad input to a BM25 index, or bytes that are not a BM25 index."""


class BM25Index:
    def __init__(
        self,
        *,
        analyzer: Analyzer,
        k1: float,
        b: float,
        idf: str,
        vocabulary: dict[str, int],
        weights: scipy.sparse.csr_matrix,
    ) -> None:
        self.analyzer = analyzer
        self.k1 = k1
        self.b = b
        self.idf = idf
        self._vocabulary = vocabulary
        # Plain arrays: slicing them per query term avoids scipy's per-call overhead.
        self._indptr = weights.indptr
        self._indices = weights.indices
        self._data = weights.data  # float32, as stored
        self._data64: np.ndarray | None = None  # the numpy path's float64 copy (_weights)
        self._postings = None  # the kernel's hold on the arrays (_kernel)
        self._size = weights.shape[1]
        # Lucene's IDF is always positive; Okapi's floor can make a weight zero or negative.
        self._positive = bool(weights.data.size == 0 or weights.data.min() > 0)

    @classmethod
    def build(
        cls,
        passages: Sequence[str],
        *,
        analyzer: Analyzer,
        k1: float = 0.9,
        b: float = 0.4,
        idf: str = "lucene",
    ) -> BM25Index:
        if k1 < 0 or not 0 <= b <= 1:
            raise BM25IndexError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}.")
        if idf not in IDF_KINDS:
            raise BM25IndexError(f"BM25 idf is one of {', '.join(IDF_KINDS)}, not {idf!r}.")
        vocabulary, lengths, indptr, terms, weights = _count_terms(passages, analyzer=analyzer)
        size, n_terms = len(passages), len(vocabulary)
        if size and n_terms:
            avgdl = lengths.sum() / size
            df = np.bincount(terms, minlength=n_terms)
            term_idf = _lucene_idf(df, size) if idf == "lucene" else _okapi_idf(df, size)
            # Term frequencies become BM25 weights in place, a slice of passages at a time, so
            # the per-entry float64 temporaries stay small.
            for first in range(0, size, _BATCH):
                last = min(first + _BATCH, size)
                lo, hi = indptr[first], indptr[last]
                tf = weights[lo:hi].astype(np.float64)
                dl = np.repeat(lengths[first:last], np.diff(indptr[first : last + 1]))
                norm = k1 * (1 - b + b * dl / avgdl)
                weights[lo:hi] = term_idf[terms[lo:hi]] * (tf * (k1 + 1)) / (tf + norm)
        by_passage = scipy.sparse.csc_matrix((weights, terms, indptr), shape=(n_terms, size))
        return cls(
            analyzer=analyzer,
            k1=k1,
            b=b,
            idf=idf,
            vocabulary=vocabulary,
            weights=by_passage.tocsr(),
        )

    def __len__(self) -> int:
        return self._size

    def __getstate__(self) -> dict:
        # The kernel's hold on the arrays is per process; a copy makes its own on first search.
        return {**self.__dict__, "_postings": None}

    @property
    def nbytes(self) -> int:
        arrays = {id(a): a for a in (self._indptr, self._indices, self._data, self._data64)}
        return sum(a.nbytes for a in arrays.values() if a is not None)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage (0 where no query term occurs)."""
        scores, _ = self._score(query)
        return scores

    def search(
        self, query: str, *, k: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """The top k passages that contain a query term, best first, ties to the lower index.

        ``allowed`` (one bool per passage) is applied before the cut, so a user who may not see
        some passages still gets k results when k allowed passages match.
        """
        if k < 1:
            raise BM25IndexError(f"k must be at least 1, got {k}.")
        mask = self._check_allowed(allowed)
        kernel = self._kernel()
        if kernel is not None:
            return kernel.search(*self._terms(query), k, mask)
        scores, matched = self._score(query)
        if mask is not None:
            matched &= mask
        if len(scores) > 2 * _SAMPLED_CUT * k:
            # As top_k does, but before the matched passages are listed, so only the few
            # percent at or above the sampled floor are listed and sorted.
            step = len(scores) // (_SAMPLED_CUT * k)
            floor = _sampled_floor(scores[::step][matched[::step]], k=k)
            if floor is not None:
                matched &= scores >= floor
        return top_k(scores, np.flatnonzero(matched), k=k)

    def search_many(
        self, queries: Sequence[str], *, k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """search() of each query, in order; with the kernel, on several threads at once."""
        kernel = self._kernel()
        if kernel is None:
            return [self.search(query, k=k, allowed=allowed) for query in queries]
        if k < 1:
            raise BM25IndexError(f"k must be at least 1, got {k}.")
        mask = self._check_allowed(allowed)
        threads = _THREADS if len(queries) >= _PARALLEL_FROM else 1
        # One call: the kernel's own threads search without the GIL, while this one takes it
        # back now and then to build the finished queries' results.
        return kernel.search_many([self._terms(query) for query in queries], k, mask, threads)

    def _terms(self, query: str) -> tuple[list[int], list[int]]:
        """The query's known terms (rows) in query order, and how often each occurs."""
        rows, counts = [], []
        # A repeated query term counts once per occurrence, as in BM25Okapi.get_scores.
        for token, count in Counter(self.analyzer.tokens(query)).items():
            term = self._vocabulary.get(token)
            if term is not None:
                rows.append(term)
                counts.append(count)
        return rows, counts

    def _score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        rows, counts = self._terms(query)
        if not rows:
            return np.zeros(self._size), np.zeros(self._size, dtype=bool)
        # The query's rows as the columns of one (passages x terms) CSC matrix times the term
        # counts: scipy's compiled matvec adds each row into the scores in query-term order,
        # the very sums (bit for bit) of a numpy `scores[passages] += count * weights` per term,
        # at a fraction of its cost when frequent terms bring a million postings
        # (benchmarks/scale.py).
        starts, ends = self._indptr[rows], self._indptr[np.asarray(rows) + 1]
        weights = self._weights()
        columns = scipy.sparse.csc_matrix(
            (
                np.concatenate([weights[lo:hi] for lo, hi in zip(starts, ends, strict=True)]),
                np.concatenate([self._indices[lo:hi] for lo, hi in zip(starts, ends, strict=True)]),
                np.concatenate([[0], np.cumsum(ends - starts)]),
            ),
            shape=(self._size, len(rows)),
        )
        scores = columns @ np.asarray(counts, dtype=np.float64)
        if self._positive:
            # Every weight is above zero, so a passage matched exactly when its sum is.
            return scores, scores > 0
        matched = np.zeros(self._size, dtype=bool)
        matched[columns.indices] = True
        return scores, matched

    def _weights(self) -> np.ndarray:
        """The weights as float64 for the numpy path, converted once. Stored and built as
        float32 (half the file), but scipy's matvec would copy every posting a query reads to
        float64 first, which made the search much slower; a build never pays for this. Without
        the kernel nothing else reads the float32 weights (to_arrays narrows back, exactly), so
        only the float64 copy is kept."""
        if self._data64 is None:
            self._data64 = self._data.astype(np.float64)
            if bm25kernel is None:
                self._data = self._data64
        return self._data64

    def _kernel(self):
        """The compiled kernel's hold on the weights, made on the first search; None without
        the kernel (the numpy path)."""
        if bm25kernel is None:
            return None
        if self._postings is None:
            # All exact: the weights were float32, the row pointers and passages are integers.
            data = self._data.astype(np.float32, copy=False)
            self._postings = bm25kernel.Postings(
                self._indptr.astype(np.int64, copy=False),
                self._indices.astype(np.int32, copy=False),
                data,
                self._size,
            )
            self._data = data
        return self._postings

    def _check_allowed(self, allowed: np.ndarray | None) -> np.ndarray | None:
        if allowed is None:
            return None
        mask = np.asarray(allowed)
        if mask.dtype != bool or mask.shape != (self._size,):
            raise BM25IndexError(
                f"allowed must be a boolean mask with one entry per passage ({self._size}), "
                f"got dtype {mask.dtype} and shape {mask.shape}."
            )
        return np.ascontiguousarray(mask)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The index as named arrays: what to_bytes stores, for a caller writing its own file."""
        return {
            "format": np.int64(_FORMAT),
            "size": np.int64(self._size),
            "k1": np.float64(self.k1),
            "b": np.float64(self.b),
            "idf": np.str_(self.idf),
            "stem": np.bool_(self.analyzer.stem),
            "stopwords": np.bool_(self.analyzer.stopwords),
            # Terms never contain a newline (the analyzer emits letters, digits, "-" and "."),
            # so the vocabulary travels as one UTF-8 blob in term-id order.
            "vocabulary": np.frombuffer(
                "\n".join(self._vocabulary).encode("utf-8"), dtype=np.uint8
            ),
            "indptr": self._indptr,
            "indices": self._indices,
            "data": self._data.astype(np.float32, copy=False),  # exact: they were float32
        }

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez(buffer, **self.to_arrays())
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> BM25Index:
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as stored:
                return cls.from_arrays(stored)
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            if isinstance(exc, BM25IndexError):
                raise
            raise BM25IndexError(f"These bytes are not a stored BM25 index ({exc}).") from exc

    @classmethod
    def from_arrays(cls, stored: Mapping[str, np.ndarray]) -> BM25Index:
        """The index from to_arrays' arrays (an open npz file, or a dict)."""
        try:
            if int(stored["format"]) != _FORMAT:
                raise BM25IndexError(
                    f"BM25 index format {int(stored['format'])} is not supported "
                    f"(expected {_FORMAT}); rebuild the index."
                )
            size = int(stored["size"])
            blob = stored["vocabulary"].tobytes().decode("utf-8")
            terms = blob.split("\n") if blob else []
            weights = scipy.sparse.csr_matrix(
                (stored["data"], stored["indices"], stored["indptr"]),
                shape=(len(terms), size),
            )
            analyzer = Analyzer(stem=bool(stored["stem"]), stopwords=bool(stored["stopwords"]))
            k1, b = float(stored["k1"]), float(stored["b"])
            # Indexes stored before the Lucene IDF existed were all built with Okapi's.
            idf = str(stored["idf"]) if "idf" in stored else "okapi"
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            if isinstance(exc, BM25IndexError):
                raise
            raise BM25IndexError(f"These bytes are not a stored BM25 index ({exc}).") from exc
        vocabulary = {term: position for position, term in enumerate(terms)}
        if idf not in IDF_KINDS:
            raise BM25IndexError(
                f"These bytes name an unknown BM25 idf {idf!r}; rebuild the index."
            )
        return cls(analyzer=analyzer, k1=k1, b=b, idf=idf, vocabulary=vocabulary, weights=weights)


def _count_terms(
    passages: Sequence[str], *, analyzer: Analyzer
) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Vocabulary, passage lengths, and the passage-major (term, frequency) pairs as CSC parts."""
    # A new term gets the next id on first lookup, so a passage's ids come from one C-level
    # map() instead of a Python loop over its tokens.
    vocabulary: defaultdict[str, int] = defaultdict()
    vocabulary.default_factory = vocabulary.__len__
    lengths = np.zeros(len(passages), dtype=np.int64)
    indptr = np.zeros(len(passages) + 1, dtype=np.int64)
    terms = np.empty(1 << 20, dtype=np.int32)
    freqs = np.empty(1 << 20, dtype=np.float32)
    used = 0
    for first in range(0, len(passages), _BATCH):
        batch = passages[first : first + _BATCH]
        ids: list[int] = []
        for position, passage in enumerate(batch, start=first):
            tokens = analyzer.tokens(passage)
            lengths[position] = len(tokens)
            ids.extend(map(vocabulary.__getitem__, tokens))
        # Sorting (passage, term) keys gives each passage's distinct terms with their counts.
        keys = np.repeat(np.arange(len(batch), dtype=np.int64), lengths[first : first + len(batch)])
        keys <<= 32
        keys |= np.asarray(ids, dtype=np.int64)
        pairs, counts = np.unique(keys, return_counts=True)
        per_passage = np.bincount(pairs >> 32, minlength=len(batch))
        indptr[first + 1 : first + len(batch) + 1] = used + np.cumsum(per_passage)
        terms = _put(terms, used, pairs & 0xFFFFFFFF)
        freqs = _put(freqs, used, counts)
        used += len(pairs)
    return dict(vocabulary), lengths, indptr, terms[:used], freqs[:used]


def _put(buffer: np.ndarray, used: int, values: np.ndarray) -> np.ndarray:
    """Write ``values`` after the first ``used`` entries, doubling the buffer when it is full.

    One growing buffer instead of a list of per-batch arrays: freed mid-size arrays stay in the
    C heap (glibc raises its mmap threshold) and raised the build's peak memory, while large
    buffers are mapped and given back to the system when freed.
    """
    needed = used + len(values)
    if needed > len(buffer):
        grown = np.empty(max(needed, 2 * len(buffer)), dtype=buffer.dtype)
        grown[:used] = buffer[:used]
        buffer = grown
    buffer[used:needed] = values
    return buffer


def _lucene_idf(df: np.ndarray, size: int) -> np.ndarray:
    """Lucene BM25Similarity's IDF: ln(1 + (N - df + 0.5) / (df + 0.5)), always positive."""
    return np.log1p((size - df + 0.5) / (df + 0.5))


def _okapi_idf(df: np.ndarray, size: int) -> np.ndarray:
    """rank_bm25.BM25Okapi's IDF: log((N - df + 0.5) / (df + 0.5)), negatives floored.

    The floor is EPSILON times the average of the raw IDFs (negatives included) over the whole
    vocabulary, exactly as BM25Okapi._calc_idf computes it.
    """
    idf = np.log(size - df + 0.5) - np.log(df + 0.5)
    floor = EPSILON * idf.mean()
    return np.where(idf < 0, floor, idf)


def _sampled_floor(sample: np.ndarray, *, k: int) -> float | None:
    """The k-th best of an evenly spaced sample of the candidates' scores (None: fewer than k).

    It is at most the k-th best of all of them, so every candidate below it is out of the top k
    and none at or above it is lost, ties included.
    """
    if len(sample) < k:
        return None
    return np.partition(sample, len(sample) - k)[len(sample) - k]


def top_k(scores: np.ndarray, candidates: np.ndarray, *, k: int) -> list[tuple[int, float]]:
    """The k best ``candidates`` (ascending passage indices) by score, ties to the lower index."""
    if len(candidates) == 0:
        return []
    candidate_scores = scores[candidates]
    if len(candidates) > _SAMPLED_CUT * k:
        # One comparison drops all but a few percent of half a million candidates before the
        # (much dearer) partition.
        step = len(candidates) // (_SAMPLED_CUT * k // 2)
        kept = np.flatnonzero(candidate_scores >= _sampled_floor(candidate_scores[::step], k=k))
        candidates, candidate_scores = candidates[kept], candidate_scores[kept]
    if len(candidates) > k:
        # argpartition finds the k-th best score; everything strictly better is in, and the
        # remaining places go to the tied passages with the lowest indices (candidates ascend).
        kth = candidate_scores[np.argpartition(-candidate_scores, k - 1)[k - 1]]
        better = candidate_scores > kth
        tied = np.flatnonzero(candidate_scores == kth)[: k - int(better.sum())]
        keep = np.concatenate([np.flatnonzero(better), tied])
        candidates, candidate_scores = candidates[keep], candidate_scores[keep]
    order = np.lexsort((candidates, -candidate_scores))
    return [(int(candidates[i]), float(candidate_scores[i])) for i in order]
