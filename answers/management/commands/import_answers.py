from pathlib import Path

from django.core.management.base import BaseCommand

from answers.services.runs import import_answers
from corpus.management.commands._exit import project_or_fail, unusable
from goldset.errors import ServiceError
from labelling.models import QuestionSet
from labelling.services.questions import InputRejected


class Command(BaseCommand):
    help = (
        "Import an answer run (JSONL, one line per question: question_id, answer, refused, "
        "sentences with citations, context, system, version) into a question set. All or "
        "nothing: every bad line is reported with its number and nothing is written (exit 2)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--project", required=True)
        parser.add_argument("--set", dest="set_name", required=True, help="the question set")
        parser.add_argument(
            "--name", default=None, help="the answer run's name (default: the file's stem)"
        )

    def handle(self, *args, path, project, set_name, name, **options):
        project = project_or_fail(project)
        question_set = QuestionSet.objects.filter(project=project, name=set_name).first()
        if question_set is None:
            raise unusable(f"No question set {set_name!r} in {project.slug}.")
        if not path.is_file():
            raise unusable(f"{path} is not a file.")
        try:
            result = import_answers(
                question_set=question_set,
                data=path.read_bytes(),
                run_name=name or path.stem,
                source=str(path),
            )
        except InputRejected as exc:
            for problem in exc.problems:
                self.stderr.write(str(problem))
            raise unusable(f"Nothing was imported: {len(exc.problems)} problems (listed above).")
        except ServiceError as exc:
            raise unusable(str(exc))
        if result.warning:
            self.stderr.write(f"Warning: {result.warning}.")
        self.stdout.write(
            f"Answer run {result.run.name} for {question_set.name}: {result.answers} answers "
            f"({result.refused} refused), {result.sentences} sentences, {result.citations} "
            "citations"
            + (f"; {result.split} answers split into sentences by Goldset" if result.split else "")
            + "."
        )
