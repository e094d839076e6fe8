from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.httpendpoint import PRESETS
from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import ChunkingScheme, RetrieverKind
from corpus.services import retrieval
from corpus.services.test_users import parse_headers
from goldset.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Add a retriever to a project: bm25 or embedding over a chunking scheme, run (the "
        "team's own system, whose results are uploaded with import_run), or http (the team's "
        "live search API, called on every pool, evaluation run and permission replay)."
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
            "--title",
            action="store_true",
            help="bm25: index each passage with its document's title (title + text, as BEIR)",
        )
        parser.add_argument(
            "--idf",
            choices=("lucene", "okapi"),
            default="lucene",
            help="bm25 IDF: lucene (Pyserini/BEIR, the default) or okapi (rank-bm25)",
        )
        parser.add_argument(
            "--vectors",
            choices=("float32", "float16"),
            default="float32",
            help="embedding: stored vector precision (float16 halves the artefact)",
        )
        parser.add_argument(
            "--backend",
            choices=("torch", "onnx-int8"),
            default=None,
            help="embedding: the torch model or its ONNX build (OpenVINO bf16 or int8; default: "
            "GOLDSET_EMBEDDING_BACKEND)",
        )
        parser.add_argument(
            "--model",
            default="",
            help="embedding: a sentence-transformers model folder (default: "
            "GOLDSET_EMBEDDING_MODEL or the packaged all-MiniLM-L6-v2)",
        )
        http = parser.add_argument_group(
            "http", "the team's search API (placeholders: {{question}} {{k}} {{user}} {{groups}})"
        )
        http.add_argument(
            "--preset",
            choices=sorted(PRESETS),
            default="",
            help="start from a preset: elasticsearch (Elasticsearch/OpenSearch _search) or "
            "generic (a JSON API); options given below replace its parts",
        )
        http.add_argument("--url", default="", help="URL template")
        http.add_argument("--method", choices=("GET", "POST"), default=None)
        http.add_argument(
            "--header",
            action="append",
            default=[],
            metavar="'NAME: VALUE'",
            help="repeatable; a secret as env:NAME (e.g. 'Authorization: env:OUR_SEARCH_TOKEN')",
        )
        http.add_argument(
            "--body", default="", help="JSON body template, or @FILE to read it from a file"
        )
        for field, example in (
            ("results", "hits.hits"),
            ("doc-id", "_id"),
            ("score", "_score"),
            ("start", "offsets.start"),
            ("end", "offsets.end"),
            ("text", "highlight.text"),
        ):
            http.add_argument(
                f"--{field}-path", default="", help=f"dotted path in the answer (e.g. {example})"
            )
        http.add_argument("--timeout", type=float, default=None, help="seconds per attempt (10)")
        http.add_argument("--retries", type=int, default=None, help="retries per question (2)")
        http.add_argument("--backoff", type=float, default=None, help="first backoff, s (0.5)")
        http.add_argument("--concurrency", type=int, default=None, help="requests at once (4)")

    def handle(
        self,
        *args,
        project,
        name,
        kind,
        chunking,
        stem,
        stopwords,
        k1,
        b,
        idf,
        title,
        vectors,
        backend,
        model,
        **opts,
    ):
        project = project_or_fail(project)
        endpoint = self._endpoint(opts) if kind == RetrieverKind.HTTP else None
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
                idf=idf,
                title=title,
                vectors=vectors,
                backend=backend,
                model_path=model,
                endpoint=endpoint,
            )
        except ServiceError as exc:
            raise unusable(str(exc))
        if kind == RetrieverKind.RUN:
            next_step = (
                f"import its results with `manage.py import_run --project {project.slug} "
                f"--retriever {retriever.name} --set SET FILE`"
            )
        elif kind == RetrieverKind.HTTP:
            next_step = (
                f"try it with `manage.py retrieve --project {project.slug} --retriever "
                f"{retriever.name} --set SET --k 10 --out run.jsonl`"
            )
        else:
            next_step = (
                f"build it with `manage.py build_index --project {project.slug} "
                f"--retriever {retriever.name}`"
            )
        self.stdout.write(f"Retriever {retriever.name} ({retriever.kind}) added; {next_step}.")

    def _endpoint(self, opts) -> dict:
        body = opts["body"]
        if body.startswith("@"):
            try:
                body = Path(body[1:]).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise unusable(f"--body {opts['body']}: cannot read it ({error}).")
        try:
            headers = parse_headers("\n".join(opts["header"]))
        except ServiceError as exc:
            raise unusable(str(exc))
        fields = {
            "url": opts["url"],
            "method": opts["method"],
            "body": body,
            "headers": headers,
            "mapping": {
                name: opts[f"{name}_path"]
                for name in ("results", "doc_id", "score", "start", "end", "text")
            },
            **{
                name: opts[name]
                for name in ("timeout", "retries", "backoff", "concurrency")
                if opts[name] is not None
            },
        }
        if not opts["preset"]:
            fields["method"] = fields["method"] or "POST"
        return {"preset": opts["preset"], **fields}
