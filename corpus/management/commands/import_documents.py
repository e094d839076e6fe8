from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import PARTIAL, project_or_fail, unusable
from corpus.services import documents
from corpus.sources import SourceError


class Command(BaseCommand):
    help = (
        "Import documents from a folder of .txt/.md/.html/.pdf/.docx files, or from a JSONL/CSV "
        "with doc_id,title,text,access_groups,modified_at. Each file imports atomically. "
        "Exit 0: all imported; 1: some rejected; 2: nothing imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--project", required=True)

    def handle(self, *args, path: Path, project, **options):
        project = project_or_fail(project)
        if not path.exists():
            raise unusable(f"{path} does not exist.")
        try:
            result = documents.import_path(project=project, path=path, report=self.stdout.write)
        except SourceError as exc:
            raise unusable(str(exc))
        for error in result.errors:
            self.stderr.write(str(error))
        self.stdout.write(
            f"{result.created} new, {result.updated} updated, {result.unchanged} unchanged, "
            f"{len(result.errors)} rejected."
        )
        if result.errors:
            if not (result.imported or result.unchanged):
                raise unusable("Nothing was imported.")
            raise SystemExit(PARTIAL)
