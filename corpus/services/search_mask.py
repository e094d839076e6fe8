"""Which passages of a loaded index a search may return: the mask, and its cache per state.

`compute` works the mask out from the rows that decide it: the rule of
``Document.objects.searchable()`` and ``.visible_to(user)`` (`corpus.visibility`), plus "the
newest version only". That is six queries and, at 1,000,000 passages, passes over every passage:
per search, most of what `retrieve()` spent besides the search itself (`benchmarks/scale.py`).
So `allowed_passages` keeps the masks it worked out, per process, under a key that names
everything `compute` reads:

- the call: the retriever, the project, the user, the test user's groups and whether canaries
  may come back;
- the `State`, read by one query (`state`): the retriever's active index (id and build time),
  and small summaries (count, largest id, sums of ids) of each set of rows `compute` reads: the
  user's membership of the project and their access group memberships in it, the (document,
  access group) links of the project's groups, held-back versions, versions newer than the
  index, the members of the project's near-duplicate groups with their representatives, and
  the project's canaries.

A row is added (ids only grow, so the largest id moves), deleted (the count moves) or changed
in place (a sum over the changed column moves; a swap between two rows moves a sum of
products; on PostgreSQL, any change moves a sum of 64-bit hashes of the rows,
`_hashed`). So a write that could change a mask changes the state, whichever way it is
written (a service, the admin, a bulk insert or an update that sends no signal): a document's
new access group, a member leaving a group, an accepted version, a new version, a regrouped
near-duplicate, a planted canary each make the next search, in every process, work its mask
out again. A mask is filed only if the state read again after working it out is the same (a
write landing in between would otherwise file the new mask under the old state).

A search can also check its mask after searching: `last_filed` is the mask this process used
last for a call, and `state_and_doc_ids` reads the state with the doc ids of what was found, in
one query; the search stands when that state is the mask's (`corpus.services.retrieval`).
"""

from __future__ import annotations

import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from corpus import visibility
from corpus.indexfile import LoadedIndex
from corpus.models import (
    AccessGroup,
    Document,
    DocumentVersion,
    DuplicateGroup,
    Index,
    Membership,
    Project,
    Retriever,
)
from goldset.sql import identifier

# Masks kept per process (one bool per passage each: 1 MB at 1,000,000 passages): a handful of
# indexes times the few distinct users searching them at a time.
CACHED_MASKS = 16

_masks: OrderedDict[tuple, np.ndarray | None] = OrderedDict()
_masks_lock = threading.Lock()


@dataclass(frozen=True)
class State:
    """What decides a retriever's masks now: its active index (id, build time; None without
    one) and the summaries of the rows `compute` reads for that index and user."""

    index: tuple[int, datetime | None] | None
    summaries: tuple


def state(retriever: Retriever, user) -> State:
    """The retriever's `State` for ``user`` (None: no user), in one query: it also names the
    active index, so a search needs no other read before it searches.

    Written as SQL: the same summaries as ORM subqueries took 9-10 ms of CPU per search to
    build, the query itself 0.03 ms (`tests/corpus/test_search_mask.py` checks it against the
    ORM's answer)."""
    return _read(retriever, user, None)[0]


def state_and_doc_ids(
    retriever: Retriever, user, documents: Collection[int]
) -> tuple[State, dict[int, str]]:
    """`state`, and the doc id of each of ``documents`` (pks) that is still a document of the
    retriever's project, read in the same query: one round trip after a search both checks the
    mask it searched with and names what it found (`corpus.services.retrieval.retrieve`). A
    doc id can be edited and a document deleted, so they are read, never cached."""
    return _read(retriever, user, documents)


def _read(
    retriever: Retriever, user, documents: Collection[int] | None
) -> tuple[State, dict[int, str]]:
    user_id = user.pk if user is not None and user.is_authenticated else None
    params = {"retriever": retriever.pk, "project": retriever.project_id, "user": user_id}
    if documents is not None:
        # One parameter whatever the count, so the statement's text never changes: it is
        # prepared once per connection (`goldset.settings`), where a `pk__in` of 100 ids was a
        # new statement nearly every search, parsed again by psycopg (~1 ms; it keeps its parse
        # only up to 50 parameters) and planned again; and SQLite caps a statement's parameters.
        wanted = [int(pk) for pk in documents]
        params["documents"] = wanted if connection.vendor == "postgresql" else json.dumps(wanted)
    with connection.cursor() as cursor:
        cursor.execute(_state_sql(documents is not None), params)
        row = cursor.fetchone()
        # The same SQL always has the same columns: named once per process (psycopg builds
        # a description of the 30-odd columns anew on each read of it).
        names = _names.get(documents is not None)
        if names is None:
            names = _names[documents is not None] = [column[0] for column in cursor.description]
    doc_ids: dict[int, str] = {}
    if row is None:  # no such retriever
        return State(index=None, summaries=()), doc_ids
    if documents is not None:
        # The documents' two columns come last (`_state_sql`): their pks and doc ids, as arrays
        # on PostgreSQL and JSON arrays on SQLite (NULL, or "[]", when none is found).
        pks, ids = (json.loads(v) if isinstance(v, str) else v for v in row[-2:])
        doc_ids = dict(zip(pks or (), ids or (), strict=True))
        row, names = row[:-2], names[:-2]
    if row[0] is None:
        return State(index=None, summaries=()), doc_ids
    # The rows' hashes (`_hashed`) last, so the other summaries keep their places.
    values = list(zip(names[2:], row[2:], strict=True))
    summaries = [v for name, v in values if not name.startswith(_HASHED)]
    summaries += [v for name, v in values if name.startswith(_HASHED)]
    return State(index=(row[0], _as_datetime(row[1])), summaries=tuple(summaries)), doc_ids


def _as_datetime(value) -> datetime | None:
    """A timestamp as the ORM reads it: SQLite's driver gives the stored UTC time without its
    zone (or as text)."""
    if value is None:
        return None
    moment = value if isinstance(value, datetime) else parse_datetime(value)
    if settings.USE_TZ and timezone.is_naive(moment):
        return timezone.make_aware(moment, UTC)
    return moment


def allowed_passages(
    retriever: Retriever,
    loaded: LoadedIndex,
    user,
    *,
    groups: Collection[int] | None = None,
    with_canaries: bool = False,
    now: State | None = None,
) -> np.ndarray | None:
    """`compute`'s mask (None: every passage) for the retriever's ``loaded`` index, from this
    process's cache when nothing it reads has changed since it was worked out; ``now`` is the
    `state` just read, if the caller has it. The mask is read-only: it is shared."""
    call = _call(retriever, user, groups, with_canaries)
    now = now or state(retriever, user)
    if now.index != (loaded.index_id, loaded.built_at):
        # Another index became active meanwhile: work this one's mask out, and keep nothing.
        return compute(loaded, retriever.project, user, groups=groups, with_canaries=with_canaries)
    with _masks_lock:
        if (call, now) in _masks:
            _masks.move_to_end((call, now))
            return _masks[call, now]
    mask = compute(loaded, retriever.project, user, groups=groups, with_canaries=with_canaries)
    if mask is not None:
        mask.flags.writeable = False
    if state(retriever, user) == now:
        with _masks_lock:
            _masks[call, now] = mask
            while len(_masks) > CACHED_MASKS:
                _masks.popitem(last=False)
    return mask


@dataclass(frozen=True)
class Filed:
    """A mask this process filed, and the `State` it was filed under."""

    state: State
    mask: np.ndarray | None


def last_filed(
    retriever: Retriever,
    user,
    *,
    groups: Collection[int] | None = None,
    with_canaries: bool = False,
) -> Filed | None:
    """The mask this process used last for this call (the arguments of `allowed_passages`),
    with its state; None if none is filed. Reads nothing from the database: a caller may
    search with it, but only keeps what it found if the `state` read after the search (with
    `state_and_doc_ids`) is the same, as then this mask is the one `allowed_passages` gives."""
    call = _call(retriever, user, groups, with_canaries)
    with _masks_lock:
        for (filed_call, filed_state), mask in reversed(_masks.items()):
            if filed_call == call:
                return Filed(state=filed_state, mask=mask)
    return None


def _call(retriever: Retriever, user, groups: Collection[int] | None, with_canaries: bool):
    """The call's part of a mask's key in the cache: everything but the state."""
    return (
        retriever.pk,
        retriever.project_id,
        None if user is None else (user.pk, user.is_authenticated),
        None if groups is None else frozenset(groups),
        with_canaries,
    )


# The names of `_state_sql`'s columns, with and without the documents' (`_read`).
_names: dict[bool, list[str]] = {}

# The name each summary's rows' hash goes by in `state`'s query (PostgreSQL only, `_hashed`).
_HASHED = "hashed_"


def _hashed(name: str, *values: str) -> str:
    """On PostgreSQL, one more column for a summary: the sum of a 64-bit hash of each of its
    rows' ``values``. Counts, largest ids and (products of) sums miss an in-place rotation
    that keeps them all: three links whose documents' and groups' ids are evenly spaced, each
    moved to the next group, keep every one of them (`tests/corpus/test_search_mask.py`); a
    hash per row does not. SQLite (the quickstart, whose writes never change these rows in
    place) has no such function and keeps the sums alone.

    Every value is an id (an integer, or NULL: 0 stands for it, ids start at 1), hashed as one:
    the first value's hash seeded with the next's, and so on. Hashing the values' text joined
    by ':' instead made this the dearest part of the query (1,000,000 passages: 5,000 links,
    0.9 ms against 0.4 ms)."""
    if connection.vendor != "postgresql":
        return ""
    hashed = "0"
    for value in reversed(values):
        hashed = f"hashint8extended(COALESCE({value}, 0), {hashed})"
    return f", SUM({hashed}) AS {_HASHED}{name}"


@functools.cache
def _state_sql(documents: bool = False) -> str:
    """The SQL of `state` (with ``documents``: of `state_and_doc_ids`, whose two columns come
    last): only table and column names are written into it."""

    links, theirs = Document.access_groups.through, AccessGroup.members.through

    def table(model) -> str:
        return identifier(model._meta.db_table)

    def column(model, field: str) -> str:
        return identifier(model._meta.get_field(field).column)

    # Every table's key is the same column ("id"); checked rather than assumed.
    (pk,) = {
        identifier(model._meta.pk.column)
        for model in (
            links,
            theirs,
            Retriever,
            Index,
            AccessGroup,
            Document,
            DocumentVersion,
            DuplicateGroup,
        )
    }

    index, group, document = table(Index), table(AccessGroup), table(Document)
    version, duplicates = table(DocumentVersion), table(DuplicateGroup)
    link_document, link_group = column(links, "document"), column(links, "accessgroup")
    their_group, their_user = column(theirs, "accessgroup"), column(theirs, "user")
    group_project = column(AccessGroup, "project")
    version_document = column(DocumentVersion, "document")
    flagged = column(DocumentVersion, "quality_flagged")
    accepted = column(DocumentVersion, "quality_accepted_at")
    created = column(DocumentVersion, "created_at")
    duplicate_group = column(Document, "duplicate_group")
    representative = column(DuplicateGroup, "representative")
    built = column(Index, "built_at")
    retriever, active = table(Retriever), column(Retriever, "active_index")
    # Each summary is an aggregate without GROUP BY, so one row; their cross join is one row.
    # Only names are written into the SQL: every value is a parameter.
    items = [
        f"""(SELECT r.{active}, i.{built}
           FROM {retriever} r LEFT JOIN {index} i ON i.{pk} = r.{active}
          WHERE r.{pk} = %(retriever)s) AS active""",  # noqa: S608
        f"""(SELECT COUNT(*), MAX(l.{pk}), SUM(l.{link_document}), SUM(l.{link_group}),
                SUM(l.{link_document} * l.{link_group})
                {_hashed("links", f"l.{link_document}", f"l.{link_group}")}
           FROM {table(links)} l JOIN {group} g ON g.{pk} = l.{link_group}
          WHERE g.{group_project} = %(project)s) AS links""",  # noqa: S608
        f"""(SELECT COUNT(*), MAX({pk}), SUM({version_document})
                {_hashed("held_back", pk, version_document)} FROM {version}
          WHERE {flagged} AND {accepted} IS NULL) AS held_back""",  # noqa: S608
        f"""(SELECT COUNT(*), MAX({pk}), SUM({version_document})
                {_hashed("newer", pk, version_document)} FROM {version}
          WHERE {created} > (SELECT i.{built} FROM {index} i JOIN {retriever} r
                               ON r.{active} = i.{pk} WHERE r.{pk} = %(retriever)s)) AS newer""",  # noqa: S608
        f"""(SELECT COUNT(*), MAX(d.{pk}), SUM(d.{duplicate_group}), SUM(g.{representative}),
                COUNT(g.{representative}), SUM(d.{pk} * d.{duplicate_group})
                {_hashed("duplicates", f"d.{pk}", f"d.{duplicate_group}", f"g.{representative}")}
           FROM {document} d JOIN {duplicates} g ON g.{pk} = d.{duplicate_group}
          WHERE g.{column(DuplicateGroup, "project")} = %(project)s) AS duplicates""",  # noqa: S608
        f"""(SELECT COUNT(*), MAX({pk}), SUM({pk}) {_hashed("canaries", pk)} FROM {document}
          WHERE {column(Document, "project")} = %(project)s
            AND {column(Document, "is_canary")}) AS canaries""",  # noqa: S608
        f"""(SELECT COUNT(*) FROM {table(Membership)}
          WHERE {column(Membership, "project")} = %(project)s
            AND {column(Membership, "user")} = %(user)s) AS member""",  # noqa: S608
        f"""(SELECT COUNT(*), MAX(m.{pk}), SUM(m.{their_group})
                {_hashed("their_groups", f"m.{pk}", f"m.{their_group}")}
           FROM {table(theirs)} m JOIN {group} g ON g.{pk} = m.{their_group}
          WHERE g.{group_project} = %(project)s AND m.{their_user} = %(user)s) AS their_groups""",  # noqa: S608
    ]
    if documents:
        items.append(_found(document, pk, column(Document, "project"), column(Document, "doc_id")))
    return _in_pairs(items)


def _in_pairs(items: list[str]) -> str:
    """One row of every one-row FROM item's columns, in order, joined two at a time.

    Listed side by side in one FROM, PostgreSQL's planner weighs every order of joining them.
    That costs nothing with the settings' default (`goldset.settings`: a statement run a fifth
    time is prepared, and its generic plan reused: 1.05 against 1.03 ms a read, measured), but
    with DB_PREPARED_STATEMENTS=0 (behind a pooler) every search plans again: 8 items took
    0.8 ms to plan, 9 took 1.5 ms, in pairs 0.65 and 0.75 ms (at load 5). Each pair is a
    subquery with LIMIT 1, which the planner keeps apart, so it plans one join of two at a
    time. Every item is one row (or none), so LIMIT 1 drops nothing."""
    query = items[0]
    for number, item in enumerate(items[1:]):
        query = f"(SELECT * FROM {query}, {item} LIMIT 1) AS pair{number}"  # noqa: S608
    return f"SELECT * FROM {query}"  # noqa: S608


def _found(document: str, pk: str, project: str, doc_id: str) -> str:
    """The FROM item of `state_and_doc_ids`' documents: the pk and doc id of each of the
    ``documents`` parameter's pks that is a document of the project, as two arrays in one row
    (an aggregate reads its rows once, so both arrays list them in the same order). The list
    is one parameter: an array on PostgreSQL, JSON text on SQLite (which has no arrays)."""
    if connection.vendor == "postgresql":
        aggregate, among = "array_agg", "= ANY(%(documents)s)"
    else:
        aggregate, among = "json_group_array", "IN (SELECT value FROM json_each(%(documents)s))"
    return f"""(SELECT {aggregate}(d.{pk}), {aggregate}(d.{doc_id}) FROM {document} d
          WHERE d.{project} = %(project)s AND d.{pk} {among}) AS found"""  # noqa: S608


def compute(
    loaded: LoadedIndex,
    project: Project,
    user,
    *,
    groups: Collection[int] | None = None,
    with_canaries: bool = False,
) -> np.ndarray | None:
    """Which passages may be returned (None: all of them).

    The rule of ``Document.objects.searchable()`` and ``.visible_to(user)``, plus "the newest
    version only", worked out from the few rows that block something (held-back versions,
    hidden near-duplicates, versions newer than the index, restricted documents) instead of
    from every document, which on SQLite is far dearer at scale (benchmarks/scale.py; see
    tests/corpus/test_retrievers.py and tests/corpus/test_visibility.py for the agreement).
    """
    if user is not None and not (
        user.is_authenticated and Membership.objects.filter(project=project, user=user).exists()
    ):
        return np.zeros(len(loaded), dtype=bool)
    # Not narrowed to the project: joining documents makes SQLite scan them all, while these
    # indexed lookups return a few rows, and rows of other projects match no passage here.
    versions = DocumentVersion.objects.order_by()
    blocked_versions = set(
        versions.filter(quality_flagged=True, quality_accepted_at__isnull=True).values_list(
            "pk", flat=True
        )
    )
    # A document with a version newer than the index has only stale passages in it.
    newer = dict(
        versions.filter(created_at__gt=loaded.built_at).values_list("document_id", "pk")
        if loaded.built_at is not None
        else []
    )
    hidden: set[int] = set()
    if user is not None or groups is not None:
        hidden = {
            document_id
            for (document_id,) in visibility.hidden_document_ids(
                project=project, user=user, groups=groups
            )
        }
    blocked_documents = hidden | _hidden_duplicates(project, hidden)
    if not with_canaries:
        blocked_documents |= set(
            # Unordered, so SQLite reads the canaries' partial index, not every document's row.
            Document.objects.filter(project=project, is_canary=True)
            .order_by()
            .values_list("pk", flat=True)
        )
    if not (blocked_versions or blocked_documents or newer):
        return None
    blocked = loaded.of_versions(blocked_versions) | loaded.of_documents(blocked_documents)
    if newer:
        blocked |= loaded.of_documents(newer.keys()) & ~loaded.of_versions(newer.values())
    mask = ~blocked
    return None if mask.all() else mask


def _hidden_duplicates(project: Project, hidden: set[int]) -> set[int]:
    """Members of near-duplicate groups that are not their group's searchable copy. For a user
    the representative is hidden from, the group's first member they may see (lowest pk) stands
    in for it (the rule of `DocumentQuerySet.searchable_for`)."""
    members: dict[int, list[int]] = {}
    representative: dict[int, int | None] = {}
    # Unordered in SQL: ORDER BY pk made PostgreSQL walk every document of the project in pk
    # order to join it to the (few or no) groups.
    for pk, group_id, representative_id in (
        Document.objects.filter(duplicate_group__project=project)
        .order_by()
        .values_list("pk", "duplicate_group_id", "duplicate_group__representative_id")
    ):
        members.setdefault(group_id, []).append(pk)
        representative[group_id] = representative_id
    blocked: set[int] = set()
    for group_id, pks in members.items():
        kept = representative[group_id]
        if kept in hidden:
            kept = min((pk for pk in pks if pk not in hidden), default=None)
        blocked.update(pk for pk in pks if pk != kept)
    return blocked
