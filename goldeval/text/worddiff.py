"""Word diff of a gold span's old quote against the text it was re-anchored onto.

Django-free and shared, so the app (Index health, Re-check) and the CLI's re-anchoring warnings
show the same thing. A re-anchored span either *moved* (its words are the same; only offsets or
whitespace changed) or its *facts changed* (some word differs: "40 percent" became "50 percent").
Words are compared as whitespace-separated tokens with difflib, so a changed number is one
replaced word, not a scatter of characters.
"""

from dataclasses import dataclass
from difflib import SequenceMatcher

MOVED = "moved"
FACTS_CHANGED = "facts_changed"


@dataclass(frozen=True)
class Piece:
    """One run of the diff: ``kind`` is "same", "removed" or "added"."""

    kind: str
    text: str


def word_diff(old: str, new: str) -> list[Piece]:
    """The runs that turn ``old`` into ``new``, word by word (a replacement is removed + added)."""
    a, b = old.split(), new.split()
    pieces: list[Piece] = []
    matcher = SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            pieces.append(Piece("same", " ".join(a[i1:i2])))
            continue
        if i2 > i1:
            pieces.append(Piece("removed", " ".join(a[i1:i2])))
        if j2 > j1:
            pieces.append(Piece("added", " ".join(b[j1:j2])))
    return pieces


def outcome(old: str, new: str) -> str:
    """`MOVED` when the quote's words are unchanged, else `FACTS_CHANGED`."""
    return MOVED if old.split() == new.split() else FACTS_CHANGED


def plain(pieces: list[Piece]) -> str:
    """A one-line rendering for terminals and logs: ``[-40-]{+50+}`` around changed words."""
    out = []
    for piece in pieces:
        if piece.kind == "removed":
            out.append(f"[-{piece.text}-]")
        elif piece.kind == "added":
            out.append(f"{{+{piece.text}+}}")
        else:
            out.append(piece.text)
    return " ".join(out)
