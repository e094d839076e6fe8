"""Who may see what. Every view starts here.

Anything outside the user's projects is a 404, so an id from another project reveals nothing;
a role too low inside one's own project is a 403.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.core.exceptions import PermissionDenied
from django.http import Http404

from corpus.models import Membership, Project, Role
from goldset.model_rows import RowShape, row_shape


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
    access, _ = project_access_with(user, slug, role=role)
    return access


def project_access_with(
    user, slug: str, *, role: str = Role.LABELLER, column: tuple[str, list] | None = None
) -> tuple[ProjectAccess, object]:
    """`project_access`, and one more value read in the same query: ``column`` is a scalar SQL
    subquery and its parameters, over the project row ``p`` and the membership row ``m``. A
    request that needs exactly one more small value (a grading write's assignment id) saves
    a round trip, which on PostgreSQL is a noticeable share of such a request's CPU."""
    found = _membership(user, slug, column=column) if user.is_authenticated else None
    if found is None:
        raise Http404("No such project.")
    membership, value = found
    if not membership.allows(role):
        raise PermissionDenied(f"This needs the {Role(role).label.lower()} role in this project.")
    return ProjectAccess(project=membership.project, membership=membership), value


def _membership(
    user, slug: str, *, column: tuple[str, list] | None = None
) -> tuple[Membership, object] | None:
    """`Membership.objects.select_related("project").filter(user=user, project__slug=slug)
    .first()`, written out, with ``column``'s value beside it (None without one): every request
    of every view asks it, and the ORM spent ten times longer compiling it than the database
    spent answering (`tests/corpus/test_access.py` compares the two)."""
    from django.db import connection

    extra, extra_params = column or ("NULL", [])
    sql, shape = _membership_select(connection.alias, connection.vendor)
    sql = sql.replace("EXTRA", extra, 1)
    rows = shape.read(sql, [*extra_params, user.pk, slug], connection=connection)
    if not rows:
        return None  # one membership per (project, user): at most one row
    found = rows[0]
    row = Membership(id=found.membership_id, project=found, user_id=user.pk)
    row.role = found.membership_role
    row._state.adding, row._state.db = False, found._state.db  # as if the ORM had read it
    return row, found.also_read


@cache
def _membership_select(alias: str, vendor: str) -> tuple[str, RowShape]:
    """The membership query, with EXTRA where the caller's column goes, and its rows' shape."""
    from django.db import connections

    connection = connections[alias]
    q = connection.ops.quote_name
    project, membership = q(Project._meta.db_table), q(Membership._meta.db_table)
    fields = Project._meta.concrete_fields
    columns = ", ".join(f"p.{q(field.column)}" for field in fields)
    sql = f"""
        SELECT {columns}, m.id AS membership_id, m.role AS membership_role,
            (EXTRA) AS also_read
        FROM {project} p JOIN {membership} m ON m.project_id = p.id
        WHERE m.user_id = %s AND p.slug = %s
    """  # noqa: S608 - table names and the caller's SQL are interpolated; values are parameters
    extra = ["membership_id", "membership_role", "also_read"]
    return sql, row_shape(Project, fields, extra=extra, connection=connection)
