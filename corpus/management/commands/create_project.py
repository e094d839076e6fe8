from django.core.management.base import BaseCommand

from corpus.management.commands._exit import unusable
from corpus.services import projects
from goldset.errors import ServiceError


class Command(BaseCommand):
    help = "Create a project."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default="")

    def handle(self, *args, slug, name, **options):
        from django.core.exceptions import ValidationError
        from django.core.validators import validate_slug

        try:
            validate_slug(slug)
            project = projects.create_project(slug=slug, name=name)
        except (ValidationError, ServiceError) as exc:
            raise unusable(str(getattr(exc, "message", exc)))
        self.stdout.write(f"Created project {project.slug}.")
