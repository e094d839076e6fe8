"""Projects, their members and access groups, accounts made for new members, and who is told
when access changes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from corpus import one_time_passwords
from corpus.models import (
    AccessGroup,
    AccessGroupChange,
    EscalateOn,
    Membership,
    Project,
    ProjectInvitation,
    Role,
)
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


def set_escalation(*, project: Project, escalate_on: str) -> Project:
    """When a passage two labellers disagree on gets a third labeller (`EscalateOn`); it
    applies to questions whose second labeller finishes from now on."""
    if escalate_on not in EscalateOn.values:
        raise ServiceError("Choose when a third labeller is asked.")
    project.escalate_on = escalate_on
    project.save(update_fields=["escalate_on"])
    return project


def add_member(*, project: Project, user, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": Role(role)}
    )
    return membership


@dataclass(frozen=True)
class Added:
    """What `add_or_invite` did: made ``membership`` at once, or left an ``invitation``."""

    membership: Membership | None = None
    invitation: ProjectInvitation | None = None


def _check_username(username: str) -> str:
    User = get_user_model()
    username = username.strip()
    if not username or len(username) > User._meta.get_field("username").max_length:
        raise ServiceError("A username has 1 to 150 characters.")
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError as exc:
        raise ServiceError(
            "A username has letters, digits and @ . + - _ only, without spaces."
        ) from exc
    return username


def shares_a_project(*, user, admin) -> bool:
    """Whether ``user`` is a member of a project ``admin`` administers: someone whose name the
    admin reads on one of their own members pages already."""
    administered = Membership.objects.filter(user=admin, role=Role.ADMIN).values("project_id")
    return Membership.objects.filter(user=user, project_id__in=administered).exists()


def add_or_invite(*, project: Project, username: str, role: str, admin) -> Added:
    """A project admin adds an existing account by its username. One that is a member of a
    project they administer joins at once; any other name (an account elsewhere in the
    installation, a superuser, or no account at all) gets an invitation that its owner accepts
    on their Projects page, and the admin is told the same whichever it is: usernames cannot be
    tried out here."""
    username = _check_username(username)
    if role not in Role.values:
        raise ServiceError("Choose a role: labeller, lead or admin.")
    User = get_user_model()
    members = Membership.objects.filter(project=project)
    if members.filter(user__username__iexact=username).exists():
        raise ServiceError(f"{username} is a member already; change their role below.")
    user = User.objects.filter(username__iexact=username).first()
    if user is not None and user.is_active and shares_a_project(user=user, admin=admin):
        return Added(membership=add_member(project=project, user=user, role=role))
    with transaction.atomic():
        invitation = ProjectInvitation.objects.filter(
            project=project, username__iexact=username
        ).first() or ProjectInvitation(project=project, username=username)
        invitation.role, invitation.invited_by = role, admin
        invitation.created_at, invitation.accepted_at = timezone.now(), None
        invitation.save()
    return Added(invitation=invitation)


def accept_project_invitation(*, project: Project, user) -> Membership:
    """``user`` accepts their pending invitation to ``project`` and joins it with its role."""
    with transaction.atomic():
        invitation = (
            ProjectInvitation.objects.select_for_update()
            .pending()
            .for_user(user)
            .filter(project=project)
            .first()
        )
        if invitation is None:
            raise ServiceError("There is no invitation to this project waiting for you.")
        invitation.accepted_at = timezone.now()
        invitation.save(update_fields=["accepted_at"])
        membership, _ = Membership.objects.get_or_create(
            project=project, user=user, defaults={"role": invitation.role}
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


def remove_member(*, membership: Membership, by=None) -> None:
    """Take a user out of a project and its access groups (each removal recorded, as done
    ``by`` that admin). Their work stays, with their name on it; a lead can move their
    unstarted assignments to someone else."""
    with transaction.atomic():
        locked = Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
        _check_admins_remain(locked, new_role=None)
        groups = AccessGroup.objects.filter(project_id=locked.project_id, members=locked.user)
        for group in groups:
            group.members.remove(locked.user)
            record_group_changes(group=group, added=(), removed=[locked.user], by=by)
        locked.delete()
    access_changed(project=locked.project, user_ids=[locked.user_id])


@dataclass(frozen=True)
class NewAccount:
    user: object
    password: str = ""  # the one-time password (changed at first log-in), when one was asked for
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
    password = ""
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, email=email, password=None)
            Membership.objects.create(project=project, user=user, role=role)
            if not invite:
                password = one_time_passwords.issue(user)
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
        one_time_passwords.withdraw(user)
        return NewAccount(user=user, invitation_path=invitation_path(user))
    return NewAccount(user=user, password=one_time_passwords.issue(user))


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


def set_access_group_members(
    *, project: Project, name: str, users: Iterable, by=None
) -> AccessGroup:
    """Make ``users`` the group's members; every account added or removed is recorded as done
    ``by`` that user (None: a command or a script)."""
    User = get_user_model()
    with transaction.atomic():
        group, _ = AccessGroup.objects.get_or_create(project=project, name=name)
        before = set(group.members.values_list("pk", flat=True))
        group.members.set(users)
        after = set(group.members.values_list("pk", flat=True))
        changed = {u.pk: u for u in User.objects.filter(pk__in=before ^ after)}
        record_group_changes(
            group=group,
            added=[changed[pk] for pk in sorted(after - before)],
            removed=[changed[pk] for pk in sorted(before - after)],
            by=by,
        )
    access_changed(project=project, user_ids=before ^ after)
    return group


def record_group_changes(*, group: AccessGroup, added: Iterable, removed: Iterable, by=None):
    """Record who (``by``) added and removed whom to and from ``group``, now. An account adding
    itself is flagged on its record: the project's admins see it on the access groups page."""
    now = timezone.now()
    by_name = by.get_username() if by is not None else ""
    rows = [
        AccessGroupChange(
            project_id=group.project_id,
            group=group,
            group_name=group.name,
            member=user,
            member_name=user.get_username(),
            changed_by=by,
            changed_by_name=by_name,
            added=was_added,
            self_added=was_added and by is not None and by.pk == user.pk,
            changed_at=now,
        )
        for was_added, users in ((True, added), (False, removed))
        for user in users
    ]
    AccessGroupChange.objects.bulk_create(rows)


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
