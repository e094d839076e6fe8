"""Retrievers, their indexes (build, store, cache) and search over the corpus."""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone
from django.utils.text import slugify

from corpus import indexfile, jobs
from corpus.embedding import (
    VECTOR_PRECISIONS,
    Encoder,
    ModelNotFoundError,
    VectorIndex,
    packaged_model_installed,
)
from corpus.indexfile import LoadedIndex
from corpus.models import (
    Chunk,
    ChunkingScheme,
    Document,
    DocumentQuerySet,
    DocumentVersion,
    EmbeddingCache,
    Index,
    IndexState,
    Job,
    JobState,
    Project,
    Retriever,
    RetrieverKind,
)
from corpus.onnx_encoder import BACKEND as ONNX_BACKEND
from corpus.onnx_encoder import OnnxEncoder
from corpus.services import artifacts, search_mask
from corpus.services.http_retrieval import check_endpoint, endpoint_of
from goldeval.bm25 import IDF_KINDS, BM25Index
from goldeval.text.analysis import Analyzer
from goldset.batching import in_batches
from goldset.errors import ServiceError

BULK_BATCH = 2000
Progress = jobs.Progress

# Indexes kept loaded per process: searching must not re-read a 100,000-passage artefact from
# the database for every batch of questions. A handful covers every retriever of a pool.
LOADED_INDEXES = 6
ENCODE_BATCH = 256
# A build of a few hundred passages still takes a minute: encode at least ten batches (but
# never fewer than 64 passages at once, where the encoder's throughput starts to drop: 0.9
# of one large call at 64) so the job page shows it moving.
MIN_ENCODE_BATCH = 64
# What an embedding build's job says while the int8 encoder is made from the model, once per
# model and cache folder (corpus/onnx_encoder.py).
PREPARING_ENCODER = (
    "Preparing the encoder (once): exporting the model to ONNX (and, without bf16 on this CPU, "
    "quantizing it to int8). This takes "
    "a minute or more, then the passages are counted here."
)


@dataclass(frozen=True)
class Retrieved:
    """One passage a retriever returned for a question; ranks start at 1."""

    rank: int
    score: float
    version_id: int
    document_id: int
    doc_id: str
    start: int
    end: int


_loaded: OrderedDict[tuple, LoadedIndex] = OrderedDict()
_loaded_lock = threading.Lock()


def add_retriever(
    *,
    project: Project,
    name: str,
    kind: str,
    scheme: ChunkingScheme | None = None,
    stem: bool = False,
    stopwords: bool = False,
    k1: float = 0.9,
    b: float = 0.4,
    idf: str = "lucene",
    title: bool = False,
    vectors: str = "float32",
    backend: str | None = None,
    model_path: str = "",
    endpoint: dict | None = None,
) -> Retriever:
    """Configure a retriever. Built-in kinds need a chunking scheme that has chunks; an HTTP
    one needs an endpoint (`corpus.services.http_retrieval.check_endpoint`'s fields)."""
    if kind not in RetrieverKind.values:
        raise ServiceError(
            f"Unknown retriever kind {kind!r}; choose one of {', '.join(RetrieverKind.values)}."
        )
    if not name or slugify(name) != name:
        raise ServiceError(
            f"A retriever name is a slug (lower-case letters, digits, - and _), not {name!r}."
        )
    if Retriever.objects.filter(project=project, name=name).exists():
        raise ServiceError(f"A retriever named {name!r} already exists in this project.")
    if scheme is not None and scheme.project_id != project.pk:
        raise ServiceError(f"The chunking scheme {scheme.name} belongs to another project.")
    params: dict = {}
    if kind not in (RetrieverKind.RUN, RetrieverKind.HTTP):
        if scheme is None:
            raise ServiceError(f"A {kind} retriever needs a chunking scheme to search.")
        _require_chunks(scheme)
    if kind == RetrieverKind.BM25:
        if k1 < 0 or not 0 <= b <= 1:
            raise ServiceError(f"BM25 needs k1 >= 0 and b between 0 and 1, got k1={k1}, b={b}.")
        if idf not in IDF_KINDS:
            raise ServiceError(f"BM25 idf is one of {', '.join(IDF_KINDS)}, not {idf!r}.")
        params = {
            "k1": float(k1),
            "b": float(b),
            "stem": bool(stem),
            "stopwords": bool(stopwords),
            "idf": idf,
            "title": bool(title),
        }
    if kind == RetrieverKind.EMBEDDING:
        model_path = _check_model(model_path)
        if vectors not in VECTOR_PRECISIONS:
            raise ServiceError(f"Vectors are stored as float32 or float16, not {vectors!r}.")
        backend = backend or settings.GOLDSET_EMBEDDING_BACKEND
        if backend not in ("torch", ONNX_BACKEND):
            raise ServiceError(f"An embedding backend is torch or {ONNX_BACKEND}, not {backend!r}.")
        params = {"vectors": vectors, "backend": backend}
    elif model_path:
        raise ServiceError("Only an embedding retriever takes a model folder.")
    if kind == RetrieverKind.HTTP:
        endpoint = check_endpoint(**(endpoint or {}))
    elif endpoint:
        raise ServiceError("Only an HTTP retriever takes an endpoint.")
    return Retriever.objects.create(
        project=project,
        name=name,
        kind=kind,
        scheme=scheme,
        params=params,
        model_path=model_path,
        endpoint=endpoint or {},
    )


def start_index_build(*, retriever: Retriever, user=None) -> Job:
    """Queue a new index of a built-in retriever; it becomes active once it is complete."""
    _check_buildable(retriever)
    return jobs.start(
        project=retriever.project,
        task="corpus.tasks.build_index",
        kind="build_index",
        user=user,
        params={"retriever_id": retriever.pk},
        description=f"Build the {retriever.name} index",
        total=Chunk.objects.filter(
            scheme=retriever.scheme, version__in=_latest_versions(retriever)
        ).count(),
        shares=_passage_shares(retriever),
    )


def _passage_shares(retriever: Retriever) -> dict[int, dict[str, int]]:
    """How many passages of an index build each restricted document adds (its progress counts
    passages; a viewer outside the document's groups does not count them)."""
    chunks = (
        Chunk.objects.filter(
            scheme=retriever.scheme,
            version__in=_latest_versions(retriever),
            version__document__access_groups__isnull=False,
        )
        .order_by()
        .values("version__document")
        .annotate(n=Count("pk", distinct=True))
        .values_list("version__document", "n")
    )
    return {document: {"done": n, "total": n} for document, n in chunks}


def build_index(*, retriever: Retriever, job: Job | None = None) -> Index:
    """Build a fresh index over the newest version of every document, then switch to it.

    BM25 simply rebuilds (it takes seconds at 100,000 passages). Embedding reuses every vector
    already computed for the same passage text and model version, so adding one document embeds
    only that document's passages. The previous index keeps serving until the switch, and a
    failed build leaves it active.
    """
    _check_buildable(retriever)
    if job is not None:
        # An earlier attempt of this job died with its worker (kill -9, OOM): its half-built
        # index can never finish, so it goes rather than showing as "building" forever.
        Index.objects.filter(retriever=retriever, job=job, state=IndexState.BUILDING).delete()
    index = Index.objects.create(retriever=retriever, job=job)
    advance = jobs.progress(job) if job is not None else None
    try:
        # The index reflects the corpus as read here: anything newer is reported as stale.
        snapshot = timezone.now()
        passages = _passages(retriever)
        if not passages:
            raise ServiceError(
                f"The chunking scheme {retriever.scheme.name} has no chunks: import documents "
                "or re-chunk before building an index."
            )
        texts = [text for *_, text in passages]
        if retriever.kind == RetrieverKind.BM25 and retriever.params.get("title"):
            texts = _with_titles(passages)
        if retriever.kind == RetrieverKind.BM25:
            searcher: BM25Index | VectorIndex = BM25Index.build(
                texts,
                analyzer=Analyzer(
                    stem=retriever.params.get("stem", False),
                    stopwords=retriever.params.get("stopwords", False),
                ),
                k1=retriever.params.get("k1", 0.9),
                b=retriever.params.get("b", 0.4),
                # Retrievers configured before the Lucene IDF existed keep Okapi's, so their
                # rankings do not change under them on a rebuild.
                idf=retriever.params.get("idf", "okapi"),
            )
            if advance:
                advance(len(passages))
        else:
            searcher = _embed(retriever, index, passages, advance, job)
        stored = artifacts.save_artifact(
            name=f"indexes/retriever-{retriever.pk}/index-{index.pk}.npz",
            write=lambda handle: indexfile.pack(handle, searcher, passages),
        )
        index.artifact_name, index.artifact_size = stored.name, stored.size
        index.artifact_sha256 = stored.sha256
        index.passages = len(passages)
        index.state = IndexState.READY
        index.built_at = snapshot
        with transaction.atomic():
            index.save()
            Retriever.objects.filter(pk=retriever.pk).update(active_index=index)
            retriever.active_index = index
            DocumentVersion.objects.filter(
                pk__in=_latest_versions(retriever).filter(latest_version__created_at__lte=snapshot)
            ).update(indexed_at=timezone.now())
            # Older artefacts are never searched again (the active one is switched atomically);
            # their files go once the switch is committed (corpus.models._delete_artifact).
            retriever.indexes.exclude(pk=index.pk).exclude(state=IndexState.BUILDING).delete()
    except BaseException:
        Index.objects.filter(pk=index.pk).update(
            state=IndexState.FAILED, artifact_name="", artifact_size=0, artifact_sha256=""
        )
        if index.artifact_name:
            artifacts.delete_artifacts([index.artifact_name])
        raise
    return index


def retrieve(
    *,
    retriever: Retriever,
    questions: Sequence[str],
    k: int,
    user=None,
    groups: Collection[int] | None = None,
    with_canaries: bool = False,
) -> list[list[Retrieved]]:
    """The top k passages for each question, searched in one batch.

    Only the newest version of a searchable document can come back, and no canary unless
    ``with_canaries`` (a permission replay looks for them; nothing else counts them). With a
    user, or with ``groups`` (access group pks: a test user's), documents they may not see are
    filtered out *before* the cut, so k results still come back and nothing about a hidden
    document shows, not even a score.
    """
    if k < 1:
        raise ServiceError(f"k must be at least 1, got {k}.")
    if retriever.kind == RetrieverKind.RUN:
        raise ServiceError(f"{retriever.name} replays an uploaded run; it does not search.")
    if retriever.kind == RetrieverKind.HTTP:
        raise ServiceError(f"{retriever.name} searches the team's own system over HTTP.")
    now = None
    filed = (
        search_mask.last_filed(retriever, user, groups=groups, with_canaries=with_canaries)
        if questions
        else None
    )
    loaded = _loaded_already(filed.state.index) if filed is not None else None
    if loaded is not None:
        named, now = _with_filed_mask(retriever, user, loaded, questions, k, filed)
        if named is not None:
            return named
    if now is None:
        # One read before searching: which index is active and what decides the mask now.
        now = search_mask.state(retriever, user)
    loaded = _load_active(retriever, now.index)
    if not questions:
        return []
    allowed = search_mask.allowed_passages(
        retriever, loaded, user, groups=groups, with_canaries=with_canaries, now=now
    )
    found = _search(retriever, loaded, questions, k, allowed)
    wanted = _documents(loaded, found)
    _, doc_ids = search_mask.state_and_doc_ids(retriever, user, wanted)
    return _named(retriever, user, loaded, questions, k, allowed, found, wanted, doc_ids)


def _with_filed_mask(
    retriever: Retriever,
    user,
    loaded: LoadedIndex,
    questions: Sequence[str],
    k: int,
    filed: search_mask.Filed,
) -> tuple[list[list[Retrieved]] | None, search_mask.State | None]:
    """Search with the mask this process used last for the same call, checked after the search
    instead of before it: the one read that names what was found also reads the state, and
    what was found is kept only if the state is still the one that mask was filed under (then
    it is the very mask `allowed_passages` would give). One round trip a search.

    Returns (what was found, or None if it does not stand; the state read, or None)."""
    try:
        found = _search(retriever, loaded, questions, k, filed.mask)
    except ServiceError:
        # The filed index may be one a rebuild replaced (say, for a new model): what it
        # refuses is not the caller's answer. The state decides, as without a filed mask.
        return None, None
    wanted = _documents(loaded, found)
    now, doc_ids = search_mask.state_and_doc_ids(retriever, user, wanted)
    if now != filed.state:
        return None, now
    return _named(retriever, user, loaded, questions, k, filed.mask, found, wanted, doc_ids), now


def _search(
    retriever: Retriever,
    loaded: LoadedIndex,
    questions: Sequence[str],
    k: int,
    allowed: np.ndarray | None,
) -> list[list[tuple[int, float]]]:
    """The loaded index's top k (passage position, score) for each question."""
    if retriever.kind == RetrieverKind.BM25:
        return loaded.searcher.search_many(list(questions), k=k, allowed=allowed)
    encoder = _encoder(retriever)
    if encoder.info.version != loaded.searcher.info.version:
        raise ServiceError(
            f"The model of {retriever.name} changed since its index was built; rebuild it."
        )
    return loaded.searcher.search_many(encoder.encode(list(questions)), k=k, allowed=allowed)


def _documents(loaded: LoadedIndex, found: list[list[tuple[int, float]]]) -> list[int]:
    """The pks of the documents of the passages found."""
    positions = [position for hits in found for position, _ in hits]
    return np.unique(loaded.document_ids[positions]).tolist()


def _named(
    retriever: Retriever,
    user,
    loaded: LoadedIndex,
    questions: Sequence[str],
    k: int,
    allowed: np.ndarray | None,
    found: list[list[tuple[int, float]]],
    wanted: list[int],
    doc_ids: dict[int, str],
) -> list[list[Retrieved]]:
    """What was found, as `Retrieved` passages with the doc ids read for its documents
    (``wanted``, `_documents`).

    A document deleted since the index was built has no doc id, and no state moves when an
    unrestricted one goes: its passages are kept out and the questions searched again, so k
    results still come back (until a rebuild drops them from the index)."""
    while missing := set(wanted) - doc_ids.keys():
        gone = loaded.of_documents(missing)
        allowed = ~gone if allowed is None else allowed & ~gone
        found = _search(retriever, loaded, questions, k, allowed)
        wanted = _documents(loaded, found)
        _, doc_ids = search_mask.state_and_doc_ids(retriever, user, wanted)
    named = []
    for hits in found:
        # Each column read once per question as Python ints, not a numpy scalar per field.
        positions = [position for position, _ in hits]
        named.append(
            [
                Retrieved(
                    rank=rank,
                    score=score,
                    version_id=version_id,
                    document_id=document_id,
                    doc_id=doc_ids[document_id],
                    start=start,
                    end=end,
                )
                for rank, ((_, score), version_id, document_id, start, end) in enumerate(
                    zip(
                        hits,
                        loaded.version_ids[positions].tolist(),
                        loaded.document_ids[positions].tolist(),
                        loaded.starts[positions].tolist(),
                        loaded.ends[positions].tolist(),
                        strict=True,
                    ),
                    start=1,
                )
            ]
        )
    return named


def check_searchable(retriever: Retriever, *, project: Project) -> None:
    """Raise ServiceError unless the app can search ``project``'s corpus with ``retriever`` now:
    it is the project's, and an HTTP retriever has a usable endpoint, a built-in one a built
    index. An uploaded run (kind ``run``) passes: what stands in for searching it differs by
    caller (a run for the question set, one per test user), so each checks that itself."""
    if retriever.project_id != project.pk:
        raise ServiceError(f"{retriever.name} belongs to another project.")
    if retriever.kind == RetrieverKind.HTTP:
        endpoint_of(retriever)
    elif retriever.kind != RetrieverKind.RUN and retriever.active_index_id is None:
        raise ServiceError(f"{retriever.name} has no built index yet: build it first.")


def load_index(retriever: Retriever) -> LoadedIndex:
    """The retriever's active index, read from the database once per process.

    One small query tells which index is active now (another process may have switched it);
    the artefact itself is read only when this process has not loaded that index yet.
    """
    return _load_active(
        retriever,
        Retriever.objects.filter(pk=retriever.pk)
        .values_list("active_index_id", "active_index__built_at")
        .first(),
    )


def _load_active(retriever: Retriever, active: tuple[int, datetime | None] | None) -> LoadedIndex:
    """`load_index` once the active index (its id and build time; None: none) has been read."""
    index_id, built_at = active or (None, None)
    if index_id is None:
        raise ServiceError(f"{retriever.name} has no built index yet: build it first.")
    # built_at in the key: an id alone can come back after a rolled-back transaction.
    key = (index_id, built_at)
    loaded = _loaded_already(key)
    if loaded is not None:
        return loaded
    row = (
        Index.objects.filter(pk=index_id, state=IndexState.READY)
        .exclude(artifact_name="")
        .values_list("artifact_name", "artifact_size", "artifact_sha256")
        .first()
    )
    if row is None:
        raise ServiceError(f"The index of {retriever.name} is not ready: build it again.")
    stored = artifacts.StoredArtifact(name=row[0], size=row[1], sha256=row[2])
    rebuild = (
        f"Rebuild it: the Build index button on the retriever's page, or `manage.py build_index "
        f"--project {retriever.project.slug} --retriever {retriever.name}`."
    )
    try:
        with artifacts.open_artifact(
            artifact=stored, what=f"the index of {retriever.name}", rebuild=rebuild
        ) as handle:
            loaded = indexfile.unpack(index_id, built_at, handle, rebuild=rebuild)
    except artifacts.ArtifactError:
        # A rebuild that switched indexes since the row was read deletes the old file: read
        # the new active one instead of reporting a file that is gone on purpose.
        if Retriever.objects.filter(pk=retriever.pk, active_index_id=index_id).exists():
            raise
        return load_index(retriever)
    with _loaded_lock:
        _loaded[key] = loaded
        while len(_loaded) > LOADED_INDEXES:
            _loaded.popitem(last=False)
    return loaded


def _loaded_already(key: tuple[int, datetime | None] | None) -> LoadedIndex | None:
    """The index of ``key`` (its id and build time) if this process has it loaded."""
    if key is None:
        return None
    with _loaded_lock:
        loaded = _loaded.get(key)
        if loaded is not None:
            _loaded.move_to_end(key)
        return loaded


def stale_documents(retriever: Retriever) -> DocumentQuerySet:
    """Documents added or changed since the active index read the corpus (none without one)."""
    index = retriever.active_index
    documents = Document.objects.filter(project=retriever.project)
    if index is None or index.built_at is None:
        return documents.none()
    return documents.changed_since(index.built_at)


def _require_chunks(scheme: ChunkingScheme) -> None:
    if not Chunk.objects.filter(scheme=scheme).exists():
        raise ServiceError(
            f"The chunking scheme {scheme.name} has no chunks: import documents or re-chunk "
            "before adding a retriever over it."
        )


def _check_buildable(retriever: Retriever) -> None:
    if retriever.kind == RetrieverKind.RUN:
        raise ServiceError(
            f"{retriever.name} is an uploaded run: upload its results instead of building it."
        )
    if retriever.kind == RetrieverKind.HTTP:
        raise ServiceError(f"{retriever.name} searches the team's own system: it has no index.")
    if retriever.scheme is None:
        raise ServiceError(f"{retriever.name} has no chunking scheme to index.")
    _require_chunks(retriever.scheme)
    if retriever.kind == RetrieverKind.EMBEDDING:
        _check_model(retriever.model_path)


def _model_folder(model_path: str) -> Path | None:
    """The retriever's model folder; blank means the deployment's or the packaged default."""
    chosen = model_path or settings.GOLDSET_EMBEDDING_MODEL
    return Path(chosen) if chosen else None


def _encoder(retriever: Retriever) -> Encoder | OnnxEncoder:
    """The retriever's encoder: the torch model, or its int8 ONNX build (a model of its own)."""
    folder, threads = _model_folder(retriever.model_path), settings.GOLDSET_ENCODER_THREADS
    if retriever.params.get("backend", "torch") == ONNX_BACKEND:
        return OnnxEncoder(folder, cache_dir=settings.GOLDSET_MODEL_CACHE_DIR, threads=threads)
    return Encoder(folder, threads=threads)


def _check_model(model_path: str) -> str:
    """The model folder a new retriever names, checked here when this process can: one without
    the encoder packages (a web image without the ``encoder`` extra) has no packaged default to
    check, and the index build, on a worker that has them, says so if it is missing there too."""
    folder = _model_folder(model_path)
    if folder is None and not packaged_model_installed():
        return ""
    try:
        Encoder(folder)
    except ModelNotFoundError as exc:
        raise ServiceError(str(exc)) from exc
    return str(Path(model_path).expanduser().resolve()) if model_path else ""


def _latest_versions(retriever: Retriever):
    return Document.objects.filter(project=retriever.project, latest_version__isnull=False).values(
        "latest_version"
    )


def _passages(retriever: Retriever) -> list[tuple[int, int, int, int, str, str]]:
    """(version, document, start, end, text hash, text) of every chunk of the newest versions.

    Documents held back by quality or hidden as duplicates are indexed too: whether they may be
    returned is decided at search time, so accepting one needs no rebuild.
    """
    versions = {
        pk: (document_id, text)
        for pk, document_id, text in DocumentVersion.objects.filter(
            pk__in=_latest_versions(retriever)
        ).values_list("pk", "document_id", "text")
    }
    chunks = (
        Chunk.objects.filter(scheme=retriever.scheme, version_id__in=_latest_versions(retriever))
        .order_by("version_id", "ordinal")
        .values_list("version_id", "start", "end", "text_hash")
    )
    passages = []
    for version_id, start, end, text_hash in chunks.iterator(chunk_size=BULK_BATCH):
        document_id, text = versions[version_id]
        passages.append((version_id, document_id, start, end, text_hash, text[start:end]))
    return passages


def _with_titles(passages: list[tuple[int, int, int, int, str, str]]) -> list[str]:
    """Each passage's text after its document's title: BM25 over title + text, as BEIR and
    Pyserini index a document (only the index sees the title; offsets stay in the text)."""
    titles = dict(
        Document.objects.filter(pk__in={p[1] for p in passages}).values_list("pk", "title")
    )
    return [f"{titles[document_id]} {text}" for _, document_id, *_, text in passages]


def _embed(
    retriever: Retriever,
    index: Index,
    passages: list[tuple[int, int, int, int, str, str]],
    advance: Progress | None,
    job: Job | None = None,
) -> VectorIndex:
    """Vectors of every passage: from the cache where known, encoded (and cached) otherwise."""
    encoder = _encoder(retriever)
    preparing = job is not None and isinstance(encoder, OnnxEncoder) and not encoder.is_built()
    if preparing:
        # Its count stays at 0 meanwhile: the job's page says why.
        jobs.say(job, PREPARING_ENCODER)
    info = encoder.info  # (makes the int8 encoder if it is not made yet)
    if preparing:
        jobs.say(job, "")
    index.model_name, index.model_version, index.dimension = info.name, info.version, info.dimension
    hashes = list(dict.fromkeys(text_hash for *_, text_hash, _ in passages))
    vectors: dict[str, np.ndarray] = {}
    for batch in in_batches(hashes):
        for text_hash, vector in EmbeddingCache.objects.filter(
            model_version=info.version, text_hash__in=batch
        ).values_list("text_hash", "vector"):
            vectors[text_hash] = np.frombuffer(bytes(vector), dtype=np.float32)
    uses = Counter(text_hash for *_, text_hash, _ in passages)
    if advance:
        advance(sum(uses[text_hash] for text_hash in vectors))
    texts = {text_hash: text for *_, text_hash, text in passages if text_hash not in vectors}
    missing = list(texts)
    step = min(ENCODE_BATCH, max(MIN_ENCODE_BATCH, -(-len(missing) // 10)))
    for first in range(0, len(missing), step):
        batch = missing[first : first + step]
        encoded = encoder.encode([texts[h] for h in batch])
        EmbeddingCache.objects.bulk_create(
            [
                EmbeddingCache(model_version=info.version, text_hash=h, vector=v.tobytes())
                for h, v in zip(batch, encoded, strict=True)
            ],
            ignore_conflicts=True,
        )
        vectors.update(zip(batch, encoded, strict=True))
        if advance:
            advance(sum(uses[text_hash] for text_hash in batch))
    matrix = np.stack([vectors[text_hash] for *_, text_hash, _ in passages]).astype(np.float32)
    return VectorIndex(matrix, info=info, stored=retriever.params.get("vectors", "float32"))


def visible_passage_count(*, index: Index, user) -> int:
    """How many of the index's passages come from documents the user may see: its count less
    the passages (chunks of the newest version it read) of documents hidden from them."""
    retriever = index.retriever
    hidden = Document.objects.filter(project=retriever.project_id).hidden_from(user)
    if not hidden.exists():
        return index.passages
    chunks = Chunk.objects.filter(
        scheme_id=retriever.scheme_id,
        version__document__in=hidden.values("pk"),
        version_id=F("version__document__latest_version"),
    )
    if index.built_at is not None:
        chunks = chunks.filter(version__created_at__lte=index.built_at)
    return max(0, index.passages - chunks.count())


def run_index_build(job: Job) -> None:
    """The job of `start_index_build`."""
    retriever = Retriever.objects.select_related("scheme", "project").get(
        pk=job.params["retriever_id"], project=job.project
    )
    try:
        index = build_index(retriever=retriever, job=job)
    except ModelNotFoundError as exc:
        raise ServiceError(str(exc)) from exc
    # The shares again, as the build read the corpus (a document may have come since the start).
    job.result = {"index_id": index.pk, "passages": index.passages}
    jobs.add_shares(job, _passage_shares(retriever))
    # No count in the message: it would include documents hidden from some who read it (the
    # retriever page shows each viewer the passages they may see).
    jobs.finish(job, JobState.SUCCEEDED, f"{retriever.name}: the index is built and active.")
