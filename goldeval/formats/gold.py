"""Load a gold set: an exported bundle folder, a gold JSONL file, or document-level qrels.

Everything here is plain Python so RAG teams can score runs in their own CI without Django.
Offsets are Python ``str`` indices into a document version's text, half-open ``[start, end)``;
a span without offsets covers the whole document (document-level relevance).
"""

from __future__ import annotations

import datetime
import json
import zipfile
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from goldeval.formats.qrels import GRADES, duplicates_warning, read_qrels
from goldeval.formats.runfiles import Passage, whole_document
from goldeval.formats.textfiles import (
    LineProblem,
    NotUTF8Error,
    cyclic_gc_paused,
    decode_utf8,
    first_line,
    json_lines,
)
from goldeval.text.anchoring import SIMILARITY_FLOOR, locate, on_word_edges
from goldeval.text.worddiff import FACTS_CHANGED, outcome, plain, word_diff

GOLD_FILE = "gold.jsonl"
CORPUS_FILE = "corpus.jsonl"
MANIFEST_FILE = "manifest.json"
# Every document's newest version without its text (issue 17; older bundles lack it).
DOCUMENTS_FILE = "documents.jsonl"
# What a bundle is read from; its other files (judgements, agreement) are for people.
READ_FILES = (GOLD_FILE, CORPUS_FILE, MANIFEST_FILE, DOCUMENTS_FILE)
# A zipped bundle is read in memory; its members may not unpack to more than this in all,
# whatever their headers claim, so a zip bomb stops with a message instead of eating memory.
MAX_ZIP_BYTES = 1 << 30

# A span is evidence: its grade says how relevant, never "pooled, unjudged" (qrels' negative
# grades).
SPAN_GRADES = range(0, GRADES.stop)
# A fuzzy re-anchoring below this similarity is more likely a different passage than an edited one
# (`goldeval.text.anchoring` documents the measure).
FUZZY_MIN_RATIO = SIMILARITY_FLOOR


class EvaluationInputError(Exception):
    """A gold or run file that cannot be used, with the place to look at."""

    def __init__(self, message: str, *, path: Path | str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)


class GoldFormatError(EvaluationInputError):
    """The gold set is malformed or inconsistent."""


class GoldSpan(NamedTuple):
    """A tuple, not a dataclass: a large qrels file makes hundreds of thousands of them, and a
    tuple is made several times faster (immutable and hashable alike)."""

    doc_id: str
    start: int | None
    end: int | None
    grade: int
    version: int | None = None
    quote: str | None = None

    @property
    def whole_document(self) -> bool:
        return self.start is None


@dataclass(frozen=True, slots=True)
class GoldQuestion:
    question_id: str
    question: str
    answerable: bool
    spans: tuple[GoldSpan, ...]
    # Passages labellers looked at (the pool); gold spans count as judged too.
    judged: tuple[Passage, ...] = ()
    # Passages in the pool that were left unjudged on purpose (a qrels grade below 0, as
    # trec_eval reads it: sampled pools, infAP). Not judged; infAP tells them from passages
    # outside the pool (`goldeval.scoring.incomplete`).
    pooled_unjudged: tuple[Passage, ...] = ()


@dataclass(frozen=True, slots=True)
class CorpusDocument:
    doc_id: str
    version: int | None
    title: str
    text: str
    access_groups: tuple[str, ...] = ()
    # A planted restricted document (permission replays): never counted as content.
    canary: bool = False


@dataclass(frozen=True, slots=True)
class DocumentState:
    """A document as the index health checks compare an index with: its newest version
    (``documents.jsonl``, written by `goldeval.formats.bundle`)."""

    doc_id: str
    version: int
    content_hash: str
    source_modified_at: datetime.datetime | None
    # Whether runs may return it: quality accepted, and not a hidden near-duplicate.
    searchable: bool
    duplicate_group: str | None = None
    extraction_flags: tuple[str, ...] = ()
    canary: bool = False


@dataclass(frozen=True, slots=True)
class UnanchoredSpan:
    """A span whose quote was not found in the newer version of its document."""

    question_id: str
    span: GoldSpan
    corpus_version: int | None


@dataclass(frozen=True, slots=True)
class ChangedWords:
    """A span re-anchored onto the newer version of its document whose words changed there
    ("40 percent" is now "50 percent"): the facts changed, it did not just move. ``span`` is
    as marked (old version and offsets), ``new_quote`` the text it was re-anchored onto."""

    question_id: str
    span: GoldSpan
    corpus_version: int
    new_quote: str


@dataclass(slots=True)
class Gold:
    questions: dict[str, GoldQuestion]
    # Newest version of each document, when the bundle carries corpus.jsonl.
    corpus: dict[str, CorpusDocument] | None = None
    manifest: dict[str, Any] | None = None
    unanchored: list[UnanchoredSpan] = field(default_factory=list)
    # Re-anchored spans whose words changed (a subset of the `reanchored` ones).
    changed_words: list[ChangedWords] = field(default_factory=list)
    # Spans that pointed at an older version and were moved onto the newest one.
    reanchored: int = 0
    source: Path | None = None
    # Every document's newest version, when the bundle carries documents.jsonl.
    documents: dict[str, DocumentState] | None = None
    # What the reader let pass but a user should know (repeated judgments), one line each.
    warnings: list[str] = field(default_factory=list)
    # Whether its doc ids are TREC tokens (read from TREC qrels) rather than ids as they are.
    trec_tokens: bool = False


def load_gold(path: Path | str) -> Gold:
    """Load a bundle folder, a gold JSONL file or a TREC/BEIR qrels file."""
    path = Path(path)
    if path.is_dir():
        if not (path / GOLD_FILE).is_file():
            raise GoldFormatError(f"the bundle folder has no {GOLD_FILE}", path=path)
        files = {name: (path / name).read_bytes() for name in READ_FILES if (path / name).is_file()}
        return _read_bundle(files, folder=path)
    if not path.is_file():
        raise GoldFormatError("no such file or folder", path=path)
    if zipfile.is_zipfile(path):
        return _read_bundle(_zip_members(path), folder=path)
    text = _decode(path.read_bytes(), path=path)
    warnings: list[str] = []
    if first_line(text, comments=True).lstrip().startswith("{"):
        questions = _read_gold_jsonl(text, path=path, warnings=warnings)
        return Gold(questions=questions, source=path, warnings=warnings)
    questions, trec_tokens = _read_qrels(text, path=path, warnings=warnings)
    return Gold(questions=questions, source=path, warnings=warnings, trec_tokens=trec_tokens)


def bundle_file(path: Path | str, name: str) -> bytes | None:
    """One file of a bundle given as its folder or as the zip the page downloads (None when
    the bundle has no such file, or ``path`` is neither): the bundle's optional files
    (pool.jsonl, answers-gold.jsonl) are read from either as `load_gold` reads the rest."""
    path = Path(path)
    if path.is_dir():
        member = path / name
        return member.read_bytes() if member.is_file() else None
    if path.is_file() and zipfile.is_zipfile(path):
        return _zip_members(path, names=(name,)).get(name)
    return None


def _zip_members(path: Path, *, names: Collection[str] = READ_FILES) -> dict[str, bytes]:
    """The bundle files ``names`` of a zipped bundle, as the download page writes it (one top
    folder) or zipped flat; members are read in memory, never extracted, and bounded by
    MAX_ZIP_BYTES."""
    limit = MAX_ZIP_BYTES
    try:
        with zipfile.ZipFile(path) as archive:
            wanted: dict[str, zipfile.ZipInfo] = {}
            for info in archive.infolist():
                parts = info.filename.replace("\\", "/").strip("/").split("/")
                if info.is_dir() or len(parts) > 2 or parts[-1] not in names:
                    continue
                if parts[-1] in wanted:
                    raise GoldFormatError(f"the zip holds more than one {parts[-1]}", path=path)
                wanted[parts[-1]] = info
            files: dict[str, bytes] = {}
            left = limit
            for name, info in wanted.items():
                with archive.open(info) as member:
                    data = member.read(left + 1)
                if len(data) > left:
                    message = f"the zip unpacks to more than {limit:,} bytes; pass the folder"
                    raise GoldFormatError(message, path=path)
                left -= len(data)
                files[name] = data
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError) as error:
        raise GoldFormatError(f"not a readable zip ({error})", path=path) from None
    return files


def read_bundle(files: Mapping[str, bytes], *, source: Path | str | None = None) -> Gold:
    """A bundle given as its files' contents (path inside the bundle -> bytes), as the app
    stores it; read exactly as `load_gold` reads the same files from a folder. ``source``
    names the bundle in errors; without it they name the file inside the bundle."""
    return _read_bundle(files, folder=Path(source) if source is not None else None)


def _read_bundle(files: Mapping[str, bytes], *, folder: Path | None) -> Gold:
    def where(name: str) -> Path:
        return folder / name if folder is not None else Path(name)

    if GOLD_FILE not in files:
        raise GoldFormatError(f"the bundle folder has no {GOLD_FILE}", path=folder)
    gold_path = where(GOLD_FILE)
    warnings: list[str] = []
    questions = _read_gold_jsonl(
        _decode(files[GOLD_FILE], path=gold_path), path=gold_path, warnings=warnings
    )
    manifest = None
    if MANIFEST_FILE in files:
        manifest_path = where(MANIFEST_FILE)
        text = _decode(files[MANIFEST_FILE], path=manifest_path)
        try:
            manifest = json.loads(text)
        except json.JSONDecodeError as error:
            raise GoldFormatError(f"not valid JSON ({error})", path=manifest_path) from None
        except RecursionError:
            message = "not usable JSON (nested too deeply)"
            raise GoldFormatError(message, path=manifest_path) from None
        except ValueError as error:  # e.g. an integer of more than 4,300 digits
            raise GoldFormatError(f"not usable JSON ({error})", path=manifest_path) from None
    gold = Gold(questions=questions, manifest=manifest, source=folder, warnings=warnings)
    if CORPUS_FILE in files:
        corpus_path = where(CORPUS_FILE)
        versions = _read_corpus_versions(
            _decode(files[CORPUS_FILE], path=corpus_path), path=corpus_path
        )
        _check_span_offsets(questions, versions, gold_path=gold_path)
        gold.corpus = {doc_id: by_version[-1] for doc_id, by_version in versions.items()}
        gold.questions, gold.unanchored, gold.reanchored = _reanchor_to_newest(
            questions,
            gold.corpus,
            warnings=gold.warnings,
            changed_words=gold.changed_words,
            versions=versions,
        )
    if DOCUMENTS_FILE in files:
        documents_path = where(DOCUMENTS_FILE)
        gold.documents = _read_documents(
            _decode(files[DOCUMENTS_FILE], path=documents_path), path=documents_path
        )
    return gold


def _read_documents(text: str, *, path: Path) -> dict[str, DocumentState]:
    documents: dict[str, DocumentState] = {}
    for number, record in _objects(text, path=path):
        doc_id = read_doc_id(record, path=path, line=number, error=GoldFormatError)
        version, digest = record.get("version"), record.get("content_hash")
        modified, group = record.get("source_modified_at"), record.get("duplicate_group")
        flags = record.get("extraction_flags") or []
        searchable, canary = record.get("searchable", True), record.get("canary", False)
        if not _is_int(version) or not isinstance(digest, str):
            raise GoldFormatError(
                "version must be an integer, content_hash a string", path=path, line=number
            )
        if not isinstance(searchable, bool) or not isinstance(canary, bool):
            raise GoldFormatError(
                "searchable and canary must be true or false", path=path, line=number
            )
        if not isinstance(flags, list) or not all(isinstance(flag, str) for flag in flags):
            raise GoldFormatError(
                "extraction_flags must be a list of strings", path=path, line=number
            )
        moment = None
        if modified is not None:
            try:
                moment = datetime.datetime.fromisoformat(str(modified))
            except ValueError:
                raise GoldFormatError(
                    f"source_modified_at {modified!r} is not an ISO 8601 time",
                    path=path,
                    line=number,
                ) from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=datetime.UTC)
        documents[doc_id] = DocumentState(
            doc_id=doc_id,
            version=version,
            content_hash=digest,
            source_modified_at=moment,
            searchable=searchable,
            duplicate_group=None if group is None else str(group),
            extraction_flags=tuple(flags),
            canary=canary,
        )
    return documents


# --- reading lines ------------------------------------------------------------------------------


def _decode(data: bytes, *, path: Path) -> str:
    try:
        return decode_utf8(data)
    except NotUTF8Error as error:
        raise GoldFormatError(str(error), path=path) from None


def _objects(text: str, *, path: Path) -> Iterator[tuple[int, dict]]:
    """The JSON objects of a gold or corpus file; the first bad line stops the file."""
    for number, record in json_lines(text, comments=True):
        if isinstance(record, LineProblem):
            raise GoldFormatError(record.message, path=path, line=number)
        yield number, record


def read_offsets(
    record: dict, *, path: Path, line: int, error: type[EvaluationInputError]
) -> tuple[int | None, int | None]:
    """``start``/``end`` of a span or passage: both absent (whole document) or a valid range."""
    start, end = record.get("start"), record.get("end")
    if start is None and end is None:
        return None, None
    if start is None or end is None:
        raise error("give both start and end, or neither", path=path, line=line)
    if not _is_int(start) or not _is_int(end):
        raise error("start and end must be integers", path=path, line=line)
    if not 0 <= start < end:
        raise error(f"empty or negative range [{start}, {end})", path=path, line=line)
    return start, end


def read_doc_id(record: dict, *, path: Path, line: int, error: type[EvaluationInputError]) -> str:
    doc_id = record.get("doc_id")
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id:
        raise error("doc_id must be a non-empty string", path=path, line=line)
    return doc_id


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- gold JSONL ---------------------------------------------------------------------------------


def _read_gold_jsonl(text: str, *, path: Path, warnings: list[str]) -> dict[str, GoldQuestion]:
    questions: dict[str, GoldQuestion] = {}
    first_line: dict[str, int] = {}
    for number, record in _objects(text, path=path):
        question = _parse_question(record, path=path, line=number, warnings=warnings)
        if question.question_id in questions:
            raise GoldFormatError(
                f"question {question.question_id!r} already given on line "
                f"{first_line[question.question_id]}",
                path=path,
                line=number,
            )
        questions[question.question_id] = question
        first_line[question.question_id] = number
    if not questions:
        raise GoldFormatError("no questions found (the file is empty)", path=path)
    return questions


def _parse_question(record: dict, *, path: Path, line: int, warnings: list[str]) -> GoldQuestion:
    question_id = record.get("question_id")
    if _is_int(question_id):
        question_id = str(question_id)
    if not isinstance(question_id, str) or not question_id:
        raise GoldFormatError("question_id must be a non-empty string", path=path, line=line)
    text = record.get("question", "")
    if not isinstance(text, str):
        raise GoldFormatError("question must be a string", path=path, line=line)
    raw_spans = record.get("spans", [])
    raw_judged = record.get("judged", [])
    if not isinstance(raw_spans, list) or not isinstance(raw_judged, list):
        raise GoldFormatError("spans and judged must be lists", path=path, line=line)
    spans = _distinct_spans(
        [_parse_span(item, path=path, line=line) for item in raw_spans],
        question_id=question_id,
        path=path,
        line=line,
        warnings=warnings,
    )
    judged = tuple(_parse_judged(item, path=path, line=line) for item in raw_judged)
    has_relevant = any(span.grade >= 1 for span in spans)
    answerable = record.get("answerable", has_relevant)
    if not isinstance(answerable, bool):
        raise GoldFormatError("answerable must be true or false", path=path, line=line)
    if not answerable and has_relevant:
        raise GoldFormatError(
            f"question {question_id!r} is marked unanswerable but has spans of grade >= 1",
            path=path,
            line=line,
        )
    return GoldQuestion(
        question_id=question_id, question=text, answerable=answerable, spans=spans, judged=judged
    )


def _distinct_spans(
    spans: list[GoldSpan], *, question_id: str, path: Path, line: int, warnings: list[str]
) -> tuple[GoldSpan, ...]:
    """A span repeated with its grade counts once (with a warning); one stretch of a document
    given two grades is an error, as for qrels (`goldeval.formats.qrels`)."""
    kept: dict[tuple[str, int | None, int | None, int | None], tuple[int, GoldSpan]] = {}
    repeats: list[str] = []
    for number, span in enumerate(spans, start=1):
        key = (span.doc_id, span.start, span.end, span.version)
        before = kept.get(key)
        if before is None:
            kept[key] = (number, span)
        elif before[1].grade == span.grade:
            repeats.append(f"span {number} repeats span {before[0]}")
        else:
            where = "the whole document" if span.start is None else f"[{span.start}, {span.end})"
            raise GoldFormatError(
                f"question {question_id!r}: span {number} grades {where} of {span.doc_id!r} "
                f"{span.grade}, span {before[0]} grades it {before[1].grade}: give one grade",
                path=path,
                line=line,
            )
    if repeats:
        warnings.append(
            f"{path}:{line}: question {question_id!r}: {len(repeats)} repeated identical "
            f"span(s) counted once ({', '.join(repeats[:10])})"
        )
        return tuple(span for _, span in kept.values())
    return tuple(spans)


def _parse_span(item: Any, *, path: Path, line: int) -> GoldSpan:
    if not isinstance(item, dict):
        raise GoldFormatError("each span must be a JSON object", path=path, line=line)
    doc_id = read_doc_id(item, path=path, line=line, error=GoldFormatError)
    start, end = read_offsets(item, path=path, line=line, error=GoldFormatError)
    grade = item.get("grade")
    if not _is_int(grade):
        raise GoldFormatError("span grade must be an integer", path=path, line=line)
    if grade not in SPAN_GRADES:
        raise GoldFormatError(
            f"span grade {grade} is out of range (a whole number from 0 to {SPAN_GRADES[-1]})",
            path=path,
            line=line,
        )
    version = item.get("version")
    if version is not None and not _is_int(version):
        raise GoldFormatError("span version must be an integer", path=path, line=line)
    quote = item.get("quote")
    if quote is not None and not isinstance(quote, str):
        raise GoldFormatError("span quote must be a string", path=path, line=line)
    return GoldSpan(
        doc_id=doc_id, start=start, end=end, grade=grade, version=version, quote=quote or None
    )


def _parse_judged(item: Any, *, path: Path, line: int) -> Passage:
    if not isinstance(item, dict):
        raise GoldFormatError("each judged passage must be a JSON object", path=path, line=line)
    doc_id = read_doc_id(item, path=path, line=line, error=GoldFormatError)
    start, end = read_offsets(item, path=path, line=line, error=GoldFormatError)
    return Passage(doc_id, start, end)


# --- qrels --------------------------------------------------------------------------------------


def load_qrels(path: Path | str) -> dict[str, GoldQuestion]:
    """Document-level judgments: TREC ``qid 0 docid grade`` or BEIR TSV with a header.

    Every row with a grade >= 0 is a judged document; rows with grade >= 1 become whole-document
    spans; a row with a negative grade is a document in the pool left unjudged (trec_eval's
    reading), so it is not judged.
    """
    path = Path(path)
    return _read_qrels(_decode(path.read_bytes(), path=path), path=path, warnings=[])[0]


def _read_qrels(
    text: str, *, path: Path, warnings: list[str]
) -> tuple[dict[str, GoldQuestion], bool]:
    """The questions of a qrels text, and whether any line was in TREC layout."""
    with cyclic_gc_paused():
        return _questions_of_qrels(text, path=path, warnings=warnings)


def _questions_of_qrels(
    text: str, *, path: Path, warnings: list[str]
) -> tuple[dict[str, GoldQuestion], bool]:
    read = read_qrels(text)
    if read.problems:
        first = read.problems[0]
        raise GoldFormatError(first.message, path=path, line=first.line)
    if read.duplicates:
        warnings.append(duplicates_warning(read.duplicates, source=str(path)))
    if not read.grades:
        raise GoldFormatError("no judgments found", path=path)
    # Tuples made directly (no NamedTuple constructor): a large qrels file is 300,000 lines.
    make = tuple.__new__
    questions = {}
    for question_id, documents in read.grades.items():
        spans = tuple(
            make(GoldSpan, (doc_id, None, None, grade, None, None))
            for doc_id, grade in documents.items()
            if grade >= 1
        )
        if min(documents.values()) >= 0:  # the usual file: every document judged
            judged, pooled_unjudged = tuple(map(whole_document, documents)), ()
        else:
            judged = tuple(whole_document(doc) for doc, grade in documents.items() if grade >= 0)
            pooled_unjudged = tuple(
                whole_document(doc) for doc, grade in documents.items() if grade < 0
            )
        questions[question_id] = GoldQuestion(
            question_id=question_id,
            question="",
            answerable=bool(spans),
            spans=spans,
            judged=judged,
            pooled_unjudged=pooled_unjudged,
        )
    return questions, read.trec_layout


# --- corpus and re-anchoring --------------------------------------------------------------------


def load_corpus_versions(path: Path) -> dict[str, list[CorpusDocument]]:
    """Every document version in corpus.jsonl, oldest first per doc_id."""
    return _read_corpus_versions(_decode(path.read_bytes(), path=path), path=path)


def _read_corpus_versions(text: str, *, path: Path) -> dict[str, list[CorpusDocument]]:
    versions: dict[str, list[CorpusDocument]] = {}
    for number, record in _objects(text, path=path):
        doc_id = read_doc_id(record, path=path, line=number, error=GoldFormatError)
        text = record.get("text")
        if not isinstance(text, str):
            raise GoldFormatError("text must be a string", path=path, line=number)
        version = record.get("version")
        if version is not None and not _is_int(version):
            raise GoldFormatError("version must be an integer", path=path, line=number)
        title = record.get("title") or ""
        groups = record.get("access_groups") or []
        canary = record.get("canary", False)
        if not isinstance(title, str) or not isinstance(groups, list):
            raise GoldFormatError(
                "title must be a string, access_groups a list", path=path, line=number
            )
        if not isinstance(canary, bool):
            raise GoldFormatError("canary must be true or false", path=path, line=number)
        versions.setdefault(doc_id, []).append(
            CorpusDocument(
                doc_id=doc_id,
                version=version,
                title=title,
                text=text,
                access_groups=tuple(str(group) for group in groups),
                canary=canary,
            )
        )
    for by_version in versions.values():
        by_version.sort(key=lambda document: -1 if document.version is None else document.version)
    return versions


def _check_span_offsets(
    questions: dict[str, GoldQuestion],
    versions: dict[str, list[CorpusDocument]],
    *,
    gold_path: Path,
) -> None:
    """Every span must point at a document in the corpus and stay inside the version it names."""
    for question in questions.values():
        for span in question.spans:
            by_version = versions.get(span.doc_id)
            if by_version is None:
                raise GoldFormatError(
                    f"question {question.question_id!r}: span points at document "
                    f"{span.doc_id!r}, which is not in {CORPUS_FILE}",
                    path=gold_path,
                )
            if span.end is None:
                continue
            document = next((d for d in by_version if d.version == span.version), by_version[-1])
            if span.end > len(document.text):
                raise GoldFormatError(
                    f"question {question.question_id!r}: span [{span.start}, {span.end}) is past "
                    f"the end of {span.doc_id!r} ({len(document.text)} characters)",
                    path=gold_path,
                )


def _reanchor_to_newest(
    questions: dict[str, GoldQuestion],
    corpus: dict[str, CorpusDocument],
    *,
    warnings: list[str],
    changed_words: list[ChangedWords] | None = None,
    versions: Mapping[str, list[CorpusDocument]] | None = None,
) -> tuple[dict[str, GoldQuestion], list[UnanchoredSpan], int]:
    """Move spans that point at an older version onto the newest one (the one runs search);
    the spans that could not be, and how many were moved. A moved span whose words changed
    ("40 percent" became "50 percent": the facts changed, it did not just move) adds a warning
    with the word diff, and is added to ``changed_words``. With the old ``versions`` (every
    version of each document, oldest first), a span marked in whole words keeps whole words."""
    unanchored: list[UnanchoredSpan] = []
    moved_spans = 0
    moved: dict[str, GoldQuestion] = {}
    for question_id, question in questions.items():
        spans = []
        for span in question.spans:
            document = corpus[span.doc_id]
            if span.whole_document or span.version is None or span.version == document.version:
                spans.append(span)
                continue
            old = next(
                (v for v in (versions or {}).get(span.doc_id, ()) if v.version == span.version),
                None,
            )
            whole = old is not None and span.end is not None
            whole = whole and on_word_edges(old.text, span.start or 0, span.end)
            offsets = reanchor(span, document.text, whole_words=whole)
            if offsets is None:
                unanchored.append(UnanchoredSpan(question_id, span, document.version))
                spans.append(span)
            else:
                moved_spans += 1
                new_quote = document.text[offsets[0] : offsets[1]]
                if span.quote and outcome(span.quote, new_quote) == FACTS_CHANGED:
                    if changed_words is not None:
                        changed_words.append(
                            ChangedWords(question_id, span, document.version, new_quote)
                        )
                    warnings.append(
                        f"question {question_id!r}: span of {span.doc_id!r} re-anchored from "
                        f"version {span.version} to {document.version} but its text changed "
                        f"(the facts changed, not just the place): "
                        f"{plain(word_diff(span.quote, new_quote))}"
                    )
                spans.append(
                    span._replace(start=offsets[0], end=offsets[1], version=document.version)
                )
        moved[question_id] = replace(question, spans=tuple(spans))
    return moved, unanchored, moved_spans


def reanchor(span: GoldSpan, text: str, *, whole_words: bool = False) -> tuple[int, int] | None:
    """Where the span's quoted text sits in ``text`` (a newer version), or None.

    `goldeval.text.anchoring.locate`: the exact occurrence nearest the old offset, else the most
    similar window if its similarity reaches FUZZY_MIN_RATIO; near-linear in the text's length.
    ``whole_words``: the span was marked in whole words, so the window keeps whole words.
    """
    if not span.quote:
        return None
    found = locate(
        span.quote, text, near=span.start or 0, floor=FUZZY_MIN_RATIO, whole_words=whole_words
    )
    return None if found is None else (found.start, found.end)
