"""The Assignments page's seconds figures: the hand-written PostgreSQL query
(`judgement_time`) gives what reading every judgement's seconds through the ORM gives
(`judgement_time_read`), for every viewer, with odd and even counts, untimed judgements and a
labeller with none timed."""

import pytest
from django.db import connection

from labelling.models import Assignment, Judgement, QuestionSet
from labelling.services.judgement_time import judgement_time, judgement_time_read
from tests.labelling.test_lead_pages import _world


def _same(got, expected) -> None:
    assert got.keys() == expected.keys()
    for key, summary in expected.items():
        mine = got[key]
        assert (mine.judgements, mine.median, mine.timed, mine.timed_median) == (
            summary.judgements,
            summary.median,
            summary.timed,
            summary.timed_median,
        )
        # Summed in another order: the same up to rounding (the page shows whole numbers).
        assert mine.timed_sum == pytest.approx(summary.timed_sum)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the SQL is PostgreSQL's")
@pytest.mark.parametrize("seed", range(4))
def test_the_query_gives_what_reading_every_judgement_gives(project, member, seed):
    _question_set, leads, labellers = _world(project, member, seed)
    untimed = labellers[seed % len(labellers)]  # imported work: nothing timed
    for n, judgement in enumerate(Judgement.objects.select_related("assignment").order_by("pk")):
        if judgement.assignment.labeller_id == untimed.pk or n % 5 == 0:
            judgement.seconds_spent = 0.0
        else:
            judgement.seconds_spent = round((n * 7) % 13 + (n % 4) * 0.1, 1)
        judgement.save(update_fields=["seconds_spent"])
    # A second question set's work, so the figures per set are two groups.
    other = QuestionSet.objects.create(project=project, name="other")
    pool = other.pools.create(name="o", state="ready")
    moved = Assignment.objects.filter(pool__question_set__project=project).order_by("pk").first()
    Assignment.objects.filter(pk=moved.pk).update(pool=pool)
    assert Judgement.objects.filter(assignment=moved).exists()
    for viewer in [*leads, *labellers]:
        got = judgement_time(project=project, viewer=viewer)
        expected = judgement_time_read(project=project, viewer=viewer)
        assert expected.by_labeller, "the world has judgements the viewer may see"
        _same(got.by_labeller, expected.by_labeller)
        _same(got.by_question_set, expected.by_question_set)
    assert len(expected.by_question_set) == 2
    timed = judgement_time(project=project, viewer=leads[0]).by_labeller.get(untimed.pk)
    if timed is not None:
        assert (timed.timed, timed.timed_median, timed.timed_sum) == (0, None, 0.0)
