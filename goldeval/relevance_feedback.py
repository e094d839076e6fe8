"""Relevance feedback from a question's judged passages: what the ``cal`` judging order learns.

Continuous active learning (Cormack and Grossman 2014-2016; HiCAL, BMI) re-ranks what is left
to judge after every judgement by a model of relevance learned from the judgements so far.
The model here is Rocchio's (1971), over TF-IDF vectors built from the question's candidates'
own texts (the BM25 analyzer's terms, stemmed, Lucene's stop set; the document frequencies
counted over those candidates; no outside model): a candidate scores its mean cosine to the
passages judged relevant, minus ``NEGATIVE_WEIGHT`` times its mean cosine to the ones judged not
relevant. Pure and deterministic: the same texts and judgements give the same scores.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from functools import lru_cache
from typing import TypeVar

import numpy as np

from goldeval.text.analysis import Analyzer

K = TypeVar("K", bound=Hashable)

ANALYZER = Analyzer(stem=True, stopwords=True)

# How much a likeness to the passages judged not relevant counts against a candidate, against
# a likeness to the relevant ones (Rocchio's gamma over beta).
NEGATIVE_WEIGHT = 0.25


def text_vectors(texts: Mapping[K, str]) -> tuple[list[K], np.ndarray]:
    """The texts' keys and their unit-length TF-IDF vectors, one row each (log term frequency;
    IDF over these texts)."""
    keys, matrix = _vectors(tuple(texts.items()))
    return list(keys), matrix


@lru_cache(maxsize=4)
def _vectors(items: tuple[tuple[K, str], ...]) -> tuple[tuple[K, ...], np.ndarray]:
    # Cached: a question's candidates are ordered again after each judgement, texts unchanged.
    # A few questions only: each matrix is candidates x terms (a pool of 100 passages with
    # 3,000 distinct terms is 2.4 MB), and a web process keeps its cache.
    counts = [Counter(ANALYZER.tokens(text)) for _, text in items]
    vocabulary = {term: index for index, term in enumerate(sorted(set().union(*counts)))}
    matrix = np.zeros((len(items), len(vocabulary)))
    for row, terms in enumerate(counts):
        for term, count in terms.items():
            matrix[row, vocabulary[term]] = 1.0 + math.log(count)
    frequency = np.count_nonzero(matrix, axis=0)
    matrix *= np.log((len(items) + 1) / np.maximum(frequency, 1))
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix /= np.where(norms > 0, norms, 1.0)
    matrix.flags.writeable = False
    return tuple(key for key, _ in items), matrix


def feedback_scores(
    keys: Sequence[K], matrix: np.ndarray, judged: Sequence[tuple[K, bool]]
) -> dict[K, float]:
    """Each candidate's Rocchio score from the judgements so far (0 for all with none)."""
    row = {key: index for index, key in enumerate(keys)}
    relevant = [row[key] for key, is_relevant in judged if is_relevant and key in row]
    other = [row[key] for key, is_relevant in judged if not is_relevant and key in row]
    scores = np.zeros(len(keys))
    if relevant:
        scores += matrix @ matrix[relevant].mean(axis=0)
    if other:
        scores -= NEGATIVE_WEIGHT * (matrix @ matrix[other].mean(axis=0))
    return dict(zip(keys, scores.tolist(), strict=True))
