"""The rows every grading write starts from (`labelling.services.write_lock`): the assignment's
fields, its project's newest guideline and the one the page showed, its verdict, and nothing for
another labeller's assignment; the assignment a write is for; the judgement with its spans."""

import pytest
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.http import Http404

from labelling.models import Assignment, Guideline, Judgement, Verdict
from labelling.services.guidelines import save_guideline
from labelling.services.write_lock import held_assignment, judgement_with_spans, locked_assignment
from tests.factories import MembershipFactory
from tests.labelling.test_grading_views import World

FIELDS = [field.attname for field in Assignment._meta.concrete_fields]


def orm_answer(assignment, version):
    guidelines = Guideline.objects.filter(project_id=OuterRef("pool__question_set__project_id"))
    newest = guidelines.order_by("-version")
    row = (
        Assignment.objects.filter(pk=assignment.pk)
        .annotate(
            current_guideline_id=Subquery(newest.values("pk")[:1]),
            current_guideline_version=Subquery(newest.values("version")[:1]),
            shown_guideline_id=Subquery(guidelines.filter(version=version).values("pk")[:1]),
            verdict_outcome=Subquery(
                Verdict.objects.filter(assignment_id=OuterRef("pk")).values("outcome")[:1]
            ),
        )
        .values(
            *FIELDS,
            "current_guideline_id",
            "current_guideline_version",
            "shown_guideline_id",
            "verdict_outcome",
        )
        .get()
    )
    return row


def raw_answer(assignment, labeller, version):
    with transaction.atomic():
        row = locked_assignment(
            assignment_id=assignment.pk, labeller_id=labeller.pk, guideline_version=version
        )
    if row is None:
        return None
    names = [
        *FIELDS,
        "current_guideline_id",
        "current_guideline_version",
        "shown_guideline_id",
        "verdict_outcome",
    ]
    return {name: getattr(row, name) for name in names}


@pytest.mark.django_db
def test_the_write_lock_reads_what_the_orm_reads(project):
    world = World(project)
    a1 = world.a1
    assert raw_answer(a1, world.ana, 0) == orm_answer(a1, 0)  # no guideline, no verdict
    save_guideline(project=project, text="Grade 2 if it answers.", user=world.lead)
    save_guideline(project=project, text="Grade 2 if it answers fully.", user=world.lead)
    Verdict.objects.create(assignment=a1, outcome="answerable")
    for version in (0, 1, 2, 3):
        answer = raw_answer(a1, world.ana, version)
        assert answer == orm_answer(a1, version)
    assert answer["current_guideline_version"] == 2 and answer["shown_guideline_id"] is None
    assert raw_answer(a1, world.ana, 1)["verdict_outcome"] == "answerable"
    assert raw_answer(world.a2, world.ana, 1)["verdict_outcome"] is None
    assert raw_answer(a1, world.ben, 0) is None  # ana's assignment is not ben's to write
    assert raw_answer(world.b1, world.ben, 0)["id"] == world.b1.pk


def held(world, user, question, project=None):
    project = project or world.project
    ids = {"pool_id": world.pool.pk, "question_id": question.pk}
    access, raw = held_assignment(user=user, slug=project.slug, **ids)
    assert access.project == project and access.membership.user_id == user.pk
    orm = Assignment.objects.in_project(project).held_by(user).for_question(**ids).first()
    assert (raw and raw.pk, raw and raw.labeller_id) == (orm and orm.pk, orm and orm.labeller_id)
    if raw is not None:  # the other fields load when asked for, as after the ORM's .only()
        assert (raw.slot, raw.completed_at) == (orm.slot, orm.completed_at)
    return raw


@pytest.mark.django_db
def test_the_assignment_a_write_is_for_is_the_one_the_orm_finds(project):
    from django.utils import timezone

    from corpus.models import Project

    world = World(project)
    assert held(world, world.ana, world.q1).pk == world.a1.pk
    assert held(world, world.ben, world.q1).pk == world.b1.pk
    second = held(world, world.ana, world.q2)
    assert (second.pk, second.pool_id, second.question_id) == (
        world.a2.pk,
        world.pool.pk,
        world.q2.pk,
    )
    assert held(world, world.ben, world.q2) is None  # not his question
    assert held(world, world.lead, world.q1) is None  # nobody's slot is the lead's
    other = Project.objects.create(slug="other", name="Other")
    with pytest.raises(Http404):  # not her project: no access, never an assignment
        held(world, world.ana, world.q1, project=other)
    MembershipFactory(project=other, user=world.ana)
    assert held(world, world.ana, world.q1, project=other) is None  # the pool is not other's
    world.q2.excluded_at = timezone.now()
    world.q2.save(update_fields=["excluded_at"])
    assert held(world, world.ana, world.q2) is None  # an excluded question is nobody's work


def spans_read(judgement):
    return sorted(
        (s.pk, s.judgement_id, s.version_id, s.start, s.end, s.quote) for s in judgement.spans.all()
    )


@pytest.mark.django_db
def test_the_judgement_a_write_starts_from_is_the_one_the_orm_reads(project):
    from labelling.models import Span

    world = World(project)
    c1, c2 = world.c1, world.c2
    ids = {"assignment_id": world.a1.pk}
    assert judgement_with_spans(**ids, candidate_id=c1.pk) is None  # not graded yet
    graded = Judgement.objects.create(assignment=world.a1, candidate=c1, grade=2, note="yes")
    for start in (0, 9):
        Span.objects.create(
            judgement=graded, version=c1.version, start=start, end=start + 4, quote="text"
        )
    Judgement.objects.create(assignment=world.a1, candidate=c2, grade=0)  # a 0 has no spans
    Judgement.objects.create(assignment=world.b1, candidate=c1, grade=1)  # ben's, not ana's
    fields = [f.attname for f in Judgement._meta.concrete_fields]
    for candidate in (c1, c2):
        raw = judgement_with_spans(**ids, candidate_id=candidate.pk)
        orm = (
            Judgement.objects.prefetch_related("spans")
            .filter(assignment=world.a1, candidate=candidate)
            .get()
        )
        assert [getattr(raw, f) for f in fields] == [getattr(orm, f) for f in fields]
        assert spans_read(raw) == spans_read(orm)
        assert not raw._state.adding and all(s.judgement is raw for s in raw.spans.all())
    assert len(spans_read(judgement_with_spans(**ids, candidate_id=c1.pk))) == 2
    span = judgement_with_spans(**ids, candidate_id=c1.pk).spans.all()[0]
    assert span.created_at == Span.objects.get(pk=span.pk).created_at  # loaded when asked for
