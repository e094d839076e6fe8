"""Gold sets (finalise, the export bundle) and the evaluation page's scoring.

The bundle is the contract with other tools (issue 6): ``gold.jsonl``, ``corpus.jsonl``,
``manifest.json``, document-level ``qrels.trec``, ``qrels-<scheme>.trec`` per chunking scheme,
``beir/`` and ``judgements.csv``. Scoring goes through the Django-free ``evaluation`` modules on the
gold set's own files, so the page shows exactly what ``python -m evaluation`` prints.
"""

from __future__ import annotations

import io
import json
import re
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone
from django.utils.text import slugify

from corpus import jobs
from corpus.chunking import ChunkSpec
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
from corpus.services.retrieval import retrieve
from evaluation.baseline import BASELINE_NAME, bm25_baseline_run
from evaluation.bundle import Bundle, BundleInfo, CorpusVersion, Vote, build_bundle, sha256
from evaluation.gold import (
    CORPUS_FILE,
    GOLD_FILE,
    MANIFEST_FILE,
    EvaluationInputError,
    Gold,
    GoldQuestion,
    GoldSpan,
    read_bundle,
)
from evaluation.metrics import MetricOptions, RunEvaluation, evaluate_run, first_reaching_ranks
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
from labelling.resolution import DEFAULT_MIN_SPAN_F1
from labelling.services.gold import FrozenQuestion, UnresolvedItem, collect_gold

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


# --- what the bundle is written from ------------------------------------------------------


def _bundle(
    *,
    question_set: QuestionSet,
    questions: Sequence[FrozenQuestion],
    number: int,
    created_by: str | None,
    created_at,
    min_span_f1: float,
) -> tuple[Bundle, set[int]]:
    """The bundle of the resolved questions, and the Document pks whose text it carries."""
    project = question_set.project
    versions = _corpus_versions(project, questions)
    texts = {(version.document.doc_id, version.version): version.text for version in versions}
    texts.update(_judged_texts(project, questions, known=texts))
    schemes = {
        scheme.name: ChunkSpec(
            strategy=scheme.strategy, unit=scheme.unit, size=scheme.size, overlap=scheme.overlap
        )
        for scheme in ChunkingScheme.objects.filter(project=project).order_by("name")
    }
    bundle = build_bundle(
        info=BundleInfo(
            project=project.slug,
            question_set=question_set.name,
            number=number,
            created_by=created_by,
            created_at=created_at,
            min_span_f1=min_span_f1,
            guideline_versions=_guideline_versions(question_set),
        ),
        questions=questions,
        corpus=[
            CorpusVersion(
                doc_id=version.document.doc_id,
                version=version.version,
                title=version.document.title,
                text=version.text,
                content_hash=version.content_hash,
                access_groups=tuple(
                    sorted(group.name for group in version.document.access_groups.all())
                ),
            )
            for version in versions
        ],
        texts=texts,
        schemes=schemes,
        votes=_votes(question_set),
    )
    return bundle, {version.document_id for version in versions}


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


def _judged_texts(
    project: Project, questions: Sequence[FrozenQuestion], *, known: dict[tuple[str, int], str]
) -> dict[tuple[str, int], str]:
    """Texts of versions judged passages point at that the corpus file does not carry."""
    wanted = {(doc_id, version) for q in questions for doc_id, version, _, _ in q.judged}
    wanted -= set(known)
    if not wanted:
        return {}
    keys = {
        pk: (doc_id, version)
        for pk, doc_id, version in DocumentVersion.objects.filter(
            document__project=project
        ).values_list("pk", "document__doc_id", "version")
        if (doc_id, version) in wanted
    }
    return {
        keys[pk]: text
        for pk, text in DocumentVersion.objects.filter(pk__in=sorted(keys)).values_list(
            "pk", "text"
        )
    }


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


def _votes(question_set: QuestionSet) -> list[Vote]:
    """Every vote of the set: each judgement, each verdict (a labeller who finished without
    marking the question voted "answerable"), each lead's resolution."""
    order = {
        pk: i
        for i, pk in enumerate(question_set.questions.order_by("pk").values_list("pk", flat=True))
    }
    rows: list[tuple[tuple, Vote]] = []
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
        candidate, assignment = j.candidate, j.assignment
        doc_id = candidate.version.document.doc_id
        rows.append(
            (
                (order[assignment.question_id], assignment.pool.name, 0, doc_id,
                 candidate.start, assignment.slot),
                Vote(
                    question_id=assignment.question.external_id,
                    pool=assignment.pool.name,
                    kind="judgement",
                    source="labeller",
                    labeller=_username(assignment.labeller),
                    doc_id=doc_id,
                    version=candidate.version.version,
                    start=candidate.start,
                    end=candidate.end,
                    grade=j.grade,
                    spans=_offsets(j.spans.all()),
                    note=j.note,
                    guideline_version=j.guideline.version if j.guideline else None,
                    recorded_at=j.updated_at,
                ),
            )
        )  # fmt: skip
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
                Vote(
                    question_id=a.question.external_id,
                    pool=a.pool.name,
                    kind="verdict",
                    source="labeller" if verdict else "finished without marking",
                    labeller=_username(a.labeller),
                    outcome=verdict.outcome if verdict else VerdictOutcome.ANSWERABLE.value,
                    note=verdict.reason if verdict else "",
                    guideline_version=verdict.guideline.version
                    if verdict and verdict.guideline
                    else None,
                    recorded_at=verdict.updated_at if verdict else a.completed_at,
                ),
            )
        )
    resolutions = (
        Resolution.objects.filter(pool__question_set=question_set)
        .select_related("pool", "question", "resolved_by", "candidate__version__document")
        .prefetch_related("spans")
    )
    for r in resolutions:
        candidate = r.candidate
        vote = Vote(
            question_id=r.question.external_id,
            pool=r.pool.name,
            kind="resolution",
            source="lead",
            labeller=_username(r.resolved_by),
            note=r.note,
            recorded_at=r.resolved_at,
        )
        if candidate is None:
            vote = replace(vote, outcome=r.outcome)
        else:
            vote = replace(
                vote,
                doc_id=candidate.version.document.doc_id,
                version=candidate.version.version,
                start=candidate.start,
                end=candidate.end,
                grade=r.grade,
                spans=_offsets(r.spans.all()),
            )
        rows.append(((order[r.question_id], r.pool.name, 2, vote.doc_id, vote.start or 0, 0), vote))
    rows.sort(key=lambda pair: pair[0])
    return [vote for _, vote in rows]


def _username(user) -> str:
    return user.get_username() if user is not None else ""


def _offsets(spans) -> tuple[tuple[int, int], ...]:
    return tuple((span.start, span.end) for span in spans)


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
        bundle, document_ids = _bundle(
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
            document_count=len(document_ids),
        )
        GoldSetFile.objects.bulk_create(
            [
                GoldSetFile(
                    gold_set=gold_set,
                    name=name,
                    content=content,
                    size=len(content),
                    sha256=sha256(content),
                )
                for name, content in sorted(bundle.files.items())
            ]
        )
        gold_set.documents.set(document_ids)
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
    if sha256(manifest_bytes) != gold_set.checksum:
        problems.append("manifest.json does not match the gold set's checksum")
    listed = json.loads(manifest_bytes or b"{}").get("files", {})
    for name, entry in listed.items():
        if name not in files:
            problems.append(f"{name} is missing")
        elif sha256(files[name]) != entry["sha256"]:
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
        sha256=sha256(data),
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
            results = [
                {"doc_id": h.doc_id, "start": h.start, "end": h.end, "score": h.score} for h in hits
            ]
            lines.append({"question_id": question.question_id, "results": results})
        if advance:
            advance(len(batch))
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
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
        sha256=sha256(data),
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
    k, threshold = board.k_sent_to_model, board.options.threshold
    unanchored = {(item.question_id, item.span) for item in board.gold.unanchored}
    outcomes = []
    for question_id, question in board.gold.questions.items():
        relevant = [i for i, span in enumerate(question.spans) if span.grade >= threshold]
        relevant_spans = [question.spans[i] for i in relevant]
        first_ranks = []
        for scored in board.runs:
            ranking = scored.run.rankings.get(question_id)
            ranks = first_reaching_ranks(
                question,
                ranking.passages if ranking is not None else [],
                depth=board.options.depth,
                min_overlap=board.options.min_overlap,
            )
            first_ranks.append([ranks[i] for i in relevant])
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
