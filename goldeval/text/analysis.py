"""The BM25 analyzer: turns passage and question text into index terms.

Codes that staff search for verbatim (``HR-POL-014``, ``AB1234``, ``ISO-9001``, ``v2.3``) are kept
as one lower-cased term and never stemmed, so a question naming a policy number matches exactly
that policy. Plain words are lower-cased and, optionally, stop-listed and Snowball-stemmed.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

import Stemmer

# Lucene's English stop set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, 33 words). It is the list
# behind the Cranfield reference run we are checked against, and it is deliberately short: BM25's
# IDF already discounts common words, and a long list (sklearn's 318 words) drops terms such as
# "system", "full" or "bill" that carry meaning in staff questions.
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    }
)

# A run of letters/digits, possibly joined to further runs by single hyphens or dots
# ("hr-pol-014", "v2.3"). A trailing possessive "'s" is consumed so "employee's" gives "employee".
_TOKEN = re.compile(r"[^\W_]+(?:[-.][^\W_]+)*(?:['’]s\b)?")
_POSSESSIVE = re.compile(r"['’]s$")
_JOINERS = re.compile(r"[-.]")

# Analysis is memoised per analyzer setting: a corpus repeats the same few hundred thousand chunks
# millions of times. The bound keeps a stream of unique chunks (codes, numbers) from growing the
# cache forever; starting afresh only costs speed.
_CACHE_LIMIT = 500_000
_caches: dict[tuple[bool, bool], dict[str, tuple[str, ...]]] = {}
# PyStemmer objects keep internal state and must not be shared between threads.
_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def _is_code(token: str) -> bool:
    # Codes carry a digit: "hr-pol-014", "ab1234", "iso-9001", "v2.3". Letter-only hyphenations
    # ("part-time", "boundary-layer") are ordinary words and are split so "part time" matches.
    return any(ch.isdigit() for ch in token)


@dataclass(frozen=True)
class Analyzer:
    """Tokenizer settings of a BM25 retriever; passages and queries must share one setting."""

    stem: bool = False
    stopwords: bool = False

    def tokens(self, text: str) -> list[str]:
        # No term spans whitespace, so each whitespace-separated chunk ("Policy,", "HR-POL-014.")
        # is analysed once and then looked up: far faster than running the regex on every passage.
        chunks = text.split()
        setting = (self.stem, self.stopwords)
        cache = _caches.setdefault(setting, {})
        try:
            return list(chain.from_iterable(map(cache.__getitem__, chunks)))
        except KeyError:
            missing = {chunk for chunk in chunks if chunk not in cache}
            if len(cache) + len(missing) > _CACHE_LIMIT:
                # Replaced, never cleared: another thread still reading the old dict is unharmed.
                cache = _caches[setting] = {}
                missing = set(chunks)
            cache.update(self._analyse(missing))
            return list(chain.from_iterable(map(cache.__getitem__, chunks)))

    def _analyse(self, chunks: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Map each whitespace-separated chunk to the terms it contributes (none: stopwords)."""
        split: dict[str, list[str]] = {}
        for chunk in chunks:
            parts: list[str] = []
            for token in _TOKEN.findall(chunk.lower()):
                word = _POSSESSIVE.sub("", token)
                if _is_code(word):
                    parts.append(word)
                else:
                    parts.extend(
                        part
                        for part in _JOINERS.split(word)
                        if not (self.stopwords and part in ENGLISH_STOPWORDS)
                    )
            split[chunk] = parts
        stems: dict[str, str] = {}
        if self.stem:
            words = sorted({part for parts in split.values() for part in parts if part.isalpha()})
            stems = dict(zip(words, _stemmer().stemWords(words), strict=True))
        return {
            chunk: tuple(stems.get(part, part) for part in parts) for chunk, parts in split.items()
        }
