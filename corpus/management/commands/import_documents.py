from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import PARTIAL, project_or_fail, unusable
from corpus.management.commands._progress import ProgressBar, progress_stream
from corpus.services import documents
from corpus.sources import SourceError


class Command(BaseCommand):
    help = (
        "Import documents from a folder of .txt/.md/.html/.pdf/.docx files, or from a JSONL/CSV "
        "with doc_id,title,text,access_groups,modified_at. Each file imports atomically. An "
        "existing document keeps its access groups unless the file names others. "
        "Exit 0: all imported; 1: some rejected; 2: nothing imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--project", required=True)

    def handle(self, *args, path: Path, project, **options):
        project = project_or_fail(project)
        if not path.exists():
            raise unusable(f"{path} does not exist.")
        verbose = options["verbosity"] > 1
        try:
            with ProgressBar(
                label=f"Import {path.name}", unit="files", stream=progress_stream(self)
            ) as bar:
                result = documents.import_path(
                    project=project,
                    path=path,
                    importer=documents.Importer.command_line(),
                    report=self.stdout.write if verbose else None,
                    progress=bar.update,
                )
        except SourceError as exc:
            raise unusable(str(exc))
        for error in result.errors:
            self.stderr.write(str(error))
        for notice in result.notices:
            self.stderr.write(f"note: {notice}")
        self.stdout.write(result.summary() + ".")
        if result.errors:
            if not (result.imported or result.unchanged):
                first = f": {result.errors[0]}" if len(result.errors) == 1 else ""
                raise unusable(f"Nothing was imported{first}.")
            raise SystemExit(PARTIAL)
