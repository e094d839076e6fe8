"""The HTTP retriever in the app: its endpoint and test users checked, and its answers placed
in the corpus.

The calls themselves are `corpus.httpsearch`'s. Here an answer's results become passages of the
newest version of each document: by the offsets the answer gave, else by locating the passage
text the answer carried (`goldeval.text.anchoring`: exact, then the bounded fuzzy match), else as
the whole document. A run counts how many results were placed each way, and keeps one message per
question that failed, so a job can list them.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
from django.conf import settings

from corpus.httpendpoint import (
    PRESETS,
    ConfigError,
    Endpoint,
    Identity,
    identity_problems,
    with_preset,
)
from corpus.httpguard import HostPolicy, HostRefused
from corpus.httpsearch import Query, SearchClient
from corpus.models import (
    AccessGroup,
    Chunk,
    Document,
    DocumentVersion,
    PermissionProfile,
    Project,
    Retriever,
    RetrieverKind,
)
from corpus.remote import excerpt
from corpus.visibility import check_doc_ids
from goldeval.text.anchoring import locate
from goldset.batching import in_batches
from goldset.errors import ServiceError

SEARCH_BATCH = 64
# How each result was placed, in the order a run's summary names them.
PLACED = ("offsets", "exact", "fuzzy", "document", "unknown")
_HIGHLIGHT_TAGS = re.compile(r"</?(?:em|strong|b|i|mark|span)(?:\s[^>]*)?>", re.I)


class HttpSearchFailed(ServiceError):
    """Questions the endpoint could not answer; ``problems`` lists them for the job."""

    def __init__(self, message: str, problems: list[dict]):
        super().__init__(message)
        self.problems = problems


# --- configuration ------------------------------------------------------------------------------


def host_policy() -> HostPolicy:
    try:
        return HostPolicy(settings.GOLDSET_HTTP_ALLOWED_HOSTS)
    except ConfigError as error:
        raise ServiceError(str(error)) from None


def check_endpoint(*, preset: str = "", **fields: Any) -> dict:
    """The stored form of an endpoint from a preset and the fields given (blank fields keep the
    preset's), or a ServiceError naming every problem. The URL's host must be allowed."""
    if preset and preset not in PRESETS:
        raise ServiceError(f"Unknown preset {preset!r}; choose one of {', '.join(PRESETS)}.")
    data = with_preset(preset, **fields) if preset else {k: v for k, v in fields.items()}
    try:
        endpoint = Endpoint.from_dict(data)
    except ConfigError as error:
        raise ServiceError(f"The HTTP endpoint cannot be used: {error}") from None
    _check_host(endpoint.url)
    return endpoint.to_dict()


def _check_host(url: str) -> None:
    if "{{" in url.split("?", 1)[0].split("//", 1)[-1].split("/", 1)[0]:
        return  # a placeholder in the host: checked on every call instead
    try:
        host_policy().check_url(httpx2.URL(re.sub(r"\{\{[^}]*\}\}", "x", url)))
    except httpx2.InvalidURL as error:
        raise ServiceError(f"The HTTP endpoint's URL cannot be read: {error}.") from None
    except HostRefused as error:
        raise ServiceError(f"The HTTP endpoint cannot be called: {error}.") from None


def change_endpoint(*, retriever: Retriever, endpoint: dict) -> Retriever:
    """Replace an HTTP retriever's endpoint (checked as when it was added)."""
    if retriever.kind != RetrieverKind.HTTP:
        raise ServiceError(f"{retriever.name} is a {retriever.kind} retriever, not an HTTP one.")
    retriever.endpoint = check_endpoint(**endpoint)
    retriever.save(update_fields=["endpoint"])
    return retriever


def endpoint_of(retriever: Retriever) -> Endpoint:
    if retriever.kind != RetrieverKind.HTTP:
        raise ServiceError(f"{retriever.name} is a {retriever.kind} retriever, not an HTTP one.")
    try:
        return Endpoint.from_dict(retriever.endpoint)
    except ConfigError as error:
        raise ServiceError(f"{retriever.name}: {error}") from None


def check_test_user(*, headers: dict, user_value: Any) -> None:
    problems = identity_problems(headers=headers, value=user_value)
    if problems:
        raise ServiceError("This test user cannot be stored: " + "; ".join(problems) + ".")


def identity_of(profile: PermissionProfile) -> Identity:
    return Identity(
        name=profile.name,
        groups=tuple(sorted(profile.access_groups.values_list("name", flat=True))),
        headers=tuple((str(k), str(v)) for k, v in (profile.headers or {}).items()),
        value=profile.user_value,
    )


# --- searching ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlacedHit:
    """One result placed in the corpus. ``document_id`` is None for a doc id Goldset does not
    have; ``start``/``end`` are None for a whole document."""

    rank: int
    score: float | None
    doc_id: str
    located: str
    document_id: int | None = None
    version_id: int | None = None
    start: int | None = None
    end: int | None = None


@dataclass
class HttpRun:
    """What an endpoint answered for a batch of questions, placed in the corpus."""

    rankings: list[list[PlacedHit]] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)  # failed questions: the run is unusable
    warnings: list[dict] = field(default_factory=list)  # results that could not be checked
    located: Counter = field(default_factory=Counter)

    def add(self, other: HttpRun) -> None:
        self.rankings += other.rankings
        self.errors += other.errors
        self.warnings += other.warnings
        self.located.update(other.located)

    def summary(self) -> str:
        return describe_placement(self.located)

    def raise_for_errors(self, retriever: Retriever, *, user=None) -> None:
        """Refuse a run that cannot be used: a question without a usable answer, or results
        naming no document of the corpus (with a ``user``, none they may see: a hidden
        document is unknown, as a missing one; `corpus.visibility.check_doc_ids`)."""
        named = (hit.doc_id for ranking in self.rankings for hit in ranking)
        documents = check_doc_ids(project=retriever.project, doc_ids=named, user=user)
        if documents.none_known:
            raise HttpSearchFailed(
                documents.refusal(retriever.name) + "; nothing was stored. "
                "Check which field of its answers holds the document id.",
                self.errors,
            )
        if self.errors:
            count = len(self.errors)
            raise HttpSearchFailed(
                f"{retriever.name}: {count} question{'s' if count != 1 else ''} got no usable "
                f"answer (listed below); nothing was stored. First: {self.errors[0]['error']}",
                self.errors + self.warnings,
            )


PLACEMENT_WORDS = {
    "offsets": "by their offsets",
    "exact": "by exact text",
    "fuzzy": "by fuzzy text",
    "document": "as whole documents",
    "unknown": "naming documents Goldset does not have",
}


def placement_figure(key: str, how: str = "all") -> str:
    """The message figure of results placed ``how`` under ``key`` (`placement_template`)."""
    return f"placed_{key}_{how}"


def placement_template(located: Counter | dict, *, key: str) -> tuple[list, dict]:
    """`describe_placement` as a message template and its figures (`corpus.jobs.finish`), so a
    job page counts only the results on documents its viewer may see (`placement_shares`)."""
    figures = {placement_figure(key): sum(located.values())}
    figures |= {placement_figure(key, how): located.get(how, 0) for how in PLACED}
    template = [
        f"{{{placement_figure(key)}:plural:result/results}} placed: ",
        {
            "join": ", ",
            "items": [
                [f"{{{placement_figure(key, how)}}} {PLACEMENT_WORDS[how]}"]
                + [placement_figure(key, how)]
                for how in PLACED
            ],
            "empty": "none",
        },
    ]
    return template, figures


def placement_shares(run: HttpRun, *, key: str) -> dict[int, dict[str, int]]:
    """What each document's results add to the figures of `placement_template`."""
    shares: dict[int, dict[str, int]] = {}
    for ranking in run.rankings:
        for hit in ranking:
            if hit.document_id is None:
                continue
            mine = shares.setdefault(hit.document_id, {})
            for figure in (placement_figure(key), placement_figure(key, hit.located)):
                mine[figure] = mine.get(figure, 0) + 1
    return shares


def describe_placement(located: Counter | dict) -> str:
    total = sum(located.values())
    parts = [f"{located[name]} {PLACEMENT_WORDS[name]}" for name in PLACED if located.get(name)]
    return f"{total} result{'s' if total != 1 else ''} placed: " + (", ".join(parts) or "none")


@dataclass(frozen=True)
class TriedHit:
    """One result of a trial call, as mapped: nothing placed, nothing stored."""

    rank: int
    doc_id: str
    score: float | None
    start: int | None
    end: int | None
    text: str  # bounded (`corpus.remote.excerpt`): the endpoint's text, not Goldset's
    known: bool  # a document of the project that the asking user may see


@dataclass(frozen=True)
class Trial:
    hits: list[TriedHit]
    error: str = ""
    remote: str = ""  # what the server answered, bounded: shown to admins only


TRY_K = 10


def try_endpoint(*, project: Project, user, endpoint: dict, question: str) -> Trial:
    """Ask an endpoint, as it would be saved, one question and map its answer: the "Try a
    question" of Add a retriever. Same checks, host policy and client as a run; nothing
    stored. A configuration that cannot work raises ServiceError."""
    if not endpoint:
        raise ServiceError("Kind: Try a question calls an HTTP search API; choose that kind.")
    question = question.strip()
    if not question:
        raise ServiceError("Question: type a question to try.")
    checked = Endpoint.from_dict(check_endpoint(**endpoint))
    with SearchClient(endpoint=checked, policy=host_policy()) as client:
        try:
            (answer,) = client.search_many([Query(question, k=TRY_K)])
        except ConfigError as error:
            raise ServiceError(f"The HTTP endpoint cannot be used: {error}") from None
    if not answer.ok:
        return Trial(hits=[], error=answer.error or "", remote=answer.remote)
    seen = set(
        Document.objects.filter(project=project, doc_id__in=[h.doc_id for h in answer.hits])
        .visible_to(user)
        .values_list("doc_id", flat=True)
    )
    hits = [
        TriedHit(
            rank=rank,
            doc_id=excerpt(hit.doc_id, 200),
            score=hit.score,
            start=hit.start,
            end=hit.end,
            text=excerpt(hit.text or ""),
            known=hit.doc_id in seen,
        )
        for rank, hit in enumerate(answer.hits, start=1)
    ]
    return Trial(hits=hits)


def search_http(
    *,
    retriever: Retriever,
    questions: Sequence[tuple[str, str]],
    k: int,
    profile: PermissionProfile | None = None,
    progress: Callable[[int], None] | None = None,
) -> HttpRun:
    """Ask the endpoint every question (``(question id, text)`` pairs), as ``profile`` or as
    the retriever is configured, and place each result in the corpus.

    A question that fails gets an error (the run's ``errors``); a result naming a document
    Goldset does not have is kept as ``unknown`` with a warning. A configuration that cannot
    work at all (a missing environment variable) raises ServiceError.
    """
    if k < 1:
        raise ServiceError(f"k must be at least 1, got {k}.")
    endpoint = endpoint_of(retriever)
    identity = identity_of(profile) if profile is not None else None
    groups = tuple(
        AccessGroup.objects.filter(project_id=retriever.project_id)
        .order_by("name")
        .values_list("name", flat=True)
    )
    run = HttpRun()
    with SearchClient(endpoint=endpoint, policy=host_policy(), all_groups=groups) as client:
        for batch in in_batches(questions, size=SEARCH_BATCH):
            try:
                answers = client.search_many(
                    [Query(text, k=k, identity=identity) for _, text in batch], progress=progress
                )
            except ConfigError as error:
                raise ServiceError(f"{retriever.name}: {error}") from None
            run.add(_place(retriever, batch, answers, as_user=profile))
    return run


def _place(retriever: Retriever, batch, answers, *, as_user) -> HttpRun:
    run = HttpRun()
    source = retriever.name + (f" as {as_user.name}" if as_user is not None else "")
    wanted = {hit.doc_id for answer in answers if answer.ok for hit in answer.hits}
    documents = _documents(retriever.project_id, wanted)
    texts = _texts(
        {
            documents[hit.doc_id][1]
            for a in answers
            if a.ok
            for hit in a.hits
            if hit.doc_id in documents
        }
    )
    for (question_id, _), answer in zip(batch, answers, strict=True):
        if not answer.ok:
            problem = {"source": f"question {question_id}", "error": f"{source}: {answer.error}"}
            if answer.remote:
                problem["remote"] = excerpt(answer.remote)  # for admins only (corpus.remote)
            run.errors.append(problem)
            run.rankings.append([])
            continue
        placed = []
        for rank, hit in enumerate(answer.hits, start=1):
            found = documents.get(hit.doc_id)
            if found is None:
                run.warnings.append(
                    {
                        "source": f"question {question_id}",
                        "doc_id": hit.doc_id,
                        "error": f"{source}: result {rank} names a document Goldset does not have",
                    }
                )
                placed.append(PlacedHit(rank, hit.score, hit.doc_id, "unknown"))
                continue
            document_id, version_id, restricted = found
            text = texts[version_id]
            start, end, how = _locate_hit(hit, text)
            if how is None:
                name = "a restricted document" if restricted else hit.doc_id
                run.warnings.append(
                    {
                        # Shown only to those who may see the document (`corpus.job_display`).
                        "document_id": document_id,
                        "source": f"question {question_id}",
                        "error": f"{source}: result {rank}: offsets [{hit.start}, {hit.end}) "
                        f"are past the end of {name} ({len(text)} characters); "
                        "placed by its text instead",
                    }
                )
                start, end, how = _locate_hit(hit, text, use_offsets=False)
            placed.append(
                PlacedHit(rank, hit.score, hit.doc_id, how, document_id, version_id, start, end)
            )
            run.located[how] += 1
        run.located["unknown"] += sum(1 for p in placed if p.located == "unknown")
        run.rankings.append(placed)
    return run


def _locate_hit(
    hit, text: str, *, use_offsets: bool = True
) -> tuple[int | None, int | None, str | None]:
    if use_offsets and hit.start is not None:
        if hit.end > len(text):
            return None, None, None
        return hit.start, hit.end, "offsets"
    if hit.text:
        quote = unicodedata.normalize("NFC", hit.text.replace("\r\n", "\n").replace("\r", "\n"))
        for candidate in dict.fromkeys((quote.strip(), _HIGHLIGHT_TAGS.sub("", quote).strip())):
            found = locate(candidate, text) if candidate else None
            if found is not None:
                return found.start, found.end, "exact" if found.exact else "fuzzy"
    return None, None, "document"


def _documents(project_id: int, doc_ids: Iterable[str]) -> dict[str, tuple[int, int, bool]]:
    """doc_id -> (document pk, newest version pk, restricted?) of the project's documents."""
    found: dict[str, tuple[int, int, bool]] = {}
    ordered = sorted(doc_ids)
    restricted = set(
        Document.access_groups.through.objects.filter(
            accessgroup__project_id=project_id
        ).values_list("document_id", flat=True)
    )
    for batch in in_batches(ordered):
        for doc_id, pk, version_id in Document.objects.filter(
            project_id=project_id,
            doc_id__in=batch,
            latest_version__isnull=False,
        ).values_list("doc_id", "pk", "latest_version_id"):
            found[doc_id] = (pk, version_id, pk in restricted)
    return found


def _texts(version_ids: set[int]) -> dict[int, str]:
    texts: dict[int, str] = {}
    ordered = sorted(version_ids)
    for batch in in_batches(ordered):
        texts.update(DocumentVersion.objects.filter(pk__in=batch).values_list("pk", "text"))
    return texts


# --- what pools and evaluation runs take from a run ---------------------------------------------


def content_rankings(run: HttpRun, *, project: Project, user=None) -> list[list[PlacedHit]]:
    """Each ranking with only what counts as corpus content: documents Goldset has, searchable
    (quality accepted, not a hidden near-duplicate), not canaries and, with a user, visible to
    them. Ranks close up over what was left out, as a filtered search's would."""
    ids = sorted(
        {hit.document_id for ranking in run.rankings for hit in ranking if hit.document_id}
    )
    kept: set[int] = set()
    for batch in in_batches(ids):
        documents = Document.objects.filter(project=project, pk__in=batch)
        documents = documents.searchable().content()
        if user is not None:
            documents = documents.visible_to(user)
        kept.update(documents.values_list("pk", flat=True))
    return [
        [
            PlacedHit(
                rank, h.score, h.doc_id, h.located, h.document_id, h.version_id, h.start, h.end
            )
            for rank, h in enumerate((h for h in ranking if h.document_id in kept), start=1)
        ]
        for ranking in run.rankings
    ]


def pool_rows(
    rankings: list[list[PlacedHit]], *, retriever: Retriever
) -> list[list[tuple[int, float | None, int, int, int]]]:
    """(rank, score, version, start, end) per question for a pool: a whole-document result
    stands for its document's chunks under the retriever's scheme (all at its rank), or for the
    whole text when it has none, as an uploaded run's does."""
    whole = {h.version_id for ranking in rankings for h in ranking if h.start is None}
    chunks: dict[int, list[tuple[int, int]]] = {}
    lengths: dict[int, int] = {}
    if whole:
        ordered = sorted(whole)
        for part in in_batches(ordered):
            if retriever.scheme_id is not None:
                for version_id, start, end in (
                    Chunk.objects.filter(scheme_id=retriever.scheme_id, version_id__in=part)
                    .order_by("version_id", "ordinal")
                    .values_list("version_id", "start", "end")
                ):
                    chunks.setdefault(version_id, []).append((start, end))
            lengths.update((pk, len(text)) for pk, text in _texts(set(part)).items())
    rows = []
    for ranking in rankings:
        found = []
        for hit in ranking:
            if hit.start is not None:
                spans = [(hit.start, hit.end)]
            else:
                spans = chunks.get(hit.version_id) or [(0, lengths[hit.version_id])]
            found += [(hit.rank, hit.score, hit.version_id, s, e) for s, e in spans if e > s]
        rows.append(found)
    return rows
