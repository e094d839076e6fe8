"""The gold set's bundle, written: every file of the export from plain data, without Django.

The bundle is the contract with other tools (issue 6): ``gold.jsonl``, ``corpus.jsonl``,
``manifest.json`` (every other file with its SHA-256 and size), document-level ``qrels.trec``,
``qrels-<scheme>.trec`` per chunking scheme, ``beir/``, ``judgements.csv`` and (since issue 17,
optional) ``documents.jsonl``: every document's newest version as of finalising, without its
text, for the index health checks, and (issue 35, when a judge graded the set's candidates)
``ai-judgements.jsonl``: an LLM judge's grades, votes apart from the gold
(`goldeval.formats.ai_judgements`). `goldeval.formats.gold`
reads it back; `evaluation.services.gold_sets` gathers the data from the database, calls
`build_bundle` and stores what it returns. Byte for byte, the same input gives the same files.

Ids are written so that each file reads back exactly as the tools that read it read it:

- JSON files (``gold.jsonl``, ``corpus.jsonl``, ``beir/*.jsonl``) hold every id as it is.
- ``beir/qrels/test.tsv`` holds every id as it is too, read by BEIR's loader (``csv`` with tabs)
  and `goldeval.formats.qrels` alike: a space is no separator there, and the one cell that
  needs quoting (one holding a ``"``) is quoted as ``csv`` quotes it.
- TREC files (``qrels.trec``, ``qrels-<scheme>.trec``) are split on white space by every reader
  (trec_eval, pytrec_eval, ir_measures, ranx), so there an id's white space and ``%`` are
  percent-encoded as UTF-8 (`trec_id`: ``HR policy.txt`` is ``HR%20policy.txt``): every reader
  gets the same token, and a TREC run naming the document writes the same.
- An id holding a tab or a line break, or starting or ending with white space, cannot be
  written so that every reader gets it back: `build_bundle` refuses it (`BundleError`).
  Imports refuse such ids already (`goldeval.formats.textfiles.text_problem`).
- An id starting like a spreadsheet formula (``=``, ``+``, ``-``, ``@``) is written as it is in
  every file above, since an escape would change the id the evaluation tools read; only
  ``judgements.csv``, the file meant for spreadsheets, escapes its cells (`spreadsheet_safe`).
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from goldeval.formats.ai_judgements import AI_JUDGEMENTS_FILE, AIJudgement, record
from goldeval.formats.answer_gold import ANSWERS_GOLD_FILE
from goldeval.formats.gold import (
    CORPUS_FILE,
    DOCUMENTS_FILE,
    GOLD_FILE,
    MANIFEST_FILE,
    DocumentState,
)
from goldeval.formats.pool import POOL_FILE, REUSABILITY_FILE
from goldeval.formats.runfiles import trec_id
from goldeval.formats.textfiles import text_problem
from goldeval.text.chunking import ChunkSpec, chunk_spans
from goldeval.text.spans import overlaps

BUNDLE_FORMAT = "goldset-bundle"
BUNDLE_FORMAT_VERSION = 1
QRELS_FILE = "qrels.trec"
JUDGEMENTS_FILE = "judgements.csv"
BEIR_CORPUS, BEIR_QUERIES, BEIR_QRELS = (
    "beir/corpus.jsonl",
    "beir/queries.jsonl",
    "beir/qrels/test.tsv",
)


class BundleError(ValueError):
    """The data cannot be written as a bundle every reader reads back exactly."""


# Spreadsheets run a cell that starts with one of these as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
JUDGEMENT_COLUMNS = [
    "question_id",
    "pool",
    "kind",
    "source",
    "labeller",
    "doc_id",
    "version",
    "start",
    "end",
    "grade",
    "outcome",
    "spans",
    "note",
    "guideline_version",
    "recorded_at",
]

Judged = tuple[str, int, int, int]  # doc_id, version, start, end


class SpanRecord(Protocol):
    """A gold span as the gold rule froze it (`labelling.services.gold.GoldSpanRow`)."""

    @property
    def doc_id(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def grade(self) -> int: ...
    @property
    def quote(self) -> str: ...


class QuestionRecord(Protocol):
    """A question as the gold rule froze it (`labelling.services.gold.FrozenQuestion`)."""

    @property
    def question_id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def answerable(self) -> bool: ...
    @property
    def spans(self) -> Sequence[SpanRecord]: ...
    @property
    def judged(self) -> Sequence[Judged]: ...


@dataclass(frozen=True)
class CorpusVersion:
    doc_id: str
    version: int
    title: str
    text: str
    content_hash: str
    access_groups: tuple[str, ...] = ()  # names, sorted
    # A planted document permission replays look for; flagged so nothing counts it as content.
    canary: bool = False


@dataclass(frozen=True)
class Vote:
    """One row of judgements.csv: a judgement, a verdict or a lead's resolution."""

    question_id: str
    pool: str
    kind: str  # "judgement", "verdict" or "resolution"
    source: str
    labeller: str
    recorded_at: datetime.datetime
    doc_id: str = ""
    version: int | None = None
    start: int | None = None
    end: int | None = None
    grade: int | None = None
    outcome: str = ""
    spans: tuple[tuple[int, int], ...] | None = None  # None: the row is not about a passage
    note: str = ""
    guideline_version: int | None = None


@dataclass(frozen=True)
class BundleInfo:
    project: str  # the project's slug
    question_set: str
    number: int
    created_by: str | None
    created_at: datetime.datetime
    min_span_f1: float
    guideline_versions: Sequence[int] = ()
    # Questions promoted from production samples: {question_id, trace_id, sample, rule, ...}.
    production: Sequence[Mapping[str, Any]] = ()
    # Gold spans on documents that changed after they were marked, by how the gold keeps them:
    # {"spans", "moved", "facts_changed", "re_marked", "not_rechecked", and "fact_links":
    # reference facts' links to an older version}; written to the manifest as
    # "spans_on_changed_documents" when any is not zero.
    changed_spans: Mapping[str, int] | None = None
    # Whether the gold rule counted the AI judge's vote ({"counted": false}, or true with the
    # judge, "votes_counted", "models" and "prompt_versions"); written to the manifest as
    # "ai_judge_vote" when given (a set no judge voted on says nothing).
    ai_judge_vote: Mapping[str, Any] | None = None


@dataclass
class Bundle:
    files: dict[str, bytes]  # path inside the bundle folder -> content, manifest.json included
    manifest: dict[str, Any]

    @property
    def checksum(self) -> str:
        return sha256(self.files[MANIFEST_FILE])


def build_bundle(
    *,
    info: BundleInfo,
    questions: Sequence[QuestionRecord],
    corpus: Sequence[CorpusVersion],
    texts: Mapping[tuple[str, int], str],
    schemes: Mapping[str, ChunkSpec],
    votes: Sequence[Vote],
    answers_gold: Sequence[dict[str, Any]] = (),
    documents: Sequence[DocumentState] = (),
    pool: Sequence[dict[str, Any]] = (),
    reusability: Mapping[str, Any] | None = None,
    ai_judgements: Sequence[AIJudgement] = (),
) -> Bundle:
    """Every file of a gold set's bundle (nothing is written anywhere).

    ``corpus``: the versions the bundle carries, by doc_id then version (the last one of a
    document is the one BEIR's corpus gets). ``texts``: the text of every version a span or
    judged passage points at, by (doc_id, version), for the chunk-level qrels; a judged passage
    of an unknown version is left out of them. ``schemes``: by name, in file order. ``pool``:
    the lines of pool.jsonl (`goldeval.formats.pool`), ``reusability`` the pool-bias report
    (`goldeval.scoring.reusability.report_content`); ``ai_judgements`` an LLM judge's grades,
    written to ai-judgements.jsonl (`goldeval.formats.ai_judgements`), never into gold.jsonl or
    the qrels; each file only when given.
    """
    _check_ids(questions, corpus)
    files: dict[str, bytes] = {
        GOLD_FILE: _jsonl(_gold_line(question) for question in questions),
        CORPUS_FILE: _jsonl(
            {
                "doc_id": version.doc_id,
                "version": version.version,
                "title": version.title,
                "text": version.text,
                "access_groups": list(version.access_groups),
                **({"canary": True} if version.canary else {}),
            }
            for version in corpus
        ),
    }
    document_grades = [_document_grades(question) for question in questions]
    files[QRELS_FILE] = _text(
        f"{trec_id(question.question_id)} 0 {trec_id(doc_id)} {grade}\n"
        for question, grades in zip(questions, document_grades, strict=True)
        for doc_id, grade in grades.items()
    )
    for name, spec in schemes.items():
        files[f"qrels-{name}.trec"] = _chunk_qrels(spec, questions, texts=texts)
    newest = {version.doc_id: version for version in corpus}
    files[BEIR_CORPUS] = _jsonl(
        {"_id": doc_id, "title": version.title, "text": version.text}
        for doc_id, version in newest.items()
        if not version.canary
    )
    files[BEIR_QUERIES] = _jsonl(
        {"_id": question.question_id, "text": question.text} for question in questions
    )
    files[BEIR_QRELS] = _tsv(
        [("query-id", "corpus-id", "score")]
        + [
            (question.question_id, doc_id, grade)
            for question, grades in zip(questions, document_grades, strict=True)
            for doc_id, grade in grades.items()
        ]
    )
    files[JUDGEMENTS_FILE] = _csv(votes)
    if answers_gold:
        # Reference facts and agreed answer grades (`goldeval.formats.answer_gold` reads them back).
        files[ANSWERS_GOLD_FILE] = _jsonl(answers_gold)
    if documents:
        files[DOCUMENTS_FILE] = _jsonl(_document_line(document) for document in documents)
    if pool:
        files[POOL_FILE] = _jsonl(pool)
    if ai_judgements:
        files[AI_JUDGEMENTS_FILE] = _jsonl(record(judgement) for judgement in ai_judgements)
    if reusability is not None:
        files[REUSABILITY_FILE] = (
            json.dumps(reusability, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
        ).encode()

    answerable = sum(1 for q in questions if q.answerable)
    manifest: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_FORMAT_VERSION,
        "project": info.project,
        "question_set": info.question_set,
        "gold_set": f"v{info.number}",
        "number": info.number,
        "created_by": info.created_by,
        "created_at": info.created_at.isoformat(),
        "questions": len(questions),
        "answerable": answerable,
        "unanswerable": len(questions) - answerable,
        "answerable_without_relevant_spans": sum(
            1 for q in questions if q.answerable and not any(s.grade >= 1 for s in q.spans)
        ),
        "spans": sum(len(q.spans) for q in questions),
        "judged_passages": sum(len(q.judged) for q in questions),
        "votes": len(votes),
        "guideline_versions": list(info.guideline_versions),
        "min_span_f1": info.min_span_f1,
        "chunking_schemes": [
            {
                "name": name,
                "strategy": spec.strategy,
                "unit": spec.unit,
                "size": spec.size,
                "overlap": spec.overlap,
                "qrels": f"qrels-{name}.trec",
            }
            for name, spec in schemes.items()
        ],
        "corpus": {
            "documents": len(newest),
            "versions": len(corpus),
            "fingerprint": corpus_fingerprint(
                (v.doc_id, v.version, v.content_hash) for v in corpus
            ),
            **(
                {"canaries": sum(1 for v in newest.values() if v.canary)}
                if any(v.canary for v in newest.values())
                else {}
            ),
        },
        "files": {
            name: {"sha256": sha256(content), "bytes": len(content)}
            for name, content in sorted(files.items())
        },
    }
    if ai_judgements:
        # Votes, not gold: counted here so nobody mistakes the file for part of the gold.
        manifest["ai_judgements"] = {
            "file": AI_JUDGEMENTS_FILE,
            "judgements": len(ai_judgements),
            "judges": sorted({judgement.judge for judgement in ai_judgements}),
            "in_gold": False,
        }
    if info.production:
        manifest["production_questions"] = [dict(item) for item in info.production]
    if info.changed_spans and any(info.changed_spans.values()):
        manifest["spans_on_changed_documents"] = dict(info.changed_spans)
    if info.ai_judge_vote is not None:
        manifest["ai_judge_vote"] = dict(info.ai_judge_vote)
    files[MANIFEST_FILE] = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode()
    return Bundle(files=files, manifest=manifest)


def corpus_fingerprint(versions: Iterable[tuple[str, int, str]]) -> str:
    """SHA-256 over one ``doc_id<TAB>version<TAB>content_hash<LF>`` line per version, sorted."""
    lines = sorted(
        f"{doc_id}\t{version}\t{content_hash}\n" for doc_id, version, content_hash in versions
    )
    return sha256("".join(lines).encode("utf-8"))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_ids(questions: Sequence[QuestionRecord], corpus: Sequence[CorpusVersion]) -> None:
    """Refuse an id no file format here can carry exactly (a tab, a line break, white space at
    either end), naming it; imports refuse such ids, so only older data can hold one."""
    ids = [("question id", question.question_id) for question in questions]
    ids += [("doc id", version.doc_id) for version in corpus]
    for question in questions:
        ids += [("doc id", span.doc_id) for span in question.spans]
        ids += [("doc id", doc_id) for doc_id, *_ in question.judged]
    for what, identifier in ids:
        problem = text_problem(identifier, identifier=True)
        if problem:
            raise BundleError(
                f"The {what} {identifier!r} {problem}; rename it before exporting the gold set."
            )


def spreadsheet_safe(value: Any) -> str:
    """A CSV cell a spreadsheet will not run: text starting like a formula gets an apostrophe."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _gold_line(question: QuestionRecord) -> dict[str, Any]:
    return {
        "question_id": question.question_id,
        "question": question.text,
        "answerable": question.answerable,
        "spans": [
            {
                "doc_id": span.doc_id,
                "start": span.start,
                "end": span.end,
                "grade": span.grade,
                "version": span.version,
                "quote": span.quote,
            }
            for span in question.spans
        ],
        "judged": [
            {"doc_id": doc_id, "start": start, "end": end, "version": version}
            for doc_id, version, start, end in question.judged
        ],
    }


def _document_line(document: DocumentState) -> dict[str, Any]:
    modified = document.source_modified_at
    return {
        "doc_id": document.doc_id,
        "version": document.version,
        "content_hash": document.content_hash,
        "source_modified_at": modified.isoformat() if modified is not None else None,
        "searchable": document.searchable,
        "duplicate_group": document.duplicate_group,
        "extraction_flags": list(document.extraction_flags),
        **({"canary": True} if document.canary else {}),
    }


def _document_grades(question: QuestionRecord) -> dict[str, int]:
    """Document-level grade: the highest grade of the question's spans in the document; a
    document that was judged but holds no gold span is 0 (judged, not relevant)."""
    grades: dict[str, int] = {}
    for doc_id, *_ in question.judged:
        grades.setdefault(doc_id, 0)
    for span in question.spans:
        grades[span.doc_id] = max(grades.get(span.doc_id, 0), span.grade)
    return dict(sorted(grades.items()))


def _chunk_qrels(
    spec: ChunkSpec,
    questions: Sequence[QuestionRecord],
    *,
    texts: Mapping[tuple[str, int], str],
) -> bytes:
    """Chunk-level qrels: chunk ``doc_id#ordinal`` of the span's own version under this scheme;
    a chunk's grade is the highest grade of the spans it overlaps, 0 for a chunk that only
    overlaps judged passages."""
    chunks_of: dict[tuple[str, int], list[tuple[int, int]]] = {}

    def overlapping(doc_id: str, version: int, start: int, end: int) -> list[int]:
        key = (doc_id, version)
        if key not in chunks_of:
            chunks_of[key] = chunk_spans(texts[key], spec)
        return [i for i, chunk in enumerate(chunks_of[key]) if overlaps(chunk, (start, end))]

    lines = []
    for question in questions:
        grades: dict[tuple[str, int], int] = {}
        for doc_id, version, start, end in question.judged:
            if (doc_id, version) in texts:
                for ordinal in overlapping(doc_id, version, start, end):
                    grades.setdefault((doc_id, ordinal), 0)
        for span in question.spans:
            for ordinal in overlapping(span.doc_id, span.version, span.start, span.end):
                key = (span.doc_id, ordinal)
                grades[key] = max(grades.get(key, 0), span.grade)
        qid = trec_id(question.question_id)
        lines += [
            f"{qid} 0 {trec_id(f'{doc_id}#{ordinal}')} {grade}\n"
            for (doc_id, ordinal), grade in sorted(grades.items())
        ]
    return _text(lines)


def _csv(votes: Sequence[Vote]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(JUDGEMENT_COLUMNS)
    for vote in votes:
        writer.writerow([spreadsheet_safe(cell) for cell in _vote_cells(vote)])
    return buffer.getvalue().encode("utf-8")


def _vote_cells(vote: Vote) -> list[Any]:
    spans = None
    if vote.spans is not None:
        spans = json.dumps([[start, end] for start, end in sorted(vote.spans)])
    return [
        vote.question_id,
        vote.pool,
        vote.kind,
        vote.source,
        vote.labeller,
        vote.doc_id,
        vote.version,
        vote.start,
        vote.end,
        vote.grade,
        vote.outcome,
        spans,
        vote.note,
        vote.guideline_version,
        vote.recorded_at.isoformat(),
    ]


def _tsv(rows: Iterable[tuple[Any, ...]]) -> bytes:
    """Tab-separated lines as BEIR's loader reads them (``csv`` with tabs, minimal quoting)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


def _jsonl(records: Iterable[dict[str, Any]]) -> bytes:
    return _text(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def _text(lines: Iterable[str]) -> bytes:
    return "".join(lines).encode("utf-8")
