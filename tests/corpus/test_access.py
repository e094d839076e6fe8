"""`project_access` reads the membership with one hand-written query: it gives what the ORM
gives (the same membership, project and role), and nothing outside the user's projects."""

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from corpus.access import _membership, project_access
from corpus.models import Membership, Project
from tests.factories import MembershipFactory, UserFactory


def orm(user, slug):
    return (
        Membership.objects.select_related("project").filter(user=user, project__slug=slug).first()
    )


@pytest.mark.django_db
def test_the_membership_is_the_one_the_orm_reads(project):
    other = Project.objects.create(slug="other", name="Other")
    lead = UserFactory(password=None)
    MembershipFactory(project=project, user=lead, role="lead")
    MembershipFactory(project=other, user=lead, role="labeller")
    outsider = UserFactory(password=None)
    for user, slug in [(lead, project.slug), (lead, "other"), (outsider, project.slug),
                       (lead, "missing")]:  # fmt: skip
        found, expected = _membership(user, slug), orm(user, slug)
        if expected is None:
            assert found is None
            continue
        raw, also = found
        assert also is None  # no column asked for
        assert (raw.pk, raw.role, raw.user_id, raw.project_id) == (
            expected.pk, expected.role, expected.user_id, expected.project_id)  # fmt: skip
        fields = [f.attname for f in Project._meta.concrete_fields]
        assert [getattr(raw.project, f) for f in fields] == [
            getattr(expected.project, f) for f in fields
        ]
        assert raw == expected and not raw._state.adding
    access = project_access(lead, project.slug, role="lead")
    assert access.project == project and access.is_lead
    with pytest.raises(PermissionDenied):
        project_access(lead, "other", role="lead")
    with pytest.raises(Http404):
        project_access(outsider, project.slug)
