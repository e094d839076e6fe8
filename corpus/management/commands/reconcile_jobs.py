from datetime import timedelta

from django.core.management.base import BaseCommand

from corpus import jobs


class Command(BaseCommand):
    help = (
        "Re-queue unfinished jobs whose message was lost or whose worker died "
        "(beat runs it every minute)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--stale-after",
            type=float,
            default=jobs.STALE_AFTER.total_seconds(),
            help="seconds without a sign of life before a job counts as lost",
        )

    def handle(self, *args, stale_after, **options):
        requeued = jobs.reconcile(stale_after=timedelta(seconds=stale_after))
        self.stdout.write(
            f"Re-queued {len(requeued)} job(s){': ' if requeued else '.'}"
            + ", ".join(map(str, requeued))
        )
