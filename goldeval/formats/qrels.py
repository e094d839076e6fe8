"""Document-level judgments (qrels), read here and nowhere else.

Django-free, so ``python -m goldeval`` (a gold set given as qrels) and the app's BEIR import read
a file alike. Two layouts, told per line by the number of columns:

- TREC: ``qid iter docid grade`` (the ``iter`` column is ignored, as trec_eval does);
- BEIR TSV: ``query-id<TAB>corpus-id<TAB>score``, after an optional header line.

Rules (DESIGN.md §3):

- A grade is a whole number written in ASCII digits with an optional sign (``2``, ``-1``, ``+1``)
  from -10 to 10 (`GRADES`); ``²``, ``+-1``, ``1.0``, ``NaN`` or ``5000`` are refused with the
  line. A negative grade marks a document pooled but left unjudged (trec_eval's reading, which
  infAP needs): neither relevant nor judged.
- A TREC line is split on ASCII white space, as trec_eval splits it. A field holding another
  space (U+00A0, U+3000, ...) is refused with the line: pytrec_eval, ir_measures and ranx split
  there and refuse the line, trec_eval does not, so no reading of it is everyone's.
- BEIR TSV cells are read as BEIR's loader reads them (``csv`` with tabs): a cell may hold
  spaces and is kept exactly, a cell starting with ``"`` is a quoted one.
- Lines end at ``\n``, ``\r\n`` or a lone ``\r`` (`goldeval.formats.textfiles`).
- An identical repeated line (same question, document and grade) counts once; the repeats are
  reported (`QrelsFile.duplicates`) so the reader can warn with their line numbers. trec_eval
  refuses such files and pytrec_eval silently keeps one; counting a repeat twice would make two
  relevant units of one document.
- Two different grades for one (question, document) are a problem naming both lines: no rule
  could say which grade the labeller meant.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from goldeval.formats.runfiles import other_space_problem, trecscan
from goldeval.formats.textfiles import (
    LineProblem,
    may_hold_other_spaces,
    other_space,
    universal_newlines,
)

_GRADE = re.compile(r"[+-]?[0-9]{1,9}")
# Every grade a qrels file may give: a negative one marks a passage pooled but left unjudged, as
# trec_eval reads it (infAP); past 10 no relevance scale is meant.
GRADES = range(-10, 11)
TREC_SPACE = (
    "a field of this TREC line (four columns) holds white space: trec_eval, pytrec_eval, "
    "ir_measures and ranx split a TREC line at every space and tab"
)
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

    # question -> document -> grade, and -> the line it was read from
    grades: dict[str, dict[str, int]] = field(default_factory=dict)
    lines: dict[str, dict[str, int]] = field(default_factory=dict)
    duplicates: list[Duplicate] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    # Whether a line was in TREC layout: its ids are then TREC tokens (`trec_id`-encoded when
    # Goldset wrote them), not ids as they are.
    trec_layout: bool = False

    @property
    def qrels(self) -> list[Qrel]:
        """Every judgment, questions in file order, each question's documents in file order."""
        return [
            Qrel(question_id, doc_id, grade, self.lines[question_id][doc_id])
            for question_id, documents in self.grades.items()
            for doc_id, grade in documents.items()
        ]


def is_grade(text: str) -> bool:
    return _GRADE.fullmatch(text) is not None and int(text) in GRADES


def grade_problem(grade: int) -> str:
    """Why a whole-number grade cannot be used ("" when it can)."""
    if grade in GRADES:
        return ""
    return f"grade {grade} is out of range (a qrels grade is a whole number from -10 to 10)"


def _cells(line: str) -> list[str]:
    """A line with tabs: BEIR TSV's cells, read as BEIR's loader reads them (``csv`` with tabs:
    spaces kept, a cell starting with a quote is quoted) when every one holds something, else
    the words of the line."""
    cells = next(csv.reader([line], delimiter="\t"), []) if '"' in line else line.split("\t")
    if not cells or not all(cell.strip() for cell in cells):
        return line.split()
    cells[-1] = cells[-1].strip()  # the grade, which int() reads around white space too
    return cells


def read_qrels(text: str) -> QrelsFile:
    """Every judgment of a TREC or BEIR qrels text, its repeats and its problems (in file
    order). Blank lines and ``#`` comments are skipped, as elsewhere."""
    # Written for speed: a qrels file of 10,000 questions is 300,000 lines. A question's
    # lines usually follow one another, so its dicts are reused without a lookup.
    scanned = None if trecscan is None else trecscan.scan_qrels(text)
    if scanned is not None:  # TREC lines only, no repeat, no problem: read in C, same result
        grades, lines, trec_layout = scanned
        return QrelsFile(grades=grades, lines=lines, trec_layout=trec_layout)
    result = QrelsFile()
    grades_of, lines_of = result.grades, result.lines
    grade_values: dict[str, int] = {}  # the grade texts met so far, checked once each
    current = None
    documents: dict[str, int] = {}
    document_lines: dict[str, int] = {}
    header_allowed = True
    check_spaces = may_hold_other_spaces(text)
    for number, line in enumerate(universal_newlines(text).split("\n"), start=1):
        # Around the fields every reader drops it alike; only inside one do they differ.
        if check_spaces and "\t" not in line and (space := other_space(line.strip())):
            if line.split()[0][0] != "#":
                result.problems.append(LineProblem(number, other_space_problem(space)))
                header_allowed = False
            continue
        fields = _cells(line) if "\t" in line else line.split()
        if len(fields) == 4 and "\t" in line:
            # TREC layout with tabs: every TREC reader splits it at spaces too.
            fields = line.split()
            if len(fields) != 4:
                space = other_space(line.strip())
                problem = other_space_problem(space) if space else TREC_SPACE
                result.problems.append(LineProblem(number, problem))
                header_allowed = False
                continue
        if len(fields) == 4:
            question_id, _, doc_id, grade_text = fields
            result.trec_layout = True
        elif not fields or fields[0][0] == "#":
            continue
        elif len(fields) == 3:
            question_id, doc_id, grade_text = fields
            if header_allowed and _GRADE.fullmatch(grade_text) is None:
                header_allowed = False
                continue  # the BEIR header "query-id corpus-id score"
        else:
            result.problems.append(LineProblem(number, SHAPE))
            header_allowed = False
            continue
        if question_id[0] == "#":
            continue
        header_allowed = False
        grade = grade_values.get(grade_text)
        if grade is None:
            if _GRADE.fullmatch(grade_text) is None:
                result.problems.append(
                    LineProblem(
                        number,
                        f"grade {grade_text!r} is not an integer (a whole number like 0, 1, 2)",
                    )
                )
                continue
            grade = int(grade_text)
            problem = grade_problem(grade)
            if problem:
                result.problems.append(LineProblem(number, problem))
                continue
            grade_values[grade_text] = grade
        if question_id != current:
            current = question_id
            documents = grades_of.get(question_id)
            if documents is None:
                documents = grades_of[question_id] = {}
                lines_of[question_id] = {}
            document_lines = lines_of[question_id]
        before = documents.get(doc_id)
        if before is None:
            documents[doc_id] = grade
            document_lines[doc_id] = number
        elif before == grade:
            result.duplicates.append(Duplicate(number, document_lines[doc_id]))
        else:
            result.problems.append(
                LineProblem(
                    number,
                    f"document {doc_id!r} of question {question_id!r} is graded {grade} here "
                    f"and {before} on line {document_lines[doc_id]}: give one grade",
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
