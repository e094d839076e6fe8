"""Issue 33, item 12 asked for the "handled by members of those groups" note only where
something is actually hidden from the viewer. That cannot be done without telling a lead or an
admin outside a group that a document of it is in this question set, which the access rule
forbids (tests/test_outsiders.py: their pages are byte for byte the same with or without the
document). So the note depends on the viewer's memberships alone, and this test pins that: it
reads the same on a set with a hidden passage and on one without."""

import pytest
from django.urls import reverse

from corpus.services import projects
from tests.factories import grading_pool, login

NOTE = "handled by members of those groups"
PAGES = ("labelling:list-adjudication", "labelling:show-gold")


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


def test_the_note_never_tells_which_sets_hold_hidden_passages(project, team):
    restricted = grading_pool(project, restricted_group="hr")
    open_set = grading_pool(project)  # no restricted passage
    projects.set_access_group_members(project=project, name="hr", users=[team["inside"]])
    everywhere = dict.fromkeys(PAGES, True)
    for who in ("outside", "admin"):  # leads and admins get no exception
        client = login(team[who])
        assert notes(client, project, restricted) == everywhere, who
        assert notes(client, project, open_set) == everywhere, who
    # A member of every group is told nothing is left out, since nothing is.
    inside = login(team["inside"])
    nowhere = dict.fromkeys(PAGES, False)
    assert notes(inside, project, restricted) == nowhere
    assert notes(inside, project, open_set) == nowhere
