"""Issue 33, item 12: the note that items are hidden ("handled by members of those groups")
appears on the Agreement, Adjudication and Gold pages of a question set only where an access
group actually hides one of its passages from the viewer, not whenever the project has a
group the viewer is not in."""

import pytest
from django.urls import reverse

from corpus.models import AccessGroup
from corpus.services import projects
from tests.factories import grading_pool, login

NOTE = "handled by members of those groups"
PAGES = ("labelling:show-agreement", "labelling:list-adjudication", "labelling:show-gold")


@pytest.fixture
def team(project, member):
    return {
        "inside": member("lead", username="lea"),
        "outside": member("lead", username="leo"),
        "admin": member("admin", username="adm"),
    }


def notes(client, project, pool):
    shown = {}
    for name in PAGES:
        response = client.get(reverse(name, args=[project.slug, pool.question_set.pk]))
        assert response.status_code == 200, name
        shown[name] = NOTE in response.content.decode()
    return shown


def test_the_note_appears_only_where_something_is_hidden_from_the_viewer(project, team):
    restricted = grading_pool(project, restricted_group="hr")
    open_set = grading_pool(project)  # no restricted passage
    projects.set_access_group_members(project=project, name="hr", users=[team["inside"]])
    # A group with no document at all hides nothing either.
    AccessGroup.objects.create(project=project, name="empty")
    everywhere = dict.fromkeys(PAGES, True)
    nowhere = dict.fromkeys(PAGES, False)
    for who in ("outside", "admin"):  # leads and admins get no exception
        client = login(team[who])
        assert notes(client, project, restricted) == everywhere, who
        assert notes(client, project, open_set) == nowhere, who
    inside = login(team["inside"])
    assert notes(inside, project, restricted) == nowhere
    assert notes(inside, project, open_set) == nowhere
