from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail
from evaluation.services.index_evaluations import start_build_evaluations


class Command(BaseCommand):
    help = (
        "Start the evaluation job of each built-in index build not evaluated yet on the newest "
        "gold set (of one project, or of all), as the Celery beat task does every minute. "
        "Safe to run again: a build already started is skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="one project's slug (default: every project)")

    def handle(self, *args, project=None, **options):
        chosen = project_or_fail(project) if project else None
        started = start_build_evaluations(project=chosen)
        for job in started:
            self.stdout.write(f"{job.project.slug}: {job.description} (job {job.pk})")
        self.stdout.write(f"{len(started)} evaluation(s) started.")
