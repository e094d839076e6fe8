"""The grading page's passages are read by hand-written SQL (`passages_for_grading`, through
`Candidate.objects.raw()`); on generated data its answer is the ORM's answer
(`passages_for_grading_orm`), field by field, for every labeller, with and without a context
window, for all passages or one."""

import random

import pytest

from corpus.models import AccessGroup
from labelling.grading_passages import passages_for_grading, passages_for_grading_orm
from labelling.models import Assignment, Candidate
from labelling.services import judgements as services
from tests.factories import grading_pool

FIELDS = [
    "pk",
    "pool_id",
    "question_id",
    "version_id",
    "start",
    "end",
    "shuffle_rank",
    "doc_id",
    "doc_title",
    "grade",
    "graded",
    "revision",
    "passage",
]
WINDOW = ["window_start", "window"]


def answer(rows, windowed):
    return [
        tuple(getattr(row, name) for name in FIELDS + (WINDOW if windowed else [])) for row in rows
    ]


@pytest.mark.django_db
def test_the_raw_query_answers_as_the_orm_does_on_generated_data(project, member):
    rng = random.Random(31)
    inside, outside = member("labeller", username="in"), member("labeller", username="out")
    pool = grading_pool(project, questions=4, passages=3, restricted_group="hr")
    AccessGroup.objects.get(project=project, name="hr").members.add(inside)
    for candidate in Candidate.objects.filter(pool=pool):
        candidate.shuffle_rank = rng.randrange(4)  # ties: the id decides
        candidate.save(update_fields=["shuffle_rank"])
    graded = set()
    for question in pool.question_set.questions.all():
        for slot, user in enumerate((inside, outside), start=1):
            assignment = Assignment.objects.create(
                pool=pool, question=question, slot=slot, labeller=user
            )
            seen = passages_for_grading_orm(assignment=assignment, user=user)
            for candidate in rng.sample(seen, k=rng.randrange(len(seen) + 1)):
                for revision in range(rng.randrange(1, 3)):  # revisions beyond 1 too
                    services.record_grade(
                        assignment=assignment,
                        candidate_id=candidate.pk,
                        labeller=user,
                        grade=rng.randrange(3),
                        revision=revision,
                    )
            for context_chars in (0, 5, 40, 10_000):
                windowed = bool(context_chars)
                ours = passages_for_grading(
                    assignment=assignment, user=user, context_chars=context_chars
                )
                orm = passages_for_grading_orm(
                    assignment=assignment, user=user, context_chars=context_chars
                )
                assert answer(ours, windowed) == answer(orm, windowed)
                assert len(ours) == (3 if user == inside else 2)
                for one in ours[:2]:
                    single = {"candidate_id": one.pk, "context_chars": context_chars}
                    assert answer(
                        passages_for_grading(assignment=assignment, user=user, **single), windowed
                    ) == answer(
                        passages_for_grading_orm(assignment=assignment, user=user, **single),
                        windowed,
                    )
            graded |= {row.revision for row in ours}
    assert graded >= {0, 1, 2}  # the data had ungraded, graded and re-graded passages
