from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import Retriever
from corpus.services.test_users import parse_headers
from goldset.errors import ServiceError
from health.services.manifest_sources import remove_manifest_source, set_manifest_source


class Command(BaseCommand):
    help = (
        "Set where a retriever's index manifest is fetched from (import_manifest --fetch, and "
        "Index health's Fetch button): its own URL and headers, never the search endpoint's. "
        "Credentials as env:NAME, read where the fetch runs. Exit 2: nothing stored."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--retriever", required=True, help="the retriever's name")
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--url", help="the manifest's URL (GET, no redirect followed)")
        what.add_argument("--remove", action="store_true", help="remove the source")
        parser.add_argument(
            "--header",
            action="append",
            default=[],
            metavar="'NAME: VALUE'",
            help="repeatable, e.g. 'Authorization: env:MANIFEST_TOKEN'",
        )
        parser.add_argument("--timeout", type=float, default=30.0, help="seconds (0.1 to 120)")

    def handle(self, *args, project, retriever, url, remove, header, timeout, **options):
        project = project_or_fail(project)
        found = Retriever.objects.filter(project=project, name=retriever).first()
        if found is None:
            raise unusable(f"No retriever {retriever!r} in {project.slug}.")
        if remove:
            remove_manifest_source(retriever=found)
            self.stdout.write(f"{found.name} has no manifest source now.")
            return
        try:
            source = set_manifest_source(
                retriever=found,
                url=url,
                headers=parse_headers("\n".join(header)),
                timeout=timeout,
                user=None,
            )
        except ServiceError as error:
            raise unusable(str(error)) from None
        self.stdout.write(f"The manifest source of {found.name} is {source.url}.")
