from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.management.commands._progress import ProgressBar, progress_stream
from goldset.errors import ServiceError
from labelling.services import questions as services
from labelling.services.questions import InputRejected

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".txt": "lines"}


class Command(BaseCommand):
    help = (
        "Import questions into a question set (created if needed) from CSV (question/text "
        "column; optional id, source, tags), JSONL (question or text; optional id, source, tags) "
        "or a text file of one question per line. Text is kept byte-for-byte; duplicates are "
        "flagged, never dropped; importing the same file again adds nothing. All or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--project", required=True)
        parser.add_argument("--set", dest="set_name", required=True)
        parser.add_argument(
            "--format", choices=sorted(set(FORMATS.values())), help="default: from the extension"
        )
        parser.add_argument("--source", default="", help="source of rows that name none")

    def handle(self, *args, path, project, set_name, format, source, **options):
        project = project_or_fail(project)
        if not path.is_file():
            raise unusable(f"{path} is not a file.")
        format = format or FORMATS.get(path.suffix.lower())
        if format is None:
            raise unusable(
                f"Cannot tell the format of {path.name}: use .csv, .jsonl or .txt, or --format."
            )
        try:
            with ProgressBar(
                label=f"Import {path.name}", unit="questions", stream=progress_stream(self)
            ) as bar:
                result = services.import_questions(
                    project=project,
                    set_name=set_name,
                    data=path.read_bytes(),
                    format=format,
                    source=source,
                    name=path.name,
                    progress=bar.update,
                )
        except InputRejected as exc:
            for problem in exc.problems:
                self.stderr.write(str(problem))
            raise unusable(f"Nothing was imported: {len(exc.problems)} problems (listed above).")
        except ServiceError as exc:
            raise unusable(str(exc))
        self.stdout.write(f"Question set {set_name}: {result.describe()}")
