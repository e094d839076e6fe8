"""Test users (PermissionProfile): who a permission replay acts as.

A test user has the access groups they are meant to have (or sees everything: an admin, whose
run is a replay's reference), and what the team's system needs to act as them: extra headers
and the value of ``{{user}}`` in the HTTP retriever's templates. Secrets are never stored:
header values naming a credential, and any value, may be ``env:NAME``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from corpus.models import AccessGroup, PermissionProfile, Project
from corpus.services.http_retrieval import check_test_user
from goldset.errors import ServiceError

# A permission replay through a retriever also runs it with no test user, under this name.
RESERVED_NAME = "unrestricted"


def save_test_user(
    *,
    project: Project,
    name: str,
    groups: Sequence[str] = (),
    no_groups: bool = False,
    unrestricted: bool = False,
    headers: dict[str, str] | None = None,
    user_value: Any = None,
    description: str = "",
    profile: PermissionProfile | None = None,
) -> PermissionProfile:
    """Add a test user, or change ``profile``. A user in no group must be asked for
    (``no_groups``): it is more often a forgotten field than a meant one."""
    if not name or slugify(name) != name:
        raise ServiceError(
            f"A test user's name is a slug (lower-case letters, digits, - and _), not {name!r}."
        )
    if name == RESERVED_NAME:
        raise ServiceError(
            f"{RESERVED_NAME!r} names a replay's reference run (the retriever with no test "
            "user); choose another name."
        )
    taken = PermissionProfile.objects.filter(project=project, name=name)
    if profile is not None:
        taken = taken.exclude(pk=profile.pk)
    if taken.exists():
        raise ServiceError(f"A test user named {name!r} already exists in this project.")
    wanted = list(dict.fromkeys(g.strip() for g in groups if g.strip()))
    found = {g.name: g for g in AccessGroup.objects.filter(project=project, name__in=wanted)}
    unknown = [g for g in wanted if g not in found]
    if unknown:
        names = ", ".join(project.access_groups.values_list("name", flat=True)) or "none"
        raise ServiceError(
            f"No access group {', '.join(map(repr, unknown))} in {project.slug} (it has: {names})."
        )
    if unrestricted and wanted:
        raise ServiceError("An unrestricted test user sees every document: give no groups.")
    if not unrestricted and not wanted and not no_groups:
        raise ServiceError(
            f"{name} has no access group, so they may see only unrestricted documents. Give "
            "their groups, or say that no group is meant (no groups / --no-groups)."
        )
    headers = {str(k).strip(): str(v) for k, v in (headers or {}).items() if str(k).strip()}
    check_test_user(headers=headers, user_value=user_value)
    with transaction.atomic():
        if profile is None:
            profile = PermissionProfile(project=project)
        profile.name = name
        profile.unrestricted = unrestricted
        profile.headers = headers
        profile.user_value = user_value
        profile.description = description[:300]
        profile.save()
        profile.access_groups.set([found[g] for g in wanted])
    return profile


def delete_test_user(*, profile: PermissionProfile) -> None:
    """Past replays keep their runs and report under the test user's name."""
    profile.delete()


def parse_headers(text: str) -> dict[str, str]:
    """``Name: value`` lines (the pages' and commands' way of giving headers)."""
    headers: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, separator, value = line.partition(":")
        if not separator or not name.strip():
            raise ServiceError(f"Header line {number} should read 'Name: value', not {line!r}.")
        headers[name.strip()] = value.strip()
    return headers


def parse_user_value(text: str) -> Any:
    """The value of ``{{user}}``: JSON when it reads as JSON (a list, an object, a number),
    else the text itself; blank for the test user's name."""
    text = text.strip()
    if not text:
        return None
    if text[0] in "[{" or text in ("true", "false", "null"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise ServiceError(f"The user value is not valid JSON ({error.msg}).") from None
    return text


def acl_of(project: Project) -> dict[str, Any]:
    """acl.json for ``python -m goldeval permissions``: each test user's groups, or "*"."""
    return {
        profile.name: "*"
        if profile.unrestricted
        else sorted(profile.access_groups.values_list("name", flat=True))
        for profile in PermissionProfile.objects.filter(project=project).order_by("name")
    }
