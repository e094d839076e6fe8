from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import PARTIAL, project_or_fail, unusable
from corpus.sources import SourceError
from labelling.services import questions as services


class Command(BaseCommand):
    help = (
        "Import a BEIR folder (corpus.jsonl, queries.jsonl, qrels/*.tsv): documents, a question "
        "set, and document-level imported judgements."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--project", required=True)
        parser.add_argument(
            "--set", dest="set_name", default="", help="question set name (default: folder name)"
        )

    def handle(self, *args, path: Path, project, set_name, **options):
        from django.utils.text import slugify

        project = project_or_fail(project)
        if not path.is_dir():
            raise unusable(f"{path} is not a folder.")
        set_name = set_name or slugify(path.resolve().name) or "beir"
        try:
            result = services.import_beir(project=project, path=path, set_name=set_name)
        except SourceError as exc:
            raise unusable(str(exc))
        for error in result.errors:
            self.stderr.write(str(error))
        docs = result.documents
        self.stdout.write(
            f"Documents: {docs.created} new, {docs.updated} updated, {docs.unchanged} unchanged. "
            f"Question set {set_name}: {result.questions} new questions, "
            f"{result.judgements} judgements. "
            f"{len(result.errors)} rejected."
        )
        if result.errors:
            raise SystemExit(PARTIAL)
