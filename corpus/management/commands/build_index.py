from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.management.commands._jobs import wait_for_job
from corpus.models import JobState, Retriever
from corpus.services import retrieval
from goldset.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Build a new index for a bm25 or embedding retriever and make it active. Embeddings of "
        "passages already embedded with the same model are reused."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--retriever", required=True)
        parser.add_argument("--timeout", type=float, default=6 * 3600, help="seconds to wait")

    def handle(self, *args, project, retriever, timeout, **options):
        project = project_or_fail(project)
        found = Retriever.objects.filter(project=project, name=retriever).first()
        if found is None:
            raise unusable(f"No retriever {retriever!r} in {project.slug}.")
        try:
            job = retrieval.start_index_build(retriever=found)
        except ServiceError as exc:
            raise unusable(str(exc))
        try:
            job = wait_for_job(job, out=self.stdout, timeout=timeout)
        except TimeoutError as exc:
            raise unusable(str(exc))
        if job.state != JobState.SUCCEEDED:
            raise unusable(f"The index build failed: {job.message}")
        self.stdout.write(job.message)
