"""Traces in: from a JSONL file (all or nothing) and from the endpoint (per item); the project
tokens the endpoint takes; retention."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db import connection, models, transaction
from django.utils import timezone

from corpus.models import Document, Project
from corpus.visibility import check_doc_ids
from goldeval.formats.doc_ids import SHOWN_IDS, DocIdCheck
from goldeval.formats.textfiles import LineProblem, text_problem
from goldeval.formats.traces import TraceRecord, read_trace
from goldset.errors import ServiceError
from goldset.sql import identifier
from production.models import ApiToken, Trace

BATCH = 2_000
ANALYZE_AFTER = 10_000  # traces stored by one import
MAX_PROBLEMS = 100  # a file with more problems is listed this far; nothing is stored anyway
TOKEN_PREFIX = "gst_"  # noqa: S105 - marks our tokens (as GitHub's ghp_), no secret


class TracesRejected(ServiceError):
    """A file with problems: nothing was stored. `problems` are by line."""

    def __init__(self, problems: list[LineProblem], more: bool = False):
        self.problems, self.more = problems, more
        super().__init__(f"Nothing was stored: {len(problems)}{'+' if more else ''} problems.")


@dataclass
class TraceIntake:
    received: int = 0
    stored: int = 0
    # Stored traces naming documents the corpus lacks (from the endpoint: or that are hidden
    # from the caller, who cannot tell the two apart).
    unknown_documents: int = 0
    # The unknown document ids themselves, counted and named (`corpus.visibility.check_doc_ids`).
    # Traces are never refused for them: a trace records what production retrieved, and its
    # unknown ids are the evidence of an index drifted from the corpus.
    documents: DocIdCheck = field(default_factory=DocIdCheck)

    @property
    def already_present(self) -> int:
        return self.received - self.stored

    def describe(self) -> str:
        text = f"{self.stored:,} traces stored, {self.already_present:,} already present"
        if self.unknown_documents:
            text += (
                f"; {self.unknown_documents:,} name documents the corpus does not have "
                "(kept and flagged: the index has drifted from the corpus)"
            )
        if self.documents.unknown:
            text += f"; {self.documents.warning('they', outcome='kept')}"
        return text


def _row(project: Project, record: TraceRecord, known: set[str], now) -> dict:
    """The trace's column values (by attribute name)."""
    unknown = [doc_id for doc_id in record.doc_ids if doc_id not in known]
    return dict(
        project_id=project.pk,
        trace_id=record.trace_id,
        occurred_at=record.occurred_at,
        user=record.user,
        user_groups=list(record.user_groups),
        question=record.question,
        retrieved=[
            {
                key: value
                for key, value in (
                    ("doc_id", p.doc_id),
                    ("rank", p.rank),
                    ("score", p.score),
                    ("start", p.start),
                    ("end", p.end),
                    ("version", p.version),
                )
                if value is not None
            }
            for p in record.retrieved
        ],
        answer=record.answer,
        citations=list(record.citations),
        refused=record.refused,
        thumb=record.thumb,
        comment=record.comment,
        system_version=record.system_version,
        index_manifest=record.index_manifest,
        top_score=record.top_score,
        has_citations=bool(record.citations),
        unknown_doc_ids=unknown,
        has_unknown_documents=bool(unknown),
        received_at=now,
    )


def _known_doc_ids(project: Project) -> set[str]:
    return set(Document.objects.filter(project=project).values_list("doc_id", flat=True))


def _hidden_doc_ids(project: Project, caller) -> set[str]:
    """The project's doc ids hidden from ``caller`` (restricted ones, usually few)."""
    hidden = Document.objects.filter(project=project).hidden_from(caller)
    return set(hidden.values_list("doc_id", flat=True))


def token_caller(token: ApiToken):
    """Whom a token's requests see the corpus as: the admin who made it (as of now), or, once
    that account is gone, a member of no access group (unrestricted documents only)."""
    return token.created_by or AnonymousUser()


def _store(project: Project, rows: list[dict], intake: TraceIntake, *, copy: bool = False) -> set:
    """Insert rows whose trace_id is new; a trace id already stored keeps its first trace.
    Returns the trace ids this call stored."""
    if not rows:
        return set()
    fresh = {row["trace_id"]: row for row in rows}  # a repeat inside one batch counts once
    intake.received += len(rows)
    if connection.vendor == "postgresql":
        # The unique index decides what is new (a replayed batch, a concurrent request).
        stored = (_copy if copy else _insert)(list(fresh.values()))
    else:
        # SQLite: the ids already stored are looked up (its INSERT cannot say which it kept).
        present = set(
            Trace.objects.filter(project=project, trace_id__in=list(fresh)).values_list(
                "trace_id", flat=True
            )
        )
        new = [row for trace_id, row in fresh.items() if trace_id not in present]
        # ignore_conflicts: a concurrent request storing the same trace id loses quietly.
        Trace.objects.bulk_create(
            [Trace(**row) for row in new], batch_size=BATCH, ignore_conflicts=True
        )
        stored = {row["trace_id"] for row in new}
    intake.stored += len(stored)
    intake.unknown_documents += sum(fresh[trace_id]["has_unknown_documents"] for trace_id in stored)
    return stored


# Every column but the key, in declaration order (`get_fields()` and `Field.concrete`, the
# documented _meta API).
_COLUMNS = [f for f in Trace._meta.get_fields() if f.concrete and not f.primary_key]


def _insert(rows: list[dict]) -> set[str]:
    """An endpoint batch on PostgreSQL: INSERT … VALUES … ON CONFLICT DO NOTHING, so a trace id
    already stored is skipped by the unique index, with no lookup before; returns the trace ids
    stored (as `_copy`)."""
    table = identifier(Trace._meta.db_table)
    names = ", ".join(identifier(f.column) for f in _COLUMNS)
    row_sql = "(" + ", ".join(["%s"] * len(_COLUMNS)) + ")"
    per_statement = max(1, 60_000 // len(_COLUMNS))  # PostgreSQL takes 65,535 parameters
    stored = set()
    with connection.cursor() as cursor:
        for first in range(0, len(rows), per_statement):
            chunk = rows[first : first + per_statement]
            params = [
                f.get_db_prep_save(row[f.attname], connection) for row in chunk for f in _COLUMNS
            ]
            cursor.execute(
                f"INSERT INTO {table} ({names}) VALUES "  # noqa: S608
                + ", ".join([row_sql] * len(chunk))
                + " ON CONFLICT DO NOTHING RETURNING trace_id",
                params,
            )
            stored.update(trace_id for (trace_id,) in cursor.fetchall())
    return stored


def _copy(rows: list[dict]) -> set[str]:
    """PostgreSQL's COPY into a temporary table, then one INSERT … ON CONFLICT DO NOTHING that
    skips trace ids already stored (the unique index decides, whatever the planner believes
    about a table growing by a million rows inside one transaction). Returns the trace ids
    stored."""
    if not rows:
        return set()
    table = identifier(Trace._meta.db_table)
    names = ", ".join(identifier(f.column) for f in _COLUMNS)
    is_json = [isinstance(f, models.JSONField) for f in _COLUMNS]
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMPORARY TABLE IF NOT EXISTS trace_intake ON COMMIT DROP AS"  # noqa: S608
            f" SELECT {names} FROM {table} WITH NO DATA"
        )
        cursor.execute("TRUNCATE trace_intake")
        with cursor.cursor.copy(f"COPY trace_intake ({names}) FROM STDIN") as copy:  # noqa: S608
            for row in rows:
                copy.write_row(
                    [
                        json.dumps(row[f.attname])
                        if j and row[f.attname] is not None
                        else row[f.attname]
                        for f, j in zip(_COLUMNS, is_json, strict=True)
                    ]
                )
        cursor.execute(
            f"INSERT INTO {table} ({names}) SELECT {names} FROM trace_intake"  # noqa: S608
            " ON CONFLICT DO NOTHING RETURNING trace_id"
        )
        return {trace_id for (trace_id,) in cursor.fetchall()}


def import_traces(
    *,
    project: Project,
    lines: Iterable[tuple[int, TraceRecord | LineProblem]],
    progress: Callable[[int], None] | None = None,
) -> TraceIntake:
    """Traces from a file's lines (`goldeval.formats.traces.read_trace_lines`), in one transaction:
    any line with a problem stores nothing, and every problem (up to `MAX_PROBLEMS`) is listed.
    A trace id already stored is skipped, so importing a file again adds nothing."""
    known, now = _known_doc_ids(project), timezone.now()
    intake, problems, more = TraceIntake(), [], False
    named: dict[str, None] = {}
    with transaction.atomic():
        batch: list[Trace] = []
        for _number, record in lines:
            if isinstance(record, LineProblem):
                if len(problems) < MAX_PROBLEMS:
                    problems.append(record)
                else:
                    more = True
                batch = []
                continue
            if problems:
                continue  # keep reading for problems; nothing more will be stored
            batch.append(_row(project, record, known, now))
            named.update(dict.fromkeys(record.doc_ids))
            if len(batch) >= BATCH:
                _store(project, batch, intake, copy=True)
                batch = []
                if progress:
                    progress(intake.received)
        if problems:
            transaction.set_rollback(True)
            raise TracesRejected(problems, more)
        _store(project, batch, intake, copy=True)
        if progress:
            progress(intake.received)
    intake.documents = check_doc_ids(project=project, doc_ids=named)
    if connection.vendor == "postgresql" and intake.stored >= ANALYZE_AFTER:
        # Fresh statistics, or the planner keeps estimating the table as it was before a
        # million rows arrived and samples it by index, ten times slower (autovacuum would
        # get there, minutes later).
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {identifier(Trace._meta.db_table)}")
    return intake


@dataclass
class BatchResult:
    intake: TraceIntake
    errors: list[dict] = field(default_factory=list)  # [{index, trace_id?, status, message}]

    def as_json(self) -> dict:
        return {
            "received": self.intake.received + len(self.errors),
            "stored": self.intake.stored,
            "already_present": self.intake.already_present,
            "unknown_documents": self.intake.unknown_documents,
            "unknown_doc_ids": list(self.intake.documents.unknown[:SHOWN_IDS]),
            "errors": self.errors,
        }


def receive_traces(*, project: Project, items: list, caller=None) -> BatchResult:
    """A batch from the endpoint: each valid item is stored (or found already stored), each
    invalid one is answered with its own error; a replayed batch stores nothing twice. A
    document hidden from ``caller`` (`token_caller`) counts as unknown, as a missing one does."""
    # Stored flags are the corpus' (the Traces page's drift, the production run); the count
    # answered is the caller's, so it says nothing of the documents hidden from them.
    known, now = _known_doc_ids(project), timezone.now()
    hidden = _hidden_doc_ids(project, caller) if caller is not None else set()
    rows, errors, unseen = [], [], {}
    for index, item in enumerate(items):
        record = read_trace(item)
        if isinstance(record, list):
            entry = {"index": index, "status": 422, "message": "; ".join(record)}
            trace_id = item.get("trace_id") if isinstance(item, dict) else None
            if isinstance(trace_id, str) and not text_problem(trace_id, max_length=200):
                entry["trace_id"] = trace_id
            errors.append(entry)
        else:
            rows.append(_row(project, record, known, now))
            unseen[record.trace_id] = any(
                doc_id not in known or doc_id in hidden for doc_id in record.doc_ids
            )
    intake = TraceIntake()
    with transaction.atomic():
        stored = _store(project, rows, intake)
    intake.unknown_documents = sum(unseen[trace_id] for trace_id in stored)
    named = (doc_id for row in rows for doc_id in (p["doc_id"] for p in row["retrieved"]))
    intake.documents = check_doc_ids(project=project, doc_ids=named, user=caller)
    return BatchResult(intake=intake, errors=errors)


# Tokens ------------------------------------------------------------------------------------


def digest_of(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def create_api_token(
    *, project: Project, user, name: str, expires_in_days: int | None = None
) -> tuple[ApiToken, str]:
    """A new token and its secret value, which is shown this once and never stored."""
    name = name.strip()
    if not name:
        raise ServiceError("Give the token a name (what sends traces with it).")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    token = ApiToken.objects.create(
        project=project,
        name=name,
        prefix=raw[:10],
        digest=digest_of(raw),
        created_by=user,
        expires_at=expires_at,
    )
    return token, raw


def revoke_api_token(*, token: ApiToken, user) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at, token.revoked_by = timezone.now(), user
        token.save(update_fields=["revoked_at", "revoked_by"])
    return token


def find_api_token(*, raw: str) -> ApiToken | None:
    """The token with this secret, live or not (the caller tells revoked and expired apart)."""
    if not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    return ApiToken.objects.select_related("project").filter(digest=digest_of(raw)).first()


def mark_token_used(*, token: ApiToken) -> None:
    # At most once a minute per token: a write per request would cost the endpoint its speed.
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)


# Retention ---------------------------------------------------------------------------------


def purge_expired_traces(*, project: Project | None = None, now=None) -> int:
    """Delete traces older than `GOLDSET_TRACE_RETENTION_DAYS` that no sample holds (a sampled
    trace stays as long as its sample: the questions and the misses report point at it)."""
    days = settings.GOLDSET_TRACE_RETENTION_DAYS
    if not days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    traces = Trace.objects.older_than(cutoff).never_sampled()
    if project is not None:
        traces = traces.filter(project=project)
    # Only the keys are loaded to delete: no stored value (a time the intake would refuse
    # today) can fail the purge, which runs for every project at once.
    deleted, _ = traces.only("pk").delete()
    return deleted
