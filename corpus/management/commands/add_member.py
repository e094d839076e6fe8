from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from corpus import one_time_passwords
from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import Role
from corpus.services import projects


class Command(BaseCommand):
    help = (
        "Give a user a role in a project (--create makes the account and prints a one-time "
        "password, which its owner changes at first log-in)."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--project", required=True)
        parser.add_argument("--role", choices=[r.value for r in Role], default=Role.LABELLER)
        parser.add_argument("--access-group", action="append", default=[], dest="groups")
        parser.add_argument("--create", action="store_true")

    def handle(self, *args, username, project, role, groups, create, **options):
        project = project_or_fail(project)
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is None and not create:
            raise unusable(f"No user {username!r}; pass --create to make the account.")
        if user is None:
            user = User.objects.create_user(username=username, password=None)
            password = one_time_passwords.issue(user)
            self.stdout.write(
                f"Created user {username} with password {password} (one-time: they choose "
                "their own at first log-in)"
            )
        projects.add_member(project=project, user=user, role=role)
        for name in groups:
            group = project.access_groups.filter(name=name).first()
            members = [*group.members.all(), user] if group else [user]
            projects.set_access_group_members(project=project, name=name, users=members)
        self.stdout.write(f"{username} is {role} in {project.slug}.")
