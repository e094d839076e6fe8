"""Gold sets (finalise, the export bundle) and the evaluation page's scoring.

The bundle is the contract with other tools (issue 6): ``gold.jsonl``, ``corpus.jsonl``,
``manifest.json``, document-level ``qrels.trec``, ``qrels-<scheme>.trec`` per chunking scheme,
``beir/`` and ``judgements.csv``. Scoring goes through the Django-free ``evaluation`` modules on the
gold set's own files, so the page shows exactly what ``python -m evaluation`` prints.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import threading
import zipfile
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone
from django.utils.text import slugify

from corpus import jobs
from corpus.chunking import ChunkSpec, chunk_spans
from corpus.models import (
    ChunkingScheme,
    Document,
    DocumentVersion,
    Job,
    JobState,
    Project,
    Retriever,
    RetrieverKind,
)
from corpus.runfiles import jsonl_run_line
from corpus.services.retrieval import retrieve
from evaluation.baseline import BASELINE_NAME, bm25_baseline_run
from evaluation.gold import (
    CORPUS_FILE,
    GOLD_FILE,
    MANIFEST_FILE,
    EvaluationInputError,
    Gold,
    GoldQuestion,
    GoldSpan,
    Passage,
    read_bundle,
)
from evaluation.metrics import MetricOptions, RunEvaluation, evaluate_run
from evaluation.models import EvaluationRun, GoldSet, GoldSetFile, RunSource
from evaluation.runs import Run, check_run_against_gold, read_run
from goldset.errors import ServiceError
from labelling.models import (
    Assignment,
    Judgement,
    QuestionSet,
    Resolution,
    Verdict,
    VerdictOutcome,
)
from labelling.resolution import DEFAULT_MIN_SPAN_F1, Pending, resolve_verdict
from labelling.services import adjudication

BUNDLE_FORMAT = "goldset-bundle"
BUNDLE_FORMAT_VERSION = 1
QRELS_FILE = "qrels.trec"
JUDGEMENTS_FILE = "judgements.csv"
BEIR_CORPUS, BEIR_QUERIES, BEIR_QRELS = (
    "beir/corpus.jsonl",
    "beir/queries.jsonl",
    "beir/qrels/test.tsv",
)
# Spreadsheets run a cell that starts with one of these as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
JUDGEMENT_COLUMNS = [
    "question_id", "pool", "kind", "source", "labeller", "doc_id", "version", "start", "end",
    "grade", "outcome", "spans", "note", "guideline_version", "recorded_at",
]  # fmt: skip

# The evaluation page: the CLI's defaults, plus a recall curve up to CURVE_MIN_K (or further,
# to the project's k sent to the model).
TABLE_KS = (1, 3, 5, 10)
CURVE_MIN_K = 20
MRR_CUTOFF = 10
MAX_K_SENT_TO_MODEL = 100
RETRIEVE_BATCH = 64
MAX_RUN_BYTES = 50 * 1024 * 1024
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class GoldSetError(ServiceError):
    """A gold set or run request that cannot be carried out; the message is for users."""


@dataclass(frozen=True)
class UnresolvedItem:
    question_id: str
    pool: str
    item: str  # "verdict", "question" or "doc_id [start–end)"
    reason: str

    def describe(self) -> str:
        pool = f" (pool {self.pool})" if self.pool else ""
        return f"{self.question_id}{pool} — {self.item}: {self.reason}"


class FinaliseBlocked(GoldSetError):
    """Unresolved items stop a question set from being frozen; each one is listed."""

    def __init__(self, unresolved: list[UnresolvedItem]):
        self.unresolved = unresolved
        count = len(unresolved)
        super().__init__(
            f"Cannot finalise: {count} item{'s' if count != 1 else ''} "
            f"{'are' if count != 1 else 'is'} unresolved."
        )


class RunRejected(GoldSetError):
    """An uploaded run that cannot be scored against the gold set; nothing was stored."""


# --- the gold of a question set -----------------------------------------------------------


@dataclass
class FrozenQuestion:
    question_id: str
    text: str
    answerable: bool
    spans: list[adjudication.GoldSpanRow]
    judged: list[tuple[str, int, int, int]]  # doc_id, version, start, end


def collect_gold(
    *, question_set: QuestionSet, min_span_f1: float = DEFAULT_MIN_SPAN_F1
) -> tuple[list[FrozenQuestion], list[UnresolvedItem]]:
    """Every question of the set with its resolved gold, or the items that still block it.

    The rule is `labelling.services.adjudication.resolve_gold`. Around it: a question pooled in
    several pools gets one line (spans and judged passages of all pools), and a question no pool
    assigned to anyone blocks, since a run over the set would carry a question the gold set
    does not know.
    """
    resolution = adjudication.resolve_gold(question_set=question_set, min_span_f1=min_span_f1)
    unresolved = [_unresolved_item(entry) for entry in resolution.unresolved]
    rows_of = defaultdict(list)
    for row in resolution.questions:
        rows_of[row.question.pk].append(row)
    without_candidates = _verdicts_without_candidates(question_set, covered=set(rows_of))
    questions: list[FrozenQuestion] = []
    for question in question_set.questions.order_by("pk"):
        rows = rows_of.get(question.pk)
        if rows is None:
            verdict = without_candidates.get(question.pk)
            if verdict is None:
                unresolved.append(
                    UnresolvedItem(
                        question.external_id,
                        "",
                        "question",
                        "not labelled: no pool has assigned it to a labeller",
                    )
                )
            elif isinstance(verdict, Pending):
                unresolved.append(
                    UnresolvedItem(question.external_id, "", "verdict", verdict.reason)
                )
            else:
                questions.append(
                    FrozenQuestion(
                        question_id=question.external_id,
                        text=question.text,
                        answerable=verdict.outcome == VerdictOutcome.ANSWERABLE,
                        spans=[],
                        judged=[],
                    )
                )
            continue
        outcomes = {row.answerable for row in rows}
        if None in outcomes:
            continue  # its pending verdict is already listed
        if len(outcomes) > 1:
            unresolved.append(
                UnresolvedItem(
                    question.external_id,
                    "",
                    "verdict",
                    "its pools disagree on whether it is answerable",
                )
            )
            continue
        spans = [replace(s) for row in rows for s in row.spans]
        if len(rows) > 1:
            spans = _merge_spans(spans)
        judged = list(dict.fromkeys(passage for row in rows for passage in row.judged))
        questions.append(
            FrozenQuestion(
                question_id=question.external_id,
                text=question.text,
                answerable=rows[0].answerable,
                spans=spans,
                judged=judged,
            )
        )
    return questions, unresolved


def _unresolved_item(entry: adjudication.QueueEntry) -> UnresolvedItem:
    if entry.candidate is None:
        item = "verdict"
    else:
        item = (
            f"{entry.candidate.version.document.doc_id} "
            f"[{entry.candidate.start}–{entry.candidate.end})"
        )
    return UnresolvedItem(entry.question.external_id, entry.pool.name, item, entry.reason)


def _verdicts_without_candidates(question_set: QuestionSet, *, covered: set[int]) -> dict:
    """The verdict rule for questions labellers saw with no candidate at all (a retriever found
    nothing): their outcome is all there is to resolve."""
    assignments = defaultdict(list)
    for assignment in (
        Assignment.objects.filter(pool__question_set=question_set)
        .exclude(question_id__in=covered)
        .select_related("verdict")
    ):
        assignments[assignment.question_id].append(assignment)
    resolutions = {
        question_id: outcome
        for question_id, outcome in Resolution.objects.filter(
            pool__question_set=question_set, candidate__isnull=True
        )
        .exclude(outcome="")
        .values_list("question_id", "outcome")
    }
    decided = {}
    for question_id, held in assignments.items():
        decided[question_id] = resolve_verdict(
            adjudication.finished_outcomes(held),
            planned_votes=len(held),
            resolution=resolutions.get(question_id),
        )
    return decided


def _merge_spans(spans: list[adjudication.GoldSpanRow]) -> list[adjudication.GoldSpanRow]:
    """Overlapping spans of one version (from different pools) become one unit, higher grade."""
    texts = dict(
        DocumentVersion.objects.filter(pk__in={s.version_id for s in spans}).values_list(
            "pk", "text"
        )
    )
    return adjudication.coalesce_spans(spans, texts)


# --- the bundle ---------------------------------------------------------------------------


@dataclass
class Bundle:
    files: dict[str, bytes]  # path inside the bundle folder -> content, manifest.json included
    manifest: dict[str, Any]
    document_ids: set[int]  # Document pks whose text the bundle carries

    @property
    def checksum(self) -> str:
        return _sha256(self.files[MANIFEST_FILE])


def build_bundle(
    *,
    question_set: QuestionSet,
    questions: Sequence[FrozenQuestion],
    number: int,
    created_by: str | None,
    created_at,
    min_span_f1: float,
) -> Bundle:
    """Every file of a gold set's bundle, from its resolved questions (nothing is written)."""
    project = question_set.project
    corpus_versions = _corpus_versions(project, questions)
    files: dict[str, bytes] = {
        GOLD_FILE: _jsonl(_gold_line(question) for question in questions),
        CORPUS_FILE: _jsonl(
            {
                "doc_id": version.document.doc_id,
                "version": version.version,
                "title": version.document.title,
                "text": version.text,
                "access_groups": _group_names(version.document),
            }
            for version in corpus_versions
        ),
    }
    document_grades = [_document_grades(question) for question in questions]
    files[QRELS_FILE] = _text(
        f"{_trec_id(question.question_id)} 0 {_trec_id(doc_id)} {grade}\n"
        for question, grades in zip(questions, document_grades, strict=True)
        for doc_id, grade in grades.items()
    )
    schemes = list(ChunkingScheme.objects.filter(project=project).order_by("name"))
    texts = {version.pk: version.text for version in corpus_versions}
    version_pks = _version_pks(project)
    texts.update(_judged_texts(questions, version_pks=version_pks, known=texts))
    for scheme in schemes:
        files[f"qrels-{scheme.name}.trec"] = _chunk_qrels(
            scheme, questions, texts=texts, version_pks=version_pks
        )
    newest = {version.document.doc_id: version for version in corpus_versions}
    files[BEIR_CORPUS] = _jsonl(
        {"_id": doc_id, "title": version.document.title, "text": version.text}
        for doc_id, version in newest.items()
    )
    files[BEIR_QUERIES] = _jsonl(
        {"_id": question.question_id, "text": question.text} for question in questions
    )
    files[BEIR_QRELS] = _text(
        ["query-id\tcorpus-id\tscore\n"]
        + [
            f"{_trec_id(question.question_id)}\t{_trec_id(doc_id)}\t{grade}\n"
            for question, grades in zip(questions, document_grades, strict=True)
            for doc_id, grade in grades.items()
        ]
    )
    votes = _vote_rows(question_set)
    files[JUDGEMENTS_FILE] = _csv(votes)

    answerable = sum(1 for q in questions if q.answerable)
    manifest: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_FORMAT_VERSION,
        "project": project.slug,
        "question_set": question_set.name,
        "gold_set": f"v{number}",
        "number": number,
        "created_by": created_by,
        "created_at": created_at.isoformat(),
        "questions": len(questions),
        "answerable": answerable,
        "unanswerable": len(questions) - answerable,
        "answerable_without_relevant_spans": sum(
            1 for q in questions if q.answerable and not any(s.grade >= 1 for s in q.spans)
        ),
        "spans": sum(len(q.spans) for q in questions),
        "judged_passages": sum(len(q.judged) for q in questions),
        "votes": len(votes),
        "guideline_versions": _guideline_versions(question_set),
        "min_span_f1": min_span_f1,
        "chunking_schemes": [
            {
                "name": scheme.name,
                "strategy": scheme.strategy,
                "unit": scheme.unit,
                "size": scheme.size,
                "overlap": scheme.overlap,
                "qrels": f"qrels-{scheme.name}.trec",
            }
            for scheme in schemes
        ],
        "corpus": {
            "documents": len(newest),
            "versions": len(corpus_versions),
            "fingerprint": corpus_fingerprint(
                (v.document.doc_id, v.version, v.content_hash) for v in corpus_versions
            ),
        },
        "files": {
            name: {"sha256": _sha256(content), "bytes": len(content)}
            for name, content in sorted(files.items())
        },
    }
    files[MANIFEST_FILE] = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode()
    return Bundle(
        files=files,
        manifest=manifest,
        document_ids={version.document_id for version in corpus_versions},
    )


def corpus_fingerprint(versions: Iterable[tuple[str, int, str]]) -> str:
    """SHA-256 over one ``doc_id<TAB>version<TAB>content_hash<LF>`` line per version, sorted."""
    lines = sorted(
        f"{doc_id}\t{version}\t{content_hash}\n" for doc_id, version, content_hash in versions
    )
    return _sha256("".join(lines).encode("utf-8"))


def _gold_line(question: FrozenQuestion) -> dict[str, Any]:
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


def _corpus_versions(
    project: Project, questions: Sequence[FrozenQuestion]
) -> list[DocumentVersion]:
    """The versions gold spans point at, and the newest searchable version of every document
    (what runs search, and what the CLI's BM25 baseline indexes), by doc_id then version."""
    span_versions = {span.version_id for q in questions for span in q.spans}
    newest = Document.objects.filter(project=project).searchable().values("latest_version")
    return list(
        DocumentVersion.objects.filter(document__project=project)
        .filter(Q(pk__in=span_versions) | Q(pk__in=newest))
        .select_related("document")
        .prefetch_related("document__access_groups")
        .order_by("document__doc_id", "version")
    )


def _group_names(document: Document) -> list[str]:
    return sorted(group.name for group in document.access_groups.all())


def _judged_texts(
    questions: Sequence[FrozenQuestion],
    *,
    version_pks: dict[tuple[str, int], int],
    known: dict[int, str],
) -> dict[int, str]:
    """Texts of versions judged passages point at that the corpus file does not carry."""
    wanted = {
        version_pks[(doc_id, version)]
        for q in questions
        for doc_id, version, _, _ in q.judged
        if (doc_id, version) in version_pks
    }
    missing = sorted(wanted - set(known))
    return dict(DocumentVersion.objects.filter(pk__in=missing).values_list("pk", "text"))


def _version_pks(project: Project) -> dict[tuple[str, int], int]:
    return {
        (doc_id, version): pk
        for pk, doc_id, version in DocumentVersion.objects.filter(
            document__project=project
        ).values_list("pk", "document__doc_id", "version")
    }


def _document_grades(question: FrozenQuestion) -> dict[str, int]:
    """Document-level grade: the highest grade of the question's spans in the document; a
    document that was judged but holds no gold span is 0 (judged, not relevant)."""
    grades: dict[str, int] = {}
    for doc_id, *_ in question.judged:
        grades.setdefault(doc_id, 0)
    for span in question.spans:
        grades[span.doc_id] = max(grades.get(span.doc_id, 0), span.grade)
    return dict(sorted(grades.items()))


def _chunk_qrels(
    scheme: ChunkingScheme,
    questions: Sequence[FrozenQuestion],
    *,
    texts: dict[int, str],
    version_pks: dict[tuple[str, int], int],
) -> bytes:
    """Chunk-level qrels: chunk ``doc_id#ordinal`` of the span's own version under this scheme;
    a chunk's grade is the highest grade of the spans it overlaps, 0 for a chunk that only
    overlaps judged passages."""
    spec = ChunkSpec(
        strategy=scheme.strategy, unit=scheme.unit, size=scheme.size, overlap=scheme.overlap
    )
    chunks_of: dict[int, list[tuple[int, int]]] = {}

    def chunks(pk: int) -> list[tuple[int, int]]:
        if pk not in chunks_of:
            chunks_of[pk] = chunk_spans(texts[pk], spec)
        return chunks_of[pk]

    def overlapping(pk: int, start: int, end: int) -> list[int]:
        return [i for i, (s, e) in enumerate(chunks(pk)) if s < end and start < e]

    lines = []
    for question in questions:
        grades: dict[tuple[str, int], int] = {}
        for doc_id, version, start, end in question.judged:
            pk = version_pks.get((doc_id, version))
            if pk is not None:
                for ordinal in overlapping(pk, start, end):
                    grades.setdefault((doc_id, ordinal), 0)
        for span in question.spans:
            for ordinal in overlapping(span.version_id, span.start, span.end):
                key = (span.doc_id, ordinal)
                grades[key] = max(grades.get(key, 0), span.grade)
        qid = _trec_id(question.question_id)
        lines += [
            f"{qid} 0 {_trec_id(f'{doc_id}#{ordinal}')} {grade}\n"
            for (doc_id, ordinal), grade in sorted(grades.items())
        ]
    return _text(lines)


def _trec_id(identifier: str) -> str:
    """TREC and BEIR files split on whitespace: an id holding some gets it percent-encoded."""
    if not any(character.isspace() or character == "%" for character in identifier):
        return identifier
    return "".join(f"%{ord(c):02X}" if c.isspace() or c == "%" else c for c in identifier)


def _guideline_versions(question_set: QuestionSet) -> list[int]:
    versions = set(
        Judgement.objects.filter(
            assignment__pool__question_set=question_set, guideline__isnull=False
        ).values_list("guideline__version", flat=True)
    )
    versions |= set(
        Verdict.objects.filter(
            assignment__pool__question_set=question_set, guideline__isnull=False
        ).values_list("guideline__version", flat=True)
    )
    return sorted(versions)


def _vote_rows(question_set: QuestionSet) -> list[dict[str, Any]]:
    """Every vote of the set: each judgement, each verdict (a labeller who finished without
    marking the question voted "answerable"), each lead's resolution."""
    order = {
        pk: i
        for i, pk in enumerate(question_set.questions.order_by("pk").values_list("pk", flat=True))
    }
    rows: list[tuple[tuple, dict[str, Any]]] = []
    judgements = (
        Judgement.objects.filter(assignment__pool__question_set=question_set)
        .select_related(
            "assignment__labeller",
            "assignment__pool",
            "assignment__question",
            "candidate__version__document",
            "guideline",
        )
        .prefetch_related("spans")
    )
    for j in judgements:
        candidate = j.candidate
        rows.append(
            (
                (
                    order[j.assignment.question_id],
                    j.assignment.pool.name,
                    0,
                    candidate.version.document.doc_id,
                    candidate.start,
                    j.assignment.slot,
                ),
                {
                    "question_id": j.assignment.question.external_id,
                    "pool": j.assignment.pool.name,
                    "kind": "judgement",
                    "source": "labeller",
                    "labeller": _username(j.assignment.labeller),
                    "doc_id": candidate.version.document.doc_id,
                    "version": candidate.version.version,
                    "start": candidate.start,
                    "end": candidate.end,
                    "grade": j.grade,
                    "spans": _spans_cell(j.spans.all()),
                    "note": j.note,
                    "guideline_version": j.guideline.version if j.guideline else "",
                    "recorded_at": j.updated_at.isoformat(),
                },
            )
        )
    assignments = Assignment.objects.filter(pool__question_set=question_set).select_related(
        "labeller", "pool", "question", "verdict__guideline"
    )
    for a in assignments:
        verdict = getattr(a, "verdict", None)
        if verdict is None and a.completed_at is None:
            continue
        rows.append(
            (
                (order[a.question_id], a.pool.name, 1, "", 0, a.slot),
                {
                    "question_id": a.question.external_id,
                    "pool": a.pool.name,
                    "kind": "verdict",
                    "source": "labeller" if verdict else "finished without marking",
                    "labeller": _username(a.labeller),
                    "outcome": verdict.outcome if verdict else VerdictOutcome.ANSWERABLE.value,
                    "note": verdict.reason if verdict else "",
                    "guideline_version": verdict.guideline.version
                    if verdict and verdict.guideline
                    else "",
                    "recorded_at": (verdict.updated_at if verdict else a.completed_at).isoformat(),
                },
            )
        )
    resolutions = (
        Resolution.objects.filter(pool__question_set=question_set)
        .select_related("pool", "question", "resolved_by", "candidate__version__document")
        .prefetch_related("spans")
    )
    for r in resolutions:
        candidate = r.candidate
        row: dict[str, Any] = {
            "question_id": r.question.external_id,
            "pool": r.pool.name,
            "kind": "resolution",
            "source": "lead",
            "labeller": _username(r.resolved_by),
            "note": r.note,
            "recorded_at": r.resolved_at.isoformat(),
        }
        if candidate is None:
            row["outcome"] = r.outcome
        else:
            row.update(
                doc_id=candidate.version.document.doc_id,
                version=candidate.version.version,
                start=candidate.start,
                end=candidate.end,
                grade=r.grade,
                spans=_spans_cell(r.spans.all()),
            )
        rows.append(
            (
                (
                    order[r.question_id],
                    r.pool.name,
                    2,
                    row.get("doc_id", ""),
                    row.get("start", 0),
                    0,
                ),
                row,
            )
        )
    rows.sort(key=lambda pair: pair[0])
    return [row for _, row in rows]


def _username(user) -> str:
    return user.get_username() if user is not None else ""


def _spans_cell(spans) -> str:
    return json.dumps(
        [[span.start, span.end] for span in sorted(spans, key=lambda s: (s.start, s.end))]
    )


def spreadsheet_safe(value: Any) -> str:
    """A CSV cell a spreadsheet will not run: text starting like a formula gets an apostrophe."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _csv(rows: list[dict[str, Any]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(JUDGEMENT_COLUMNS)
    for row in rows:
        writer.writerow([spreadsheet_safe(row.get(column, "")) for column in JUDGEMENT_COLUMNS])
    return buffer.getvalue().encode("utf-8")


def _jsonl(records: Iterable[dict[str, Any]]) -> bytes:
    return _text(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def _text(lines: Iterable[str]) -> bytes:
    return "".join(lines).encode("utf-8")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- finalising and reading a gold set ------------------------------------------------------


def finalise_gold_set(
    *, question_set: QuestionSet, user=None, min_span_f1: float = DEFAULT_MIN_SPAN_F1
) -> GoldSet:
    """Freeze the set's resolved labels into the next numbered gold set (v1, v2, …).

    Refused, with every unresolved item listed, while anything blocks the gold rule. Who may
    finalise (admins) is the caller's check; ``user`` is recorded as the creator. The bundle is
    read back with ``evaluation.gold.load_gold`` before it is stored, so a stored gold set always
    loads in the CLI.
    """
    if not 0.0 <= min_span_f1 <= 1.0:
        raise GoldSetError(f"The minimum span F1 must be between 0 and 1, not {min_span_f1}.")
    with transaction.atomic():
        # One finalise at a time per question set, so numbers never collide.
        QuestionSet.objects.select_for_update().filter(pk=question_set.pk).first()
        questions, unresolved = collect_gold(question_set=question_set, min_span_f1=min_span_f1)
        if unresolved:
            raise FinaliseBlocked(unresolved)
        if not questions:
            raise GoldSetError(f"The question set {question_set.name} has no questions.")
        number = (
            GoldSet.objects.filter(question_set=question_set).aggregate(Max("number"))[
                "number__max"
            ]
            or 0
        ) + 1
        created_at = timezone.now()
        bundle = build_bundle(
            question_set=question_set,
            questions=questions,
            number=number,
            created_by=_username(user) or None,
            created_at=created_at,
            min_span_f1=min_span_f1,
        )
        _check_loads(bundle)
        gold_set = GoldSet.objects.create(
            question_set=question_set,
            number=number,
            created_by=user,
            created_at=created_at,
            manifest=bundle.manifest,
            checksum=bundle.checksum,
            document_count=len(bundle.document_ids),
        )
        GoldSetFile.objects.bulk_create(
            [
                GoldSetFile(
                    gold_set=gold_set,
                    name=name,
                    content=content,
                    size=len(content),
                    sha256=_sha256(content),
                )
                for name, content in sorted(bundle.files.items())
            ]
        )
        gold_set.documents.set(bundle.document_ids)
    return gold_set


def _check_loads(bundle: Bundle) -> None:
    try:
        read_bundle(bundle.files)
    except EvaluationInputError as error:
        raise GoldSetError(f"The bundle does not load back ({error.message}).") from error


def newest_gold_set(question_set: QuestionSet) -> GoldSet | None:
    return GoldSet.objects.filter(question_set=question_set).order_by("-number").first()


def bundle_files(gold_set: GoldSet, *, names: Iterable[str] | None = None) -> dict[str, bytes]:
    files = gold_set.files.all()
    if names is not None:
        files = files.filter(name__in=list(names))
    return {name: bytes(content) for name, content in files.values_list("name", "content")}


def write_bundle(*, gold_set: GoldSet, folder: Path) -> list[Path]:
    """Write the bundle's files into ``folder`` (created if needed); returns the paths."""
    return _write_files(folder, bundle_files(gold_set))


def _write_files(folder: Path, files: dict[str, bytes]) -> list[Path]:
    written = []
    for name, content in sorted(files.items()):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        written.append(path)
    return written


def bundle_folder_name(gold_set: GoldSet) -> str:
    question_set = gold_set.question_set
    return f"{question_set.project.slug}-{question_set.name}-{gold_set.label}"


def bundle_zip(gold_set: GoldSet) -> bytes:
    """The bundle as a zip holding one folder, dated at the gold set's creation."""
    folder = bundle_folder_name(gold_set)
    stamp = timezone.localtime(gold_set.created_at).timetuple()[:6]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in sorted(bundle_files(gold_set).items()):
            archive.writestr(zipfile.ZipInfo(f"{folder}/{name}", date_time=stamp), content)
    return buffer.getvalue()


def verify_gold_set(gold_set: GoldSet) -> list[str]:
    """Problems found re-checking stored files against the manifest (empty when intact)."""
    files = bundle_files(gold_set)
    problems = []
    manifest_bytes = files.get(MANIFEST_FILE, b"")
    if _sha256(manifest_bytes) != gold_set.checksum:
        problems.append("manifest.json does not match the gold set's checksum")
    listed = json.loads(manifest_bytes or b"{}").get("files", {})
    for name, entry in listed.items():
        if name not in files:
            problems.append(f"{name} is missing")
        elif _sha256(files[name]) != entry["sha256"]:
            problems.append(f"{name} does not match its SHA-256 in the manifest")
    problems += [
        f"{name} is not in the manifest"
        for name in files
        if name not in listed and name != MANIFEST_FILE
    ]
    return problems


# A finalised gold set never changes, so its parsed form can be kept per process.
_GOLD_CACHE_SIZE = 4
_gold_cache: OrderedDict[tuple[int, str], Gold] = OrderedDict()
_baseline_cache: OrderedDict[tuple[int, str, int], Run] = OrderedDict()
_cache_lock = threading.Lock()


def load_gold_set(gold_set: GoldSet) -> Gold:
    """The gold set read by ``evaluation.gold.load_gold`` from its own bundle files, exactly as
    ``python -m evaluation evaluate --gold BUNDLE`` reads them."""
    key = (gold_set.pk, gold_set.checksum)
    with _cache_lock:
        if key in _gold_cache:
            _gold_cache.move_to_end(key)
            return _gold_cache[key]
    gold = read_bundle(bundle_files(gold_set, names=(GOLD_FILE, CORPUS_FILE, MANIFEST_FILE)))
    with _cache_lock:
        _gold_cache[key] = gold
        while len(_gold_cache) > _GOLD_CACHE_SIZE:
            _gold_cache.popitem(last=False)
    return gold


def baseline_run(gold_set: GoldSet, *, depth: int) -> Run:
    """The CLI's BM25 keyword baseline over the bundle's corpus.jsonl."""
    key = (gold_set.pk, gold_set.checksum, depth)
    with _cache_lock:
        if key in _baseline_cache:
            return _baseline_cache[key]
    run = bm25_baseline_run(gold=load_gold_set(gold_set), depth=depth)
    with _cache_lock:
        _baseline_cache[key] = run
        while len(_baseline_cache) > _GOLD_CACHE_SIZE:
            _baseline_cache.popitem(last=False)
    return run


# --- runs ------------------------------------------------------------------------------------


def set_k_sent_to_model(*, project: Project, k: int) -> Project:
    if not 1 <= k <= MAX_K_SENT_TO_MODEL:
        raise GoldSetError(
            f"k sent to the model must be between 1 and {MAX_K_SENT_TO_MODEL}, not {k}."
        )
    project.k_sent_to_model = k
    project.save(update_fields=["k_sent_to_model"])
    return project


def evaluation_depth(project: Project) -> int:
    """How deep built-in runs retrieve: everything the page's table, curve and MRR look at."""
    return max(CURVE_MIN_K, project.k_sent_to_model, MRR_CUTOFF, *TABLE_KS)


def record_uploaded_run(
    *, gold_set: GoldSet, name: str, file_name: str, data: bytes, user=None
) -> EvaluationRun:
    """Store a run file (JSONL or TREC) once it reads cleanly against the gold set.

    A bad file is refused whole, with the line to look at; nothing is stored.
    """
    name = name.strip() or slugify(Path(file_name).stem)
    _check_run_name(gold_set, name)
    if len(data) > MAX_RUN_BYTES:
        raise RunRejected(f"{file_name} is larger than {MAX_RUN_BYTES // (1024 * 1024)} MB.")
    run = _read_run(data, name=name, file_name=file_name, gold=load_gold_set(gold_set))
    return EvaluationRun.objects.create(
        gold_set=gold_set,
        name=name,
        source=RunSource.UPLOAD,
        file_name=Path(file_name).name[:255],
        content=data,
        sha256=_sha256(data),
        questions=len(run.rankings),
        created_by=user,
    )


def _check_run_name(gold_set: GoldSet, name: str) -> None:
    if not RUN_NAME.fullmatch(name):
        raise RunRejected(
            "A run name is up to 100 letters, digits, dots, dashes and underscores (it names "
            f"the run in reports and file names), not {name!r}."
        )
    if name == BASELINE_NAME:
        raise RunRejected(f"The name {BASELINE_NAME!r} belongs to the built-in keyword baseline.")
    if EvaluationRun.objects.filter(gold_set=gold_set, name=name).exists():
        raise RunRejected(f"{gold_set} already has a run named {name!r}; choose another name.")


def _read_run(data: bytes, *, name: str, file_name: str, gold: Gold) -> Run:
    try:
        run = read_run(data, name=name, source=file_name)
        check_run_against_gold(run, gold)
    except EvaluationInputError as error:
        where = f"line {error.line}: " if error.line is not None else ""
        raise RunRejected(f"{file_name}: {where}{error.message}.") from error
    if not run.rankings:
        raise RunRejected(f"{file_name} holds no results.")
    run.source = None
    return run


def start_retriever_run(*, gold_set: GoldSet, retriever: Retriever, user=None) -> Job:
    """Queue a built-in retriever's run over the gold set's questions."""
    project = gold_set.question_set.project
    if retriever.project_id != project.pk:
        raise GoldSetError(f"{retriever.name} belongs to another project.")
    if retriever.kind == RetrieverKind.RUN:
        raise GoldSetError(
            f"{retriever.name} replays an uploaded run: upload its run file instead."
        )
    if retriever.active_index_id is None:
        raise GoldSetError(f"{retriever.name} has no built index yet: build it first.")
    questions = len(load_gold_set(gold_set).questions)
    return jobs.start(
        project=project,
        task="evaluation.tasks.evaluation_run",
        kind="evaluation_run",
        user=user,
        params={"gold_set_id": gold_set.pk, "retriever_id": retriever.pk},
        total=questions,
        description=f"Run {retriever.name} over {gold_set} ({questions} questions)",
    )


def record_retriever_run(
    *,
    gold_set: GoldSet,
    retriever: Retriever,
    user=None,
    depth: int | None = None,
    job: Job | None = None,
) -> EvaluationRun:
    """Retrieve the top ``depth`` passages for every gold question and store them as a JSONL
    run, line for line what ``manage.py retrieve`` writes. With a user, documents that user may
    not see never come back."""
    project = gold_set.question_set.project
    depth = depth or evaluation_depth(project)
    gold = load_gold_set(gold_set)
    questions = list(gold.questions.values())
    advance = jobs.progress(job) if job is not None else None
    lines = []
    for first in range(0, len(questions), RETRIEVE_BATCH):
        batch = questions[first : first + RETRIEVE_BATCH]
        found = retrieve(
            retriever=retriever, questions=[q.question for q in batch], k=depth, user=user
        )
        for question, hits in zip(batch, found, strict=True):
            lines.append(jsonl_run_line(question_id=question.question_id, results=hits))
        if advance:
            advance(len(batch))
    data = _text(lines)
    index_built_at = (
        Retriever.objects.filter(pk=retriever.pk)
        .values_list("active_index__built_at", flat=True)
        .first()
    )
    taken = set(EvaluationRun.objects.filter(gold_set=gold_set).values_list("name", flat=True))
    name, suffix = retriever.name, 1
    while name in taken or name == BASELINE_NAME:
        suffix += 1
        name = f"{retriever.name}-{suffix}"
    return EvaluationRun.objects.create(
        gold_set=gold_set,
        name=name,
        source=RunSource.RETRIEVER,
        retriever=retriever,
        index_built_at=index_built_at,
        depth=depth,
        file_name=f"{name}.jsonl",
        content=data,
        sha256=_sha256(data),
        questions=len(lines),
        created_by=user,
    )


def run_retriever_run(job: Job) -> None:
    """The job of `start_retriever_run`."""
    done = EvaluationRun.objects.filter(pk=job.result.get("run_id")).first()
    if done is not None:  # a redelivered job: the run is already stored
        jobs.finish(job, JobState.SUCCEEDED, f"{done.name}: already stored.")
        return
    gold_set = GoldSet.objects.select_related("question_set__project").get(
        pk=job.params["gold_set_id"], question_set__project=job.project
    )
    retriever = Retriever.objects.get(pk=job.params["retriever_id"], project=job.project)
    run = record_retriever_run(gold_set=gold_set, retriever=retriever, user=job.created_by, job=job)
    job.result = {"run_id": run.pk, "gold_set_id": gold_set.pk}
    jobs.finish(
        job, JobState.SUCCEEDED, f"{run.name}: top {run.depth} for {run.questions} questions."
    )


def load_stored_run(record: EvaluationRun, *, gold: Gold) -> Run:
    return _read_run(bytes(record.content), name=record.name, file_name=record.file_name, gold=gold)


# --- the evaluation page ----------------------------------------------------------------------


@dataclass
class ScoredRun:
    name: str
    kind: str  # "retriever", "upload" or "baseline"
    run: Run
    evaluation: RunEvaluation
    record: EvaluationRun | None = None


@dataclass
class MetricRow:
    name: str
    highlighted: bool
    values: list[str]


@dataclass
class SpanOutcome:
    span: GoldSpan
    unanchored: bool
    # Per run: (1-based rank of the first passage reaching the span or None, missed at k).
    cells: list[tuple[int | None, bool]]


@dataclass
class QuestionOutcome:
    question: GoldQuestion
    relevant: bool  # has a span of grade >= 1 (else it is scored as unanswerable)
    cells: list[tuple[str, str, int, bool]]  # per run: recall@k, ndcg@k, spans missed, missing
    spans: list[SpanOutcome]


@dataclass
class Scoreboard:
    gold_set: GoldSet
    gold: Gold
    options: MetricOptions
    table_ks: tuple[int, ...]
    k_sent_to_model: int
    runs: list[ScoredRun]
    questions: list[QuestionOutcome] = field(default_factory=list)

    @property
    def shallow_runs(self) -> list[ScoredRun]:
        """Built-in runs that retrieved fewer passages than the page looks at (k was raised)."""
        return [
            r
            for r in self.runs
            if r.record is not None
            and r.record.depth is not None
            and r.record.depth < self.options.depth
        ]

    @property
    def table_metrics(self) -> list[str]:
        return MetricOptions(ks=self.table_ks, mrr_cutoff=self.options.mrr_cutoff).metric_names()

    def metric_rows(self) -> list[MetricRow]:
        rows = [
            MetricRow(label, False, [str(getattr(r.evaluation, attribute)) for r in self.runs])
            for label, attribute in (
                ("questions", "questions"),
                ("answerable", "answerable"),
                ("missing from run", "missing"),
            )
        ]
        k_suffix = f"@{self.k_sent_to_model}"
        rows += [
            MetricRow(
                name,
                name.endswith(k_suffix) and not name.startswith("mrr"),
                [format_figure(r.evaluation.metrics[name]) for r in self.runs],
            )
            for name in self.table_metrics
        ]
        rows.append(
            MetricRow(
                "unanswerable questions",
                False,
                [str(r.evaluation.unanswerable.questions) for r in self.runs],
            )
        )
        rows.append(
            MetricRow(
                "refusal accuracy (unanswerable)",
                False,
                [format_figure(r.evaluation.unanswerable.refusal_accuracy) for r in self.runs],
            )
        )
        rows.append(
            MetricRow(
                "answerable wrongly refused",
                False,
                [format_figure(r.evaluation.unanswerable.wrongly_refused) for r in self.runs],
            )
        )
        return rows

    def recall_curve(self) -> list[tuple[str, list[tuple[int, float | None]]]]:
        return [
            (r.name, [(k, r.evaluation.metrics[f"recall@{k}"]) for k in self.options.ks])
            for r in self.runs
        ]


def format_figure(value: float | None) -> str:
    """Four decimals, as the CLI's markdown report; a dash for "no value"."""
    return "—" if value is None else f"{value:.4f}"


def evaluate_gold_set(
    *,
    gold_set: GoldSet,
    records: Sequence[EvaluationRun],
    baseline: bool = True,
    k_sent_to_model: int = 5,
) -> Scoreboard:
    """Score stored runs (and the CLI's keyword baseline) against the gold set's own files,
    with the CLI's default options, so every figure equals ``python -m evaluation``'s."""
    gold = load_gold_set(gold_set)
    table_ks = tuple(sorted({*TABLE_KS, k_sent_to_model}))
    curve_max = max(CURVE_MIN_K, k_sent_to_model, *table_ks)
    options = MetricOptions(ks=tuple(range(1, curve_max + 1)), mrr_cutoff=MRR_CUTOFF)
    scored: list[ScoredRun] = []
    for record in records:
        if record.gold_set_id != gold_set.pk:
            raise GoldSetError(f"The run {record.name} belongs to another gold set.")
        run = load_stored_run(record, gold=gold)
        scored.append(
            ScoredRun(
                name=record.name,
                kind=record.source,
                run=run,
                evaluation=evaluate_run(gold=gold, run=run, options=options),
                record=record,
            )
        )
    if baseline and gold.corpus:
        run = baseline_run(gold_set, depth=options.depth)
        scored.append(
            ScoredRun(
                name=BASELINE_NAME,
                kind="baseline",
                run=run,
                evaluation=evaluate_run(gold=gold, run=run, options=options),
            )
        )
    board = Scoreboard(
        gold_set=gold_set,
        gold=gold,
        options=options,
        table_ks=table_ks,
        k_sent_to_model=k_sent_to_model,
        runs=scored,
    )
    board.questions = _question_outcomes(board)
    return board


def _question_outcomes(board: Scoreboard) -> list[QuestionOutcome]:
    """Per question: each run's figures at k, and for each gold span where each run first
    reached it — the drill-down that shows which evidence a run missed."""
    k = board.k_sent_to_model
    unanchored = {(item.question_id, item.span) for item in board.gold.unanchored}
    outcomes = []
    for question_id, question in board.gold.questions.items():
        relevant_spans = [span for span in question.spans if span.grade >= board.options.threshold]
        first_ranks = [
            _first_reaching_ranks(
                relevant_spans,
                scored.run.rankings[question_id].passages
                if question_id in scored.run.rankings
                else [],
                depth=board.options.depth,
                min_overlap=board.options.min_overlap,
            )
            for scored in board.runs
        ]
        spans = [
            SpanOutcome(
                span=span,
                unanchored=(question_id, span) in unanchored,
                cells=[(ranks[i], ranks[i] is None or ranks[i] > k) for ranks in first_ranks],
            )
            for i, span in enumerate(relevant_spans)
        ]
        cells = []
        for index, scored in enumerate(board.runs):
            values = scored.evaluation.per_question.get(question_id)
            cells.append(
                (
                    format_figure(values[f"recall@{k}"]) if values else "—",
                    format_figure(values[f"ndcg@{k}"]) if values else "—",
                    sum(1 for span in spans if span.cells[index][1]),
                    question_id not in scored.run.rankings,
                )
            )
        outcomes.append(
            QuestionOutcome(
                question=question, relevant=bool(relevant_spans), cells=cells, spans=spans
            )
        )
    return outcomes


def _first_reaching_ranks(
    spans: Sequence[GoldSpan], passages: Sequence[Passage], *, depth: int, min_overlap: int
) -> list[int | None]:
    """For each span, the 1-based rank of the first passage overlapping it (same document, at
    least ``min_overlap`` characters; offsets absent = whole document), as the metrics match."""
    ranks: list[int | None] = [None] * len(spans)
    for rank, (doc_id, start, end) in enumerate(passages[:depth], start=1):
        for i, span in enumerate(spans):
            if ranks[i] is None and span.doc_id == doc_id:
                low = max(span.start or 0, start or 0)
                high = min(_END if span.end is None else span.end, _END if end is None else end)
                if high - low >= min_overlap:
                    ranks[i] = rank
    return ranks


_END = float("inf")
