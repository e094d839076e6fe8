from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from goldset.errors import ServiceError
from judges.models import JudgeTemplate
from judges.prompt import MAX_PROMPT
from judges.services.configuration import add_judge


class Command(BaseCommand):
    help = (
        "Add an LLM judge to a project: an OpenAI-compatible chat-completions endpoint (vLLM, "
        "llama.cpp server, Ollama, OpenAI, Azure) or a generic JSON one. Its host must be in "
        "GOLDSET_HTTP_ALLOWED_HOSTS; its API key is given as env:NAME, never the key."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--url", required=True, help="e.g. http://llm:8000/v1/chat/completions")
        parser.add_argument("--model", default="", help="the model's name at the endpoint")
        parser.add_argument(
            "--api-key",
            default="",
            help="env:NAME, the variable holding the key where judging runs",
        )
        parser.add_argument(
            "--prompt", default="", help="a prompt file ({{question}} {{passage}} {{scale}})"
        )
        parser.add_argument(
            "--template", choices=JudgeTemplate.values, default=JudgeTemplate.OPENAI
        )
        parser.add_argument("--temperature", type=float, default=0.0)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--concurrency", type=int, default=4)
        parser.add_argument("--timeout", type=float, default=30.0, help="seconds per call")
        parser.add_argument(
            "--group",
            action="append",
            default=[],
            help="an access group whose restricted documents may be sent (repeatable; "
            "without one, only unrestricted documents are)",
        )

    def handle(self, *args, **options):
        project = project_or_fail(options["project"])
        prompt = ""
        if options["prompt"]:
            path = Path(options["prompt"])
            try:
                if path.stat().st_size > 4 * MAX_PROMPT:
                    raise unusable(f"{path} is larger than a prompt can be.")
                prompt = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise unusable(f"The prompt file cannot be read: {error}") from None
        try:
            judge = add_judge(
                project=project,
                name=options["name"],
                url=options["url"],
                template=options["template"],
                model=options["model"],
                api_key=options["api_key"],
                prompt=prompt,
                temperature=options["temperature"],
                seed=options["seed"],
                concurrency=options["concurrency"],
                timeout=options["timeout"],
                groups=options["group"],
            )
        except ServiceError as error:
            raise unusable(str(error)) from None
        self.stdout.write(f"Added judge {judge.name} (prompt v1) to {project.slug}.")
