"""goldeval/text/anchoring.py: a quote found again exactly, moved, edited inside, or reported
lost."""

import difflib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldeval.text.anchoring import (
    SIMILARITY_FLOOR,
    Located,
    locate,
    on_word_edges,
    similarity,
)

CLAUSE = (
    "Carry-over of unused leave needs written approval from the line manager before the end "
    "of March; days that were not approved by then are lost, and no payment is made for them."
)


def prose(seed: int, length: int) -> str:
    """Word-like filler that shares letters, not passages, with the quotes."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("bcdfghklmnprstvwyz") for _ in range(rng.randint(2, 8)))]
    words += ["".join(rng.choice("aeiou") + rng.choice("bcdfgklmnprst") for _ in range(3))]
    vocabulary = words + [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(800)
    ]
    out: list[str] = []
    size = 0
    while size < length:
        word = rng.choice(vocabulary)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:length]


def edited(text: str, *, seed: int, edits: int) -> str:
    rng = random.Random(seed)
    chars = list(text)
    for _ in range(edits):
        at = rng.randrange(len(chars))
        kind = rng.choice("sid")
        if kind == "s":
            chars[at] = "#"
        elif kind == "i":
            chars.insert(at, "#")
        else:
            del chars[at]
    return "".join(chars)


# --- exact ------------------------------------------------------------------------------------


def test_exact_occurrence_nearest_the_old_offset_wins():
    text = "leave policy. " * 3
    assert locate("leave policy", text, near=15) == Located(14, 26, 1.0, True)
    assert locate("leave policy", text, near=40) == Located(28, 40, 1.0, True)
    # Equally far from two occurrences: the earlier one.
    assert locate("leave policy", text, near=7).start == 0
    assert locate("leave policy", text).start == 0
    assert locate("leave policy", text, near=10_000).start == 28


def test_moved_text_is_found_exactly_wherever_it_went():
    before = prose(1, 5_000)
    old = before[:1000] + CLAUSE + before[1000:]
    new = before[:200] + before[1000:3000] + CLAUSE + before[3000:]
    found = locate(CLAUSE, new, near=old.index(CLAUSE))
    assert found == Located(new.index(CLAUSE), new.index(CLAUSE) + len(CLAUSE), 1.0, True)


# --- fuzzy ------------------------------------------------------------------------------------


def test_a_lightly_edited_quote_is_found_with_its_edges():
    quote = "Carry-over of unused leave needs written approval from the line manager."
    new = "Carry over of unused leave needs written approval from your line manager."
    text = "Preamble text that is unrelated. " + new + " Closing words here."
    found = locate(quote, text, near=0)
    assert found is not None and not found.exact
    assert (found.start, found.end) == (text.index(new), text.index(new) + len(new))
    assert found.similarity == pytest.approx(similarity(quote, new))


def test_edited_inside_a_long_passage():
    filler = prose(2, 20_000)
    quote = filler[9_000:11_100]  # a 2,100-character span
    for edits, seed in ((3, 1), (30, 2), (120, 3)):
        new_quote = edited(quote, seed=seed, edits=edits)
        text = filler[:9_000] + new_quote + filler[11_100:]
        found = locate(quote, text, near=9_000)
        assert found is not None, edits
        # An edit at the very edge may be left out when that is more similar.
        assert abs(found.start - 9_000) <= 1 and abs(found.end - 9_000 - len(new_quote)) <= 1
        assert found.similarity >= similarity(quote, new_quote)


def test_moved_and_edited():
    filler = prose(3, 30_000)
    quote = filler[1_000:2_500]
    new_quote = edited(quote, seed=5, edits=20)
    text = filler[:1_000] + filler[2_500:25_000] + new_quote + filler[25_000:]
    found = locate(quote, text, near=1_000)
    assert found is not None
    assert abs(found.start - 23_500) <= 1 and abs(found.end - 23_500 - len(new_quote)) <= 1
    assert found.similarity >= similarity(quote, new_quote)


def test_inserted_sentence_inside_the_span_stretches_the_window():
    text = "Intro. " + CLAUSE[:60] + "Since 2024, a form is needed. " + CLAUSE[60:] + " End."
    found = locate(CLAUSE, text, near=7)
    assert (found.start, found.end) == (7, len(text) - len(" End."))
    assert SIMILARITY_FLOOR <= found.similarity < 1


def test_of_two_edited_copies_the_more_similar_one_wins_then_the_nearer():
    lightly = CLAUSE.replace("line manager", "line-manager")
    heavily = CLAUSE.replace("line manager", "team lead").replace("written", "signed")
    text = heavily + " ... " + lightly
    assert locate(CLAUSE, text, near=0).start == len(heavily) + 5
    same = lightly + " ... " + lightly
    assert locate(CLAUSE, same, near=0).start == 0
    assert locate(CLAUSE, same, near=len(same)).start == len(lightly) + 5


# --- not found --------------------------------------------------------------------------------


def test_deleted_text_is_not_found():
    filler = prose(4, 50_000)
    quote = filler[20_000:22_100]
    assert locate(quote, filler[:20_000] + filler[22_100:], near=20_000) is None


def test_rewritten_below_the_floor_is_not_found():
    quote = "Carry-over of unused leave needs written approval from the line manager."
    text = "Completely different policy wording about pensions and retirement ages."
    assert locate(quote, text) is None
    assert SIMILARITY_FLOOR == 0.9


def test_half_of_the_span_deleted_is_below_the_floor():
    text = "Intro. " + CLAUSE[: len(CLAUSE) // 2] + " The rest was removed."
    assert locate(CLAUSE, text) is None


def test_empty_inputs_and_bad_floor():
    assert locate("", "text") is None
    assert locate("quote", "") is None
    with pytest.raises(ValueError):
        locate("a", "b", floor=0)
    # A floor of 1 accepts exact occurrences only.
    assert locate("Staff get", "Staff got 25 days", floor=1.0) is None


def test_the_floor_is_the_documented_measure():
    quote = "abcdefghij" * 3
    window = quote[:-3]
    assert similarity(quote, window) == pytest.approx(
        difflib.SequenceMatcher(None, quote, window).ratio()
    )
    text = "zz " + window + " zz"
    assert locate(quote, text, floor=0.96) is None
    assert locate(quote, text, floor=0.9).similarity == pytest.approx(2 * 27 / 57)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    length=st.integers(20, 600),
    edits=st.integers(0, 12),
    at=st.integers(0, 4_000),
)
def test_whenever_the_edited_passage_clears_the_floor_a_window_as_similar_is_found(
    seed, length, edits, at
):
    filler = prose(seed, 5_000)
    quote = filler[at : at + length]
    new_quote = edited(quote, seed=seed, edits=edits)
    text = filler[:at] + new_quote + filler[at + length :]
    found = locate(quote, text, near=at)
    truth = similarity(quote, new_quote)
    if truth >= SIMILARITY_FLOOR + 0.02:
        assert found is not None
        assert found.similarity >= truth - 0.01
        assert found.start < at + len(new_quote) and found.end > at  # it overlaps the passage
    if found is not None:
        assert found.similarity >= SIMILARITY_FLOOR
        assert found.similarity == pytest.approx(similarity(quote, text[found.start : found.end]))


# A quote marked in whole words is found again in whole words (issue 33 item 4) -------------

SUBSIDY_OLD = "Sports. The company refunds 40 percent of the gym fee. Bikes in full."
SUBSIDY_NEW = "Sports, revised. The company refunds 50 percent of the gym fee. Bikes in full."


@pytest.mark.parametrize(
    ("quote", "new_text", "expected"),
    [
        ("40 percent", SUBSIDY_NEW, "50 percent"),  # the left edge cut "50" in two
        ("of the gym fee 40", "pay of the gym fee 45 now", "of the gym fee 45"),  # the right edge
        ("52,000 euros", "Band C pays 55,000 euros per year.", "55,000 euros"),
        ("EUR 35 a month", "The pass costs EUR 45 a month.", "EUR 45 a month"),
    ],
)
def test_a_whole_word_quote_whose_number_changed_is_found_as_the_whole_new_number(
    quote, new_text, expected
):
    found = locate(quote, new_text, whole_words=True)
    assert found is not None and new_text[found.start : found.end] == expected
    assert found.similarity == similarity(quote, expected) >= SIMILARITY_FLOOR


def test_without_whole_words_the_most_similar_window_stands_even_inside_a_word():
    found = locate("40 percent", SUBSIDY_NEW)
    assert SUBSIDY_NEW[found.start : found.end] == "0 percent"


def test_a_whole_word_window_that_would_fall_below_the_floor_is_left_as_found():
    # Taking in all of "1234567" would be too unlike the quote: the window stays as found.
    quote = "7 percent of the fee"
    text = "Now 1234567 percent of the fee."
    plain = locate(quote, text)
    assert plain is not None
    assert locate(quote, text, whole_words=True) == plain


def test_exact_occurrences_are_never_widened():
    text = "x40 percent of it"
    found = locate("40 percent", text, whole_words=True)
    assert (found.start, found.end, found.exact) == (1, 11, True)


def test_on_word_edges_tells_a_whole_word_span_from_a_cut_one():
    text = "The company refunds 40 percent."
    start = text.index("40")
    assert on_word_edges(text, start, start + len("40 percent"))
    assert not on_word_edges(text, start + 1, start + len("40 percent"))
    assert not on_word_edges(text, start, start + len("40 perc"))
    assert on_word_edges(text, 0, len(text))
