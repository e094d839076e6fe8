"""Who may see what. Every view starts here.

Anything outside the user's projects is a 404, so an id from another project reveals nothing;
a role too low inside one's own project is a 403.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.http import Http404

from corpus.models import Membership, Project, Role


@dataclass(frozen=True)
class ProjectAccess:
    project: Project
    membership: Membership

    @property
    def role(self) -> str:
        return self.membership.role

    def allows(self, role: str) -> bool:
        return self.membership.allows(role)

    @property
    def is_lead(self) -> bool:
        return self.allows(Role.LEAD)

    @property
    def is_admin(self) -> bool:
        return self.allows(Role.ADMIN)


def project_access(user, slug: str, *, role: str = Role.LABELLER) -> ProjectAccess:
    membership = (
        Membership.objects.select_related("project").filter(user=user, project__slug=slug).first()
        if user.is_authenticated
        else None
    )
    if membership is None:
        raise Http404("No such project.")
    if not membership.allows(role):
        raise PermissionDenied(f"This needs the {Role(role).label.lower()} role in this project.")
    return ProjectAccess(project=membership.project, membership=membership)
