from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail
from corpus.models import Project
from health.services.checks import record_health_checks


class Command(BaseCommand):
    help = (
        "Record the index health check of every retriever (of one project, or of all), as the "
        "daily Celery beat task does: history, banner, and an email to the project's admins "
        "when a retriever first crosses a threshold. Exit 0 always; the crossings are printed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="one project's slug (default: every project)")

    def handle(self, *args, project=None, **options):
        chosen = [project_or_fail(project)] if project else Project.objects.order_by("slug")
        for each in chosen:
            for check in record_health_checks(project=each):
                crossed = "; ".join(item["message"] for item in check.crossed) or "all well"
                self.stdout.write(f"{each.slug}/{check.retriever.name}: {crossed}")
