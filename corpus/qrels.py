"""Document-level judgments (qrels), read here and nowhere else.

Django-free, so ``python -m evaluation`` (a gold set given as qrels) and the app's BEIR import read
a file alike. Two layouts, told per line by the number of columns:

- TREC: ``qid iter docid grade`` (the ``iter`` column is ignored, as trec_eval does);
- BEIR TSV: ``query-id<TAB>corpus-id<TAB>score``, after an optional header line.

Rules (DESIGN.md §3):

- A grade is a whole number written in ASCII digits with an optional sign (``2``, ``-1``, ``+1``);
  ``²``, ``+-1``, ``1.0`` or ``NaN`` are refused with the line.
- An identical repeated line (same question, document and grade) counts once; the repeats are
  reported (`QrelsFile.duplicates`) so the reader can warn with their line numbers. trec_eval
  refuses such files and pytrec_eval silently keeps one; counting a repeat twice would make two
  relevant units of one document.
- Two different grades for one (question, document) are a problem naming both lines: no rule
  could say which grade the labeller meant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from corpus.textfiles import LineProblem

_GRADE = re.compile(r"[+-]?[0-9]{1,9}")
SHAPE = "expected 'qid 0 docid grade' (TREC) or 'query-id<TAB>corpus-id<TAB>score' (BEIR)"


class Qrel(NamedTuple):
    question_id: str
    doc_id: str
    grade: int
    line: int


class Duplicate(NamedTuple):
    line: int  # the repeat, dropped
    first: int  # the line kept


@dataclass(slots=True)
class QrelsFile:
    """What a qrels file holds: each (question, document) once, in file order."""

    qrels: list[Qrel] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)


def is_grade(text: str) -> bool:
    return _GRADE.fullmatch(text) is not None


def _cells(line: str) -> list[str]:
    if "\t" in line:
        cells = [cell.strip() for cell in line.split("\t")]
        if all(cells):
            return cells
    return line.split()


def read_qrels(text: str) -> QrelsFile:
    """Every judgment of a TREC or BEIR qrels text, its repeats and its problems (in file
    order). Blank lines and ``#`` comments are skipped, as elsewhere."""
    result = QrelsFile()
    seen: dict[tuple[str, str], tuple[int, int]] = {}  # (question, doc) -> (grade, line)
    header_allowed = True
    grade_match = _GRADE.fullmatch
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        cells = _cells(stripped)
        if len(cells) == 4:
            question_id, doc_id, grade_text = cells[0], cells[2], cells[3]
        elif len(cells) == 3:
            question_id, doc_id, grade_text = cells
            if header_allowed and grade_match(grade_text) is None:
                header_allowed = False
                continue  # the BEIR header "query-id corpus-id score"
        else:
            result.problems.append(LineProblem(number, SHAPE))
            header_allowed = False
            continue
        header_allowed = False
        if grade_match(grade_text) is None:
            result.problems.append(
                LineProblem(
                    number, f"grade {grade_text!r} is not an integer (a whole number like 0, 1, 2)"
                )
            )
            continue
        grade = int(grade_text)
        key = (question_id, doc_id)
        before = seen.get(key)
        if before is None:
            seen[key] = (grade, number)
            result.qrels.append(Qrel(question_id, doc_id, grade, number))
        elif before[0] == grade:
            result.duplicates.append(Duplicate(number, before[1]))
        else:
            result.problems.append(
                LineProblem(
                    number,
                    f"document {doc_id!r} of question {question_id!r} is graded {grade} here "
                    f"and {before[0]} on line {before[1]}: give one grade",
                )
            )
    return result


def duplicates_warning(duplicates: list[Duplicate], *, source: str) -> str:
    """One warning line for a file's repeated judgments, naming their lines (the first few)."""
    shown = ", ".join(f"line {d.line} repeats line {d.first}" for d in duplicates[:10])
    more = f", and {len(duplicates) - 10} more" if len(duplicates) > 10 else ""
    return (
        f"{source}: {len(duplicates)} repeated identical judgment(s) counted once ({shown}{more})"
    )
