from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import Retriever, RetrieverKind
from corpus.runfiles import jsonl_run_line
from corpus.services import retrieval
from goldset.errors import ServiceError
from labelling.models import QuestionSet

BATCH = 64


class Command(BaseCommand):
    help = (
        "Write the run of a built-in retriever for a question set, in the JSONL run format "
        '({"question_id", "results": [{"doc_id", "start", "end", "score"}]}) that '
        "`python -m evaluation` scores."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--set", dest="set_name", required=True)
        parser.add_argument("--retriever", required=True)
        parser.add_argument("--k", type=int, default=100)
        parser.add_argument("--out", required=True, type=Path)

    def handle(self, *args, project, set_name, retriever, k, out, **options):

        project = project_or_fail(project)
        found = Retriever.objects.filter(project=project, name=retriever).first()
        if found is None:
            raise unusable(f"No retriever {retriever!r} in {project.slug}.")
        if found.kind == RetrieverKind.RUN:
            raise unusable(f"{found.name} is an uploaded run; it has nothing to search with.")
        question_set = QuestionSet.objects.filter(project=project, name=set_name).first()
        if question_set is None:
            raise unusable(f"No question set {set_name!r} in {project.slug}.")
        if k < 1:
            raise unusable("--k must be at least 1.")
        try:
            retrieval.load_index(found)
        except ServiceError as exc:
            raise unusable(str(exc))
        questions = list(question_set.questions.order_by("pk").values_list("external_id", "text"))
        out.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        try:
            with out.open("w", encoding="utf-8") as file:
                for first in range(0, len(questions), BATCH):
                    batch = questions[first : first + BATCH]
                    found_hits = retrieval.retrieve(
                        retriever=found, questions=[text for _, text in batch], k=k
                    )
                    for (external_id, _), hits in zip(batch, found_hits, strict=True):
                        file.write(jsonl_run_line(question_id=external_id, results=hits))
                        written += 1
        except ServiceError as exc:
            out.unlink(missing_ok=True)
            raise unusable(str(exc))
        self.stdout.write(f"{written} questions, top {k} each, written to {out}.")
