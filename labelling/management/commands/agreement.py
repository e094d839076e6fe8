import json

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from goldset.errors import ServiceError
from labelling.resolution import DEFAULT_MIN_SPAN_F1
from labelling.services import adjudication
from labelling.services.questions import get_question_set


class Command(BaseCommand):
    help = "Inter-labeller agreement of a question set's double-labelled items."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--set", dest="set_name", required=True)
        parser.add_argument("--json", action="store_true", help="print every statistic as JSON")
        parser.add_argument("--min-span-f1", type=float, default=DEFAULT_MIN_SPAN_F1)
        parser.add_argument(
            "--bootstrap", type=int, default=1000, help="resamples for the 95%% CIs"
        )

    def handle(self, *args, project, set_name, min_span_f1, bootstrap, **options):
        project = project_or_fail(project)
        try:
            question_set = get_question_set(project=project, name=set_name)
        except ServiceError as exc:
            raise unusable(str(exc))
        report = adjudication.agreement_report(
            question_set=question_set, min_span_f1=min_span_f1, n_boot=bootstrap
        )
        if options["json"]:
            self.stdout.write(_dumps(report))
            return
        self.stdout.write(
            f"{report['items']} double-labelled items, {report['labellers']} labellers"
        )
        for key in (
            "percent",
            "kappa",
            "kappa_linear",
            "kappa_quadratic",
            "alpha_ordinal",
            "alpha_nominal",
            "span_f1",
        ):
            value = report[key]
            shown = (
                f"{value:.3f}"
                if value is not None
                else f"undefined ({report['reasons'].get(key, '')})"
            )
            self.stdout.write(f"  {key:<16} {shown}")
        if report["guideline_needs_rewrite"]:
            self.stdout.write("  alpha is below 0.667: the guideline needs rewriting")


def _dumps(report: dict) -> str:
    return json.dumps(report, indent=2, allow_nan=False, default=str)
