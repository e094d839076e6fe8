"""Canary questions are for admins and permission replays only (issue 32, item 5): a labeller
or a lead, in the canaries' group or not, never learns the canary question set exists. Every
page taking a question set answers them for the canary set exactly as for a set that does not
exist; their lists and forms read the same before and after canaries are planted; the set is
never pooled or imported into; a replay still asks its questions."""

from __future__ import annotations

import re
from unittest import mock

import pytest
from django.urls import reverse

from corpus.services import projects, retrieval
from evaluation.services.permission_replays import questions_of
from goldset.errors import ServiceError
from labelling.models import QuestionSet
from labelling.services import pools
from labelling.services.questions import import_questions, plant_canaries
from tests.factories import QuestionFactory, add_documents, login
from tests.test_access_matrix import routes

CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]+"|"X-CSRFToken": "[^"]+"')
MISSING = 999_999


@pytest.fixture
def team(project, member):
    people = {
        "lab": member("labeller", username="lab"),
        "lab_in": member("labeller", username="lab_in"),
        "lead": member("lead", username="lead"),
        "lead_in": member("lead", username="lead_in"),
        "adm": member("admin", username="adm"),
    }
    projects.set_access_group_members(
        project=project,
        name="hr-confidential",
        users=[people["lab_in"], people["lead_in"], people["adm"]],
    )
    add_documents(project, ("leave", "Employees receive 25 days of paid annual leave."))
    faq = QuestionSet.objects.create(project=project, name="faq")
    QuestionFactory(question_set=faq, external_id="q1", text="How many leave days?")
    retrieval.add_retriever(project=project, name="ours", kind="run")
    return people


QUESTION_PAGES = [
    ("labelling:list-question-sets", ()),
    ("labelling:import-questions", ()),
    ("labelling:list-pools", ()),
    ("labelling:add-pool", ()),
    ("labelling:show-queue", ()),
    ("evaluation:list-gold-sets", ()),
]


def question_pages(user, project) -> dict:
    browser = login(user)
    seen = {}
    for name, args in QUESTION_PAGES:
        response = browser.get(reverse(name, args=[project.slug, *args]))
        seen[name] = (response.status_code, CSRF.sub(b"", response.content))
    retriever = project.retrievers.get(name="ours")
    response = browser.get(reverse("corpus:show-retriever", args=[project.slug, retriever.pk]))
    seen["retriever"] = (response.status_code, CSRF.sub(b"", response.content))
    return seen


@pytest.mark.parametrize("who", ["lab", "lab_in", "lead", "lead_in"])
def test_labellers_and_leads_read_the_same_pages_once_canaries_are_planted(project, team, who):
    before = question_pages(team[who], project)
    plant_canaries(project=project, group="hr-confidential", count=2, set_name="canaries")
    after = question_pages(team[who], project)
    assert after == before
    for _, body in after.values():
        assert b"canaries" not in body and b"retention code" not in body


@pytest.mark.parametrize("who", ["lab", "lab_in", "lead", "lead_in"])
def test_every_page_of_a_question_set_answers_the_canary_set_as_a_missing_one(project, team, who):
    plant_canaries(project=project, group="hr-confidential", count=2, set_name="canaries")
    canary_set = QuestionSet.objects.get(name="canaries")
    browser = login(team[who])
    checked = 0
    for name, kwargs in routes():
        if "set_id" not in kwargs:
            continue
        ids = {k: MISSING for k in kwargs} | {"slug": project.slug}
        for method in ("get", "post"):
            canary = getattr(browser, method)(reverse(name, kwargs=ids | {"set_id": canary_set.pk}))
            missing = getattr(browser, method)(reverse(name, kwargs=ids))
            assert canary.status_code == missing.status_code, (name, method)
            assert canary.status_code in (403, 404, 405), (name, method, canary.status_code)
            checked += 1
    assert checked >= 10
    # Choosing it in a form that takes a set by id is refused as a set that does not exist.
    retriever = project.retrievers.get(name="ours")
    upload = browser.post(
        reverse("labelling:upload-run", args=[project.slug, retriever.pk]),
        {"question_set": canary_set.pk},
    )
    assert upload.status_code in (403, 404)


def test_admins_see_the_canary_set_and_the_replay_asks_its_questions(project, team):
    plant_canaries(project=project, group="hr-confidential", count=2, set_name="canaries")
    canary_set = QuestionSet.objects.get(name="canaries")
    browser = login(team["adm"])
    listed = browser.get(reverse("labelling:list-question-sets", args=[project.slug]))
    assert b"canaries" in listed.content
    shown = browser.get(reverse("labelling:show-question-set", args=[project.slug, canary_set.pk]))
    assert shown.status_code == 200 and b"retention code" in shown.content
    # The replay asks them (its gold set's questions first: none here).
    replay = mock.Mock(
        with_canaries=True, gold_set=mock.Mock(question_set=mock.Mock(project_id=project.pk))
    )
    with mock.patch(
        "evaluation.services.permission_replays.load_gold_set",
        return_value=mock.Mock(questions={}),
    ):
        asked = dict(questions_of(replay))
    assert set(asked) == set(canary_set.questions.values_list("external_id", flat=True))
    assert all("retention code" in text for text in asked.values())


def test_a_canary_set_is_never_pooled_or_imported_into(project, team):
    plant_canaries(project=project, group="hr-confidential", count=1, set_name="canaries")
    canary_set = QuestionSet.objects.get(name="canaries")
    ours = project.retrievers.get(name="ours")
    with pytest.raises(ServiceError, match="never pooled"):
        pools.start_pool(question_set=canary_set, name="p1", retrievers=[ours])
    with pytest.raises(ServiceError, match="is taken"):
        import_questions(
            project=project, set_name="canaries", data="What is the code?\n", format="lines"
        )
    assert canary_set.questions.count() == 1
