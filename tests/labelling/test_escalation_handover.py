"""A lead moving a third labeller's slot: it never goes back to the pool, where anyone could
claim it (someone who cannot see its disputed passages included); it goes on to the next
labeller the escalation rule picks, or its passages go to a lead."""

import pytest
from django.urls import reverse

from labelling.grading_passages import passages_for_grading
from labelling.models import Assignment, Change, EscalatedItem
from labelling.services import adjudication
from labelling.services.assignments import (
    claim_assignment,
    reassign,
    reassign_many,
    unassign,
)
from labelling.services.escalation import NotAThirdLabeller
from tests.factories import login
from tests.labelling.test_escalation import Escalation


@pytest.fixture
def esc(project, member):
    """ann and bob two grades apart on c1 (everyone sees it): carl or dora gets slot 3."""
    world = Escalation(project, member)
    world.finish(world.a, world.ann, {world.c1: 0, world.c2: 1, world.hidden: 2})
    world.finish(world.b, world.bob, {world.c1: 2, world.c2: 1, world.hidden: 2})
    return world


def test_a_third_slot_is_never_claimable_from_the_pool(esc, member):
    third = esc.third()
    Assignment.objects.filter(pk=third.pk).update(labeller=None)  # as an old release did
    erin = member(username="erin")
    assert claim_assignment(project=esc.project, labeller=erin) is None
    assert esc.third().labeller is None


def test_unassigning_hands_it_to_the_next_labeller_never_back_to_the_previous(esc):
    third = esc.third()
    first_holder = third.labeller
    moved = unassign(assignment=third, user=esc.lead)
    other = esc.dora if first_holder == esc.carl else esc.carl
    assert moved.pk == third.pk and moved.labeller == other
    item = EscalatedItem.objects.get()
    assert item.assignment_id == third.pk
    assert [c.pk for c in passages_for_grading(assignment=moved, user=other)] == [esc.c1.pk]
    change = Change.objects.filter(assignment=third).latest("pk")
    assert change.before == {"labeller": first_holder.username}
    assert change.after["labeller"] == other.username and change.made_by == esc.lead


def test_with_nobody_left_the_passages_go_to_a_lead_and_the_slot_goes(esc):
    third = esc.third()
    unassign(assignment=third, user=esc.lead)  # to the other of carl and dora
    assert unassign(assignment=esc.third(), user=esc.lead) is None
    assert esc.third() is None
    item = EscalatedItem.objects.get()
    assert item.assignment is None and item.grades == [0, 2]
    (entry,) = adjudication.adjudication_queue(question_set=esc.question_set, viewer=esc.lead)
    assert entry.candidate == esc.c1 and entry.kind == "disagreement"
    # The record stays on the question's first slot, for the lead's history.
    assert Change.objects.filter(
        assignment=esc.a, action__startswith="third labeller withdrawn"
    ).exists()


def test_reassigning_to_someone_who_cannot_see_the_passages_is_refused(esc, member):
    # The disputed passage is on the "hr" document: make it so, then try carl (outside "hr").
    third = esc.third()
    EscalatedItem.objects.update(candidate=esc.hidden)
    outsider = member(username="olaf")
    with pytest.raises(NotAThirdLabeller, match="cannot see"):
        reassign(assignment=third, labeller=outsider, user=esc.lead)
    assert esc.third().labeller == third.labeller
    with pytest.raises(NotAThirdLabeller, match="not an active labeller"):
        reassign(assignment=third, labeller=esc.lead, user=esc.lead)
    insider = member(username="ida")
    esc.group.members.add(insider)
    assert reassign(assignment=third, labeller=insider, user=esc.lead).labeller == insider


def test_bulk_moves_report_third_votes_they_refused(esc, member):
    third = esc.third()
    EscalatedItem.objects.update(candidate=esc.hidden)
    outsider = member(username="olaf")
    result = reassign_many(assignments=[third], labeller=outsider, user=esc.lead)
    assert result.moved == 0 and result.third_votes == [esc.question.external_id]
    assert "third vote" in result.describe(labeller=outsider)
    # "Back to the open slots" hands it on (to erin, who can see it) instead of opening it.
    erin = member(username="erin")
    esc.group.members.add(erin)
    result = reassign_many(assignments=[esc.third()], labeller=None, user=esc.lead)
    assert result.moved == 1 and esc.third().labeller == erin


def test_the_lead_page_says_where_the_third_vote_went(esc):
    third = esc.third()
    lead = login(esc.lead)
    url = reverse("labelling:unassign-assignment", args=[esc.project.slug, third.pk])
    response = lead.post(url, follow=True)
    assert response.status_code == 200
    body = response.content.decode()
    assert "third vote on disputed passages" in body and esc.third().labeller.username in body
    # A labeller may not do it.
    response = login(esc.ann).post(
        reverse("labelling:unassign-assignment", args=[esc.project.slug, esc.third().pk])
    )
    assert response.status_code in (403, 404)
    assert esc.third() is not None
