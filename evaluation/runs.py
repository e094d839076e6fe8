"""Runs for evaluation: a run file read by `corpus.runfiles`, its first problem raised.

The run format lives in `corpus.runfiles`, so the app's run import and this CLI read a file
alike; here a problem stops the file, as a CI gate should, with the file and line to look at.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from corpus.runfiles import read_run_file
from corpus.textfiles import NotUTF8Error
from evaluation.gold import EvaluationInputError, Gold, Passage


class RunFormatError(EvaluationInputError):
    """The run file is malformed or does not fit the gold set."""


@dataclass(slots=True)
class Ranking:
    passages: list[Passage]
    # None when the run says nothing about refusing; only JSONL runs can say it.
    refused: bool | None = None
    line: int | None = None  # where the question first appears in the file


@dataclass(slots=True)
class Run:
    name: str
    rankings: dict[str, Ranking] = field(default_factory=dict)
    source: Path | None = None

    @property
    def reports_refusals(self) -> bool:
        return any(ranking.refused is not None for ranking in self.rankings.values())


def load_run(path: Path | str, *, name: str | None = None) -> Run:
    """Read a JSONL or TREC run; the format is told by the first non-blank line."""
    path = Path(path)
    if not path.is_file():
        raise RunFormatError("no such file", path=path)
    return read_run(path.read_bytes(), name=name or path.stem, source=path)


def read_run(data: bytes, *, name: str, source: Path | str | None = None) -> Run:
    """A run given as the file's bytes; ``source`` names the file in errors."""
    path = Path(source) if source is not None else None
    try:
        parsed = read_run_file(data)
    except NotUTF8Error as error:
        raise RunFormatError(str(error), path=path) from None
    if parsed.problems:
        first = parsed.problems[0]
        raise RunFormatError(first.message, path=path, line=first.line)
    return Run(
        name=name,
        rankings={
            # The passages list is shared, not copied: a large TREC run is a million of them.
            question_id: Ranking(passages=read.passages, refused=read.refused, line=read.line)
            for question_id, read in parsed.rankings.items()
        },
        source=path,
    )


def check_run_against_gold(run: Run, gold: Gold) -> None:
    """Reject question ids the gold set does not know and offsets past a document's end."""
    path = run.source
    for question_id, ranking in run.rankings.items():
        if question_id not in gold.questions:
            raise RunFormatError(
                f"question {question_id!r} is not in the gold set", path=path, line=ranking.line
            )
    if gold.corpus is None:
        return
    lengths = {doc_id: len(document.text) for doc_id, document in gold.corpus.items()}
    for ranking in run.rankings.values():
        for doc_id, _, end in ranking.passages:
            if end is None:
                continue
            length = lengths.get(doc_id)
            if length is not None and end > length:
                raise RunFormatError(
                    f"passage of {doc_id!r} ends at {end}, past the document's end "
                    f"({length} characters)",
                    path=path,
                    line=ranking.line,
                )
