from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import PermissionProfile
from corpus.services.test_users import parse_headers, parse_user_value, save_test_user
from goldset.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Add a test user for permission replays: the access groups they are meant to have, and "
        "what the team's system needs to act as them (headers, the value of {{user}}). Secrets "
        "as env:NAME, read where the search runs."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--name", required=True)
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--groups", default="", help="comma-separated access group names")
        who.add_argument(
            "--no-groups",
            action="store_true",
            help="in no access group: may see only unrestricted documents",
        )
        who.add_argument(
            "--unrestricted",
            action="store_true",
            help="sees every document (an admin): the reference run of a replay",
        )
        parser.add_argument(
            "--header",
            action="append",
            default=[],
            metavar="'NAME: VALUE'",
            help="repeatable, e.g. 'X-User: alice' or 'Authorization: env:ALICE_TOKEN'",
        )
        parser.add_argument(
            "--value",
            default="",
            help="what {{user}} becomes: text, JSON, or env:NAME (default: the name)",
        )
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--replace", action="store_true", help="change the test user if it exists"
        )

    def handle(
        self,
        *args,
        project,
        name,
        groups,
        no_groups,
        unrestricted,
        header,
        value,
        description,
        replace,
        **options,
    ):
        project = project_or_fail(project)
        existing = PermissionProfile.objects.filter(project=project, name=name).first()
        if existing is not None and not replace:
            raise unusable(
                f"A test user named {name!r} already exists in {project.slug}; "
                "pass --replace to change it."
            )
        try:
            profile = save_test_user(
                project=project,
                name=name,
                groups=groups.split(","),
                no_groups=no_groups,
                unrestricted=unrestricted,
                headers=parse_headers("\n".join(header)),
                user_value=parse_user_value(value),
                description=description,
                profile=existing,
            )
        except ServiceError as exc:
            raise unusable(str(exc))
        sees = (
            "every document"
            if profile.unrestricted
            else "groups " + (", ".join(profile.access_groups.values_list("name", flat=True)))
            if profile.access_groups.exists()
            else "unrestricted documents only"
        )
        verb = "changed" if existing else "added"
        self.stdout.write(f"Test user {profile.name} {verb}: sees {sees}.")
