from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import ChunkingStrategy, ChunkUnit
from corpus.services import documents
from goldeval.text.chunking import ChunkingError
from goldset.errors import ServiceError


class Command(BaseCommand):
    help = "Add a chunking scheme and chunk the newest version of every document with it."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument(
            "--strategy", required=True, choices=[c.value for c in ChunkingStrategy]
        )
        parser.add_argument("--unit", default=ChunkUnit.WORDS, choices=[c.value for c in ChunkUnit])
        parser.add_argument("--size", type=int, default=200)
        parser.add_argument("--overlap", type=int, default=50)

    def handle(self, *args, project, name, strategy, unit, size, overlap, **options):
        project = project_or_fail(project)
        if strategy == "document":
            size, overlap = max(size, 1), 0
        try:
            scheme = documents.add_chunking_scheme(
                project=project, name=name, strategy=strategy, unit=unit, size=size, overlap=overlap
            )
        except (ChunkingError, ServiceError) as exc:
            raise unusable(str(exc))
        chunks = documents.chunk_corpus(scheme=scheme)
        self.stdout.write(f"Chunking scheme {scheme.name}: {chunks} chunks.")
