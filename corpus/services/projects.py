"""Projects, their members and access groups, accounts made for new members, and who is told
when access changes."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from corpus.models import AccessGroup, Membership, Project, Role
from goldset.errors import ServiceError

MAX_GROUP_NAME = AccessGroup._meta.get_field("name").max_length
# Characters that reorder text on screen: a name must read as it is stored.
BIDI_CONTROLS = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def create_project(*, slug: str, name: str = "", admin=None) -> Project:
    """A new project; ``admin`` (its creator in the browser) becomes its first admin."""
    try:
        validate_slug(slug)
    except ValidationError as exc:
        raise ServiceError(
            f"{slug!r} is not a valid slug: use letters, digits, hyphens and underscores."
        ) from exc
    if Project.objects.filter(slug=slug).exists():
        raise ServiceError(f"A project with the slug {slug!r} already exists.")
    with transaction.atomic():
        project = Project.objects.create(slug=slug, name=name or slug)
        if admin is not None:
            Membership.objects.create(project=project, user=admin, role=Role.ADMIN)
    return project


def add_member(*, project: Project, user, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": Role(role)}
    )
    return membership


def _check_admins_remain(membership: Membership, *, new_role: str | None) -> None:
    """A project always keeps one admin: someone must be able to manage it."""
    if membership.role != Role.ADMIN or new_role == Role.ADMIN:
        return
    others = Membership.objects.filter(project_id=membership.project_id, role=Role.ADMIN).exclude(
        pk=membership.pk
    )
    if not others.filter(user__is_active=True).exists():
        raise ServiceError(
            f"{membership.user.get_username()} is the project's only admin: make someone else "
            "an admin first."
        )


def change_role(*, membership: Membership, role: str) -> Membership:
    if role not in Role.values:
        raise ServiceError("Choose a role: labeller, lead or admin.")
    with transaction.atomic():
        locked = Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
        _check_admins_remain(locked, new_role=role)
        locked.role = role
        locked.save(update_fields=["role"])
    return locked


def remove_member(*, membership: Membership) -> None:
    """Take a user out of a project and its access groups. Their work stays, with their name
    on it; a lead can move their unstarted assignments to someone else."""
    with transaction.atomic():
        locked = Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
        _check_admins_remain(locked, new_role=None)
        groups = AccessGroup.objects.filter(project_id=locked.project_id, members=locked.user)
        for group in groups:
            group.members.remove(locked.user)
        locked.delete()
    access_changed(project=locked.project, user_ids=[locked.user_id])


@dataclass(frozen=True)
class NewAccount:
    user: object
    password: str = ""  # the one-time password, when one was asked for
    invitation_path: str = ""  # the path of the invitation link, when one was asked for


def create_account(
    *,
    project: Project,
    username: str,
    role: str,
    email: str = "",
    invite: bool = False,
) -> NewAccount:
    """A new account, made a member of ``project`` with ``role``. It gets either a one-time
    password (shown once, never stored in the clear) or, with ``invite``, no password at all
    and an invitation link with which its owner chooses one."""
    User = get_user_model()
    username = username.strip()
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError as exc:
        raise ServiceError(
            "A username has letters, digits and @ . + - _ only, without spaces."
        ) from exc
    if not username or len(username) > User._meta.get_field("username").max_length:
        raise ServiceError("A username has 1 to 150 characters.")
    if role not in Role.values:
        raise ServiceError("Choose a role: labeller, lead or admin.")
    if User.objects.filter(username__iexact=username).exists():
        raise ServiceError(
            f"An account named {username} already exists: add it as a member instead."
        )
    password = "" if invite else secrets.token_urlsafe(12)
    try:
        with transaction.atomic():
            user = User.objects.create_user(
                username=username, email=email, password=password or None
            )
            Membership.objects.create(project=project, user=user, role=role)
    except IntegrityError as exc:  # the same name, created a moment ago elsewhere
        raise ServiceError(f"An account named {username} already exists.") from exc
    return NewAccount(
        user=user,
        password=password,
        invitation_path=invitation_path(user) if invite else "",
    )


def may_renew_access(*, user, admin) -> bool:
    """Whether project admin ``admin`` may issue ``user`` a new invitation or one-time password:
    only for an account that has never logged in, is no staff account, and belongs only to
    projects ``admin`` administers (so no admin can take over someone else's account)."""
    if user.last_login is not None or user.is_staff or user.is_superuser:
        return False
    administered = set(
        Membership.objects.filter(user=admin, role=Role.ADMIN).values_list("project_id", flat=True)
    )
    projects = set(Membership.objects.filter(user=user).values_list("project_id", flat=True))
    return bool(projects) and projects <= administered


def renew_access(*, user, admin, invite: bool) -> NewAccount:
    if not may_renew_access(user=user, admin=admin):
        raise ServiceError(
            f"{user.get_username()} has logged in already (or belongs to projects you do not "
            "administer): only they can change their password."
        )
    if invite:
        user.set_unusable_password()
        user.save(update_fields=["password"])
        return NewAccount(user=user, invitation_path=invitation_path(user))
    password = secrets.token_urlsafe(12)
    user.set_password(password)
    user.save(update_fields=["password"])
    return NewAccount(user=user, password=password)


def invitation_path(user) -> str:
    """The path of a link that lets ``user`` choose a password. Django's password-reset tokens
    expire after PASSWORD_RESET_TIMEOUT and stop working once a password is set or the user
    logs in."""
    from django.urls import reverse

    return reverse(
        "corpus:accept-invitation",
        kwargs={
            "uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
            "token": default_token_generator.make_token(user),
        },
    )


def create_access_group(*, project: Project, name: str) -> AccessGroup:
    name = name.strip()
    if not name:
        raise ServiceError("Give the access group a name.")
    if len(name) > MAX_GROUP_NAME:
        raise ServiceError(f"An access group's name has at most {MAX_GROUP_NAME} characters.")
    if any(ord(c) < 32 or c in BIDI_CONTROLS for c in name):
        raise ServiceError(
            "An access group's name cannot contain control characters (or bidirectional ones)."
        )
    if AccessGroup.objects.filter(project=project, name=name).exists():
        raise ServiceError(f"This project already has an access group named {name}.")
    return AccessGroup.objects.create(project=project, name=name)


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
