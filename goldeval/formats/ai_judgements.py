"""``ai-judgements.jsonl``: an LLM judge's grades of passages, apart from the gold. Django-free.

One line per (judge, question, passage)::

    {"question_id": "q1", "doc_id": "handbook", "version": 3, "start": 120, "end": 480,
     "grade": 2, "judge": "qwen", "model": "qwen2.5-14b-instruct", "prompt_version": 2}

- ``question_id``, ``doc_id``: non-empty strings (a whole number is read as its digits);
- ``start``/``end``: character offsets of the graded passage, half-open, both or neither (a
  whole document);
- ``grade``: 0, 1 or 2, the judge's grade of the whole passage;
- ``judge``: the judge's name; ``model`` (optional) the model it named; ``prompt_version``
  (optional) a whole number from 1; ``version`` (optional) the document version the offsets
  are in.

A gold set's bundle carries this file beside ``gold.jsonl`` (finalising writes the set's AI
judgements into it: `goldeval.formats.bundle`), and never mixes it into ``gold.jsonl`` or the
qrels: an AI grade is a vote, never gold. ``python -m goldeval evaluate --ai-judgements`` reads
it to fill a run's holes (`goldeval.scoring.holes`).

The reader bounds what it keeps: names and ids at most `MAX_NAME` / `MAX_ID` characters, offsets
and versions what a PostgreSQL integer holds, at most `MAX_JUDGEMENTS` lines. The same passage
graded twice by one judge counts once when the grades agree (with a warning) and is an error
when they differ, as for qrels. The first bad line stops the file with its line number.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from goldeval.formats.bounds import number_problem, shown
from goldeval.formats.gold import EvaluationInputError, read_doc_id, read_offsets
from goldeval.formats.runfiles import Passage
from goldeval.formats.textfiles import LineProblem, NotUTF8Error, json_lines, text_problem

AI_JUDGEMENTS_FILE = "ai-judgements.jsonl"
AI_GRADES = (0, 1, 2)
MAX_NAME = 200  # a judge's or a model's name
MAX_ID = 1_000  # a question or document id
MAX_JUDGEMENTS = 2_000_000  # lines of one file


class AIJudgementsError(EvaluationInputError):
    """An AI judgements file that cannot be used."""


@dataclass(frozen=True, slots=True)
class AIJudgement:
    question_id: str
    passage: Passage
    grade: int
    judge: str
    model: str = ""
    prompt_version: int | None = None
    version: int | None = None


@dataclass(slots=True)
class AIJudgements:
    judgements: list[AIJudgement] = field(default_factory=list)
    source: Path | None = None
    # What the reader let pass but a user should know (repeated lines), one line each.
    warnings: list[str] = field(default_factory=list)

    @property
    def judges(self) -> list[str]:
        return sorted({j.judge for j in self.judgements})

    def of_judge(self, judge: str) -> list[AIJudgement]:
        return [j for j in self.judgements if j.judge == judge]


def record(judgement: AIJudgement) -> dict[str, Any]:
    """The line of one judgement, as the bundle writes it and `read_ai_judgements` reads it."""
    doc_id, start, end = judgement.passage
    line: dict[str, Any] = {"question_id": judgement.question_id, "doc_id": doc_id}
    if judgement.version is not None:
        line["version"] = judgement.version
    if start is not None:
        line["start"], line["end"] = start, end
    line.update(grade=judgement.grade, judge=judgement.judge, model=judgement.model)
    line["prompt_version"] = judgement.prompt_version
    return line


def load_ai_judgements(path: Path | str) -> AIJudgements:
    path = Path(path)
    if path.is_dir():
        path = path / AI_JUDGEMENTS_FILE
    if not path.is_file():
        raise AIJudgementsError("no such file", path=path)
    return read_ai_judgements(path.read_bytes(), path=path)


def read_ai_judgements(data: bytes, *, path: Path | str = AI_JUDGEMENTS_FILE) -> AIJudgements:
    path = Path(path)
    read = AIJudgements(source=path)
    first_line: dict[tuple, tuple[int, int]] = {}  # key -> (line, grade)
    repeats = 0
    try:
        lines: Iterable = json_lines(data, comments=True)
        for number, item in lines:
            if isinstance(item, LineProblem):
                raise AIJudgementsError(item.message, path=path, line=number)
            if len(read.judgements) >= MAX_JUDGEMENTS:
                raise AIJudgementsError(
                    f"more than {MAX_JUDGEMENTS:,} judgements; split the file", path=path
                )
            judgement = _parse(item, path=path, line=number)
            key = (judgement.judge, judgement.question_id, judgement.passage)
            before = first_line.get(key)
            if before is None:
                first_line[key] = (number, judgement.grade)
                read.judgements.append(judgement)
            elif before[1] == judgement.grade:
                repeats += 1
            else:
                raise AIJudgementsError(
                    f"judge {judgement.judge!r} grades this passage of question "
                    f"{judgement.question_id!r} {judgement.grade}, line {before[0]} grades it "
                    f"{before[1]}: give one grade per judge and passage",
                    path=path,
                    line=number,
                )
    except NotUTF8Error as error:
        raise AIJudgementsError(str(error), path=path) from None
    if repeats:
        read.warnings.append(f"{path}: {repeats} repeated identical judgement(s) counted once")
    return read


def _parse(item: dict, *, path: Path, line: int) -> AIJudgement:
    question_id = item.get("question_id")
    if isinstance(question_id, int) and not isinstance(question_id, bool):
        question_id = str(question_id)
    if not isinstance(question_id, str) or not question_id:
        raise AIJudgementsError("question_id must be a non-empty string", path=path, line=line)
    doc_id = read_doc_id(item, path=path, line=line, error=AIJudgementsError)
    for name, value in (("question_id", question_id), ("doc_id", doc_id)):
        problem = text_problem(value, max_length=MAX_ID)
        if problem:
            raise AIJudgementsError(f"{name} {problem}", path=path, line=line)
    start, end = read_offsets(item, path=path, line=line, error=AIJudgementsError)
    grade = item.get("grade")
    if not isinstance(grade, int) or isinstance(grade, bool) or grade not in AI_GRADES:
        raise AIJudgementsError(
            f"grade must be 0, 1 or 2, not {shown(grade)}", path=path, line=line
        )
    names = {}
    for name in ("judge", "model"):
        value = item.get(name, "" if name == "model" else None)
        if value is None and name == "model":
            value = ""
        if not isinstance(value, str) or (name == "judge" and not value):
            what = "a non-empty string" if name == "judge" else "a string"
            raise AIJudgementsError(f"{name} must be {what}", path=path, line=line)
        problem = text_problem(value, max_length=MAX_NAME)
        if problem:
            raise AIJudgementsError(f"{name} {problem}", path=path, line=line)
        names[name] = value
    whole = {}
    for name, least in (("prompt_version", 1), ("version", 1), ("start", 0), ("end", 1)):
        value = item.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise AIJudgementsError(f"{name} must be a whole number", path=path, line=line)
        problem = number_problem(value, least=least)
        if problem:
            raise AIJudgementsError(f"{name} {problem}", path=path, line=line)
        whole[name] = value
    return AIJudgement(
        question_id=question_id,
        passage=Passage(doc_id, start, end),
        grade=grade,
        judge=names["judge"],
        model=names["model"],
        prompt_version=whole.get("prompt_version"),
        version=whole.get("version"),
    )
