"""`project_access`: the user's membership of the project (its role, its project), a 403 for a
role too low, and a 404 for anything outside the user's projects."""

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from corpus.access import project_access
from corpus.models import Project
from tests.factories import MembershipFactory, UserFactory


@pytest.mark.django_db
def test_the_access_is_the_users_membership_of_that_project(project):
    other = Project.objects.create(slug="other", name="Other")
    lead = UserFactory(password=None)
    membership = MembershipFactory(project=project, user=lead, role="lead")
    MembershipFactory(project=other, user=lead, role="labeller")
    outsider = UserFactory(password=None)
    access = project_access(lead, project.slug, role="lead")
    assert access.membership == membership and access.project == project and access.is_lead
    assert project_access(lead, "other").role == "labeller"
    with pytest.raises(PermissionDenied):
        project_access(lead, "other", role="lead")
    for user, slug in [(outsider, project.slug), (lead, "missing")]:
        with pytest.raises(Http404):
            project_access(user, slug)
