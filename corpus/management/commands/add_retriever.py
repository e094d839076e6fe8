from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import ChunkingScheme, RetrieverKind
from corpus.services import retrieval
from goldset.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Add a retriever to a project: bm25 or embedding over a chunking scheme, or run (the "
        "team's own system, whose results are uploaded with import_run)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--kind", required=True, choices=RetrieverKind.values)
        parser.add_argument(
            "--chunking",
            default="",
            help="chunking scheme name (required for bm25 and embedding; for a run, what "
            "results without offsets map to)",
        )
        parser.add_argument("--stem", action="store_true", help="bm25: Snowball-stem words")
        parser.add_argument("--stopwords", action="store_true", help="bm25: drop English stopwords")
        parser.add_argument("--k1", type=float, default=0.9, help="bm25 k1 (default 0.9)")
        parser.add_argument("--b", type=float, default=0.4, help="bm25 b (default 0.4)")
        parser.add_argument(
            "--model",
            default="",
            help="embedding: a sentence-transformers model folder (default: "
            "GOLDSET_EMBEDDING_MODEL or the packaged all-MiniLM-L6-v2)",
        )

    def handle(self, *args, project, name, kind, chunking, stem, stopwords, k1, b, model, **opts):
        project = project_or_fail(project)
        scheme = None
        if chunking:
            scheme = ChunkingScheme.objects.filter(project=project, name=chunking).first()
            if scheme is None:
                names = ", ".join(project.chunking_schemes.values_list("name", flat=True))
                raise unusable(
                    f"No chunking scheme {chunking!r} in {project.slug} "
                    f"(it has: {names or 'none'})."
                )
        try:
            retriever = retrieval.add_retriever(
                project=project,
                name=name,
                kind=kind,
                scheme=scheme,
                stem=stem,
                stopwords=stopwords,
                k1=k1,
                b=b,
                model_path=model,
            )
        except ServiceError as exc:
            raise unusable(str(exc))
        next_step = (
            f"import its results with `manage.py import_run --project {project.slug} "
            f"--retriever {retriever.name} --set SET FILE`"
            if kind == RetrieverKind.RUN
            else f"build it with `manage.py build_index --project {project.slug} "
            f"--retriever {retriever.name}`"
        )
        self.stdout.write(f"Retriever {retriever.name} ({retriever.kind}) added; {next_step}.")
