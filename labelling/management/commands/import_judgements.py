from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from goldset.errors import ServiceError
from labelling.services.judgement_import import import_judgements


class Command(BaseCommand):
    help = (
        'Import judgements made elsewhere: JSONL lines {"question_id", "labeller", "doc_id", '
        '"start"?, "end"?, "grade"} (document level without offsets). Creates labeller accounts '
        "(without a password) and pooled candidates as needed. Any bad line: nothing is written."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--project", required=True)
        parser.add_argument(
            "--set", dest="set_name", default="", help="question set, if ids are ambiguous"
        )

    def handle(self, *args, file: Path, project, set_name, **options):
        project = project_or_fail(project)
        if not file.is_file():
            raise unusable(f"{file} does not exist.")
        try:
            result = import_judgements(
                project=project, name=file.name, data=file.read_bytes(), set_name=set_name
            )
        except ServiceError as exc:
            raise unusable(str(exc))
        for error in result.errors:
            self.stderr.write(str(error))
        if result.errors:
            raise unusable(f"{len(result.errors)} bad line(s); nothing was imported.")
        if result.warning:
            self.stderr.write(f"Warning: {result.warning}.")
        if result.labellers_created:
            self.stdout.write(f"Created labeller accounts: {', '.join(result.labellers_created)}")
        self.stdout.write(f"Imported {result.judgements} judgements.")
