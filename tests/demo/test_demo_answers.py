"""The demo's answer run and reference facts load against the demo's own questions and
documents, and give the Answers page something to show."""

import io
import re

from django.core.management.base import OutputWrapper
from django.urls import reverse

from answers.models import AnswerAssignment, AnswerRun, ReferenceAnswer
from corpus.models import Document
from corpus.services import projects
from demo.management.commands.load_demo import DEMO_ANSWER_RUN, DEMO_GROUP_MEMBERS, Command
from evaluation.models import EvaluationReport, GoldSet
from evaluation.services.answer_scores import stored_answers_report
from evaluation.services.gold_sets import load_gold_set


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


def test_the_demo_finalises_a_first_round_and_the_answers_page_has_figures(worker, client):
    """As `make run` does it, less the index builds and the pool (MiniLM takes minutes): the
    first labelling round is finalised as gold set v1 through its job, and the Answers page's
    figures are computed by their job while the demo loads, so the page opens filled."""
    command = Command()
    command.stdout = OutputWrapper(io.StringIO())
    project = projects.create_project(slug="demo", name="Northwind demo")
    users = command._users(project)
    command._documents(project)
    for group, names in DEMO_GROUP_MEMBERS.items():
        projects.set_access_group_members(
            project=project, name=group, users=[users[n] for n in names]
        )
    question_set = command._questions(project)
    command._reference_facts(question_set, users)
    command._first_round(question_set, users)
    command._answers(question_set, users)
    command._answer_scores(question_set, users)

    gold_set = GoldSet.objects.get(question_set=question_set)
    assert gold_set.number == 1
    gold = load_gold_set(gold_set)
    assert len(gold.questions) == 32
    assert sorted(q for q, g in gold.questions.items() if not g.answerable) == [
        "dq06",
        "dq14",
        "dq21",
        "dq29",
    ]
    assert stored_answers_report(gold_set) is not None  # computed by its job at load time
    reports = EvaluationReport.objects.filter(gold_set=gold_set).count()

    client.force_login(users["lead"])
    url = reverse("evaluation:show-answers", args=[project.slug, gold_set.pk])
    page = client.get(url).content.decode()
    assert "Compute the answer scores" not in page
    assert "being computed" not in page
    assert DEMO_ANSWER_RUN in page
    assert "refusal" in page and "on-gold" in page
    # Figures, not dashes: the gold-only scores of the 31 answers.
    row = page.split('data-score="gold_citation_precision"')[1].split("</tr>")[0]
    assert re.search(r'<td class="num">0\.\d{4}</td>', row), row

    # Loading the demo again finalises nothing new and keeps the stored figures.
    command._first_round(question_set, users)
    command._answer_scores(question_set, users)
    assert GoldSet.objects.filter(question_set=question_set).count() == 1
    assert EvaluationReport.objects.filter(gold_set=gold_set).count() == reports
