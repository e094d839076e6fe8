import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldeval.text.chunking import ChunkingError, ChunkSpec, chunk_spans


def texts_of(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[start:end] for start, end in spans]


# --- document ---------------------------------------------------------------


def test_document_is_one_span_over_the_whole_text():
    text = "Leave policy.\n\nEmployees get 25 days."
    assert chunk_spans(text, ChunkSpec("document")) == [(0, len(text))]


def test_document_of_empty_or_blank_text_has_no_chunks():
    assert chunk_spans("", ChunkSpec("document")) == []
    assert chunk_spans(" \n\n\t", ChunkSpec("document")) == []


def test_document_span_skips_leading_blank_lines():
    assert chunk_spans("\n\nTitle", ChunkSpec("document")) == [(2, 7)]


# --- fixed / chars ----------------------------------------------------------


def test_fixed_chars_windows_step_by_size_minus_overlap():
    text = "abcdefghij"
    spans = chunk_spans(text, ChunkSpec("fixed", unit="chars", size=4, overlap=1))
    assert spans == [(0, 4), (3, 7), (6, 10)]


def test_fixed_chars_last_window_ends_at_text_end_and_is_not_inside_previous():
    text = "abcdefghij"
    spans = chunk_spans(text, ChunkSpec("fixed", unit="chars", size=4, overlap=2))
    # The window starting at 6 already reaches the end; a window (8, 10) would
    # lie inside it, so none is produced.
    assert spans == [(0, 4), (2, 6), (4, 8), (6, 10)]


def test_fixed_chars_exact_windows_without_overlap():
    text = "abcdefghijk"
    spans = chunk_spans(text, ChunkSpec("fixed", unit="chars", size=4, overlap=0))
    assert spans == [(0, 4), (4, 8), (8, 11)]


def test_fixed_chars_trims_whitespace_and_drops_blank_windows():
    text = "ab  " + "    " + "  cd"
    spans = chunk_spans(text, ChunkSpec("fixed", unit="chars", size=4, overlap=0))
    assert spans == [(0, 2), (10, 12)]
    assert texts_of(text, spans) == ["ab", "cd"]


def test_fixed_chars_drops_window_that_trims_to_inside_the_previous_one():
    text = "abc     "
    spans = chunk_spans(text, ChunkSpec("fixed", unit="chars", size=4, overlap=2))
    assert spans == [(0, 3)]


def test_fixed_chars_text_shorter_than_size_is_one_chunk():
    assert chunk_spans("  hello ", ChunkSpec("fixed", unit="chars", size=100, overlap=10)) == [
        (2, 7)
    ]


# --- fixed / words ----------------------------------------------------------


def test_fixed_words_windows_span_first_to_last_word():
    text = "one two  three four\nfive six seven"
    spans = chunk_spans(text, ChunkSpec("fixed", unit="words", size=3, overlap=1))
    assert texts_of(text, spans) == ["one two  three", "three four\nfive", "five six seven"]
    assert spans == [(0, 14), (9, 24), (20, 34)]


def test_fixed_words_last_window_ends_on_last_word():
    text = "a b c d e"
    spans = chunk_spans(text, ChunkSpec("fixed", unit="words", size=2, overlap=0))
    assert texts_of(text, spans) == ["a b", "c d", "e"]
    spans = chunk_spans(text, ChunkSpec("fixed", unit="words", size=3, overlap=1))
    assert texts_of(text, spans) == ["a b c", "c d e"]


def test_fixed_words_of_blank_text_has_no_chunks():
    assert chunk_spans("   \n ", ChunkSpec("fixed", size=3, overlap=0)) == []


# --- paragraph --------------------------------------------------------------


def test_paragraphs_are_packed_greedily_by_words():
    text = "one two\n\nthree four five\n\nsix\n\nseven eight nine ten"
    spans = chunk_spans(text, ChunkSpec("paragraph", unit="words", size=5, overlap=2))
    assert texts_of(text, spans) == ["one two\n\nthree four five", "six\n\nseven eight nine ten"]
    assert spans == [(0, 24), (26, 51)]
    spans = chunk_spans(text, ChunkSpec("paragraph", unit="words", size=4, overlap=0))
    assert texts_of(text, spans) == ["one two", "three four five\n\nsix", "seven eight nine ten"]


def test_paragraphs_are_packed_by_span_length_in_chars():
    text = "aaaa\n\nbbbb\n \ncc"
    # "aaaa\n\nbbbb" is 10 chars: fits a size of 10, then "cc" would make 15.
    spans = chunk_spans(text, ChunkSpec("paragraph", unit="chars", size=10, overlap=0))
    assert spans == [(0, 10), (13, 15)]


def test_long_paragraph_is_cut_with_fixed_windows_and_overlap():
    text = "intro\n\na b c d e f g\n\noutro"
    spans = chunk_spans(text, ChunkSpec("paragraph", unit="words", size=3, overlap=1))
    assert texts_of(text, spans) == ["intro", "a b c", "c d e", "e f g", "outro"]


def test_long_paragraph_in_chars_is_cut_within_the_paragraph():
    text = "ab\n\ncdefghij\n\nk"
    spans = chunk_spans(text, ChunkSpec("paragraph", unit="chars", size=4, overlap=0))
    assert texts_of(text, spans) == ["ab", "cdef", "ghij", "k"]


def test_paragraph_spans_strip_indentation_and_single_newlines_stay_inside():
    text = "  first line\nsecond line  \n\n\n   third"
    spans = chunk_spans(text, ChunkSpec("paragraph", unit="words", size=4, overlap=0))
    assert texts_of(text, spans) == ["first line\nsecond line", "third"]


def test_paragraph_of_empty_text_has_no_chunks():
    assert chunk_spans("", ChunkSpec("paragraph")) == []
    assert chunk_spans("\n\n \n", ChunkSpec("paragraph")) == []


# --- validation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (ChunkSpec("sentence"), "Unknown chunking strategy 'sentence'"),  # type: ignore[arg-type]
        (ChunkSpec("fixed", unit="tokens"), "Unknown chunk size unit 'tokens'"),  # type: ignore[arg-type]
        (ChunkSpec("fixed", size=0, overlap=0), "Chunk size must be a whole number of at least 1"),
        (ChunkSpec("fixed", size=10, overlap=10), "overlap must be a whole number from 0 to 9"),
        (ChunkSpec("fixed", size=10, overlap=-1), "Chunk overlap must be"),
        (ChunkSpec("fixed", size=2.5, overlap=0), "Chunk size must be a whole number"),  # type: ignore[arg-type]
        (ChunkSpec("fixed", size=True, overlap=0), "Chunk size must be a whole number"),
    ],
)
def test_invalid_specs_are_rejected_with_a_clear_message(spec, message):
    with pytest.raises(ChunkingError, match=re.escape(message)):
        spec.validate()
    with pytest.raises(ChunkingError):
        chunk_spans("some text", spec)


def test_chunking_error_is_a_value_error():
    assert issubclass(ChunkingError, ValueError)


def test_valid_spec_passes_validation():
    ChunkSpec("paragraph", unit="chars", size=1, overlap=0).validate()


# --- invariants -------------------------------------------------------------

text_strategy = (
    st.lists(
        st.one_of(
            st.sampled_from(["word", "a", "longerword", "é", "x1", "—"]),
            st.sampled_from([" ", "  ", "\n", "\n\n", " \n \n", "\t"]),
        ),
        max_size=60,
    ).map("".join)
    | st.text(alphabet=st.sampled_from("ab \n\t"), max_size=80)
    | st.text(max_size=60)
)

spec_strategy = st.builds(
    lambda strategy, unit, size, overlap_share: ChunkSpec(
        strategy, unit=unit, size=size, overlap=int(overlap_share * size) % size
    ),
    st.sampled_from(["fixed", "paragraph", "document"]),
    st.sampled_from(["words", "chars"]),
    st.integers(min_value=1, max_value=12),
    st.floats(min_value=0, max_value=0.99),
)


@settings(max_examples=400, deadline=None)
@given(text=text_strategy, spec=spec_strategy)
def test_span_invariants(text, spec):
    spans = chunk_spans(text, spec)
    for start, end in spans:
        assert 0 <= start < end <= len(text)
        assert text[start:end] == text[start:end].strip()
    assert [start for start, _ in spans] == sorted(start for start, _ in spans)
    if not text.strip():
        assert spans == []
    covered = [False] * len(text)
    for start, end in spans:
        covered[start:end] = [True] * (end - start)
    assert all(covered[i] for i, char in enumerate(text) if not char.isspace())


@settings(max_examples=200, deadline=None)
@given(text=text_strategy, size=st.integers(min_value=1, max_value=12))
def test_chunks_respect_size_when_nothing_needs_cutting(text, size):
    for unit in ("words", "chars"):
        spans = chunk_spans(text, ChunkSpec("paragraph", unit=unit, size=size, overlap=0))
        for start, end in spans:
            length = len(text[start:end].split()) if unit == "words" else end - start
            assert length <= size


def test_many_small_documents_chunk_without_error():
    text = ("Employees accrue leave monthly. " * 8 + "\n\n") * 2
    spans = [chunk_spans(text, ChunkSpec("paragraph", size=30, overlap=5)) for _ in range(50)]
    assert all(s == spans[0] for s in spans)
