"""Every read path says the same about who may see a document (`corpus.visibility`).

Each world is generated from a seed: two projects, members of every role (leads and admins
get no exception), users in groups of a project they are not a member of, access groups,
documents with no group or several, near-duplicate groups, canaries, versions held back by
the quality check and superseded versions, candidates on all of them. For every user, the
ORM querysets, the set predicate, the SQL fragment, the search mask, the permission replay's
snapshot, the candidate queryset and the in-memory paths (`Sight`, the importer's check,
the misses report's filter) must give the same visible set.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection

from corpus import visibility
from corpus.indexfile import LoadedIndex
from corpus.models import (
    AccessGroup,
    Document,
    DocumentVersion,
    DuplicateGroup,
    Membership,
    Project,
    Role,
)
from corpus.services import search_mask
from corpus.services.documents import Importer
from evaluation.services.permission_replays import snapshot_of
from goldeval.scoring.permission_replay import AccessSnapshot, TestUser
from goldset.sql import identifier
from labelling.models import Candidate, Pool, Question, QuestionSet
from labelling.services.votes import Sight
from production.services.misses import _visible
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

SEEDS = range(6)


@dataclass
class World:
    projects: list[Project]
    users: list
    documents: list[Document]


def _world(seed: int) -> World:
    rng = random.Random(seed)
    users = [UserFactory() for _ in range(7)]
    projects, documents = [], []
    for p in range(2):
        project = Project.objects.create(slug=f"w{seed}-p{p}", name=f"World {seed} {p}")
        projects.append(project)
        members = rng.sample(users, rng.randint(3, 6))
        for user, role in zip(members, rng.choices(list(Role), k=len(members)), strict=True):
            Membership.objects.create(project=project, user=user, role=role)
        groups = [
            AccessGroup.objects.create(project=project, name=f"g{g}")
            for g in range(rng.randint(1, 3))
        ]
        for group in groups:
            # Any user, member of the project or not: a group alone must never open a document.
            group.members.set(rng.sample(users, rng.randint(0, 3)))
        pool = Pool.objects.create(
            question_set=QuestionSet.objects.create(project=project, name="set"),
            name="pool",
            state="ready",
        )
        question = Question.objects.create(
            question_set=pool.question_set, external_id="q", text="q"
        )
        made = []
        for d in range(rng.randint(4, 9)):
            document = Document.objects.create(
                project=project, doc_id=f"d{d}", is_canary=rng.random() < 0.15
            )
            document.access_groups.set(
                rng.sample(groups, min(len(groups), rng.choice([0, 0, 1, 1, 2])))
            )
            versions = [
                DocumentVersion.objects.create(
                    document=document,
                    version=v + 1,
                    text=f"text {d} {v}",
                    content_hash=f"{d}-{v}",
                    quality_flagged=rng.random() < 0.25,
                )
                for v in range(rng.randint(1, 2))
            ]
            document.latest_version = versions[-1]
            document.save(update_fields=["latest_version"])
            for rank, version in enumerate(versions):  # superseded versions keep candidates
                Candidate.objects.create(
                    pool=pool, question=question, version=version, start=0, end=4, shuffle_rank=rank
                )
            made.append(document)
        twins = rng.sample(made, 3)
        duplicate = DuplicateGroup.objects.create(project=project, representative=twins[0])
        Document.objects.filter(pk__in=[t.pk for t in twins]).update(duplicate_group=duplicate)
        documents += made
    return World(projects=projects, users=[*users, AnonymousUser()], documents=documents)


def _expected(world: World, user) -> set[int]:
    """The rule as the design states it, from the rows: a project member, and no group or
    one of the document's groups has them."""
    if not user.is_authenticated:
        return set()
    projects = set(Membership.objects.filter(user=user).values_list("project_id", flat=True))
    own = set(user.access_groups.values_list("pk", flat=True))
    return {
        d.pk
        for d in world.documents
        if d.project_id in projects
        and (not (groups := set(d.access_groups.values_list("pk", flat=True))) or groups & own)
    }


@pytest.fixture(params=SEEDS)
def world(request):
    return _world(request.param)


def test_every_document_read_path_agrees(world):
    everything = Document.objects.filter(pk__in=[d.pk for d in world.documents])
    for user in world.users:
        expected = _expected(world, user)
        who = getattr(user, "username", "anonymous")
        assert set(everything.visible_to(user).values_list("pk", flat=True)) == expected, who
        hidden = set(everything.hidden_from(user).values_list("pk", flat=True))
        restricted = set(everything.restricted().values_list("pk", flat=True))
        of_theirs = {d.pk for d in world.documents if _member(user, d.project_id)}
        assert hidden & of_theirs == (restricted - expected) & of_theirs, who
        assert not hidden & expected, who
        for project in world.projects:
            pks = [d.pk for d in world.documents if d.project_id == project.pk]
            mine = expected & set(pks)
            if not _member(user, project.pk):
                assert not mine
                continue
            # The set predicate, on the rows `Sight` and the assignment plans read once.
            groups = visibility.groups_of_documents(pks)
            own = visibility.groups_of_members(project.pk).get(user.pk, set())
            assert {pk for pk in pks if visibility.may_see(own, groups.get(pk, ()))} == mine
            sight = Sight(project_id=project.pk, document_ids=pks)
            assert {pk for pk in pks if sight.sees(user.pk, pk)} == mine, who
            # The SQL fragment.
            assert _by_sql(pks, user) == mine, who
            # The replay's snapshot, read by the Django-free library with group names.
            snapshot = AccessSnapshot.from_dict(snapshot_of(project))
            names = frozenset(
                user.access_groups.filter(project=project).values_list("name", flat=True)
            )
            seen = {
                doc_id
                for doc_id, access in snapshot.documents.items()
                if TestUser(who, names).may_see(access)
            }
            by_doc_id = {d.doc_id: d.pk for d in world.documents if d.project_id == project.pk}
            assert {by_doc_id[doc_id] for doc_id in seen} == mine, who
            # The importer's refusal and the misses report's filter.
            importer = Importer.member(user=user, project=project)
            assert importer.hidden([d for d in world.documents if d.pk in pks]) == set(pks) - mine
            doc_ids = set(by_doc_id)
            assert _visible(project, user, doc_ids) == {
                d for d, pk in by_doc_id.items() if pk in mine
            }


def test_the_candidates_a_user_sees_are_those_on_documents_they_see(world):
    for user in world.users:
        expected = _expected(world, user)
        for project in world.projects:
            if not _member(user, project.pk):
                continue
            candidates = Candidate.objects.filter(pool__question_set__project=project)
            seen = set(
                candidates.not_hidden_from(user).values_list("version__document_id", flat=True)
            )
            on_theirs = {d.pk for d in world.documents if d.project_id == project.pk} & expected
            having = set(candidates.values_list("version__document_id", flat=True))
            assert seen == on_theirs & having, user


def test_the_search_mask_follows_the_rule_and_then_narrows(world):
    """An index of the newest versions (what a build reads); the mask lets through only
    searchable documents the user sees, and never one they do not see."""
    for project in world.projects:
        versions = list(
            Document.objects.filter(project=project).values_list("latest_version_id", "pk")
        )
        loaded = LoadedIndex(
            index_id=0,
            built_at=None,
            searcher=None,
            version_ids=np.array([v for v, _ in versions], dtype=np.int64),
            document_ids=np.array([d for _, d in versions], dtype=np.int64),
            starts=np.zeros(len(versions), dtype=np.int64),
            ends=np.full(len(versions), 4, dtype=np.int64),
        )
        docs = Document.objects.filter(project=project)
        for user in world.users:
            expected = _expected(world, user)
            for with_canaries in (False, True):
                mask = search_mask.compute(loaded, project, user, with_canaries=with_canaries)
                allowed = np.ones(len(loaded), bool) if mask is None else mask
                passed = {d for (_, d), ok in zip(versions, allowed, strict=True) if ok}
                assert passed <= expected
                searchable = docs.searchable_for(user).visible_to(user)
                if not with_canaries:
                    searchable = searchable.content()
                newest = set(searchable.values_list("latest_version_id", flat=True))
                assert {v for (v, _), ok in zip(versions, allowed, strict=True) if ok} == newest
            # A test user's groups alone: the rule with exactly those groups.
            for groups in _group_choices(project):
                mask = search_mask.compute(loaded, project, None, groups=groups, with_canaries=True)
                allowed = np.ones(len(loaded), bool) if mask is None else mask
                passed = {d for (_, d), ok in zip(versions, allowed, strict=True) if ok}
                doc_groups = visibility.groups_of_documents(docs.values_list("pk", flat=True))
                assert all(visibility.may_see(groups, doc_groups.get(d, ())) for d in passed)
                unrestricted = {d.pk for d in docs if d.pk not in doc_groups}
                hidden = set(
                    visibility.hidden_document_ids(project=project, groups=groups).values_list(
                        "document_id", flat=True
                    )
                )
                assert hidden == {
                    d for d, g in doc_groups.items() if not visibility.may_see(groups, g)
                }
                assert not hidden & unrestricted


def test_the_sql_fragment_binds_the_user_and_quotes_only_names():
    sql = visibility.not_hidden_sql("d.id")
    assert sql.count("%s") == 1
    assert '"corpus_document_access_groups"' in sql
    assert visibility.not_hidden_sql("d.id", user_param="%(user)s").count("%(user)s") == 1


def test_the_set_predicate():
    assert visibility.may_see(set(), set())
    assert visibility.may_see({1}, ())
    assert not visibility.may_see(set(), {1})
    assert not visibility.may_see({2}, {1, 3})
    assert visibility.may_see({2, 3}, [1, 3])


def _member(user, project_id: int) -> bool:
    return (
        user.is_authenticated
        and Membership.objects.filter(user=user, project_id=project_id).exists()
    )


def _by_sql(document_ids: list[int], user) -> set[int]:
    q = identifier
    placeholders = ", ".join(["%s"] * len(document_ids))
    sql = (
        f"SELECT d.{q('id')} FROM {q(Document._meta.db_table)} d"  # noqa: S608
        f" WHERE d.{q('id')} IN ({placeholders}) AND {visibility.not_hidden_sql('d.' + q('id'))}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*document_ids, user.pk])
        return {row[0] for row in cursor.fetchall()}


def _group_choices(project) -> list[set[int]]:
    ids = list(AccessGroup.objects.filter(project=project).values_list("pk", flat=True))
    return [set(), set(ids[:1]), set(ids)]
