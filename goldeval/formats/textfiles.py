"""Text files as every reader here takes them: UTF-8 bytes, lines, and one JSON object a line.

Django-free and light on purpose: the run and gold readers of ``python -m goldeval`` use it,
as do the app's document, question and judgement imports, so a file reads the same whoever
reads it. Two rules live here and nowhere else:

- Bytes are UTF-8. A byte-order mark (which no one typed) is dropped; anything else that is not
  UTF-8 is refused, naming the offset of the first bad byte in the file, so it can be found.
- Lines end at ``"\\n"``, ``"\\r\\n"`` or a lone ``"\\r"`` (old Mac files), as Python's own
  universal newlines read them, and so as ir_measures, ranx and ``csv`` read the same file.
  ``str.splitlines`` would also end them at U+2028, U+2029, U+0085 and a few control
  characters, which a JSON string may hold raw: those stay on their line.
"""

from __future__ import annotations

import codecs
import gc
import json
import re
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

# Unicode's explicit embedding, override and isolate controls: in an id they make two different
# ids look alike, or one id read backwards ("Trojan Source"), wherever it is shown.
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_SURROGATE = re.compile("[\ud800-\udfff]")
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


# What Python's ``str.split()`` (and so pytrec_eval, ir_measures and ranx) splits a line on besides
# trec_eval's ASCII white space: in a TREC field it makes those readers refuse the line while
# trec_eval keeps the field whole.
_OTHER_SPACES = re.compile(r"[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_CONTROL_NAMES = {
    "\t": "TAB",
    "\n": "LINE FEED",
    "\r": "CARRIAGE RETURN",
    "\x0b": "LINE TABULATION",
    "\x0c": "FORM FEED",
    "\x1c": "FILE SEPARATOR",
    "\x1d": "GROUP SEPARATOR",
    "\x1e": "RECORD SEPARATOR",
    "\x1f": "UNIT SEPARATOR",
    "\x85": "NEXT LINE",
}
# Characters that end a line or a TSV cell somewhere: never inside an id.
_LINE_BREAKING = re.compile(r"[\t\n\r\x0b\x0c\x1c-\x1f\x85\u2028\u2029]")


class NotUTF8Error(ValueError):
    """The bytes are not UTF-8 text; ``offset`` is the first bad byte, counted from 0."""

    def __init__(self, offset: int):
        self.offset = offset
        super().__init__(f"not UTF-8 text (byte {offset} is not valid)")


class LineProblem(NamedTuple):
    """Why one line of a file cannot be used; readers that know the file's name add it."""

    line: int  # 1-based
    message: str


def decode_utf8(data: bytes | str) -> str:
    """The text of a file's bytes (text already decoded passes through untouched)."""
    if isinstance(data, str):
        return data
    skipped = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skipped:].decode("utf-8")
    except UnicodeDecodeError as error:
        # Counted in the file as given: "utf-8-sig" would count from after the mark.
        raise NotUTF8Error(skipped + error.start) from None


def text_problem(value: str, *, max_length: int | None = None, identifier: bool = False) -> str:
    """Why ``value`` cannot be stored as given ("" when it can), phrased to follow a field name:
    "doc_id contains a NUL character".

    JSON may spell a NUL (``\\u0000``) or half of a surrogate pair (``\\ud800``); neither is text
    a database column holds (PostgreSQL refuses both), so both are refused here, with the line,
    instead of failing the whole write later. An ``identifier`` (a doc id, a group name, a
    question id) may not hold bidirectional controls either.
    """
    if "\x00" in value:
        return "contains a NUL character (U+0000)"
    if not value.isascii():
        surrogate = _SURROGATE.search(value)
        if surrogate:
            return (
                f"contains U+{ord(surrogate.group()):04X}, half of a UTF-16 surrogate pair, "
                "which is not a character"
            )
        bidi = _BIDI.search(value) if identifier else None
        if bidi:
            return (
                f"contains the bidirectional control character U+{ord(bidi.group()):04X}, "
                "which makes an id display differently from what it is"
            )
    if identifier:
        breaking = _LINE_BREAKING.search(value)
        if breaking:
            return (
                f"contains {character_name(breaking.group())}, which ends a line or a "
                "tab-separated cell in the exported files"
            )
        if value != value.strip():
            return "starts or ends with white space, which tab-separated readers keep or drop"
    if max_length is not None and len(value) > max_length:
        return f"is longer than {max_length:,} characters ({len(value):,})"
    return ""


def character_name(character: str) -> str:
    """``U+3000 (IDEOGRAPHIC SPACE)``: a character named so a user can find it."""
    name = unicodedata.name(character, "")
    if not name:
        name = _CONTROL_NAMES.get(character, "a control character")
    return f"U+{ord(character):04X} ({name})"


def universal_newlines(text: str) -> str:
    """``text`` with every ``"\\r\\n"`` and lone ``"\\r"`` made ``"\\n"``: one line end each, so
    line numbers stay those an editor shows."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def may_hold_other_spaces(text: str) -> bool:
    """Whether `other_space` can find anything in ``text``: a whole file checked at once, so a
    file without one (the usual run or qrels, accented ids included) costs no check per line."""
    if text.isascii() and not any(c in text for c in "\x1c\x1d\x1e\x1f"):
        return False
    return _OTHER_SPACES.search(text) is not None


def other_space(line: str) -> str | None:
    """The first character of ``line`` that Python's ``str.split()`` splits on but trec_eval
    does not (U+00A0, U+3000, U+2028, ...), or None. pytrec_eval, ir_measures and ranx refuse
    a TREC line holding one and trec_eval reads it as part of a field: ours refuses it too."""
    found = _OTHER_SPACES.search(line)
    return None if found is None else found.group()


def text_lines(text: str, *, comments: bool = False) -> Iterator[tuple[int, str]]:
    """The lines that hold something, with their 1-based numbers in the file.

    Blank lines (white space only) are skipped; with ``comments``, so are lines whose first
    non-blank character is ``#`` (the run and gold formats allow them, as trec_eval does).
    """
    for number, line in enumerate(universal_newlines(text).split("\n"), start=1):
        stripped = line.strip()
        if stripped and not (comments and stripped.startswith("#")):
            yield number, line


def first_line(text: str, *, comments: bool = False) -> str:
    """The first line `text_lines` yields, or "" when there is none: what a reader looks at to
    tell a file's format, found without splitting a million-line file twice."""
    text = universal_newlines(text)
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        if end == -1:
            end = len(text)
        line = text[start:end]
        stripped = line.strip()
        if stripped and not (comments and stripped.startswith("#")):
            return line
        start = end + 1
    return ""


def json_lines(
    data: bytes | str, *, comments: bool = False
) -> Iterator[tuple[int, dict[str, Any] | LineProblem]]:
    """JSONL: each non-blank line's JSON object, or the problem that line has, by line number.

    Bytes are decoded with `decode_utf8` (which raises `NotUTF8Error`). The caller decides
    whether a problem stops the file (the CLI) or is collected with the others (the app).
    """
    for number, line in text_lines(decode_utf8(data), comments=comments):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            yield number, LineProblem(number, f"not valid JSON ({error.msg})")
            continue
        except RecursionError:
            yield number, LineProblem(number, "not usable JSON (nested too deeply)")
            continue
        except ValueError as error:  # e.g. an integer of more than 4,300 digits
            yield number, LineProblem(number, f"not usable JSON ({error})")
            continue
        if isinstance(value, dict):
            yield number, value
        else:
            yield number, LineProblem(number, "expected a JSON object")


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cycle collector while a large file is read (a run, qrels).

    The reader makes only acyclic objects (strings, floats, tuples), so no collection during the
    read can free anything, yet each one walks every Passage made so far, which on a large run
    costs more than the reading. Reference counting still frees as usual. The
    collector is left as it was found (off stays off); a read that overlaps another in a second
    thread may run with it on, which is only slower.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
