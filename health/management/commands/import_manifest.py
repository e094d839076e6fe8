from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import Retriever
from goldset.errors import ServiceError
from health.services.manifests import ManifestProblems, fetch_manifest_bytes, import_manifest


class Command(BaseCommand):
    help = (
        "Import the index manifest of a retriever (CSV or JSONL: doc_id, version?, "
        "content_sha256?, start?, end?, indexed_at, embedding_model, embedding_revision, "
        "dimension), from a file or, for an HTTP retriever, from a URL on its host. The whole "
        "file or nothing. Exit 0: stored; 2: nothing stored (every problem listed with its line)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, nargs="?", help="the manifest file")
        parser.add_argument(
            "--url", default="", help="or fetch it from this URL on an HTTP retriever's host"
        )
        parser.add_argument("--project", required=True)
        parser.add_argument("--retriever", required=True, help="the retriever's name")

    def handle(self, *args, path: Path | None, project, retriever, url, **options):
        project = project_or_fail(project)
        found = Retriever.objects.filter(project=project, name=retriever).first()
        if found is None:
            names = ", ".join(project.retrievers.order_by("name").values_list("name", flat=True))
            raise unusable(
                f"No retriever {retriever!r} in {project.slug}; its retrievers: {names or 'none'}."
            )
        if bool(path) == bool(url):
            raise unusable("Give the manifest file or --url (one of the two).")
        if url:
            try:
                data = fetch_manifest_bytes(retriever=found, url=url)
            except ServiceError as error:
                raise unusable(str(error)) from None
            where = url
        elif not path.is_file():
            raise unusable(f"{path} does not exist.")
        else:
            data, where = path.read_bytes(), str(path)
        name = where.rsplit("/", 1)[-1] or "manifest"
        try:
            stored = import_manifest(retriever=found, data=data, file_name=name)
        except ManifestProblems as problems:
            for line, message in problems.problems:
                self.stderr.write(f"{where}:{line}: {message}")
            if problems.more:
                self.stderr.write(f"... and {problems.more} more problems")
            raise unusable(f"{where}: nothing was stored.")
        self.stdout.write(f"Stored {stored.rows:,} manifest rows for {found.name}.")
