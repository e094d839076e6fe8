from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import Retriever
from goldset.errors import ServiceError
from health.models import ManifestSource
from health.services.manifest_sources import ManifestFetchFailed, fetch_manifest, file_name_of
from health.services.manifests import ManifestProblems, import_manifest


class Command(BaseCommand):
    help = (
        "Import the index manifest of a retriever (CSV or JSONL: doc_id, version?, "
        "content_sha256?, start?, end?, indexed_at, embedding_model, embedding_revision, "
        "dimension), from a file or, with --fetch, from the retriever's manifest source (set by "
        "an admin: set_manifest_source). The whole file or nothing. Exit 0: stored; 2: nothing "
        "stored (every problem listed with its line)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, nargs="?", help="the manifest file")
        parser.add_argument(
            "--fetch",
            action="store_true",
            help="or fetch it from the retriever's manifest source (set_manifest_source)",
        )
        parser.add_argument("--project", required=True)
        parser.add_argument("--retriever", required=True, help="the retriever's name")

    def handle(self, *args, path: Path | None, project, retriever, fetch, **options):
        project = project_or_fail(project)
        found = Retriever.objects.filter(project=project, name=retriever).first()
        if found is None:
            names = ", ".join(project.retrievers.order_by("name").values_list("name", flat=True))
            raise unusable(
                f"No retriever {retriever!r} in {project.slug}; its retrievers: {names or 'none'}."
            )
        if bool(path) == fetch:
            raise unusable("Give the manifest file or --fetch (one of the two).")
        if fetch:
            source = ManifestSource.objects.filter(retriever=found).first()
            if source is None:
                raise unusable(
                    f"{found.name} has no manifest source: set one with `manage.py "
                    f"set_manifest_source --project {project.slug} --retriever {found.name} "
                    "--url URL`."
                )
            try:
                data = fetch_manifest(source=source)
            except ManifestFetchFailed as failed:
                # The shell's user runs with the source's credentials: they see its answer.
                said = f" The server answered: {failed.remote}" if failed.remote else ""
                raise unusable(f"{failed}{said}") from None
            except ServiceError as error:
                raise unusable(str(error)) from None
            where = file_name_of(source)
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
