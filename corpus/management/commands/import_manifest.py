from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import Retriever
from corpus.services.manifests import ManifestProblems, import_manifest


class Command(BaseCommand):
    help = (
        "Import the index manifest of a retriever (CSV or JSONL: doc_id, version?, "
        "content_sha256?, start?, end?, indexed_at, embedding_model, embedding_revision, "
        "dimension). The whole file or nothing. Exit 0: stored; 2: nothing stored (every "
        "problem listed with its line)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--project", required=True)
        parser.add_argument("--retriever", required=True, help="the retriever's name")

    def handle(self, *args, path: Path, project, retriever, **options):
        project = project_or_fail(project)
        found = Retriever.objects.filter(project=project, name=retriever).first()
        if found is None:
            names = ", ".join(project.retrievers.order_by("name").values_list("name", flat=True))
            raise unusable(
                f"No retriever {retriever!r} in {project.slug}; its retrievers: {names or 'none'}."
            )
        if not path.is_file():
            raise unusable(f"{path} does not exist.")
        try:
            stored = import_manifest(retriever=found, data=path.read_bytes(), file_name=path.name)
        except ManifestProblems as problems:
            for line, message in problems.problems:
                self.stderr.write(f"{path}:{line}: {message}")
            if problems.more:
                self.stderr.write(f"... and {problems.more} more problems")
            raise unusable(f"{path}: nothing was stored.")
        self.stdout.write(f"Stored {stored.rows:,} manifest rows for {found.name}.")
