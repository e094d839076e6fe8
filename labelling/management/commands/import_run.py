from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import Retriever, RetrieverKind
from goldset.errors import ServiceError
from labelling.models import QuestionSet
from labelling.services.questions import InputRejected
from labelling.services.run_import import import_run


class Command(BaseCommand):
    help = (
        "Import the run of the team's own system for a `run` retriever: a TREC run file or "
        'JSONL {"question_id", "results": [{"doc_id", "start"?, "end"?, "score"?}]}. All or '
        "nothing: any unknown id or bad offset is reported with its line and nothing is written."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--project", required=True)
        parser.add_argument("--retriever", required=True)
        parser.add_argument("--set", dest="set_name", required=True)

    def handle(self, *args, path, project, retriever, set_name, **options):

        project = project_or_fail(project)
        found = Retriever.objects.filter(project=project, name=retriever).first()
        if found is None:
            raise unusable(
                f"No retriever {retriever!r} in {project.slug}; add one with "
                f"`manage.py add_retriever --project {project.slug} --name {retriever} --kind run`."
            )
        if found.kind != RetrieverKind.RUN:
            raise unusable(f"{found.name} is a {found.kind} retriever, not an uploaded run.")
        question_set = QuestionSet.objects.filter(project=project, name=set_name).first()
        if question_set is None:
            raise unusable(f"No question set {set_name!r} in {project.slug}.")
        if not path.is_file():
            raise unusable(f"{path} is not a file.")
        try:
            result = import_run(
                retriever=found, question_set=question_set, data=path.read_bytes(), name=path.name
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
            f"Run of {found.name} for {question_set.name}: {result.questions} questions, "
            f"{result.results} results, {result.passages} passages"
            + (f" ({result.whole_documents} whole documents)" if result.whole_documents else "")
            + "."
        )
