"""``answers-gold.jsonl``: reference facts and the human grades of answers, read here.

The gold bundle carries this file beside ``gold.jsonl``; ``python -m goldeval answers
--judgements FILE`` reads it to compute the human-graded answer scores. Django-free. Two kinds of
line, told apart by ``kind``:

- ``{"kind": "reference", "question_id", "version", "facts": [{"fact_id", "text",
  "importance": "vital"|"okay", "spans": [{"doc_id", "start"?, "end"?}]}]}``: a question's
  reference answer as a list of facts ("nuggets"), at the version a lead last saved.
- ``{"kind": "answer", "question_id", "answer_key", "run"?, "claims": [{"start", "end",
  "support": "full"|"partial"|"none", "citations": [{"doc_id", "start"?, "end"?, "grade": 2|1|0}],
  "citations_support"?: true|false, "supporting_sets"?: [[0, 1], …]}],
  "facts": [{"fact_id", "present": "yes"|"partly"|"no"}],
  "wrongly_refused"?: true|false}``: the adjudicated grades of one answer. ``answer_key`` is
  `goldeval.formats.answers.answer_key` of the graded answer, so grades apply to a run only where
  it says exactly what was graded. A claim's citations are those of the sentence it came from,
  graded against the claim (ALCE's 2 supports / 1 partially / 0 does not). ``citations_support``
  says whether the citations *together* support the claim; left out, it is true exactly when one
  citation alone does (grade 2). ``supporting_sets`` lists groups of the claim's citations
  (0-based positions in ``citations``) that together support it, when a reviewer recorded them:
  ALCE's citation precision asks, of each citation, whether the others still support the claim
  without it (`GradedClaim.supported_by`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from goldeval.formats.gold import EvaluationInputError, read_doc_id, read_offsets
from goldeval.formats.runfiles import Passage
from goldeval.formats.textfiles import LineProblem, NotUTF8Error, json_lines

ANSWERS_GOLD_FILE = "answers-gold.jsonl"
SUPPORT = {"full": 1.0, "partial": 0.5, "none": 0.0}
PRESENCE = {"yes": 1.0, "partly": 0.5, "no": 0.0}
IMPORTANCE = ("vital", "okay")
CITATION_GRADES = (0, 1, 2)
# Outside data is bounded before it is kept: a claim's recorded supporting groups.
MAX_SUPPORTING_SETS = 64


class AnswerGoldError(EvaluationInputError):
    """answers-gold.jsonl is malformed."""


@dataclass(frozen=True, slots=True)
class ReferenceFact:
    fact_id: str
    text: str
    vital: bool
    spans: tuple[Passage, ...] = ()


@dataclass(frozen=True, slots=True)
class GradedCitation:
    passage: Passage
    grade: int  # 2 supports the claim, 1 partially, 0 does not


@dataclass(frozen=True, slots=True)
class GradedClaim:
    start: int
    end: int
    support: str  # "full", "partial" or "none": by the context sent to the model
    citations: tuple[GradedCitation, ...] = ()
    # Whether the citations together support the claim; None: one citation alone (grade 2).
    citations_support: bool | None = None
    # Groups of citations (positions in ``citations``) recorded as supporting the claim together.
    supporting_sets: tuple[frozenset[int], ...] = ()

    @property
    def cited_support(self) -> bool:
        """Whether the claim's citations together support it (ALCE's citation recall)."""
        return self.supported_by(frozenset(range(len(self.citations))))

    def supported_by(self, chosen: frozenset[int]) -> bool:
        """Whether the citations at positions ``chosen`` together support the claim, as the
        human grades tell: one of them supports it alone (grade 2); or they include a group
        recorded as supporting it; or the citations together support it and ``chosen`` keeps
        every citation that supports it at all (grade >= 1: a citation graded 0 adds nothing)."""
        if not chosen:
            return False
        if any(self.citations[i].grade == 2 for i in chosen):
            return True
        if any(group <= chosen for group in self.supporting_sets):
            return True
        contributing = {i for i, citation in enumerate(self.citations) if citation.grade >= 1}
        return bool(self.citations_support) and contributing <= chosen


@dataclass(frozen=True, slots=True)
class AnswerGrades:
    question_id: str
    answer_key: str
    claims: tuple[GradedClaim, ...]
    facts: dict[str, str]  # fact_id -> "yes" / "partly" / "no"
    wrongly_refused: bool = False
    run: str = ""


@dataclass(slots=True)
class AnswerGold:
    references: dict[str, tuple[ReferenceFact, ...]] = field(default_factory=dict)
    reference_versions: dict[str, int] = field(default_factory=dict)
    # (question_id, answer_key) -> grades
    grades: dict[tuple[str, str], AnswerGrades] = field(default_factory=dict)

    def grades_for(self, question_id: str, answer_key: str) -> AnswerGrades | None:
        return self.grades.get((question_id, answer_key))


def load_answer_gold(path: Path | str) -> AnswerGold:
    path = Path(path)
    if path.is_dir():
        path = path / ANSWERS_GOLD_FILE
    if not path.is_file():
        raise AnswerGoldError("no such file", path=path)
    return read_answer_gold(path.read_bytes(), source=path)


def read_answer_gold(data: bytes | str, *, source: Path | str | None = None) -> AnswerGold:
    path = Path(source) if source is not None else Path(ANSWERS_GOLD_FILE)
    gold = AnswerGold()
    try:
        for number, record in _objects(data, path=path):
            kind = record.get("kind")
            if kind == "reference":
                _read_reference(record, gold=gold, path=path, line=number)
            elif kind == "answer":
                _read_grades(record, gold=gold, path=path, line=number)
            else:
                raise AnswerGoldError(
                    'kind must be "reference" or "answer"', path=path, line=number
                )
    except NotUTF8Error as error:
        raise AnswerGoldError(str(error), path=path) from None
    for (question_id, _), grades in gold.grades.items():
        known = {fact.fact_id for fact in gold.references.get(question_id, ())}
        unknown = sorted(set(grades.facts) - known)
        if unknown:
            raise AnswerGoldError(
                f"question {question_id!r}: graded fact {unknown[0]!r} is not one of its "
                "reference facts",
                path=path,
            )
    return gold


def _objects(data: bytes | str, *, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, record in json_lines(data, comments=True):
        if isinstance(record, LineProblem):
            raise AnswerGoldError(record.message, path=path, line=number)
        yield number, record


def _question_id(record: dict[str, Any], *, path: Path, line: int) -> str:
    question_id = record.get("question_id")
    if isinstance(question_id, int) and not isinstance(question_id, bool):
        question_id = str(question_id)
    if not isinstance(question_id, str) or not question_id:
        raise AnswerGoldError("question_id must be a non-empty string", path=path, line=line)
    return question_id


def _list(record: dict[str, Any], name: str, *, path: Path, line: int) -> list[Any]:
    value = record.get(name, [])
    if not isinstance(value, list):
        raise AnswerGoldError(f"{name} must be a list", path=path, line=line)
    return value


def _read_reference(record: dict[str, Any], *, gold: AnswerGold, path: Path, line: int) -> None:
    question_id = _question_id(record, path=path, line=line)
    if question_id in gold.references:
        raise AnswerGoldError(
            f"question {question_id!r} has a second reference answer", path=path, line=line
        )
    facts: list[ReferenceFact] = []
    for item in _list(record, "facts", path=path, line=line):
        if not isinstance(item, dict):
            raise AnswerGoldError("each fact must be a JSON object", path=path, line=line)
        fact_id, text = item.get("fact_id"), item.get("text", "")
        if not isinstance(fact_id, str) or not fact_id or not isinstance(text, str):
            raise AnswerGoldError(
                "each fact needs a fact_id (a string) and a text", path=path, line=line
            )
        if any(fact.fact_id == fact_id for fact in facts):
            raise AnswerGoldError(f"fact {fact_id!r} is given twice", path=path, line=line)
        importance = item.get("importance")
        if importance not in IMPORTANCE:
            raise AnswerGoldError(
                f'fact {fact_id!r}: importance must be "vital" or "okay"', path=path, line=line
            )
        spans = []
        for span in _list(item, "spans", path=path, line=line):
            if not isinstance(span, dict):
                raise AnswerGoldError("each fact span must be an object", path=path, line=line)
            doc_id = read_doc_id(span, path=path, line=line, error=AnswerGoldError)
            start, end = read_offsets(span, path=path, line=line, error=AnswerGoldError)
            spans.append(Passage(doc_id, start, end))
        facts.append(ReferenceFact(fact_id, text, importance == "vital", tuple(spans)))
    version = record.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise AnswerGoldError("version must be an integer", path=path, line=line)
    gold.references[question_id] = tuple(facts)
    gold.reference_versions[question_id] = version


def _read_grades(record: dict[str, Any], *, gold: AnswerGold, path: Path, line: int) -> None:
    question_id = _question_id(record, path=path, line=line)
    answer_key = record.get("answer_key")
    if not isinstance(answer_key, str) or not answer_key:
        raise AnswerGoldError("answer_key must be a non-empty string", path=path, line=line)
    if (question_id, answer_key) in gold.grades:
        raise AnswerGoldError(
            f"question {question_id!r}: this answer is graded twice", path=path, line=line
        )
    claims: list[GradedClaim] = []
    for number, item in enumerate(_list(record, "claims", path=path, line=line), start=1):
        where = f"claim {number}"
        if not isinstance(item, dict):
            raise AnswerGoldError(f"{where} must be a JSON object", path=path, line=line)
        start, end = item.get("start"), item.get("end")
        if not (_is_int(start) and _is_int(end) and 0 <= start < end):
            raise AnswerGoldError(
                f"{where} needs whole-number offsets with 0 <= start < end", path=path, line=line
            )
        support = item.get("support")
        if support not in SUPPORT:
            raise AnswerGoldError(
                f'{where}: support must be "full", "partial" or "none"', path=path, line=line
            )
        citations = []
        for citation in _list(item, "citations", path=path, line=line):
            if not isinstance(citation, dict):
                raise AnswerGoldError(
                    f"{where}: each citation must be an object", path=path, line=line
                )
            doc_id = read_doc_id(citation, path=path, line=line, error=AnswerGoldError)
            c_start, c_end = read_offsets(citation, path=path, line=line, error=AnswerGoldError)
            grade = citation.get("grade")
            if grade not in CITATION_GRADES or isinstance(grade, bool):
                raise AnswerGoldError(
                    f"{where}: a citation grade must be 2, 1 or 0", path=path, line=line
                )
            citations.append(GradedCitation(Passage(doc_id, c_start, c_end), grade))
        together = item.get("citations_support")
        if together is not None and not isinstance(together, bool):
            raise AnswerGoldError(
                f"{where}: citations_support must be true or false", path=path, line=line
            )
        groups = _supporting_sets(item, count=len(citations), where=where, path=path, line=line)
        claims.append(GradedClaim(start, end, support, tuple(citations), together, groups))
    facts: dict[str, str] = {}
    for item in _list(record, "facts", path=path, line=line):
        if not isinstance(item, dict) or not isinstance(item.get("fact_id"), str):
            raise AnswerGoldError("each fact grade needs a fact_id", path=path, line=line)
        if item.get("present") not in PRESENCE:
            raise AnswerGoldError(
                f'fact {item["fact_id"]!r}: present must be "yes", "partly" or "no"',
                path=path,
                line=line,
            )
        facts[item["fact_id"]] = item["present"]
    wrongly_refused = record.get("wrongly_refused", False)
    run = record.get("run", "")
    if not isinstance(wrongly_refused, bool) or not isinstance(run, str):
        raise AnswerGoldError(
            "wrongly_refused must be true or false, run a string", path=path, line=line
        )
    gold.grades[(question_id, answer_key)] = AnswerGrades(
        question_id=question_id,
        answer_key=answer_key,
        claims=tuple(claims),
        facts=facts,
        wrongly_refused=wrongly_refused,
        run=run,
    )


def _supporting_sets(
    item: dict[str, Any], *, count: int, where: str, path: Path, line: int
) -> tuple[frozenset[int], ...]:
    groups = _list(item, "supporting_sets", path=path, line=line)
    if len(groups) > MAX_SUPPORTING_SETS:
        raise AnswerGoldError(
            f"{where}: supporting_sets holds at most {MAX_SUPPORTING_SETS} groups",
            path=path,
            line=line,
        )
    if groups and not count:
        raise AnswerGoldError(
            f"{where}: supporting_sets given but the claim has no citations", path=path, line=line
        )
    found: list[frozenset[int]] = []
    for group in groups:
        if (
            not isinstance(group, list)
            or not group
            or not all(_is_int(i) and 0 <= i < count for i in group)
            or len(set(group)) != len(group)
        ):
            raise AnswerGoldError(
                f"{where}: each of supporting_sets must be a non-empty list of distinct "
                f"citation positions from 0 to {count - 1}",
                path=path,
                line=line,
            )
        found.append(frozenset(group))
    return tuple(found)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
