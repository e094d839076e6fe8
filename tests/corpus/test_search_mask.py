"""The search mask's cache (`corpus.services.search_mask`): a change to anything that decides
what a user may retrieve shows in the very next search of the same process, whichever way it
was written (services, the ORM's bulk paths, updates that send no signal)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.db.models import Count, F, Max, Sum

from corpus.models import AccessGroup, Document, DocumentVersion, DuplicateGroup, Membership
from corpus.services import documents, projects, retrieval, search_mask
from goldset.errors import ServiceError
from tests.factories import ProjectFactory, add_documents

TEXTS = {
    "leave": "Annual leave\n\nEmployees receive 25 days of paid annual leave per year.",
    "salaries": "Salary bands\n\nBand C pays 52,000 euros per year of salary.",
    "bonus": "Bonus rules\n\nThe yearly bonus is paid with the March salary.",
    "vpn": "VPN access\n\nInstall the VPN client and approve the prompt each year.",
}
QUESTION = ["salary bonus leave VPN per year"]


@pytest.fixture
def bm25(project):
    scheme = documents.add_chunking_scheme(project=project, name="docs", strategy="document")
    add_documents(
        project,
        ("leave", TEXTS["leave"]),
        ("salaries", TEXTS["salaries"], ["hr"]),
        ("bonus", TEXTS["bonus"], ["finance"]),
        ("vpn", TEXTS["vpn"]),
    )
    retriever = retrieval.add_retriever(project=project, name="kw", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=retriever)
    return retriever


def found(retriever, user=None, **options) -> set[str]:
    (hits,) = retrieval.retrieve(
        retriever=retriever, questions=QUESTION, k=10, user=user, **options
    )
    return {hit.doc_id for hit in hits}


def fresh(retriever, user, **options) -> np.ndarray:
    """What the mask is, worked out from the database now (no cache)."""
    loaded = retrieval.load_index(retriever)
    mask = search_mask.compute(loaded, retriever.project, user, **options)
    return np.ones(len(loaded), bool) if mask is None else mask


def cached(retriever, user, **options) -> np.ndarray:
    loaded = retrieval.load_index(retriever)
    mask = search_mask.allowed_passages(retriever, loaded, user, **options)
    return np.ones(len(loaded), bool) if mask is None else mask


def agrees(retriever, *users, **options) -> None:
    for user in users:
        assert np.array_equal(cached(retriever, user, **options), fresh(retriever, user, **options))


def test_access_changes_show_in_the_next_search_of_the_same_process(project, member, bm25):
    insider, outsider = member("labeller"), member("lead")
    projects.set_access_group_members(project=project, name="hr", users=[insider])
    hr = AccessGroup.objects.get(project=project, name="hr")
    finance = AccessGroup.objects.get(project=project, name="finance")
    assert found(bm25, insider) == {"leave", "salaries", "vpn"}
    assert found(bm25, outsider) == {"leave", "vpn"}

    # The user's groups: joined, then left (the service), then joined by a bare m2m add.
    projects.set_access_group_members(project=project, name="hr", users=[insider, outsider])
    assert found(bm25, outsider) == {"leave", "salaries", "vpn"}
    projects.set_access_group_members(project=project, name="hr", users=[insider])
    assert found(bm25, outsider) == {"leave", "vpn"}
    finance.members.add(outsider)
    assert found(bm25, outsider) == {"leave", "bonus", "vpn"}
    AccessGroup.members.through.objects.filter(user=outsider).delete()
    assert found(bm25, outsider) == {"leave", "vpn"}

    # A document's groups: restricted by a bulk insert of link rows, opened by deleting them.
    vpn = Document.objects.get(project=project, doc_id="vpn")
    Document.access_groups.through.objects.bulk_create(
        [Document.access_groups.through(document=vpn, accessgroup=hr)]
    )
    assert found(bm25, outsider) == {"leave"}
    assert found(bm25, insider) == {"leave", "salaries", "vpn"}
    salaries = Document.objects.get(project=project, doc_id="salaries")
    salaries.access_groups.clear()
    assert found(bm25, outsider) == {"leave", "salaries"}

    # Link rows changed in place (no insert, no delete, no signal): two documents swap groups,
    # which keeps the links' count, their largest id and the sum of each column.
    bonus = Document.objects.get(project=project, doc_id="bonus")
    links = Document.access_groups.through.objects
    assert found(bm25, insider) == {"leave", "salaries", "vpn"}
    bonus_link = links.get(document=bonus)
    links.filter(document=vpn).update(accessgroup=finance)
    links.filter(pk=bonus_link.pk).update(accessgroup=hr)
    assert found(bm25, insider) == {"leave", "salaries", "bonus"}
    assert found(bm25, outsider) == {"leave", "salaries"}
    agrees(bm25, insider, outsider, None)

    # Leaving the project: nothing at all.
    Membership.objects.filter(project=project, user=insider).delete()
    assert found(bm25, insider) == set()
    Membership.objects.create(project=project, user=insider)
    assert found(bm25, insider) == {"leave", "salaries", "bonus"}
    agrees(bm25, insider, outsider, None)


def test_a_test_users_groups_are_part_of_the_key(project, member, bm25):
    hr = AccessGroup.objects.get(project=project, name="hr").pk
    finance = AccessGroup.objects.get(project=project, name="finance").pk
    assert found(bm25, groups=()) == {"leave", "vpn"}
    assert found(bm25, groups={hr}) == {"leave", "salaries", "vpn"}
    assert found(bm25, groups=[finance]) == {"leave", "bonus", "vpn"}
    assert found(bm25, groups=()) == {"leave", "vpn"}
    insider = member("labeller")
    projects.set_access_group_members(project=project, name="hr", users=[insider])
    assert found(bm25, insider, groups={finance}) == {"leave", "vpn"}
    assert found(bm25, insider, groups={hr}) == {"leave", "salaries", "vpn"}


def test_searchability_changes_show_in_the_next_search(project, member, bm25):
    user = member("labeller")
    AccessGroup.objects.get(project=project, name="hr").members.add(user)
    assert found(bm25, user) == {"leave", "salaries", "vpn"}

    # Held back and accepted, by updates that send no signal.
    leave = Document.objects.get(project=project, doc_id="leave")
    DocumentVersion.objects.filter(pk=leave.latest_version_id).update(quality_flagged=True)
    assert found(bm25, user) == {"salaries", "vpn"}
    documents.accept_quality(
        version=DocumentVersion.objects.get(pk=leave.latest_version_id), user=user
    )
    assert found(bm25, user) == {"leave", "salaries", "vpn"}

    # A new version: the index's passages of the document are stale.
    add_documents(project, ("vpn", TEXTS["vpn"] + "\n\nChanged after the build."))
    assert found(bm25, user) == {"leave", "salaries"}

    # A canary, planted by an update, and found again by a permission replay's search.
    Document.objects.filter(project=project, doc_id="leave").update(is_canary=True)
    assert found(bm25, user) == {"salaries"}
    assert found(bm25, user, with_canaries=True) == {"leave", "salaries"}
    Document.objects.filter(project=project, doc_id="leave").update(is_canary=False)

    # Near-duplicates: only the representative; another member once it changes.
    salaries = Document.objects.get(project=project, doc_id="salaries")
    group = DuplicateGroup.objects.create(project=project, representative=leave)
    Document.objects.filter(pk__in=[leave.pk, salaries.pk]).update(duplicate_group=group)
    assert found(bm25, user) == {"leave"}
    DuplicateGroup.objects.filter(pk=group.pk).update(representative=salaries)
    assert found(bm25, user) == {"salaries"}
    # The representative hidden from the user: the first member they may see stands in.
    AccessGroup.members.through.objects.filter(user=user).delete()
    assert found(bm25, user) == {"leave"}
    agrees(bm25, user, None)
    agrees(bm25, user, with_canaries=True)


def test_a_repeated_search_reads_one_row_for_the_mask(
    project, member, bm25, django_assert_num_queries
):
    user = member("labeller")
    found(bm25, user)
    # After the search, one query: the state of what decides the mask (unchanged, so the mask
    # searched with stands) with the doc ids of the results.
    with django_assert_num_queries(1):
        assert found(bm25, user) == {"leave", "vpn"}


def test_a_change_made_during_the_search_is_not_missed(project, member, bm25, monkeypatch):
    """The cached mask is checked after the search: a user removed from a group while their
    search runs gets nothing of the group's documents, as if the change came just before."""
    user = member("labeller")
    projects.set_access_group_members(project=project, name="hr", users=[user])
    assert found(bm25, user) == {"leave", "salaries", "vpn"}
    searcher = retrieval.load_index(bm25).searcher
    search_many = searcher.search_many
    calls = []

    def leaving_meanwhile(*args, **kwargs):
        if not calls:
            AccessGroup.members.through.objects.filter(user=user).delete()
        calls.append(kwargs["allowed"])
        return search_many(*args, **kwargs)

    monkeypatch.setattr(searcher, "search_many", leaving_meanwhile)
    assert found(bm25, user) == {"leave", "vpn"}
    assert len(calls) == 2  # searched again with the mask of the new state
    assert np.array_equal(calls[1], fresh(bm25, user))


def test_what_a_replaced_index_refuses_never_reaches_the_caller(project, member, bm25, monkeypatch):
    """The filed mask's index may be one a rebuild replaced; the search with it is tried
    before the state says so. Whatever it refuses (an encoder's changed model, say) is not
    the answer: the active index answers, and still refuses alike when it is active."""
    user = member("labeller")
    old = retrieval.load_index(bm25)
    assert found(bm25, user) == {"leave", "vpn"}
    retrieval.build_index(retriever=bm25)
    search = retrieval._search

    def refusing_the_old(retriever, loaded, *args):
        if loaded is old:
            raise ServiceError("The model of kw changed since its index was built; rebuild it.")
        return search(retriever, loaded, *args)

    monkeypatch.setattr(retrieval, "_search", refusing_the_old)
    assert retrieval.load_index(bm25) is not old
    assert found(bm25, user) == {"leave", "vpn"}
    monkeypatch.setattr(retrieval, "_search", lambda *args: refusing_the_old(*args[:1], old))
    with pytest.raises(ServiceError, match="changed since its index was built"):
        found(bm25, user)


def test_a_doc_id_edit_and_a_deletion_show_in_the_next_search(project, member, bm25):
    """Neither moves the state (an unrestricted document's row alone changes): doc ids are read
    with the state after every search, and a deleted document's passages are searched past."""
    user = member("labeller")
    assert found(bm25, user) == {"leave", "vpn"}
    Document.objects.filter(project=project, doc_id="vpn").update(doc_id="vpn-2")
    assert found(bm25, user) == {"leave", "vpn-2"}
    Document.objects.filter(project=project, doc_id="leave").delete()
    assert found(bm25, user) == {"vpn-2"}
    (hits,) = retrieval.retrieve(retriever=bm25, questions=QUESTION, k=1, user=user)
    assert [hit.doc_id for hit in hits] == ["vpn-2"]  # k still filled past the deleted one
    assert found(bm25) == {"salaries", "bonus", "vpn-2"}


def test_the_doc_ids_read_with_the_state_are_the_orms(project, member, bm25):
    """`state_and_doc_ids` is SQL written by hand: its doc ids are the ORM's for the same pks
    (documents of another project or gone are left out), its state is `state`'s."""
    user = member("labeller")
    ours = list(Document.objects.filter(project=project).values_list("pk", flat=True))
    elsewhere = ProjectFactory()
    add_documents(elsewhere, ("elsewhere", "Elsewhere\n\nVPN per year."))
    theirs = list(Document.objects.filter(project=elsewhere).values_list("pk", flat=True))
    wanted = [*ours, *theirs, max(ours + theirs) + 10_000]
    for pks in (wanted, ours[:1], []):
        now, doc_ids = search_mask.state_and_doc_ids(bm25, user, pks)
        assert now == search_mask.state(bm25, user)
        assert doc_ids == dict(
            Document.objects.filter(project=project, pk__in=pks).values_list("pk", "doc_id")
        )


def test_the_state_query_says_what_the_orm_says(project, member, bm25):
    """`_state` is SQL written by hand: each summary equals the ORM's aggregate."""
    user, other = member("labeller"), member("lead")
    projects.set_access_group_members(project=project, name="hr", users=[user, other])
    AccessGroup.objects.get(project=project, name="finance").members.add(user)
    leave = Document.objects.get(project=project, doc_id="leave")
    vpn = Document.objects.get(project=project, doc_id="vpn")
    group = DuplicateGroup.objects.create(project=project, representative=leave)
    Document.objects.filter(pk__in=[leave.pk, vpn.pk]).update(duplicate_group=group)
    Document.objects.filter(pk=vpn.pk).update(is_canary=True)
    DocumentVersion.objects.filter(pk=vpn.latest_version_id).update(quality_flagged=True)
    add_documents(project, ("leave", TEXTS["leave"] + " Changed."))
    loaded = retrieval.load_index(bm25)

    def summary(rows, *sums, product=None):
        aggregates = {"n": Count("pk"), "top": Max("pk")}
        aggregates.update({f"s{i}": Sum(column) for i, column in enumerate(sums)})
        if product:
            aggregates["p"] = Sum(F(product[0]) * F(product[1]))
        return list(rows.aggregate(**aggregates).values())

    def int_or_none(values):
        return [None if value is None else int(value) for value in values]

    versions = DocumentVersion.objects.all()
    links = Document.access_groups.through.objects.filter(accessgroup__project=project)
    duplicates = Document.objects.filter(duplicate_group__project=project)
    for someone in (user, other, None):
        theirs = AccessGroup.members.through.objects.filter(
            user=someone, accessgroup__project=project
        )
        expected = [
            *summary(links, "document", "accessgroup", product=("document", "accessgroup")),
            *summary(versions.filter(quality_flagged=True, quality_accepted_at=None), "document"),
            *summary(versions.filter(created_at__gt=loaded.built_at), "document"),
            *summary(
                duplicates,
                "duplicate_group",
                "duplicate_group__representative",
                product=("pk", "duplicate_group"),
            )[:4],
            duplicates.filter(duplicate_group__representative__isnull=False).count(),
            duplicates.aggregate(p=Sum(F("pk") * F("duplicate_group")))["p"],
            *summary(Document.objects.filter(project=project, is_canary=True), "pk"),
            Membership.objects.filter(project=project, user=someone).count(),
            *summary(theirs, "accessgroup"),
        ]
        now = search_mask.state(bm25, someone)
        assert now.index == (loaded.index_id, loaded.built_at)
        # On PostgreSQL the rows' hashes follow (`search_mask._hashed`), one per summary.
        assert int_or_none(now.summaries[: len(expected)]) == int_or_none(expected)
        assert len(now.summaries) - len(expected) == (6 if connection.vendor == "postgresql" else 0)
    assert expected[0] == 2 and expected[5] == 1 and expected[8] == 1  # rows to summarise


def test_a_rotation_that_keeps_every_sum_still_changes_the_state(project, member, bm25):
    """Three documents and three groups with evenly spaced ids: moving each document from the
    next group to the one after keeps the links' count, largest id, both sums and the sum of
    products; on PostgreSQL the rows' hashes still tell, so the next search works the mask out
    again."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite keeps the sums alone (search_mask._hashed); CI is PostgreSQL.")
    groups = [AccessGroup.objects.create(project=project, name=f"rot{i}") for i in range(3)]
    add_documents(project, *[(f"rot{i}", f"Rotation {i}\n\nVPN per year {i}.") for i in range(3)])
    docs = [Document.objects.get(project=project, doc_id=f"rot{i}") for i in range(3)]
    links = Document.access_groups.through.objects
    rows = links.bulk_create(
        [
            Document.access_groups.through(document=docs[i], accessgroup=groups[(i + 1) % 3])
            for i in range(3)
        ]
    )
    user = member("labeller")
    groups[0].members.add(user)
    before = search_mask.state(bm25, user)
    for i, row in enumerate(rows):
        links.filter(pk=row.pk).update(accessgroup=groups[(i + 2) % 3])
    after = search_mask.state(bm25, user)
    doc_steps = {docs[1].pk - docs[0].pk, docs[2].pk - docs[1].pk}
    group_steps = {groups[1].pk - groups[0].pk, groups[2].pk - groups[1].pk}
    if len(doc_steps) == 1 and len(group_steps) == 1:  # the sums alone cannot tell
        assert before.summaries[:5] == after.summaries[:5]
    assert before != after
    agrees(bm25, user)
