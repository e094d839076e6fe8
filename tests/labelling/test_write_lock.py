"""The hand-written query every grading write starts from (`labelling.services.write_lock`)
gives what the ORM gives: the assignment's fields, its project's newest guideline and the one
the page showed, its verdict; and nothing for another labeller's assignment."""

import pytest
from django.db import transaction
from django.db.models import OuterRef, Subquery

from labelling.models import Assignment, Guideline, Verdict
from labelling.services.guidelines import save_guideline
from labelling.services.write_lock import locked_assignment
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
