import json

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from judges.management.commands._judges import judge_or_fail, question_set_or_fail
from judges.services.calibration import calibrate


class Command(BaseCommand):
    help = (
        "A judge's agreement with the adjudicated human gold of a question set, beside the "
        "labellers' own: percent agreement, Cohen's kappa (unweighted, quadratic) with 95%% "
        "bootstrap intervals, confusion, bias, z against the humans, items still needed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--set", dest="set_name", required=True)
        parser.add_argument("--judge", required=True)
        parser.add_argument("--prompt-version", type=int, default=None)
        parser.add_argument("--json", action="store_true", help="print every figure as JSON")
        parser.add_argument("--bootstrap", type=int, default=1000)

    def handle(self, *args, project, set_name, judge, prompt_version, bootstrap, **options):
        project = project_or_fail(project)
        question_set = question_set_or_fail(project, set_name)
        found = judge_or_fail(project, judge)
        prompt = None
        if prompt_version is not None:
            prompt = found.prompts.filter(version=prompt_version).first()
            if prompt is None:
                raise unusable(f"{found.name} has no prompt version {prompt_version}.")
        if bootstrap < 0:
            raise unusable("--bootstrap is 0 (no intervals) or more.")
        report = calibrate(
            judge=found, question_set=question_set, viewer=None, prompt=prompt, n_boot=bootstrap
        ).as_dict()
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        gold = report["against_gold"]
        self.stdout.write(
            f"{found.name} (prompt v{report['prompt_version']}) on {question_set.name}: "
            f"{gold['items']} items with gold, {report['errors']} errors"
        )
        for key in ("percent", "kappa", "kappa_quadratic"):
            self.stdout.write(
                f"  {key:16} judge {_shown(gold, key)}   humans {_shown(report['humans'], key)}"
            )
        if report["z_against_humans"] is not None:
            self.stdout.write(f"  z against humans {report['z_against_humans']:+.2f}")
        if report["items_needed_for_0_10"]:
            self.stdout.write(
                f"  about {report['items_needed_for_0_10']} items are needed for a ±0.10 interval"
            )


def _shown(report: dict, key: str) -> str:
    value = report.get(key)
    if value is None:
        return "undefined"
    interval = report.get(f"{key}_ci")
    return f"{value:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")
