from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.services.canaries import jsonl_line
from goldset.errors import ServiceError
from labelling.services.questions import plant_canaries


class Command(BaseCommand):
    help = (
        "Plant canary documents restricted to an access group, each with a unique token, and a "
        "question matching each (in a question set, default 'canaries'). A permission replay "
        "must never return them to anyone outside the group; nothing else counts them."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--group", required=True, help="the access group they belong to")
        parser.add_argument("--count", type=int, default=3)
        parser.add_argument("--set", dest="set_name", default="canaries")
        parser.add_argument(
            "--out",
            type=Path,
            default=None,
            help="also write them as JSONL (doc_id, title, text, access_groups) for the team's "
            "own index to ingest",
        )

    def handle(self, *args, project, group, count, set_name, out, **options):
        project = project_or_fail(project)
        try:
            canaries = plant_canaries(project=project, group=group, count=count, set_name=set_name)
        except ServiceError as exc:
            raise unusable(str(exc))
        for canary in canaries:
            self.stdout.write(f"  {canary.doc_id}: {canary.question}")
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(
                "".join(
                    jsonl_line(doc_id=c.doc_id, title=c.title, text=c.text, groups=[c.group])
                    for c in canaries
                ),
                encoding="utf-8",
            )
        self.stdout.write(
            f"{len(canaries)} canaries planted in {project.slug}, restricted to {group}; their "
            f"questions are in the set {set_name}. Rebuild the built-in indexes "
            "(`manage.py build_index`)"
            + (f" and index {out} in your own search system" if out else "")
            + " before replaying."
        )
