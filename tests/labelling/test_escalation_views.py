"""Escalation on the pages: the third labeller's page is any grading page, the first two learn
nothing, leads see the rules and the votes, and only leads and admins change the setting."""

import re

import pytest
from django.urls import reverse

from labelling.models import EscalatedItem, Judgement
from tests.factories import login
from tests.labelling.test_escalation import Escalation

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def esc(project, member):
    world = Escalation(project, member)
    world.admin = member("admin", username="adam")
    world.finish(world.a, world.ann, {world.c1: 0, world.c2: 1, world.hidden: 2})
    return world


def grade_url(esc, name="grade-question", candidate=None):
    kwargs = {"slug": esc.project.slug, "pool_id": esc.pool.pk, "question_id": esc.question.pk}
    if candidate is not None:
        kwargs["candidate_id"] = candidate.pk
    return reverse(f"labelling:{name}", kwargs=kwargs)


def adjudication_url(esc):
    return reverse("labelling:list-adjudication", args=[esc.project.slug, esc.question_set.pk])


def without_tokens(body: str) -> str:
    return re.sub(
        r'(name="csrfmiddlewaretoken" value=|data-csrf=|"X-CSRFToken": )"[^"]*"', "", body
    )


def test_the_first_two_labellers_learn_nothing_of_the_escalation(esc):
    ann = login(esc.ann)
    before = without_tokens(ann.get(grade_url(esc)).content.decode())
    queue_before = without_tokens(
        ann.get(reverse("labelling:show-queue", args=[esc.project.slug])).content.decode()
    )
    esc.finish(esc.b, esc.bob, {esc.c1: 2, esc.c2: 1, esc.hidden: 2})
    assert EscalatedItem.objects.filter(assignment__isnull=False).count() == 1
    after = without_tokens(ann.get(grade_url(esc)).content.decode())
    queue_after = without_tokens(
        ann.get(reverse("labelling:show-queue", args=[esc.project.slug])).content.decode()
    )
    assert before == after and queue_before == queue_after
    bob_page = login(esc.bob).get(grade_url(esc)).content.decode().lower()
    assert "escalat" not in bob_page and "third" not in bob_page


def test_the_third_labellers_page_is_a_grading_page_with_the_disputed_passage_alone(esc):
    esc.finish(esc.b, esc.bob, {esc.c1: 2, esc.c2: 1, esc.hidden: 2})
    third = esc.third()
    client = login(third.labeller)
    queue = client.get(reverse("labelling:show-queue", args=[esc.project.slug]))
    assert queue.status_code == 200 and esc.question.external_id in queue.content.decode()
    response = client.get(grade_url(esc))
    assert response.status_code == 200
    page = response.content.decode()
    assert len(re.findall(r'<li class="candidate[ "]', page)) == 1
    assert "Passage 1 of 1" in page and grade_url(esc, "grade-candidate", esc.c1) in page
    assert "escalat" not in page.lower() and "disagree" not in page.lower()
    for word in ("third", "ann", "bob", "second labeller", "slot"):
        assert not re.search(rf"\b{word}\b", page.lower()), word
    assert 'data-revision="1"' not in page  # none of the others' revisions, none of their grades
    # The question's other passages are not theirs: no document view, no grade.
    assert client.get(grade_url(esc, "show-passage-document", esc.c2), **HTMX).status_code == 404
    refused = client.post(
        grade_url(esc, "grade-candidate", esc.c2), {"grade": "2", "revision": "0"}, **HTMX
    )
    assert refused.status_code == 404
    assert not Judgement.objects.filter(assignment=third, candidate=esc.c2).exists()
    # Grading the passage they were given works as anywhere.
    saved = client.post(
        grade_url(esc, "grade-candidate", esc.c1), {"grade": "1", "revision": "0"}, **HTMX
    )
    assert saved.status_code == 200
    assert Judgement.objects.get(assignment=third, candidate=esc.c1).grade == 1


def test_leads_see_both_rules_and_the_three_votes(esc):
    esc.finish(esc.b, esc.bob, {esc.c1: 2, esc.c2: 1, esc.hidden: 2})
    third = esc.third()
    lead = login(esc.lead)
    waiting = lead.get(adjudication_url(esc)).content.decode()
    assert "Waiting for a third labeller (1)" in waiting
    assert "two grades are two apart" in waiting and "Widest disagreement first" in waiting
    assert "Waiting for a decision (0)" in waiting

    esc.finish(third, third.labeller, {esc.c1: 1})
    page = lead.get(adjudication_url(esc)).content.decode()
    assert "Waiting for a decision (1)" in page and "Waiting for a third labeller" not in page
    assert "3 votes (0 vs 2 vs 1): a lead decides" in page
    resolve = reverse(
        "labelling:resolve-item",
        args=[esc.project.slug, esc.question_set.pk, esc.pool.pk, esc.question.pk, esc.c1.pk],
    )
    decision = lead.get(resolve).content.decode()
    assert f"Third labeller: {third.labeller.username}" in decision
    assert "who graded it 1" in decision
    assert 'name="spans_from" value="c"' in decision


@pytest.mark.parametrize("role", ["labeller", "nobody"])
def test_labellers_and_strangers_never_reach_the_lead_pages(esc, role, django_user_model):
    if role == "labeller":
        client = login(esc.carl)
        expected = 403
    else:
        from tests.factories import UserFactory

        client = login(UserFactory(username="stranger"))
        expected = 404
    assert client.get(adjudication_url(esc)).status_code == expected
    setting = reverse("corpus:edit-escalation", args=[esc.project.slug])
    assert client.post(setting, {"escalate_on": "never"}).status_code == expected
    esc.project.refresh_from_db()
    assert esc.project.escalate_on == "two_apart"


@pytest.mark.parametrize("who", ["lead", "admin"])
def test_leads_and_admins_change_the_rule_on_the_project_page(esc, who):
    client = login(esc.lead if who == "lead" else esc.admin)
    page = client.get(reverse("corpus:show-project", args=[esc.project.slug])).content.decode()
    assert 'id="settings"' in page and 'value="any_difference"' in page
    setting = reverse("corpus:edit-escalation", args=[esc.project.slug])
    response = client.post(setting, {"escalate_on": "any_difference"}, follow=True)
    assert response.status_code == 200
    assert "A third labeller is now asked whenever the two grades differ." in (
        response.content.decode()
    )
    esc.project.refresh_from_db()
    assert esc.project.escalate_on == "any_difference"
    rules = client.get(adjudication_url(esc)).content.decode()
    assert "a passage whose two grades differ at all goes to a third labeller" in rules


def test_a_bad_rule_is_a_clear_message_never_a_500(esc):
    client = login(esc.lead)
    setting = reverse("corpus:edit-escalation", args=[esc.project.slug])
    response = client.post(setting, {"escalate_on": "sometimes"}, follow=True)
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert client.get(setting).status_code == 405
    esc.project.refresh_from_db()
    assert esc.project.escalate_on == "two_apart"
