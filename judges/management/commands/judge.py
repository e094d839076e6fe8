from django.core.management.base import BaseCommand

from corpus.management.commands._exit import PARTIAL, project_or_fail, unusable
from corpus.management.commands._jobs import wait_for_job
from corpus.models import JobState
from goldset.errors import ServiceError
from judges.management.commands._judges import judge_or_fail, question_set_or_fail
from judges.models import JudgingPass
from judges.services.judging import start_judging


class Command(BaseCommand):
    help = (
        "Grade a question set's pooled candidates with an LLM judge, as a job: resumable (run "
        "it again after a stop; what was judged is kept) and idempotent. AI grades are stored "
        "apart, shown to leads only, never gold."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--set", dest="set_name", required=True)
        parser.add_argument("--judge", required=True)
        parser.add_argument("--sample", type=int, default=None, help="judge N candidates only")
        parser.add_argument(
            "--pass",
            dest="judging_pass",
            choices=JudgingPass.values,
            default=JudgingPass.FIRST,
            help="again: judge the same items a second time (self-consistency); reversed: in "
            "reverse order (order sensitivity)",
        )
        parser.add_argument("--timeout", type=float, default=6 * 3600, help="seconds to wait")

    def handle(self, *args, project, set_name, judge, sample, judging_pass, timeout, **options):
        project = project_or_fail(project)
        question_set = question_set_or_fail(project, set_name)
        found = judge_or_fail(project, judge)
        try:
            job = start_judging(
                judge=found, question_set=question_set, sample=sample, judging_pass=judging_pass
            )
        except ServiceError as error:
            raise unusable(str(error)) from None
        try:
            job = wait_for_job(job, out=self.stdout, timeout=timeout)
        except TimeoutError as error:
            raise unusable(str(error)) from None
        if job.state != JobState.SUCCEEDED:
            raise unusable(f"Judging failed: {job.message}")
        self.stdout.write(job.message)
        if (job.result or {}).get("errors"):
            raise SystemExit(PARTIAL)
