"""The Assignments page's counts read each judgement's seconds once (`judgement_seconds`),
count an assignment's judgements per row (`with_progress`) and a pool's slots apart
(`with_slot_counts`): every figure must be what counting the rows one by one gives, as each
viewer may see them (a lead outside a group counts none of its documents' judgements)."""

import statistics

import pytest
from django.urls import reverse

from labelling.models import Assignment, Candidate, Judgement, Pool
from labelling.services import assignments as services
from labelling.services.progress import progress_plots
from tests.factories import login
from tests.labelling.test_lead_pages import CSRF, _world


def _seen(judgements, viewer):
    return judgements.filter(candidate__in=Candidate.objects.not_hidden_from(viewer))


def _expected(judgements, viewer) -> tuple[int, float | None]:
    seconds = list(_seen(judgements, viewer).values_list("seconds_spent", flat=True))
    return len(seconds), statistics.median(seconds) if seconds else None


@pytest.mark.parametrize("seed", range(4))
def test_the_progress_figures_are_the_rows_counted_one_by_one(project, member, seed):
    question_set, leads, labellers = _world(project, member, seed)
    # Timed judgements, some not timed (imported), some calibration answers (no work).
    for n, judgement in enumerate(Judgement.objects.order_by("pk")):
        judgement.seconds_spent = (n * 7) % 13 + (n % 3) * 0.25
        judgement.save(update_fields=["seconds_spent"])
    work = Assignment.objects.work().filter(pool__question_set__project=project)
    for lead in leads:
        by_labeller = services.progress_by_labeller(project=project, viewer=lead)
        assert [labeller.pk for labeller, _ in by_labeller] == sorted(
            {a.labeller_id for a in work if a.labeller_id},
            key=lambda pk: next(lab.username for lab in labellers if lab.pk == pk),
        )
        for labeller, progress in by_labeller:
            held = work.filter(labeller=labeller)
            count, median = _expected(Judgement.objects.filter(assignment__in=held), lead)
            assert (progress.assigned, progress.done) == (
                held.count(),
                held.filter(completed_at__isnull=False).count(),
            )
            assert (progress.judgements, progress.median_seconds) == (count, median)
        [(shown_set, progress, unclaimed)] = services.progress_by_question_set(
            project=project, viewer=lead
        )
        assert shown_set == question_set
        count, median = _expected(Judgement.objects.filter(assignment__in=work), lead)
        assert (progress.judgements, progress.median_seconds) == (count, median)
        assert (progress.assigned, unclaimed) == (work.count(), work.unclaimed().count())
        speeds = {s.labeller: s for s in progress_plots(project=project, viewer=lead).speeds}
        for labeller, _ in by_labeller:
            mine = _seen(
                Judgement.objects.filter(assignment__in=work.filter(labeller=labeller)), lead
            )
            seconds = list(mine.values_list("seconds_spent", flat=True))
            timed = [s for s in seconds if s > 0]
            speed = speeds[labeller.username]
            assert (speed.judgements, speed.timed) == (len(seconds), len(timed))
            assert speed.hours == pytest.approx(sum(timed) / 3600)
            assert speed.median_seconds == (statistics.median(timed) if timed else None)
        for assignment in work.with_progress(lead):
            assert assignment.graded == _seen(assignment.judgements.all(), lead).count()
    for pool in Pool.objects.filter(question_set=question_set).with_slot_counts():
        slots = Assignment.objects.work().filter(pool=pool)
        assert (pool.questions, pool.slots, pool.unclaimed) == (
            question_set.questions.count(),
            slots.count(),
            slots.unclaimed().count(),
        )


def test_an_outsider_sees_the_same_assignments_page_as_in_a_world_without_the_group(
    project, member
):
    """The page's counts for the lead outside the board group leave its documents out: equal
    to the counts with those judgements deleted."""
    question_set, leads, _ = _world(project, member, 5)
    outsider = leads[1]
    url = reverse("labelling:list-assignments", args=[project.slug])
    client = login(outsider)
    before = client.get(url)
    assert before.status_code == 200
    hidden = Judgement.objects.exclude(candidate__in=Candidate.objects.not_hidden_from(outsider))
    assert hidden.exists()
    hidden.delete()
    after = client.get(url)
    assert CSRF.sub("", before.content.decode()) == CSRF.sub("", after.content.decode())
