"""Text files as every reader here takes them: UTF-8 bytes, lines, and one JSON object a line.

Django-free and light on purpose: the run and gold readers of ``python -m goldeval`` use it,
as do the app's document, question and judgement imports, so a file reads the same whoever
reads it. Two rules live here and nowhere else:

- Bytes are UTF-8. A byte-order mark (which no one typed) is dropped; anything else that is not
  UTF-8 is refused, naming the offset of the first bad byte in the file, so it can be found.
- Lines end at ``"\\n"`` only. ``str.splitlines`` would also end them at U+2028, U+2029, U+0085
  and a few control characters, which a JSON string may hold raw; a ``"\\r"`` before the
  ``"\\n"`` stays on the line, where JSON and ``str.split`` both read it as white space.
"""

from __future__ import annotations

import codecs
import gc
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

# Unicode's explicit embedding, override and isolate controls: in an id they make two different
# ids look alike, or one id read backwards ("Trojan Source"), wherever it is shown.
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_SURROGATE = re.compile("[\ud800-\udfff]")
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


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
    if max_length is not None and len(value) > max_length:
        return f"is longer than {max_length:,} characters ({len(value):,})"
    return ""


def text_lines(text: str, *, comments: bool = False) -> Iterator[tuple[int, str]]:
    """The lines that hold something, with their 1-based numbers in the file.

    Blank lines (white space only) are skipped; with ``comments``, so are lines whose first
    non-blank character is ``#`` (the run and gold formats allow them, as trec_eval does).
    """
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if stripped and not (comments and stripped.startswith("#")):
            yield number, line


def first_line(text: str, *, comments: bool = False) -> str:
    """The first line `text_lines` yields, or "" when there is none: what a reader looks at to
    tell a file's format, found without splitting a million-line file twice."""
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
