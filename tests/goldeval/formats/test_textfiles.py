"""The one UTF-8 decoder and JSON-lines splitter every file reader uses (no Django needed)."""

import codecs
import json

import pytest

from goldeval.formats.textfiles import (
    LineProblem,
    NotUTF8Error,
    decode_utf8,
    first_line,
    json_lines,
    text_lines,
)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_a_json_string_may_hold_what_splitlines_would_split_on(separator):
    # ensure_ascii=False writes the character raw, as many JSON writers do.
    line = json.dumps({"text": f"before{separator}after"}, ensure_ascii=False)
    assert len(line.splitlines()) == 2  # what the readers used to do
    data = (line + "\n" + json.dumps({"text": "next"}) + "\n").encode()
    assert list(json_lines(data)) == [
        (1, {"text": f"before{separator}after"}),
        (2, {"text": "next"}),
    ]


def test_a_byte_order_mark_is_dropped_and_crlf_lines_read():
    data = codecs.BOM_UTF8 + b'{"a": 1}\r\n\r\n{"a": 2}\r\n'
    assert decode_utf8(data) == '{"a": 1}\r\n\r\n{"a": 2}\r\n'
    assert list(json_lines(data)) == [(1, {"a": 1}), (3, {"a": 2})]


def test_invalid_utf8_names_the_first_bad_byte_in_the_file():
    with pytest.raises(NotUTF8Error) as error:
        decode_utf8(b'{"a": "caf\xe9"}\n')
    assert error.value.offset == 10
    assert str(error.value) == "not UTF-8 text (byte 10 is not valid)"
    # Counted from the start of the file, byte-order mark included.
    with pytest.raises(NotUTF8Error) as error:
        decode_utf8(codecs.BOM_UTF8 + b"ok\xff")
    assert error.value.offset == 5
    with pytest.raises(NotUTF8Error):
        list(json_lines(b"\xc3"))


def test_text_passes_through_untouched():
    assert decode_utf8("\ufeffas typed") == "\ufeffas typed"


def test_bad_lines_are_problems_with_their_line_and_the_rest_still_read():
    data = '{"a": 1}\n{not json\n[1, 2]\n  \n{"a": 2}'
    assert list(json_lines(data)) == [
        (1, {"a": 1}),
        (2, LineProblem(2, "not valid JSON (Expecting property name enclosed in double quotes)")),
        (3, LineProblem(3, "expected a JSON object")),
        (5, {"a": 2}),
    ]


def test_comment_lines_are_skipped_only_when_the_format_allows_them():
    text = '# made by hand\n   # indented\n{"a": 1}\n'
    assert list(json_lines(text, comments=True)) == [(3, {"a": 1})]
    assert [line for line, _ in json_lines(text)] == [1, 2, 3]
    assert list(text_lines(text, comments=True)) == [(3, '{"a": 1}')]


def test_first_line_is_what_text_lines_yields_first():
    for text in ["", "\n\n", "# only a comment\n", "\n  \n# c\n  q1 Q0 d 1 2 t\nmore", "last"]:
        expected = next((line for _, line in text_lines(text, comments=True)), "")
        assert first_line(text, comments=True) == expected
    assert first_line("# c\nx") == "# c"
