from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.management.commands._progress import ProgressBar, progress_stream
from goldeval.formats.traces import read_trace_stream
from goldset.errors import ServiceError
from production.services import traces as services


class Command(BaseCommand):
    help = (
        "Import production traces from a JSONL file (one trace a line: trace_id, occurred_at, "
        "user, question, retrieved, answer, citations, refused, feedback, system_version, "
        "index_manifest; OpenInference names accepted). All or nothing: any bad line stores "
        "nothing and is listed with its line number. A trace id already stored is skipped, so "
        "importing the same file again adds nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--project", required=True)

    def handle(self, *args, path, project, **options):
        project = project_or_fail(project)
        if not path.is_file():
            raise unusable(f"{path} is not a file.")
        try:
            with (
                path.open("rb") as stream,
                ProgressBar(
                    label=f"Import {path.name}", unit="traces", stream=progress_stream(self)
                ) as bar,
            ):
                intake = services.import_traces(
                    project=project, lines=read_trace_stream(stream), progress=bar.update
                )
        except services.TracesRejected as exc:
            for problem in exc.problems:
                self.stderr.write(f"{path}:{problem.line}: {problem.message}")
            if exc.more:
                self.stderr.write(f"{path}: … and more problems after these.")
            raise unusable(f"Nothing was imported from {path}: {exc}")
        except ServiceError as exc:
            raise unusable(str(exc))
        self.stdout.write(f"{path.name}: {intake.describe()}.")
