from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.management.commands._jobs import wait_for_job
from corpus.models import JobState
from goldset.errors import ServiceError
from judges.management.commands._judges import judge_or_fail, question_set_or_fail
from judges.services.canaries import PER_CLASS, start_canaries


class Command(BaseCommand):
    help = (
        "Plant canaries a judge must not be fooled by (keyword stuffing, an instruction to the "
        "grader, a relevant paraphrase, the question restated) for a question set, and have the "
        "judge grade them. Canaries never reach labellers, gold sets or metrics."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--set", dest="set_name", required=True)
        parser.add_argument("--judge", required=True)
        parser.add_argument("--per-class", type=int, default=PER_CLASS)
        parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait")

    def handle(self, *args, project, set_name, judge, per_class, timeout, **options):
        project = project_or_fail(project)
        question_set = question_set_or_fail(project, set_name)
        found = judge_or_fail(project, judge)
        try:
            job = start_canaries(judge=found, question_set=question_set, per_class=per_class)
        except ServiceError as error:
            raise unusable(str(error)) from None
        try:
            job = wait_for_job(job, out=self.stdout, timeout=timeout)
        except TimeoutError as error:
            raise unusable(str(error)) from None
        if job.state != JobState.SUCCEEDED:
            raise unusable(f"Judging the canaries failed: {job.message}")
        self.stdout.write(job.message)
