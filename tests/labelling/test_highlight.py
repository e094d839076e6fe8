"""The one text cutter of the grading and adjudication pages: exact offsets, cuts at every
passage and span edge, nothing outside the window."""

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from labelling.highlight import Segment, highlight, whole_words

TEXT = "The annual leave is 25 days. Carry-over needs a manager's approval."


def pieces(segments: list[Segment]) -> list[tuple[int, str, str, str]]:
    return [(s.start, s.text, s.kind, s.layers) for s in segments]


def test_cuts_at_the_passage_and_span_edges_with_exact_offsets():
    segments = highlight(TEXT, passage=(4, 28), layers={"e": [(20, 27)]})
    assert pieces(segments) == [
        (0, "The ", "context", ""),
        (4, "annual leave is ", "passage", ""),
        (20, "25 days", "passage", "e"),
        (27, ".", "passage", ""),
        (28, TEXT[28:], "context", ""),
    ]
    assert [s.evidence for s in segments] == [False, False, True, False, False]


def test_offsets_are_those_of_the_version_text_when_the_text_is_a_window_of_it():
    offset = 4
    window_text = TEXT[offset:40]
    segments = highlight(window_text, offset=offset, passage=(20, 28), layers={"e": [(20, 27)]})
    assert "".join(s.text for s in segments) == window_text
    for segment in segments:
        assert TEXT[segment.start : segment.start + len(segment.text)] == segment.text
    assert segments[0].start == offset


def test_text_outside_the_window_is_left_out():
    segments = highlight(TEXT, window=(4, 16), layers={"a": [(20, 27)]})
    assert pieces(segments) == [(4, "annual leave", "context", "")]


def test_no_spans_gives_the_window_in_one_piece_or_cut_at_the_passage():
    assert pieces(highlight(TEXT, layers={})) == [(0, TEXT, "context", "")]
    assert pieces(highlight(TEXT)) == [(0, TEXT, "context", "")]
    assert pieces(highlight(TEXT, layers={"e": []}, passage=(0, 3))) == [
        (0, "The", "passage", ""),
        (3, TEXT[3:], "context", ""),
    ]
    assert highlight("") == []


def test_spans_overlapping_the_window_edge_are_shown_up_to_the_edge():
    segments = highlight(TEXT, window=(10, 30), layers={"a": [(0, 16)], "b": [(25, 60)]})
    assert pieces(segments) == [
        (10, " leave", "context", "a"),
        (16, " is 25 da", "context", ""),
        (25, "ys. C", "context", "b"),
    ]


def test_overlapping_layers_name_every_layer_that_covers_a_stretch():
    layers = {"b": [(5, 15)], "a": [(0, 10)], "r": [(8, 9)]}
    segments = highlight(TEXT, window=(0, 20), layers=layers)
    assert [(s.start, s.layers) for s in segments] == [
        (0, "a"),
        (5, "ab"),
        (8, "abr"),
        (9, "ab"),
        (10, "b"),
        (15, ""),
    ]


def test_a_passage_reaching_past_the_text_marks_what_is_shown():
    segments = highlight(TEXT[10:20], offset=10, passage=(0, 15))
    assert pieces(segments) == [(10, TEXT[10:15], "passage", ""), (15, TEXT[15:20], "context", "")]


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    length=st.integers(min_value=0, max_value=60),
    offset=st.integers(min_value=0, max_value=20),
)
def test_every_character_gets_the_look_of_what_covers_it(data, length, offset):
    full = "abcdefghij" * 10
    text = full[offset : offset + length]
    bound = st.integers(min_value=0, max_value=100)
    span = st.tuples(bound, bound).map(sorted).map(tuple)
    layers = data.draw(st.dictionaries(st.sampled_from("abr"), st.lists(span, max_size=4)))
    passage = data.draw(st.none() | span)
    window = data.draw(st.none() | span)
    segments = highlight(text, offset=offset, window=window, passage=passage, layers=layers)
    start, end = window or (offset, offset + length)
    start, end = max(start, offset), min(end, offset + length)
    shown = "".join(s.text for s in segments)
    assert shown == (full[start:end] if start < end else "")
    for segment in segments:
        assert segment.text
        assert full[segment.start : segment.start + len(segment.text)] == segment.text
        for position in range(segment.start, segment.start + len(segment.text)):
            covering = "".join(
                sorted(n for n, spans in layers.items() if any(a <= position < b for a, b in spans))
            )
            assert segment.layers == covering
            inside = passage is not None and passage[0] <= position < passage[1]
            assert segment.passage == inside


def test_a_context_window_is_cut_back_to_whole_words():
    text = "xx one two three passage four five sixy"
    # The window starts mid-word ("xx") at offset 10 and stops mid-word ("sixy").
    cut, offset = whole_words(text, offset=10, passage=(27, 34), context_chars=5)
    assert cut == "one two three passage four five"
    assert offset == 13
    assert text[offset - 10 : offset - 10 + len(cut)] == cut


def test_a_window_at_the_document_start_and_end_keeps_its_edges():
    text = "xx passage yy"
    assert whole_words(text, offset=0, passage=(3, 10), context_chars=600) == (text, 0)


def test_the_module_needs_no_django():
    code = (
        "import sys, labelling.highlight; "
        "sys.exit(1 if any(m == 'django' or m.startswith('django.') for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
