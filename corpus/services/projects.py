"""Projects, their members and access groups, and who is told when access changes."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from corpus.models import AccessGroup, Membership, Project, Role
from goldset.errors import ServiceError


def create_project(*, slug: str, name: str = "") -> Project:
    if Project.objects.filter(slug=slug).exists():
        raise ServiceError(f"A project with the slug {slug!r} already exists.")
    return Project.objects.create(slug=slug, name=name or slug)


def add_member(*, project: Project, user, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": Role(role)}
    )
    return membership


def set_access_group_members(*, project: Project, name: str, users: Iterable) -> AccessGroup:
    group, _ = AccessGroup.objects.get_or_create(project=project, name=name)
    before = set(group.members.values_list("pk", flat=True))
    group.members.set(users)
    after = set(group.members.values_list("pk", flat=True))
    access_changed(project=project, user_ids=before ^ after)
    return group


# What a higher app derives from what each user may see (labelling: whether an assignment is
# done, since hidden passages are not the labeller's to grade) must be recomputed the moment
# access changes, not at the labeller's next edit. The corpus cannot import labelling, so
# labelling hands its listener over explicitly, in `LabellingConfig.ready()`; there is one.
# Its arguments: the project, the users (None: any) and the documents (None: any) concerned.
AccessListener = Callable[[Project, "set[int] | None", "set[int] | None"], None]
_access_listener: AccessListener | None = None


def listen_for_access_changes(listener: AccessListener) -> None:
    """Name the function to call whenever access changes (replacing any earlier one)."""
    global _access_listener
    _access_listener = listener


def access_listener() -> AccessListener | None:
    return _access_listener


def access_changed(
    *,
    project: Project,
    user_ids: Iterable[int] | None = None,
    document_ids: Iterable[int] | None = None,
) -> None:
    """Some users' (None: anyone's) access to some documents (None: any) of `project` changed."""
    users = None if user_ids is None else set(user_ids)
    documents = None if document_ids is None else set(document_ids)
    if users == set() or documents == set() or _access_listener is None:
        return
    _access_listener(project, users, documents)
