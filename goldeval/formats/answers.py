"""The answer-run format: a team's generated answers, read here and nowhere else.

Django-free, so ``python -m goldeval answers`` in a team's CI and the app's answer import read
a file alike: the same answers and the same problems, each with its line. The CLI stops at the
first problem; the app lists them all and stores nothing. It lives in ``labelling`` (not
``evaluation``) because the answer review is labelling work and ``labelling`` may not import
``evaluation``; ``goldeval.formats.questions`` (question files) sits here for the same reason.

One JSON object a line, one line per question::

    {"question_id": "q1", "answer": "text", "refused": false,
     "sentences": [{"start": 0, "end": 24, "citations": [{"doc_id": "d1", "start"?, "end"?}]}],
     "context": [{"doc_id": "d1", "start"?, "end"?}], "system": "rag", "version": "3"}

- ``refused`` is required (true or false): Goldset never guesses a refusal from the wording.
- ``sentences`` may be omitted: the answer is then split into sentences (`split_sentences`),
  without citations; a refused answer is not split (its "I don't know." states nothing to grade
  as a claim), so it has no sentences unless they are given. Offsets are Python ``str``
  indices into ``answer``, half-open ``[start, end)``;
  sentences are given in order and do not overlap.
- ``context`` is what was sent to the model, in order (its first passage is rank 1).
- A citation or context passage without offsets is its whole document.

Blank lines and ``#`` comments are skipped, as in run files.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Container, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from goldeval.formats.runfiles import Passage
from goldeval.formats.textfiles import LineProblem, decode_utf8, json_lines, text_problem

# An answer is a paragraph or a page; this much is a mistake (a document pasted as an answer).
MAX_ANSWER = 100_000
MAX_LABEL = 200  # system and version

# Sentence-ending punctuation and any closing quotes or brackets after it (`split_sentences`).
_END = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*")


@dataclass(frozen=True, slots=True)
class Sentence:
    start: int
    end: int
    citations: tuple[Passage, ...] = ()


@dataclass(frozen=True, slots=True)
class Answer:
    question_id: str
    text: str
    refused: bool
    sentences: tuple[Sentence, ...]
    context: tuple[Passage, ...] = ()
    system: str = ""
    version: str = ""
    line: int = 0
    # False when Goldset split the answer itself (the file gave no sentences).
    sentences_given: bool = True

    @property
    def citations(self) -> int:
        return sum(len(sentence.citations) for sentence in self.sentences)

    def key(self) -> str:
        """What the answer says, as a checksum: a human grading of one answer applies to
        another only when the two have the same key (text, refusal, sentences with their
        citations, context)."""
        return answer_key(self)


@dataclass(slots=True)
class AnswerFile:
    """What an answer file holds. Its answers are the whole file only when ``problems`` is
    empty."""

    answers: dict[str, Answer] = field(default_factory=dict)
    problems: list[LineProblem] = field(default_factory=list)


def answer_key(answer: Answer) -> str:
    canonical = json.dumps(
        [
            answer.text,
            answer.refused,
            [[s.start, s.end, [list(c) for c in s.citations]] for s in answer.sentences],
            [list(p) for p in answer.context],
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def split_sentences(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of each sentence of ``text``, trimmed of surrounding white space.

    A sentence ends after ``.``, ``!``, ``?`` or ``…`` (with any closing quotes or brackets)
    when white space and then anything but a lower-case letter follows, and at every line
    break. Deliberately simple: it is a default the labeller can refine by splitting a claim,
    never the last word.
    """
    cuts: list[int] = []
    for match in _END.finditer(text):
        end = match.end()
        rest = text[end:]
        stripped = rest.lstrip()
        if not stripped or len(stripped) < len(rest) and not stripped[0].islower():
            cuts.append(end)
    position = 0
    pieces: list[tuple[int, int]] = []
    for cut in [*cuts, len(text)]:
        if cut <= position:
            continue
        for line_start, line_end in _lines(text, position, cut):
            pieces.append((line_start, line_end))
        position = cut
    sentences = []
    for start, end in pieces:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            sentences.append((start, end))
    return sentences


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    pieces = []
    while True:
        newline = text.find("\n", start, end)
        if newline == -1:
            pieces.append((start, end))
            return pieces
        pieces.append((start, newline))
        start = newline + 1


def read_answer_file(data: bytes | str) -> AnswerFile:
    """Every answer and every problem (in file order) of an answer run. Raises
    `goldeval.formats.textfiles.NotUTF8Error` for bytes that are not UTF-8."""
    result = AnswerFile()
    problems = result.problems
    seen: dict[str, int] = {}  # a question's first line, even when that line is refused
    lines = 0
    for number, record in json_lines(decode_utf8(data), comments=True):
        lines += 1
        if isinstance(record, LineProblem):
            problems.append(record)
            continue
        question_id = record.get("question_id")
        if _is_int(question_id):
            question_id = str(question_id)
        if not isinstance(question_id, str) or not question_id:
            problems.append(LineProblem(number, "question_id must be a non-empty string"))
            continue
        if problem := text_problem(question_id, max_length=255, identifier=True):
            problems.append(LineProblem(number, f"question_id {problem}"))
            continue
        if question_id in seen:
            problems.append(
                LineProblem(
                    number, f"question {question_id!r} already given on line {seen[question_id]}"
                )
            )
            continue
        seen[question_id] = number
        answer, problem = _read_answer(record, question_id=question_id, line=number)
        if problem:
            problems.append(LineProblem(number, f"question {question_id!r}: {problem}"))
        else:
            result.answers[question_id] = answer
    if lines == 0:
        problems.append(LineProblem(1, "the file holds no answers (one JSON object a line)"))
    return result


def _read_answer(record: dict[str, Any], *, question_id: str, line: int) -> tuple[Answer, str]:
    """The answer of one line, or why it cannot be read ("" when it can)."""
    text = record.get("answer")
    if not isinstance(text, str):
        return _NO_ANSWER, 'answer must be a string (the answer\'s text; "" for none)'
    if problem := text_problem(text, max_length=MAX_ANSWER):
        return _NO_ANSWER, f"answer {problem}"
    if "refused" not in record:
        return _NO_ANSWER, "refused is required (true or false)"
    refused = record["refused"]
    if not isinstance(refused, bool):
        return _NO_ANSWER, "refused must be true or false"
    labels = {}
    for name in ("system", "version"):
        value = record.get(name, "")
        if _is_int(value):
            value = str(value)
        if value is None:
            value = ""
        if not isinstance(value, str):
            return _NO_ANSWER, f"{name} must be a string"
        if problem := text_problem(value, max_length=MAX_LABEL):
            return _NO_ANSWER, f"{name} {problem}"
        labels[name] = value
    raw_context = record.get("context", [])
    if raw_context is None:
        raw_context = []
    if not isinstance(raw_context, list):
        return _NO_ANSWER, "context must be a list of passages"
    context = []
    for rank, item in enumerate(raw_context, start=1):
        passage, problem = _read_passage(item)
        if problem:
            return _NO_ANSWER, f"context passage {rank} {problem}"
        context.append(passage)
    raw_sentences = record.get("sentences")
    if raw_sentences is None:
        # A refusal states nothing: splitting it would make reviewers grade it as claims.
        spans = [] if refused else split_sentences(text)
        sentences = tuple(Sentence(start, end) for start, end in spans)
        given = False
    else:
        if not isinstance(raw_sentences, list):
            return _NO_ANSWER, "sentences must be a list (or left out, to split the answer)"
        read, problem = _read_sentences(raw_sentences, length=len(text))
        if problem:
            return _NO_ANSWER, problem
        sentences, given = read, True
    return (
        Answer(
            question_id=question_id,
            text=text,
            refused=refused,
            sentences=sentences,
            context=tuple(context),
            line=line,
            sentences_given=given,
            **labels,
        ),
        "",
    )


def _read_sentences(raw: list[Any], *, length: int) -> tuple[tuple[Sentence, ...], str]:
    sentences: list[Sentence] = []
    previous_end = 0
    for number, item in enumerate(raw, start=1):
        where = f"sentence {number}"
        if not isinstance(item, dict):
            return (), f"{where} must be a JSON object"
        start, end = item.get("start"), item.get("end")
        if not (_is_int(start) and _is_int(end)):
            return (), f"{where} needs whole-number start and end (offsets into the answer)"
        if not 0 <= start < end:
            return (), f"{where} has an empty or negative range [{start}, {end})"
        if end > length:
            return (), (f"{where} [{start}, {end}) is outside the answer ({length} characters)")
        if start < previous_end:
            return (), (
                f"{where} [{start}, {end}) overlaps or comes before sentence {number - 1}; "
                "give sentences in order, without overlaps"
            )
        previous_end = end
        raw_citations = item.get("citations", [])
        if raw_citations is None:
            raw_citations = []
        if not isinstance(raw_citations, list):
            return (), f"{where}: citations must be a list"
        citations = []
        for index, citation in enumerate(raw_citations, start=1):
            passage, problem = _read_passage(citation)
            if problem:
                return (), f"{where}, citation {index} {problem}"
            citations.append(passage)
        sentences.append(Sentence(start, end, tuple(citations)))
    return tuple(sentences), ""


def _read_passage(item: Any) -> tuple[Passage, str]:
    if not isinstance(item, dict):
        return _NO_PASSAGE, "must be a JSON object with a doc_id"
    doc_id = item.get("doc_id")
    if _is_int(doc_id):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id:
        return _NO_PASSAGE, "needs a doc_id"
    if problem := text_problem(doc_id, max_length=255, identifier=True):
        return _NO_PASSAGE, f"has a doc_id that {problem}"
    start, end = item.get("start"), item.get("end")
    if start is None and end is None:
        return Passage(doc_id), ""
    if start is None or end is None:
        return _NO_PASSAGE, f"({doc_id}) needs both start and end, or neither"
    if not (_is_int(start) and _is_int(end) and 0 <= start < end):
        return _NO_PASSAGE, f"({doc_id}) needs whole-number offsets with 0 <= start < end"
    return Passage(doc_id, start, end), ""


def check_answers(
    answers: Mapping[str, Answer],
    *,
    question_ids: set[str] | Mapping[str, Any] | None = None,
    document_lengths: Mapping[str, int] | None = None,
    unknown_documents: Container[str] = (),
) -> list[LineProblem]:
    """Problems of an answer run against what it answers: questions not in the set, and, when
    the documents' lengths are known, documents that do not exist or passages past their end.
    In file order. Passages of ``unknown_documents`` (counted and named apart, by
    `goldeval.formats.doc_ids`) are no line's problem."""
    problems: list[LineProblem] = []
    for answer in sorted(answers.values(), key=lambda a: a.line):
        if question_ids is not None and answer.question_id not in question_ids:
            problems.append(
                LineProblem(
                    answer.line, f"question {answer.question_id!r} is not in the question set"
                )
            )
            continue
        if document_lengths is None:
            continue
        passages = [(f"context passage {rank}", p) for rank, p in enumerate(answer.context, 1)]
        for number, sentence in enumerate(answer.sentences, start=1):
            passages += [
                (f"sentence {number}, citation {index}", p)
                for index, p in enumerate(sentence.citations, start=1)
            ]
        for where, passage in passages:
            if passage.doc_id in unknown_documents:
                continue
            length = document_lengths.get(passage.doc_id)
            if length is None:
                problem = f"{where} names document {passage.doc_id!r}, which is not in the corpus"
            elif passage.end is not None and passage.end > length:
                problem = (
                    f"{where} [{passage.start}, {passage.end}) is outside document "
                    f"{passage.doc_id!r} ({length} characters)"
                )
            else:
                continue
            problems.append(LineProblem(answer.line, f"question {answer.question_id!r}: {problem}"))
            break
    return problems


def answer_doc_ids(answers: Mapping[str, Answer]) -> Iterator[str]:
    """Every document id the answers' context passages and citations name, in file order."""
    for answer in sorted(answers.values(), key=lambda a: a.line):
        for passage in answer.context:
            yield passage.doc_id
        for sentence in answer.sentences:
            for passage in sentence.citations:
                yield passage.doc_id


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_NO_ANSWER = Answer(question_id="", text="", refused=False, sentences=())
_NO_PASSAGE = Passage("")


def write_answer_file(answers: list[Answer]) -> bytes:
    """An answer run as the file this module reads back to the same answers (and keys)."""

    def passage(p: Passage) -> dict[str, Any]:
        return (
            {"doc_id": p.doc_id}
            if p.start is None
            else {"doc_id": p.doc_id, "start": p.start, "end": p.end}
        )

    lines = []
    for answer in answers:
        record: dict[str, Any] = {
            "question_id": answer.question_id,
            "answer": answer.text,
            "refused": answer.refused,
            "sentences": [
                {"start": s.start, "end": s.end, "citations": [passage(c) for c in s.citations]}
                for s in answer.sentences
            ],
            "context": [passage(p) for p in answer.context],
        }
        if answer.system:
            record["system"] = answer.system
        if answer.version:
            record["version"] = answer.version
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    return "".join(lines).encode("utf-8")
