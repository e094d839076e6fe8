"""'Is this question still in its set': `Question.objects.included()`, `included_q` from
other models and `included_sql` for hand-written queries say the same."""

import pytest
from django.db import connection

from goldset.sql import identifier
from labelling.models import (
    Assignment,
    AssignmentPurpose,
    Question,
    included_q,
    included_sql,
    work_q,
    work_sql,
)
from labelling.services.exclusion import exclude_question, include_question
from tests.factories import QuestionFactory, QuestionSetFactory, ReadyPoolFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_every_form_of_the_inclusion_rule_agrees():
    question_set = QuestionSetFactory()
    pool = ReadyPoolFactory(question_set=question_set)
    lead = UserFactory()
    questions = [QuestionFactory(question_set=question_set) for _ in range(4)]
    for question in questions:
        Assignment.objects.create(pool=pool, question=question, slot=1)
    exclude_question(question=questions[0], user=lead, reason="duplicate")
    exclude_question(question=questions[1], user=lead)
    include_question(question=questions[1], user=lead)
    expected = {q.pk for q in questions[1:]}

    assert set(Question.objects.included().values_list("pk", flat=True)) == expected
    assert set(Question.objects.excluded().values_list("pk", flat=True)) == {questions[0].pk}
    through_assignments = Assignment.objects.filter(included_q("question__"))
    assert set(through_assignments.values_list("question_id", flat=True)) == expected
    table = identifier(Question._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT q.id FROM {table} q WHERE {included_sql('q')}")  # noqa: S608
        assert {row[0] for row in cursor.fetchall()} == expected


def test_the_work_rule_and_its_sql_form_agree():
    """'Is this assignment the pool's work': `work_q` and `work_sql` (for hand-written
    queries) keep the same rows, a calibration question left out by both."""
    question_set = QuestionSetFactory()
    pool = ReadyPoolFactory(question_set=question_set)
    questions = [QuestionFactory(question_set=question_set) for _ in range(3)]
    for question in questions:
        Assignment.objects.create(pool=pool, question=question, slot=1)
    Assignment.objects.create(
        pool=pool,
        question=questions[0],
        slot=0,
        labeller=UserFactory(),
        purpose=AssignmentPurpose.CALIBRATION,
    )
    expected = set(Assignment.objects.filter(work_q()).values_list("pk", flat=True))
    assert len(expected) == 3
    table = identifier(Assignment._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT a.id FROM {table} a WHERE {work_sql('a')}")  # noqa: S608
        assert {row[0] for row in cursor.fetchall()} == expected
