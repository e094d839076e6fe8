"""The demo's answer run and reference facts load against the demo's own questions and
documents, and give the Answers page something to show."""

import io

from django.core.management.base import OutputWrapper

from corpus.models import Document
from corpus.services import projects
from labelling.management.commands.load_demo import DEMO_ANSWER_RUN, Command
from labelling.models import AnswerAssignment, AnswerRun, ReferenceAnswer


def test_the_demo_answer_run_and_reference_facts_load(db, capsys):
    command = Command()
    command.stdout = OutputWrapper(io.StringIO())
    project = projects.create_project(slug="demo", name="Northwind demo")
    users = command._users(project)
    command._documents(project)
    question_set = command._questions(project)
    command._answers(question_set, users)
    run = AnswerRun.objects.get(name=DEMO_ANSWER_RUN)
    answers = run.answers.all()
    assert answers.count() == 31
    assert answers.filter(refused=True).count() == 5
    assert ReferenceAnswer.objects.filter(question__question_set=question_set).count() == 22
    # Every answer is planned for review, to someone who may see all it cites.
    assignments = AnswerAssignment.objects.filter(answer__run=run)
    assert {a.answer_id for a in assignments} == set(answers.values_list("pk", flat=True))
    for assignment in assignments:
        hidden = Document.objects.hidden_from(assignment.labeller)
        assert not assignment.answer.passages.filter(version__document__in=hidden).exists()
    # Loading again changes nothing: no second run, no new fact versions.
    command._answers(question_set, users)
    assert AnswerRun.objects.count() == 1
    assert not ReferenceAnswer.objects.filter(version__gt=1).exists()
