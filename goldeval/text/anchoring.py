"""Find a quoted passage again in a newer text: exactly, else by a bounded fuzzy alignment.

Django-free and shared: the gold reader re-anchors a span's quote onto the newest version of its
document with it, and the HTTP retriever locates a search hit's text in a document the same way.

Rules (`locate`):

1. **Exact.** When the quote occurs verbatim, the occurrence whose start is nearest ``near``
   (the old offset) wins; an equal distance goes to the earlier one; without ``near``, the first.
2. **Fuzzy.** Otherwise the window of the text most similar to the quote, if its similarity
   reaches the floor. Similarity is the normalised Indel similarity
   ``2 * LCS(quote, window) / (len(quote) + len(window))`` (rapidfuzz's ``fuzz.ratio`` / 100;
   difflib's ``ratio`` on the same strings), so 1.0 is identical and 0.9 (`SIMILARITY_FLOOR`)
   allows about one substituted character in ten, or one inserted or deleted in five. Below the
   floor the quote is reported as not found: a passage rewritten that much is more likely a
   different passage than an edited one. Equal similarities go to the window nearest ``near``.
   With ``whole_words`` (the quote was marked in whole words: `on_word_edges` of its old
   text), a window whose edge cuts a word of the text in two ("0 percent" where "40 percent" is
   now "50 percent") takes in the whole word, as long as it stays at or above the floor.

Cost is near-linear in the text's length, whatever the quote: a quote longer than
`SHORT_QUOTE` is anchored on exact k-grams of it found in the text (a handful of ``str.find``
scans), the anchors are grouped by diagonal (text offset minus quote offset) and chained in
order, and only the edges of each of the few best chains are aligned, locally, with rapidfuzz.
When no k-gram survived the edits, a few 64-character pieces of the quote are aligned fuzzily
along the whole text (bit-parallel, linear) to find the diagonal instead. Quotes up to
`SHORT_QUOTE` characters are aligned fuzzily along the whole text directly. What can be missed:
a quote edited so evenly that no 16-character stretch and no 64-character piece survives well,
which in practice sits below the floor anyway. Where the quote's first or last words were
deleted, the most similar window may take in a few neighbouring characters that lend letters to
the missing words (the similarity is the rule, not the look of the edge).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from rapidfuzz import fuzz
from rapidfuzz.distance import Indel, LCSseq

SIMILARITY_FLOOR = 0.9
# Quotes up to this length are aligned directly (rapidfuzz is bit-parallel up to 64 characters).
SHORT_QUOTE = 64
KGRAM = 16
SEEDS = 48  # k-grams taken along a long quote
MAX_OCCURRENCES = 32  # a k-gram found more often than this says nothing about where the quote is
PIECES = 6  # 64-character pieces aligned fuzzily when no k-gram anchored
CHAINS = 4  # best-supported chains whose edges are aligned
EDGE_SLACK = 32  # characters an edge may move beyond what the nearest anchor implies
LONG_EDGE = 512  # a longer stretch before the first (after the last) anchor is anchored again
POLISH_STEPS = 24  # one-character moves of an edge that the final polish may try
POLISH_MAX_QUOTE = 8192  # longer quotes skip the polish (each try is quadratic in the quote)


@dataclass(frozen=True, slots=True)
class Located:
    """Where a quote sits in a text: ``text[start:end]``, half-open, in ``str`` indices."""

    start: int
    end: int
    similarity: float  # 1.0 for an exact occurrence
    exact: bool


def similarity(a: str, b: str) -> float:
    """The similarity the floor applies to (see the module's docstring)."""
    return Indel.normalized_similarity(a, b)


def on_word_edges(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` cuts no word in two at either edge (a span marked in whole
    words, as the grading page snaps a selection)."""
    return not _cuts_word(text, start) and not _cuts_word(text, end)


def _cuts_word(text: str, at: int) -> bool:
    return 0 < at < len(text) and text[at - 1].isalnum() and text[at].isalnum()


def locate(
    quote: str,
    text: str,
    *,
    near: int | None = None,
    floor: float = SIMILARITY_FLOOR,
    whole_words: bool = False,
) -> Located | None:
    """Where ``quote`` sits in ``text``, or None when it is not there well enough (see the
    module's docstring for the rules). ``near`` is where it used to start, if known;
    ``whole_words`` says the quote was marked in whole words, so a fuzzy window keeps them."""
    if not quote or not text:
        return None
    if not 0.0 < floor <= 1.0:
        raise ValueError("the similarity floor must be in (0, 1]")
    exact = _nearest_occurrence(quote, text, near)
    if exact is not None:
        return Located(exact, exact + len(quote), 1.0, True)
    if floor >= 1.0:
        return None
    best = _fuzzy(quote, text, near)
    if best is None or best.similarity < floor:
        return None
    return _whole_words(quote, text, best, floor) if whole_words else best


def _whole_words(quote: str, text: str, found: Located, floor: float) -> Located:
    """A fuzzy window whose edge cuts a word of the text in two takes in the whole word, when
    that stays at or above the floor: "40 percent", now "50 percent", is found as "50
    percent", not "0 percent"."""
    start, end = found.start, found.end
    while _cuts_word(text, start):
        start -= 1
    while _cuts_word(text, end):
        end += 1
    if (start, end) == (found.start, found.end):
        return found
    widened = similarity(quote, text[start:end])
    return found if widened < floor else Located(start, end, widened, False)


# --- exact ------------------------------------------------------------------------------------


def _nearest_occurrence(quote: str, text: str, near: int | None) -> int | None:
    if near is None or near <= 0:
        position = text.find(quote)
        return None if position == -1 else position
    after = text.find(quote, near)
    # The last occurrence starting before ``near``: rfind inside text[:near - 1 + len(quote)].
    before = text.rfind(quote, 0, min(len(text), near - 1 + len(quote)))
    if before >= near:
        before = -1
    if after == -1:
        return None if before == -1 else before
    if before == -1:
        return after
    return before if near - before <= after - near else after


# --- fuzzy ------------------------------------------------------------------------------------


def _fuzzy(quote: str, text: str, near: int | None) -> Located | None:
    if len(quote) <= SHORT_QUOTE:
        return _short(quote, text, near)
    chains = _kgram_chains(quote, text)
    found = _best_of_chains(quote, text, chains, near)
    if found is None or found.similarity < SIMILARITY_FLOOR:
        pieces = _piece_chains(quote, text)
        other = _best_of_chains(quote, text, pieces, near)
        if other is not None and (found is None or _better(other, found, near)):
            found = other
    return found


def _short(quote: str, text: str, near: int | None) -> Located | None:
    """A short quote: the best quote-long window along the whole text (rapidfuzz), preferring
    one as good near the old offset, then its edges polished."""
    alignment = fuzz.partial_ratio_alignment(quote, text)
    if alignment is None or alignment.score == 0:
        return None
    start, end = alignment.dest_start, alignment.dest_end
    if near is not None:
        low = max(0, near - 4 * len(quote))
        local = fuzz.partial_ratio_alignment(quote, text[low : near + 5 * len(quote)])
        if local is not None and local.score >= alignment.score:
            start, end = low + local.dest_start, low + local.dest_end
    start, end = _polish(quote, text, start, end)
    return Located(start, end, similarity(quote, text[start:end]), False)


def _kgram_chains(quote: str, text: str) -> list[list[tuple[int, int, int]]]:
    """Anchors (quote offset, text offset, length) of exact k-grams, in chains."""
    last = len(quote) - KGRAM
    step = max(1, last // (SEEDS - 1))
    offsets = sorted({*range(0, last + 1, step), last})
    anchors: list[tuple[int, int, int]] = []
    for offset in offsets:
        gram = quote[offset : offset + KGRAM]
        found: list[int] = []
        position = text.find(gram)
        while position != -1 and len(found) <= MAX_OCCURRENCES:
            found.append(position)
            position = text.find(gram, position + 1)
        if len(found) <= MAX_OCCURRENCES:
            anchors.extend((offset, at, KGRAM) for at in found)
    return _chains(anchors, len(quote))


def _piece_chains(quote: str, text: str) -> list[list[tuple[int, int, int]]]:
    """Anchors from a few 64-character pieces of the quote, each aligned fuzzily."""
    size = SHORT_QUOTE
    last = len(quote) - size
    starts = sorted({round(last * i / (PIECES - 1)) for i in range(PIECES)})
    anchors = []
    for offset in starts:
        alignment = fuzz.partial_ratio_alignment(quote[offset : offset + size], text)
        if alignment is not None and alignment.score >= 100 * SIMILARITY_FLOOR - 20:
            anchors.append(
                (
                    offset + alignment.src_start,
                    alignment.dest_start,
                    max(1, alignment.src_end - alignment.src_start),
                )
            )
    return _chains(anchors, len(quote))


def _chains(anchors: list[tuple[int, int, int]], length: int) -> list[list[tuple[int, int, int]]]:
    """Group anchors whose diagonals (text offset - quote offset) lie close together, keep the
    longest run in which both offsets increase, and return the best-supported groups."""
    if not anchors:
        return []
    tolerance = max(EDGE_SLACK, length // 5)
    anchors.sort(key=lambda a: a[1] - a[0])
    groups: list[list[tuple[int, int, int]]] = [[anchors[0]]]
    for anchor in anchors[1:]:
        previous = groups[-1][-1]
        if (anchor[1] - anchor[0]) - (previous[1] - previous[0]) <= tolerance:
            groups[-1].append(anchor)
        else:
            groups.append([anchor])
    chains = [_increasing(group) for group in groups]
    # Support: distinct quote offsets covered; ties go to the chain covering more of the quote.
    chains.sort(key=lambda chain: (-len({a[0] for a in chain}), -(chain[-1][0] - chain[0][0])))
    return chains[:CHAINS]


def _increasing(group: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The longest subsequence of anchors in which quote and text offsets both increase."""
    ordered = sorted(group, key=lambda a: (a[0], -a[1]))
    tails: list[int] = []  # text offset ending the best run of each length
    tail_index: list[int] = []
    parents: list[int] = []
    for index, (_, at, _) in enumerate(ordered):
        place = bisect_left(tails, at)
        if place == len(tails):
            tails.append(at)
            tail_index.append(index)
        else:
            tails[place] = at
            tail_index[place] = index
        parents.append(tail_index[place - 1] if place else -1)
    chain = []
    index = tail_index[-1]
    while index != -1:
        chain.append(ordered[index])
        index = parents[index]
    chain.reverse()
    return chain


def _best_of_chains(
    quote: str, text: str, chains: list[list[tuple[int, int, int]]], near: int | None
) -> Located | None:
    best: Located | None = None
    for chain in chains:
        start, end = _edges(quote, text, chain)
        if end <= start:
            continue
        start, end = _polish(quote, text, start, end)
        found = Located(start, end, similarity(quote, text[start:end]), False)
        if best is None or _better(found, best, near):
            best = found
    return best


def _better(a: Located, b: Located, near: int | None) -> bool:
    if a.similarity != b.similarity:
        return a.similarity > b.similarity
    if near is None:
        return a.start < b.start
    return abs(a.start - near) < abs(b.start - near)


def _edges(quote: str, text: str, chain: list[tuple[int, int, int]]) -> tuple[int, int]:
    """Align the quote's head before the first anchor and its tail after the last one."""
    first_quote, first_text, _ = chain[0]
    last_quote, last_text, last_size = chain[-1]
    end_of_anchor = last_text + last_size
    tail = quote[last_quote + last_size :]
    end_guess = min(len(text), end_of_anchor + len(tail))
    body = text[first_text:end_guess]
    start = _best_edge(
        quote[:first_quote],
        text,
        fixed=first_text,
        guess=first_text - first_quote,
        leftwards=True,
        matched=LCSseq.similarity(quote[first_quote:], body),
        window=len(body),
        total=len(quote),
    )
    body = text[start:end_of_anchor]
    return start, _best_edge(
        tail,
        text,
        fixed=end_of_anchor,
        guess=end_guess,
        leftwards=False,
        matched=LCSseq.similarity(quote[: last_quote + last_size], body),
        window=len(body),
        total=len(quote),
    )


def _best_edge(
    piece: str,
    text: str,
    *,
    fixed: int,
    guess: int,
    leftwards: bool,
    matched: int,
    window: int,
    total: int,
) -> int:
    """The free edge of the window on one side of ``fixed`` (``text[edge:fixed]`` leftwards,
    ``text[fixed:edge]`` rightwards) that ``piece`` aligns to, chosen for the whole window's
    similarity: ``matched`` characters of the rest of the quote already align to the other
    ``window`` characters, so an edge is worth ``2 * (matched + LCS) / (total + window + its
    length)``. Searched from the anchor out to a fifth of the piece (plus slack) past ``guess``."""
    if not piece:
        return fixed
    band = EDGE_SLACK + len(piece) // 5
    if len(piece) > LONG_EDGE:
        return _long_edge(
            piece,
            text,
            fixed=fixed,
            guess=guess,
            leftwards=leftwards,
            band=band,
            matched=matched,
            window=window,
            total=total,
        )
    if leftwards:
        candidates = range(fixed - 1, max(0, guess - band) - 1, -1)
    else:
        candidates = range(fixed + 1, min(len(text), guess + band) + 1)
    best_edge, best_score = fixed, matched / (total + window)
    for edge in candidates:
        stretch = text[edge:fixed] if leftwards else text[fixed:edge]
        score = (matched + LCSseq.similarity(piece, stretch)) / (total + window + len(stretch))
        closer = abs(edge - guess) < abs(best_edge - guess)
        if score > best_score or (score == best_score and closer):
            best_edge, best_score = edge, score
    return best_edge


def _long_edge(
    piece: str,
    text: str,
    *,
    fixed: int,
    guess: int,
    leftwards: bool,
    band: int,
    matched: int,
    window: int,
    total: int,
) -> int:
    """A long stretch before the first (after the last) anchor: anchor its far end first, by a
    fuzzy alignment of its outer 64 characters near ``guess`` (linear), then place the edge."""
    size = SHORT_QUOTE
    far = piece[:size] if leftwards else piece[-size:]
    if leftwards:
        low, high = max(0, guess - band), min(fixed, guess + band + size)
    else:
        low, high = max(fixed, guess - band - size), min(len(text), guess + band)
    alignment = fuzz.partial_ratio_alignment(far, text[low:high]) if high > low else None
    if alignment is None or alignment.score == 0:
        return max(0, min(len(text), guess))
    if leftwards:
        anchor = low + alignment.dest_start
        inner = piece[alignment.src_start :]
        rest = piece[: alignment.src_start]
        stretch = text[anchor:fixed]
        guess_edge = anchor - len(rest)
    else:
        offset = len(piece) - size
        anchor = low + alignment.dest_end
        inner = piece[: offset + alignment.src_end]
        rest = piece[offset + alignment.src_end :]
        stretch = text[fixed:anchor]
        guess_edge = anchor + len(rest)
    edge = _best_edge(
        rest,
        text,
        fixed=anchor,
        guess=guess_edge,
        leftwards=leftwards,
        matched=matched + LCSseq.similarity(inner, stretch),
        window=window + len(stretch),
        total=total,
    )
    # The far end may have found look-alike text where the stretch was deleted outright: keep
    # the edge only when it beats stopping at the anchor.
    stretch = text[edge:fixed] if leftwards else text[fixed:edge]
    score = (matched + LCSseq.similarity(piece, stretch)) / (total + window + len(stretch))
    return edge if score > matched / (total + window) else fixed


def _polish(quote: str, text: str, start: int, end: int) -> tuple[int, int]:
    """Move each edge a character at a time while the whole window's similarity improves."""
    if len(quote) > POLISH_MAX_QUOTE:
        return start, end
    score = similarity(quote, text[start:end])
    for _ in range(POLISH_STEPS):
        moved = False
        for new_start, new_end in (
            (start - 1, end),
            (start + 1, end),
            (start, end - 1),
            (start, end + 1),
        ):
            if 0 <= new_start < new_end <= len(text):
                value = similarity(quote, text[new_start:new_end])
                if value > score:
                    start, end, score, moved = new_start, new_end, value, True
        if not moved:
            break
    return start, end
