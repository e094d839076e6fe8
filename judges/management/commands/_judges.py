"""What the judges' commands share: finding a project's judge and question set by name."""

from corpus.management.commands._exit import unusable
from corpus.models import Project
from judges.models import Judge
from labelling.models import QuestionSet


def judge_or_fail(project: Project, name: str) -> Judge:
    judge = Judge.objects.filter(project=project, name=name).first()
    if judge is None:
        raise unusable(f"No judge {name!r} in {project.slug}; add one with manage.py add_judge.")
    return judge


def question_set_or_fail(project: Project, name: str) -> QuestionSet:
    question_set = QuestionSet.objects.filter(project=project, name=name).first()
    if question_set is None:
        raise unusable(f"No question set {name!r} in {project.slug}.")
    return question_set
