import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.services.test_users import acl_of


class Command(BaseCommand):
    help = (
        "Write acl.json for `python -m goldeval permissions --acl`: each test user of the "
        'project with their access groups, or "*" for one who sees everything.'
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--out", type=Path, default=None, help="file (default: stdout)")

    def handle(self, *args, project, out, **options):
        project = project_or_fail(project)
        acl = acl_of(project)
        if not acl:
            raise unusable(
                f"{project.slug} has no test user yet: add them with `manage.py add_test_user`."
            )
        text = json.dumps(acl, indent=2, ensure_ascii=False) + "\n"
        if out is None:
            sys.stdout.write(text)
            return
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        self.stdout.write(f"{len(acl)} test users written to {out}.")
