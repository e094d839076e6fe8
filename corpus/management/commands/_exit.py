"""Exit codes shared by Goldset's management commands, so CI scripts can rely on them.

0: everything imported or done; 1: done, but some items were rejected (listed on stderr);
2: nothing done: bad arguments or an unusable input.
"""

from django.core.management.base import CommandError

from corpus.models import Project

PARTIAL = 1
UNUSABLE = 2


def unusable(message: str) -> CommandError:
    return CommandError(message, returncode=UNUSABLE)


def project_or_fail(slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise unusable(
            f"No project with the slug {slug!r}. Create it with `manage.py create_project {slug}`."
        )
    return project
