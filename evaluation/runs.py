"""Load runs: ranked passages per question, as JSONL or as a TREC run file."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path

from evaluation.gold import (
    EvaluationInputError,
    Gold,
    Passage,
    read_doc_id,
    read_offsets,
)


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
    run = Run(name=name or path.stem, source=path)
    try:
        # Split on "\n" only: str.splitlines would also break JSON strings holding U+2028.
        lines = path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError:
        raise RunFormatError("not UTF-8 text", path=path) from None
    first = next(
        (line.lstrip() for line in lines if line.strip() and not line.lstrip().startswith("#")),
        "",
    )
    if first.startswith("{"):
        _read_jsonl(run, path, lines)
    else:
        _read_trec(run, path, lines)
    return run


def read_run(data: bytes, *, name: str, source: Path | str | None = None) -> Run:
    """A run given as the file's bytes, read exactly as `load_run` reads the file."""
    # Stand-in until the readers take bytes themselves: the bytes go through a temporary file.
    with tempfile.TemporaryDirectory(prefix="goldset-run-") as folder:
        path = Path(folder) / "run"
        path.write_bytes(data)
        run = load_run(path, name=name)
    run.source = Path(source) if source is not None else None
    return run


def _read_jsonl(run: Run, path: Path, lines: list[str]) -> None:
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise RunFormatError(f"not valid JSON ({error.msg})", path=path, line=number) from None
        if not isinstance(record, dict):
            raise RunFormatError("expected a JSON object", path=path, line=number)
        question_id = record.get("question_id")
        if isinstance(question_id, int) and not isinstance(question_id, bool):
            question_id = str(question_id)
        if not isinstance(question_id, str) or not question_id:
            raise RunFormatError("question_id must be a non-empty string", path=path, line=number)
        if question_id in run.rankings:
            raise RunFormatError(
                f"question {question_id!r} already given on line {run.rankings[question_id].line}",
                path=path,
                line=number,
            )
        results = record.get("results", [])
        if not isinstance(results, list):
            raise RunFormatError("results must be a list", path=path, line=number)
        refused = record.get("refused")
        if refused is not None and not isinstance(refused, bool):
            raise RunFormatError("refused must be true or false", path=path, line=number)
        passages = []
        for result in results:
            if not isinstance(result, dict):
                raise RunFormatError("each result must be a JSON object", path=path, line=number)
            doc_id = read_doc_id(result, path=path, line=number, error=RunFormatError)
            start, end = read_offsets(result, path=path, line=number, error=RunFormatError)
            passages.append(Passage(doc_id, start, end))
        run.rankings[question_id] = Ranking(passages=passages, refused=refused, line=number)


def _read_trec(run: Run, path: Path, lines: list[str]) -> None:
    # Written for speed: a run of 10,000 questions x 100 documents is a million lines.
    scored: dict[str, list[tuple[float, str]]] = {}
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        # trec_eval tolerates text after the six columns (its own test files carry some).
        if len(fields) < 6:
            if not fields or fields[0].startswith("#"):
                continue
            raise RunFormatError(
                "expected 'qid Q0 docid rank score tag' (a JSON run must start with '{')",
                path=path,
                line=number,
            )
        question_id = fields[0]
        if question_id.startswith("#"):
            continue
        try:
            score = float(fields[4])
        except ValueError:
            raise RunFormatError(f"score {fields[4]!r} is not a number", path=path, line=number)
        results = scored.get(question_id)
        if results is None:
            results = scored[question_id] = []
            run.rankings[question_id] = Ranking(passages=[], line=number)
        results.append((-score, fields[2]))
    make_passage = tuple.__new__  # Passage(doc_id) without NamedTuple's slower constructor
    for question_id, results in scored.items():
        # The rank column is ignored, as trec_eval does. Python's sort is stable, so equal scores
        # keep their file order (trec_eval instead breaks ties by docid, descending).
        results.sort(key=itemgetter(0))
        run.rankings[question_id].passages = [
            make_passage(Passage, (doc_id, None, None)) for _, doc_id in results
        ]


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
