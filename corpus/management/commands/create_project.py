from django.core.management.base import BaseCommand

from corpus import services
from corpus.management.commands._exit import unusable


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
            project = services.create_project(slug=slug, name=name)
        except (ValidationError, services.ServiceError) as exc:
            raise unusable(str(getattr(exc, "message", exc)))
        self.stdout.write(f"Created project {project.slug}.")
