"""The run format: ranked passages per question, read and written here and nowhere else.

Django-free, so ``python -m goldeval`` in a team's CI and the app's run import read a file
alike: the same rows and the same problems, each with its line. The CLI stops at the first
problem; the app lists them all.

- TREC: ``qid Q0 docid rank score tag`` (text after the sixth column is ignored, as trec_eval
  does). Fields are split on ASCII white space, as trec_eval splits them; a field holding
  another space (U+00A0, U+3000, ...) is refused with its line, since pytrec_eval, ir_measures
  and ranx split there (and refuse the line) while trec_eval keeps the field whole. A
  question's passages are ranked by score, highest first; the rank column is ignored.
  Equal scores are ordered as trec_eval orders them, docno descending (``ties="trec_eval"``, the
  default), or kept in file order (``ties="file"``). Its lines may be anywhere in the file.
  Scores are compared as doubles; ``scores="float32"`` first rounds them to single precision, as
  trec_eval 9 and pytrec_eval store them, so scores that differ only beyond ~7 digits tie.
- JSONL: ``{"question_id", "results": [{"doc_id", "start"?, "end"?, "score"?}], "refused"?}``,
  one line per question, ranked in list order (its order is the ranking, whatever the ties
  rule). A result without offsets is its whole document.
- A score must be a finite number no larger in size than `MAX_SCORE` (what a single-precision
  float holds, so ``scores="float32"`` never turns one into an infinity): NaN, an infinity or a
  huge number is refused with the line (`score_problem`, the one rule for every run's scores,
  the HTTP retriever's answers included).
- A JSONL doc id or question id holding a NUL or half a surrogate pair is refused with the line
  (`goldeval.formats.textfiles.text_problem`): no column, and no job message quoting it, holds one.
- A repeat of the same passage ``(doc, start, end)`` in one ranking is dropped after its first
  (best) occurrence and counted (`RankedResults.repeats`); passages of one document with other
  offsets stay distinct.

The first line that is neither blank nor a ``#`` comment tells the format: ``{`` starts JSONL.
Lines end at ``\n``, ``\r\n`` or a lone ``\r`` (`goldeval.formats.textfiles`).
Offsets are Python ``str`` indices, half-open ``[start, end)``.
"""

from __future__ import annotations

import json
import math
import operator
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, NamedTuple, Protocol

try:  # the compiled scanner of the common case (goldeval/formats/_trecscan.c), if built
    from goldeval.formats import _trecscan as trecscan
except ImportError:  # pragma: no cover - an install without a C compiler
    trecscan = None
from goldeval.formats.textfiles import (
    LineProblem,
    character_name,
    cyclic_gc_paused,
    decode_utf8,
    first_line,
    json_lines,
    may_hold_other_spaces,
    other_space,
    text_problem,
    universal_newlines,
)

TREC_COLUMNS = "qid Q0 docid rank score tag"
# Why a run file without a single ranking is refused where a run gates CI (`python -m goldeval`):
# scored, it would read as a system that found nothing, when a step of the pipeline most likely
# failed.
NO_RANKING = (
    "the run holds no ranking (the file is empty or only comments); a question with nothing "
    'retrieved is a JSONL line with "results": []'
)
# How equal scores of a TREC run are ordered: trec_eval's rule (docno descending) or file order.
TIES = ("trec_eval", "file")
# How precisely a TREC run's scores are compared: as read (double) or as trec_eval 9 keeps them.
SCORES = ("double", "float32")
# The largest score (in size) a run may give: a single-precision float's range, since trec_eval 9
# and pytrec_eval keep scores so, and a larger one would become an infinity there.
MAX_SCORE = 3.4e38
TIES_RULES = {
    "trec_eval": "TREC runs: score descending, ties by docno descending (trec_eval's order)",
    "file": "TREC runs: score descending, ties in file order",
}


class Passage(NamedTuple):
    """A stretch of one document; ``start``/``end`` of None mean the whole document.

    Defined here, where runs are read, and used by goldeval.formats.gold for judged passages too.
    """

    doc_id: str
    start: int | None = None
    end: int | None = None


class WholeDocuments(Sequence[Passage]):
    """A TREC ranking's passages (whole documents), each made when it is looked at.

    A million-line run is a million passages, and the metrics look at the top 10 or 100 of
    each ranking: holding the doc ids and making ``Passage(doc_id)`` on access saves making the
    passages nobody looks at. It reads like the list it stands for (length, index, slice,
    iteration, equality).
    """

    __slots__ = ("doc_ids",)

    def __init__(self, doc_ids: Sequence[str]):
        self.doc_ids = doc_ids

    def __len__(self) -> int:
        return len(self.doc_ids)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return list(map(whole_document, self.doc_ids[index]))
        return whole_document(self.doc_ids[index])

    def __iter__(self) -> Iterator[Passage]:
        return map(whole_document, self.doc_ids)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, WholeDocuments):
            return list(self.doc_ids) == list(other.doc_ids)
        if isinstance(other, list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a list is not hashable either

    def __repr__(self) -> str:
        return f"WholeDocuments({list(self.doc_ids)!r})"


def score_problem(value: Any) -> str:
    """Why ``value`` cannot be a run's score ("" when it can), phrased to follow "has": a JSON
    number (not a string, not true/false), finite, at most `MAX_SCORE` in size."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "a score that is not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"a score of {value}: give a finite number"
    if not -MAX_SCORE <= value <= MAX_SCORE:  # an int compares exactly, however large
        return f"a score larger than {MAX_SCORE:g} in size, more than a run's score can hold"
    return ""


def whole_document(doc_id: str) -> Passage:
    """``Passage(doc_id)``, made several times faster than by its constructor."""
    return tuple.__new__(Passage, (doc_id, None, None))  # without NamedTuple's slow constructor


@dataclass(slots=True)
class RankedResults:
    """One question's results in ranked order; the three lists run in parallel."""

    passages: Sequence[Passage]  # a list, or `WholeDocuments` for a TREC run
    # Lists, or arrays ("d" and "q") when the compiled scanner read the run.
    scores: Sequence[float | None]
    lines: Sequence[int]  # the line each result was read from
    line: int  # where the question first appears
    # None when the run says nothing about refusing; only JSONL runs can say it.
    refused: bool | None = None
    repeats: int = 0  # repeated passages dropped after their first occurrence


@dataclass(slots=True)
class RunFile:
    """What a run file holds. Its rankings are only the whole file when ``problems`` is empty."""

    format: str  # "jsonl" or "trec"
    rankings: dict[str, RankedResults] = field(default_factory=dict)
    problems: list[LineProblem] = field(default_factory=list)


def read_run_file(data: bytes | str, *, ties: str = "trec_eval", scores: str = "double") -> RunFile:
    """Every question's ranked results and every problem (in file order) of a TREC or JSONL
    run; ``ties`` orders equal scores of a TREC run (`TIES`), ``scores`` says how precisely
    they are compared (`SCORES`). Raises `goldeval.formats.textfiles.NotUTF8Error` for bytes that
    are not UTF-8."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}")
    if scores not in SCORES:
        raise ValueError(f"scores must be one of {', '.join(SCORES)}")
    text = decode_utf8(data)
    if first_line(text, comments=True).lstrip().startswith("{"):
        return _read_jsonl(text)
    return _read_trec(text, ties=ties, float32=scores == "float32")


def _drop_repeats(ranking: RankedResults) -> None:
    """Keep each passage's first (best-ranked) occurrence only."""
    passages = ranking.passages
    if len(set(passages)) == len(passages):
        return
    seen: set[Passage] = set()
    keep = []
    for index, passage in enumerate(passages):
        if passage not in seen:
            seen.add(passage)
            keep.append(index)
    ranking.repeats = len(passages) - len(keep)
    ranking.passages = [passages[i] for i in keep]
    ranking.scores = [ranking.scores[i] for i in keep]
    ranking.lines = [ranking.lines[i] for i in keep]


# --- JSONL ----------------------------------------------------------------------------------


def _read_jsonl(text: str) -> RunFile:
    run = RunFile(format="jsonl")
    problems = run.problems
    seen: dict[str, int] = {}  # a question's first line, even when that line is refused
    for number, record in json_lines(text, comments=True):
        if isinstance(record, LineProblem):
            problems.append(record)
            continue
        question_id = record.get("question_id")
        if _is_int(question_id):
            question_id = str(question_id)
        if not isinstance(question_id, str) or not question_id:
            problems.append(LineProblem(number, "question_id must be a non-empty string"))
            continue
        problem = text_problem(question_id)
        if problem:
            problems.append(LineProblem(number, f"the question_id {problem}"))
            continue
        if question_id in seen:
            first = seen[question_id]
            problems.append(
                LineProblem(number, f"question {question_id!r} already given on line {first}")
            )
            continue
        seen[question_id] = number
        results = record.get("results", [])
        if not isinstance(results, list):
            problems.append(LineProblem(number, "results must be a list"))
            continue
        refused = record.get("refused")
        if refused is not None and not isinstance(refused, bool):
            problems.append(LineProblem(number, "refused must be true or false"))
            refused = None
        ranking = run.rankings[question_id] = RankedResults(
            passages=[], scores=[], lines=[], line=number, refused=refused
        )
        for rank, result in enumerate(results, start=1):
            problem = _add_result(ranking, result, rank=rank, line=number)
            if problem is not None:
                problems.append(problem)
        _drop_repeats(ranking)
    return run


def _add_result(ranking: RankedResults, result: Any, *, rank: int, line: int) -> LineProblem | None:
    # A line holds a whole ranking, so each problem says which result of it is wrong.
    where = f"result {rank}"
    if not isinstance(result, dict):
        return LineProblem(line, f"{where} must be a JSON object")
    doc_id = result.get("doc_id")
    if _is_int(doc_id):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id:
        return LineProblem(line, f"{where} needs a doc_id")
    problem = text_problem(doc_id)
    if problem:  # said without the id itself: a NUL in a message is refused where it is stored
        return LineProblem(line, f"{where} has a doc_id that {problem}")
    start, end = result.get("start"), result.get("end")
    if (start is None) != (end is None):
        return LineProblem(line, f"{where} ({doc_id}) needs both start and end, or neither")
    if start is not None and not (_is_int(start) and _is_int(end) and 0 <= start < end):
        return LineProblem(
            line, f"{where} ({doc_id}) needs whole-number offsets with 0 <= start < end"
        )
    score = result.get("score")
    problem = "" if score is None else score_problem(score)
    if problem:
        return LineProblem(line, f"{where} ({doc_id}) has {problem}")
    ranking.passages.append(Passage(doc_id, start, end))
    ranking.scores.append(None if score is None else float(score))
    ranking.lines.append(line)
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- TREC -----------------------------------------------------------------------------------


def _read_trec(text: str, *, ties: str, float32: bool) -> RunFile:
    with cyclic_gc_paused():
        by_docno = ties == "trec_eval"
        scanned = None if trecscan is None else trecscan.scan_run(text)
        if scanned is None:  # no compiled scanner, or a line only this reader decides
            return _read_trec_lines(text, by_docno=by_docno, float32=float32)
        gathered = {
            question_id: RankedResults(passages=doc_ids, scores=scores, lines=lines, line=line)
            for question_id, (doc_ids, scores, lines, line) in scanned.items()
        }
        return RunFile(
            format="trec", rankings=_ranked_all(gathered, by_docno=by_docno, float32=float32)
        )


def _read_trec_lines(text: str, *, by_docno: bool, float32: bool) -> RunFile:
    # Written for speed: a run of 10,000 questions x 100 documents is a million lines. Each
    # question's results are gathered in file order (its lines usually follow one another, so
    # the lists of the question before are reused without a lookup), then ranked.
    run = RunFile(format="trec")
    gathered: dict[str, RankedResults] = {}
    current = None
    add_doc = add_score = add_line = None
    check_spaces = may_hold_other_spaces(text)
    for number, line in enumerate(universal_newlines(text).split("\n"), start=1):
        fields = line.split()
        # Around the fields every reader drops it alike; only inside one do they differ.
        if check_spaces and fields and fields[0][0] != "#" and (space := other_space(line.strip())):
            run.problems.append(LineProblem(number, other_space_problem(space)))
            continue
        if len(fields) < 6:
            if fields and fields[0][0] != "#":
                run.problems.append(
                    LineProblem(number, f"expected '{TREC_COLUMNS}' (a JSONL run starts with '{{')")
                )
            continue
        question_id = fields[0]
        if question_id[0] == "#":
            continue
        try:
            score = float(fields[4])
        except ValueError:
            run.problems.append(LineProblem(number, f"score {fields[4]!r} is not a number"))
            continue
        # NaN or an infinity (cheaper than math.isfinite per line), or beyond MAX_SCORE.
        if score - score != 0.0:
            run.problems.append(LineProblem(number, f"score {fields[4]!r} is not a finite number"))
            continue
        if not -MAX_SCORE <= score <= MAX_SCORE:
            run.problems.append(
                LineProblem(number, f"score {fields[4]!r} is larger than {MAX_SCORE:g} in size")
            )
            continue
        if question_id != current:
            results = gathered.get(question_id)
            if results is None:
                results = gathered[question_id] = RankedResults(
                    passages=[], scores=[], lines=[], line=number
                )
            current = question_id
            add_doc = results.passages.append  # doc ids, until ranked
            add_score = results.scores.append
            add_line = results.lines.append
        add_doc(fields[2])
        add_score(score)
        add_line(number)
    run.rankings = _ranked_all(gathered, by_docno=by_docno, float32=float32)
    return run


def _ranked_all(
    gathered: dict[str, RankedResults], *, by_docno: bool, float32: bool
) -> dict[str, RankedResults]:
    """Each question's results, gathered in file order, ranked (`_ranked`)."""
    rankings = {}
    for question_id, results in gathered.items():
        if float32:
            results.scores = array("f", results.scores).tolist()
        rankings[question_id] = _ranked(results, by_docno=by_docno)
    return rankings


def other_space_problem(space: str) -> str:
    return (
        f"{character_name(space)} inside a field: trec_eval reads it as part of the field, "
        "pytrec_eval, ir_measures and ranx split there; write ids without white space "
        "(Goldset's exports write it as %XX)"
    )


def _ranked(results: RankedResults, *, by_docno: bool) -> RankedResults:
    """A TREC question's results by score, highest first, ties as ``by_docno`` says."""
    doc_ids, scores, lines = results.passages, results.scores, results.lines
    # Most runs are written best first with distinct scores: then the file order is the
    # ranking under either tie rule, checked in one pass in C.
    if not all(map(operator.gt, scores, islice(scores, 1, None))):
        # Sorted descending as plain tuples (no key function): (score, docno, -line) for
        # trec_eval's ties, (score, -line, docno) for file order; -line keeps the earlier of
        # two identical lines first.
        negated = map(operator.neg, lines)
        if by_docno:
            items = sorted(zip(scores, doc_ids, negated, strict=True), reverse=True)
            scores, doc_ids, negated_lines = map(list, zip(*items, strict=True))
        else:
            items = sorted(zip(scores, negated, doc_ids, strict=True), reverse=True)
            scores, negated_lines, doc_ids = map(list, zip(*items, strict=True))
        lines = list(map(operator.neg, negated_lines))
    results.passages = WholeDocuments(doc_ids)
    results.scores, results.lines = scores, lines
    if len(set(doc_ids)) != len(doc_ids):
        _drop_repeats(results)
    return results


# --- writing --------------------------------------------------------------------------------


def trec_id(identifier: str) -> str:
    """An id as a TREC file's token: every reader splits those lines on white space (Python's
    readers on any Unicode space), so white space and ``%`` are percent-encoded, byte by byte
    of their UTF-8 (``a b`` -> ``a%20b``, ``100%`` -> ``100%25``, U+3000 -> ``%E3%80%80``).
    Reversible, and the identity on ids without either."""
    if not any(character.isspace() or character == "%" for character in identifier):
        return identifier
    return "".join(
        "".join(f"%{byte:02X}" for byte in c.encode("utf-8")) if c.isspace() or c == "%" else c
        for c in identifier
    )


class Retrieved(Protocol):
    """A retrieved passage as the retrievers return it."""

    doc_id: str
    start: int | None
    end: int | None
    score: float | None


def jsonl_run_line(*, question_id: str, results: Iterable[Retrieved]) -> str:
    """One question's line of a JSONL run, with its newline: what the app stores for a
    retriever's run and ``manage.py retrieve`` writes, so the two files are alike."""
    record = {
        "question_id": question_id,
        "results": [
            {"doc_id": r.doc_id, "start": r.start, "end": r.end, "score": _written(r.score)}
            for r in results
        ],
    }
    return json.dumps(record, ensure_ascii=False) + "\n"


def _written(score: float | None) -> float | None:
    # A score the reader would refuse (NaN from a zero vector, say) is written as null: a JSONL
    # run is ranked by its list order, so the file stays readable and loses only that figure.
    return None if score is None or score_problem(score) else score
