"""Document ids a file names that the corpus does not have: counted, named, and the file
refused when it names no known one. Django-free: the app's uploads (known = what the uploader
may see, `corpus.visibility.check_doc_ids`) and ``python -m goldeval`` (known = the bundle's
corpus) apply the same rule, in the same words.

- A file that names document ids, none of them known, is refused whole: nothing is stored,
  the page answers 400 and the CLI exits 2.
- Otherwise what names an unknown id is left out, and the count of unknown ids with the first
  few of them (`SHOWN_IDS`, each cut to `SHOWN_CHARACTERS`) is said as a warning.

The examples are ids the file itself named, in the order it named them, so the message never
depends on why an id is unknown: a document an access group hides from the uploader reads
exactly as one that does not exist.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field

SHOWN_IDS = 5
SHOWN_CHARACTERS = 60
# A scored run keeps its unknown ids: they hold their ranks, as the system returned them.
SCORED = "kept in the ranking as not relevant"


class _Everything:
    """Every id is known: where nothing lists the corpus (a gold JSONL or qrels alone)."""

    def __contains__(self, doc_id: object) -> bool:
        return True


ALL = _Everything()


@dataclass(frozen=True)
class DocIdCheck:
    """The distinct document ids a file named, split into the known and the unknown."""

    named: int = 0
    # Unknown ids in the order the file first named them (all of them, for filtering).
    unknown: tuple[str, ...] = ()
    unknown_set: frozenset[str] = field(default=frozenset(), repr=False)

    @property
    def known(self) -> int:
        return self.named - len(self.unknown)

    @property
    def none_known(self) -> bool:
        """Whether the file names ids and not one of them is known: it is refused."""
        return self.named > 0 and self.known == 0

    def is_unknown(self, doc_id: str) -> bool:
        return doc_id in self.unknown_set

    def examples(self) -> str:
        """The first few unknown ids, quoted and cut short, for a message."""
        shown = ", ".join(_quoted(doc_id) for doc_id in self.unknown[:SHOWN_IDS])
        more = len(self.unknown) - SHOWN_IDS
        return shown + (f" and {more:,} more" if more > 0 else "")

    def refusal(self, source: str) -> str:
        """Why the file was refused (`none_known`), without a full stop (the caller says
        what was not done)."""
        ids = "id" if self.named == 1 else "ids"
        return (
            f"{source} names no document the corpus has: {self.named:,} unknown document "
            f"{ids} ({self.examples()})"
        )

    def warning(self, source: str, *, outcome: str = "left out") -> str:
        """The unknown ids, counted and named, and what became of them (empty when every id
        is known): left out of an import, or kept in a scored run where they reach nothing."""
        if not self.unknown:
            return ""
        count = len(self.unknown)
        ids = "id" if count == 1 else "ids"
        return (
            f"{source}: {count:,} unknown document {ids} of {self.named:,} named, "
            f"{outcome} ({self.examples()})"
        )


def split_doc_ids(doc_ids: Iterable[str], known: Container[str]) -> DocIdCheck:
    """The ids named (in order, repeats counted once), split by membership in ``known``."""
    named: dict[str, None] = dict.fromkeys(doc_ids)
    unknown = tuple(doc_id for doc_id in named if doc_id not in known)
    return DocIdCheck(named=len(named), unknown=unknown, unknown_set=frozenset(unknown))


def _quoted(doc_id: str) -> str:
    if len(doc_id) > SHOWN_CHARACTERS:
        return repr(doc_id[:SHOWN_CHARACTERS]) + "…"
    return repr(doc_id)
