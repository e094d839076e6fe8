"""The hand-written query every grading write starts from (`labelling.services.write_lock`)
gives what the ORM gives: the assignment's fields, its project's newest guideline and the one
the page showed, its verdict; and nothing for another labeller's assignment. The history row
every write ends with, and an edited judgement's row, are the rows the ORM would have written."""

import pytest
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import OuterRef, Subquery
from django.http import Http404

from labelling.models import Assignment, Change, ChangeSubject, Guideline, Judgement, Verdict
from labelling.services.guidelines import save_guideline
from labelling.services.judgements import JUDGEMENT_EDIT_FIELDS
from labelling.services.write_lock import (
    append_history,
    change_row,
    held_assignment,
    judgement_with_spans,
    locked_assignment,
    save_judgement_edit,
)
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
        )  # fmt: skip
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
    names = [*FIELDS, "current_guideline_id", "current_guideline_version",
             "shown_guideline_id", "verdict_outcome"]  # fmt: skip
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
    return sorted((s.pk, s.judgement_id, s.version_id, s.start, s.end, s.quote)
                  for s in judgement.spans.all())  # fmt: skip


@pytest.mark.django_db
def test_the_judgement_a_write_starts_from_is_the_one_the_orm_reads(project):
    from labelling.models import Judgement, Span

    world = World(project)
    c1, c2 = world.c1, world.c2
    ids = {"assignment_id": world.a1.pk}
    assert judgement_with_spans(**ids, candidate_id=c1.pk) is None  # not graded yet
    graded = Judgement.objects.create(assignment=world.a1, candidate=c1, grade=2, note="yes")
    for start in (0, 9):
        Span.objects.create(judgement=graded, version=c1.version, start=start, end=start + 4,
                            quote="text")  # fmt: skip
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


@pytest.mark.django_db
def test_the_history_row_a_write_appends_is_the_one_the_orm_writes(project):
    world = World(project)
    state = {"grade": 2, "note": 'Ünïcode "quoted" <b>', "spans": [[world.c1.version_id, 0, 9]]}
    orm = Change.objects.create(
        assignment=world.a1, candidate=world.c1, subject=ChangeSubject.JUDGEMENT,
        action="grade 2", before=None, after=state, made_by=world.ana,
    )  # fmt: skip
    append_history(change_row(
        assignment_id=world.a1.pk, candidate_id=world.c1.pk, subject=ChangeSubject.JUDGEMENT,
        action="undo", before=state, after=None, made_by_id=world.ana.pk, undoes_id=orm.pk,
    ))  # fmt: skip
    raw = Change.objects.exclude(pk=orm.pk).get()
    orm.refresh_from_db()
    assert (raw.assignment, raw.candidate, raw.subject, raw.made_by) == (
        orm.assignment, orm.candidate, orm.subject, orm.made_by
    )  # fmt: skip
    assert raw.before == orm.after == state and raw.after is None and orm.before is None
    assert raw.undoes == orm and orm.undone_by == raw
    assert raw.made_at >= orm.made_at and raw.made_at.tzinfo is not None
    # A JSON null is stored as SQL NULL, as the ORM stores it: `after__isnull` finds both.
    assert set(Change.objects.filter(after__isnull=True)) == {raw}
    assert set(Change.objects.filter(before__isnull=True)) == {orm}


@pytest.mark.django_db
def test_an_edited_judgement_saves_as_the_orms_save_would(project):
    world = World(project)
    guideline = save_guideline(project=project, text="Grade 2 if it answers.", user=world.lead)
    ours, theirs = (
        Judgement.objects.create(assignment=world.a1, candidate=c, grade=1, seconds_spent=2.5)
        for c in (world.c1, world.c2)
    )
    before = ours.updated_at
    for judgement in (ours, theirs):
        judgement.grade, judgement.note, judgement.revision = 2, 'Ünïcode "q" <b>', 3
        judgement.guideline_id, judgement.seconds_spent = guideline.pk, 4.25
    save_judgement_edit(ours, fields=JUDGEMENT_EDIT_FIELDS)
    theirs.save(update_fields=JUDGEMENT_EDIT_FIELDS)
    fields = ["grade", "note", "revision", "guideline_id", "seconds_spent", "created_at"]
    ours_row, theirs_row = (Judgement.objects.values(*fields).get(pk=j.pk) for j in (ours, theirs))
    assert {**ours_row, "created_at": None} == {**theirs_row, "created_at": None}
    assert ours_row["created_at"] == ours.created_at  # only the edited columns are written
    saved = Judgement.objects.get(pk=ours.pk).updated_at
    assert saved == ours.updated_at and saved > before and saved.tzinfo is not None
    ours.guideline_id, ours.note = None, ""  # NULL and empty, as the ORM writes them
    save_judgement_edit(ours, fields=JUDGEMENT_EDIT_FIELDS)
    assert Judgement.objects.values_list("guideline_id", "note").get(pk=ours.pk) == (None, "")
    gone = Judgement(pk=ours.pk + 1000, assignment=world.a1, candidate=world.c1, grade=0)
    with pytest.raises(DatabaseError, match="did not affect any rows"):
        save_judgement_edit(gone, fields=JUDGEMENT_EDIT_FIELDS)


@pytest.mark.django_db
def test_new_judgements_and_spans_insert_as_the_orms_bulk_create_would(project):
    from labelling.models import Span
    from labelling.services.write_lock import insert_new

    world = World(project)
    guideline = save_guideline(project=project, text="Grade 2 if it answers.", user=world.lead)
    made = {}
    for name, assignment, save in (
        ("ours", world.a1, insert_new),
        ("theirs", world.b1, lambda objs: type(objs[0]).objects.bulk_create(objs)),
    ):  # fmt: skip
        judgement = Judgement(
            assignment=assignment, candidate=world.c1, grade=2, note='Ünïcode "q" <b>',
            guideline=guideline, seconds_spent=1.5,
        )  # fmt: skip
        save([judgement])
        assert judgement.pk is not None and not judgement._state.adding
        spans = [Span(judgement=judgement, version_id=world.c1.version_id, start=s, end=s + 5,
                      quote=f"q{s}") for s in (30, 0, 12)]  # fmt: skip
        save(spans)
        assert all(s.pk is not None and not s._state.adding for s in spans)
        made[name] = (judgement, spans)
    fields = ["grade", "note", "guideline_id", "seconds_spent", "revision", "candidate_id"]
    rows = {name: Judgement.objects.values(*fields).get(pk=j.pk) for name, (j, _) in made.items()}
    assert rows["ours"] == rows["theirs"]
    for judgement, spans in made.values():
        saved = Judgement.objects.get(pk=judgement.pk)
        assert saved.created_at == judgement.created_at and saved.created_at.tzinfo is not None
        assert saved.updated_at == judgement.updated_at
        # Each instance holds its own row's id: RETURNING answers in the order of the rows.
        assert [(s.pk, s.start, s.quote, s.created_at) for s in spans] == [
            (s.pk, s.start, s.quote, s.created_at)
            for s in (Span.objects.get(pk=x.pk) for x in spans)
        ]
        assert {s.judgement_id for s in Span.objects.filter(pk__in=[s.pk for s in spans])} == {
            judgement.pk
        }
    insert_new([])  # nothing to write is no statement and no error
    twice = Judgement(assignment=world.a1, candidate=world.c1, grade=1)
    with pytest.raises(IntegrityError), transaction.atomic():  # the one-per-candidate rule holds
        insert_new([twice])


def history_of(world, candidate, action):
    return {
        "assignment_id": world.a1.pk, "candidate_id": candidate.pk,
        "subject": ChangeSubject.JUDGEMENT, "action": action, "before": None,
        "after": {"grade": 2, "note": "", "spans": []}, "made_by_id": world.ana.pk,
    }  # fmt: skip


def change_values(change):
    return (change.assignment_id, change.candidate_id, change.subject, change.action,
            change.before, change.after, change.made_by_id, change.undoes_id)  # fmt: skip


@pytest.mark.django_db
def test_a_first_grade_writes_judgement_spans_and_history_as_the_orm_would(project):
    """One statement on PostgreSQL (WITH queries), three elsewhere: the same rows either way."""
    from labelling.models import Span
    from labelling.services.write_lock import insert_judgement

    world = World(project)
    version = world.c1.version_id
    for candidate, starts in ((world.c1, (40, 0, 12)), (world.c2, ())):  # a 0 has no spans
        judgement = Judgement(assignment=world.a1, candidate=candidate, grade=2 if starts else 0,
                              note='Ünïcode "q" <b>', seconds_spent=2.0)  # fmt: skip
        spans = [Span(judgement=judgement, version_id=version, start=s, end=s + 5, quote=f"q{s}")
                 for s in starts]  # fmt: skip
        fields = history_of(world, candidate, f"grade {judgement.grade}")
        insert_judgement(judgement, spans, history=change_row(**fields))
        saved = Judgement.objects.get(assignment=world.a1, candidate=candidate)
        assert judgement.pk == saved.pk and not judgement._state.adding
        assert (saved.grade, saved.note, saved.created_at) == (
            judgement.grade, judgement.note, judgement.created_at
        )  # fmt: skip
        rows = Span.objects.filter(judgement=saved)
        assert sorted((s.pk, s.start, s.quote) for s in rows) == sorted(
            (s.pk, s.start, s.quote) for s in spans
        )  # each instance has its own row's id
        assert all(s.judgement is judgement and not s._state.adding for s in spans)
        (change,) = Change.objects.filter(candidate=candidate)
        expected = Change.objects.create(**fields)  # the ORM's row of the same history
        assert change_values(change) == change_values(expected)
        expected.delete()
    # A second judgement of the same passage is refused, and its history row with it.
    again = Judgement(assignment=world.a1, candidate=world.c1, grade=1)
    history = change_row(**history_of(world, world.c1, "grade 1"))
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_judgement(again, [], history=history)
    assert Change.objects.filter(candidate=world.c1).count() == 1


@pytest.mark.django_db
def test_an_edit_and_its_history_are_written_together_or_not_at_all(project):
    world = World(project)
    judgement = Judgement.objects.create(assignment=world.a1, candidate=world.c1, grade=1)
    judgement.grade, judgement.revision = 2, 2
    history = change_row(**history_of(world, world.c1, "grade 2"))
    save_judgement_edit(judgement, fields=JUDGEMENT_EDIT_FIELDS, history=history)
    assert Judgement.objects.get(pk=judgement.pk).grade == 2
    assert [c.action for c in Change.objects.all()] == ["grade 2"]
    gone = Judgement(pk=judgement.pk + 1000, assignment=world.a1, candidate=world.c1, grade=0)
    history = change_row(**history_of(world, world.c1, "grade 0"))
    with pytest.raises(DatabaseError, match="did not affect any rows"), transaction.atomic():
        save_judgement_edit(gone, fields=JUDGEMENT_EDIT_FIELDS, history=history)
    assert [c.action for c in Change.objects.all()] == ["grade 2"]  # rolled back with the edit
