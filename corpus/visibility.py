"""Who may see a document: the product's access rule, in one place, once per form it is needed in.

The rule: a document is seen only by members of its project. One with no access group is
visible to every member; one with access groups only to the members of at least one of them.
Leads and admins get no exception: outside a document's groups they learn nothing of it, not
even a count. A canary is a restricted document like any other and follows the same rule. A
document's versions (the newest, superseded ones, ones held back by the quality check) are
seen exactly when the document is. Whether a document may be *searched* (canaries left out
of content, held-back versions, hidden near-duplicates, the newest version only) is a further
narrowing, in `DocumentQuerySet.searchable_for` and `corpus.services.retrieval`; it never widens
this rule.

The same rule, side by side:

- `not_hidden_q` / `hidden_q` / `visible_q`: ORM conditions, from any model that reaches a
  document (``prefix`` is the lookup path to it, e.g. ``"version__document__"``);
- `may_see`: over sets of group ids, for paths that read the link rows once for many users
  (`groups_of_documents`, `groups_of_members`);
- `hidden_document_ids`: the restricted documents of a project a user (or a test user's groups)
  may not see, for the search mask;
- `not_hidden_sql`: a parametrised SQL condition, for the few queries written by hand;
- `check_doc_ids`: the document ids an upload names, known to the uploader or not.

`tests/corpus/test_visibility.py` checks on generated worlds that every read path agrees.

Models are read from the app registry inside the functions: `corpus.models` builds its query
methods on this module.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable

from django.apps import apps
from django.db.models import Exists, OuterRef, Q, QuerySet

from goldeval.formats.doc_ids import DocIdCheck, split_doc_ids
from goldset.batching import in_batches
from goldset.sql import identifier


def _links():
    """The (document, access group) link model."""
    return apps.get_model("corpus", "Document").access_groups.through


def _memberships():
    """The (access group, user) membership model."""
    return apps.get_model("corpus", "AccessGroup").members.through


# --- the ORM form -------------------------------------------------------------------------------


def not_hidden_q(user, prefix: str = "") -> Q:
    """Documents no access group hides from ``user``: unrestricted ones, and restricted ones
    with a group the user is a member of. Project membership is not part of it (`visible_q`).

    Written against the two link tables directly: it is asked on every grading request, and
    a join through the group table makes the query dearer to plan."""
    links = _links().objects.filter(document_id=OuterRef(f"{prefix}pk"))
    if not user.is_authenticated:
        return ~Q(Exists(links))
    own_groups = _memberships().objects.filter(user_id=user.pk).values("accessgroup_id")
    return ~Q(Exists(links)) | Q(Exists(links.filter(accessgroup_id__in=own_groups)))


def hidden_q(user, prefix: str = "") -> Q:
    """Documents an access group hides from ``user``: restricted, and none of their groups
    has the user as a member (the complement of `not_hidden_q`)."""
    return ~not_hidden_q(user, prefix)


def visible_q(user, prefix: str = "") -> Q:
    """Documents ``user`` may see: of a project they are a member of, and not hidden from them.
    Anonymous users see nothing (callers return ``.none()`` for them)."""
    member = apps.get_model("corpus", "Membership").objects.filter(
        project_id=OuterRef(f"{prefix}project_id"), user_id=user.pk
    )
    return Q(Exists(member)) & not_hidden_q(user, prefix)


def restricted_elsewhere(*, project, viewer) -> bool:
    """Whether the project has access groups ``viewer`` is not in. It never depends on the
    documents of those groups, so a page may say so ("items on documents restricted to groups
    you are not in are handled by their members") without revealing any of them."""
    group = apps.get_model("corpus", "AccessGroup")
    return group.objects.filter(project=project).exclude(members=viewer).exists()


# --- the set form -------------------------------------------------------------------------------


def may_see(user_group_ids: Collection, document_group_ids: Collection) -> bool:
    """Whether a project member in ``user_group_ids`` may see a document in
    ``document_group_ids`` (ids or names, as long as both sides use the same)."""
    return not document_group_ids or not set(document_group_ids).isdisjoint(user_group_ids)


def groups_of_documents(document_ids: Iterable[int]) -> dict[int, set[int]]:
    """Each restricted document's access group ids (unrestricted documents are absent)."""
    groups: dict[int, set[int]] = defaultdict(set)
    for batch in in_batches(sorted(set(document_ids))):
        rows = _links().objects.filter(document_id__in=batch)
        for document_id, group_id in rows.values_list("document_id", "accessgroup_id"):
            groups[document_id].add(group_id)
    return dict(groups)


def groups_of_members(project_id: int) -> dict[int, set[int]]:
    """Each user's access group ids in the project (users in no group are absent)."""
    groups: dict[int, set[int]] = defaultdict(set)
    rows = _memberships().objects.filter(accessgroup__project_id=project_id)
    for user_id, group_id in rows.values_list("user_id", "accessgroup_id"):
        groups[user_id].add(group_id)
    return dict(groups)


# --- the search mask's form ---------------------------------------------------------------------


def hidden_document_ids(*, project, user=None, groups: Collection[int] | None = None) -> QuerySet:
    """The ids (one column, ``document_id``) of the project's restricted documents that none
    of the user's groups opens, narrowed to ``groups`` when given; with only ``groups`` (a
    test user's), the documents none of those groups opens.

    Read from the (document, group) table alone, with no join to documents: searches ask it
    every time, and that join makes SQLite scan every document."""
    pairs = _links().objects.order_by().filter(accessgroup__project=project)
    theirs = pairs
    if user is not None:
        if not user.is_authenticated:
            theirs = theirs.none()
        else:
            theirs = theirs.filter(accessgroup__members=user)
    if groups is not None:
        theirs = theirs.filter(accessgroup_id__in=set(groups))
    return pairs.exclude(document_id__in=theirs.values("document_id")).values_list("document_id")


# --- the SQL form -------------------------------------------------------------------------------


def not_hidden_sql(document_id: str, user_param: str = "%s") -> str:
    """`not_hidden_q` as an SQL condition over ``document_id`` (the SQL of the document's id in
    the surrounding query, e.g. ``d.id``); the caller binds the user's pk at ``user_param``
    (once). Only table and column names are written into the text (`goldset.sql.identifier`)."""
    q = identifier
    links, memberships = _links()._meta, _memberships()._meta
    link_table, member_table = q(links.db_table), q(memberships.db_table)
    link_document = q(links.get_field("document").column)
    link_group = q(links.get_field("accessgroup").column)
    member_group = q(memberships.get_field("accessgroup").column)
    member_user = q(memberships.get_field("user").column)
    # Only table and column names are written into the text; the user's pk is a parameter.
    return (
        f"(NOT EXISTS (SELECT 1 FROM {link_table} visibility_l1"  # noqa: S608
        f" WHERE visibility_l1.{link_document} = {document_id})"
        f" OR EXISTS (SELECT 1 FROM {link_table} visibility_l2"
        f" JOIN {member_table} visibility_m"
        f" ON visibility_m.{member_group} = visibility_l2.{link_group}"
        f" WHERE visibility_l2.{link_document} = {document_id}"
        f" AND visibility_m.{member_user} = {user_param}))"
    )


# --- the uploads' form --------------------------------------------------------------------------


def check_doc_ids(*, project, doc_ids: Iterable[str], user=None) -> DocIdCheck:
    """The document ids an upload names, split into those the project's corpus has (with a
    text) and the unknown (`goldeval.formats.doc_ids`: refuse a file naming no known one, warn
    otherwise). With a ``user`` (an upload in the app), a document an access group hides from
    them is unknown, exactly as a missing one; without (an admin's command), the corpus'."""
    named = list(dict.fromkeys(doc_ids))
    documents = apps.get_model("corpus", "Document").objects.filter(
        project=project, latest_version__isnull=False
    )
    if user is not None:
        documents = documents.filter(not_hidden_q(user))
    known: set[str] = set()
    for batch in in_batches(sorted(named)):
        known.update(documents.filter(doc_id__in=batch).values_list("doc_id", flat=True))
    return split_doc_ids(named, known)
