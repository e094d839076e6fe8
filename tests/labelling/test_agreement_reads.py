"""The Agreement page reads the double-labelled items as rows (`votes.paired_votes`) and counts
the passages one labeller of two cannot see from the stored decisions (`gold_state`): its
figures must be exactly those read through `gather_votes`, for every viewer, with a third
labeller's and a calibration answer's votes about, and after each kind of write."""

from contextlib import contextmanager

import pytest
from django.urls import reverse
from django.utils import timezone

from corpus.models import AccessGroup
from labelling import agreement
from labelling.models import Assignment, Candidate, ChangeSubject, EscalatedItem, Judgement, Span
from labelling.services import adjudication, gold_state
from labelling.services import judgements as grading
from labelling.services.votes import (
    double_labelled_keys,
    gather_votes,
    paired_from_votes,
    paired_votes,
)
from tests.factories import login
from tests.labelling.test_lead_pages import CSRF, _world


def _same_figures(question_set, viewers) -> None:
    for viewer in viewers:
        reference = gather_votes(
            question_set=question_set, viewer=viewer, keys=set(double_labelled_keys(question_set))
        )
        assert paired_votes(question_set=question_set, viewer=viewer) == paired_from_votes(
            reference
        ), getattr(viewer, "username", None)
        rows = adjudication.agreement_report(question_set=question_set, viewer=viewer, n_boot=40)
        again = _reference_report(reference, n_boot=40)
        assert rows == again, getattr(viewer, "username", None)
        # Asked again with nothing written, the figures are the ones kept, not computed again;
        # the next call after a write (the tests below make one of each kind) must see it.
        with _counted_figures() as computed:
            kept = adjudication.agreement_report(
                question_set=question_set, viewer=viewer, n_boot=40
            )
        assert kept == again and computed == [], getattr(viewer, "username", None)


def _reference_report(questions, *, n_boot: int) -> dict:
    """`agreement_report`'s figures from `gather_votes`' questions, the reference read."""
    with agreement.shared_resamples():
        report = adjudication._agreement_figures(paired_from_votes(questions), n_boot=n_boot)
    report["single_by_access"] = sum(1 for q in questions for i in q.items if i.single_by_access)
    return report


def _reference_agreement_report(*, question_set, viewer, n_boot: int = 1000, **_) -> dict:
    """`agreement_report` as the reference reads it, for the page."""
    questions = gather_votes(
        question_set=question_set, viewer=viewer, keys=set(double_labelled_keys(question_set))
    )
    return _reference_report(questions, n_boot=n_boot)


@contextmanager
def _counted_figures():
    """The calls that compute agreement figures (rather than read kept ones) in the block."""
    computed = []
    figures = adjudication._agreement_figures
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            adjudication,
            "_agreement_figures",
            lambda *args, **kwargs: computed.append(1) or figures(*args, **kwargs),
        )
        yield computed


def _third_labeller_and_calibration(question_set, labellers) -> None:
    """A third labeller's vote on one double-labelled passage, and a calibration answer on
    another question: neither is a vote agreement counts."""
    pool_id, question_id = next(iter(double_labelled_keys(question_set)))
    held = Assignment.objects.filter(pool_id=pool_id, question_id=question_id)
    candidate = Candidate.objects.filter(pool_id=pool_id, question_id=question_id).first()
    third = Assignment.objects.create(
        pool_id=pool_id,
        question_id=question_id,
        slot=held.count() + 1,
        labeller=next(lab for lab in labellers if not held.filter(labeller=lab).exists()),
        assigned_at=timezone.now(),
    )
    EscalatedItem.objects.create(
        pool_id=pool_id,
        question_id=question_id,
        candidate=candidate,
        assignment=third,
        grades=[0, 2],
    )
    Judgement.objects.create(assignment=third, candidate=candidate, grade=1)
    other = (
        Assignment.objects.filter(pool__question_set=question_set)
        .exclude(question_id=question_id)
        .order_by("pk")
        .first()
    )
    calibration = Assignment.objects.create(
        pool_id=other.pool_id,
        question_id=other.question_id,
        slot=0,
        purpose="calibration",
        labeller=next(
            lab
            for lab in labellers
            if not Assignment.objects.filter(
                pool_id=other.pool_id, question_id=other.question_id, labeller=lab
            ).exists()
        ),
        assigned_at=timezone.now(),
        completed_at=timezone.now(),
    )
    for c in Candidate.objects.filter(pool_id=other.pool_id, question_id=other.question_id):
        Judgement.objects.create(assignment=calibration, candidate=c, grade=2)
    gold_state.mark_stale(pool_id=pool_id, question_id=question_id)
    gold_state.mark_stale(pool_id=other.pool_id, question_id=other.question_id)


@pytest.mark.parametrize("seed", range(6))
def test_the_rows_give_the_figures_gather_votes_gives(project, member, seed):
    question_set, leads, labellers = _world(project, member, seed)
    _same_figures(question_set, [*leads, None])
    _third_labeller_and_calibration(question_set, labellers)
    _same_figures(question_set, [*leads, None])
    # A lead outside a group counts none of its documents' items.
    outside = adjudication.agreement_report(question_set=question_set, viewer=leads[1], n_boot=0)
    assert all(d["doc_id"] != "board" for d in outside["disagreements"])


def test_the_figures_follow_every_kind_of_write(project, member):
    question_set, leads, labellers = _world(project, member, 11)
    viewers = [*leads, None]
    _same_figures(question_set, viewers)
    judgement = (
        Judgement.objects.filter(
            assignment__pool__question_set=question_set,
            assignment__labeller__isnull=False,
            assignment__question__excluded_at__isnull=True,
        )
        .filter(assignment__question__assignments__slot=2)
        .select_related("assignment__labeller", "candidate__version")
        .order_by("pk")
        .first()
    )
    assignment, labeller = judgement.assignment, judgement.assignment.labeller

    def revision(subject=ChangeSubject.JUDGEMENT, candidate=judgement.candidate):
        return grading._revision(assignment, subject, candidate)

    grading.record_grade(
        assignment=assignment,
        candidate_id=judgement.candidate_id,
        labeller=labeller,
        grade=(judgement.grade + 1) % 3 or 1,
        revision=revision(),
    )
    _same_figures(question_set, viewers)
    start = judgement.candidate.start
    grading.add_span(
        assignment=assignment,
        candidate_id=judgement.candidate_id,
        labeller=labeller,
        version_id=judgement.candidate.version_id,
        start=start,
        end=start + 12,
        quote=judgement.candidate.version.text[start : start + 12],
        revision=revision(),
    )
    _same_figures(question_set, viewers)
    grading.undo_last_change(assignment=assignment, labeller=labeller)
    _same_figures(question_set, viewers)
    grading.record_verdict(
        assignment=assignment,
        labeller=labeller,
        outcome="unanswerable",
        reason="not in the policy",
        revision=grading.verdict_revision(assignment),
    )
    _same_figures(question_set, viewers)
    # Who may see a document changed: a labeller leaves a group, so passages of that group's
    # documents become single-labelled by access (the stored decisions follow the signal).
    group = AccessGroup.objects.get(project=project, name="hr")
    group.members.remove(labeller)
    _same_figures(question_set, viewers)
    Span.objects.filter(judgement__assignment=assignment).delete()  # bypassing the services
    _same_figures(question_set, viewers)


def test_figures_read_while_a_vote_changes_are_not_kept(project, member):
    """A vote changed (by a path that calls no hook) between the state read and the votes
    read, and changed back afterwards: the state is the one read before, but the figures
    hold the change, so they must not be kept."""
    question_set, leads, _ = _world(project, member, 5)
    lead = leads[0]
    judgement = (
        Judgement.objects.filter(assignment__question__assignments__slot=2)
        .filter(assignment__pool__question_set=question_set, assignment__slot__lte=2)
        .order_by("pk")
        .first()
    )
    read = adjudication.paired_votes

    def a_vote_lands_then_read(**kwargs):
        Judgement.objects.filter(pk=judgement.pk).update(grade=(judgement.grade + 1) % 3)
        return read(**kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(adjudication, "paired_votes", a_vote_lands_then_read)
        adjudication.agreement_report(question_set=question_set, viewer=lead, n_boot=40)
    Judgement.objects.filter(pk=judgement.pk).update(grade=judgement.grade)
    _same_figures(question_set, [lead])


def test_the_page_shows_the_same_figures_read_either_way(project, member, monkeypatch):
    question_set, leads, _ = _world(project, member, 4)
    url = reverse("labelling:show-agreement", args=[project.slug, question_set.pk])
    for lead in leads:
        client = login(lead)
        bodies = []
        for reference in (False, True):
            with monkeypatch.context() as patch:
                if reference:
                    patch.setattr(adjudication, "agreement_report", _reference_agreement_report)
                response = client.get(url)
            assert response.status_code == 200
            bodies.append(CSRF.sub("", response.content.decode()))
        assert bodies[0] == bodies[1], lead.username


def test_shared_resamples_give_the_same_intervals():
    pairs = [(i % 3, (i * 7) % 3) for i in range(300)]
    alone = agreement.pairwise_report(pairs, n_boot=200)
    with agreement.shared_resamples():
        shared = agreement.pairwise_report(pairs, n_boot=200)
        again = agreement.pairwise_report(pairs, n_boot=200)
    assert alone == shared == again
