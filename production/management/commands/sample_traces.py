from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from goldset.errors import ServiceError
from production.models import SamplingRule
from production.services import draws as production
from production.services import sampling


class Command(BaseCommand):
    help = (
        "Draw a production sample now: the rule's newest version (or --rule-version) over its time "
        "window ending now. The sampled questions become a question set production-YYYY-Www, "
        "the production retrieval its run, pooled with the built-in retrievers; leads are told. "
        "Without --rule, every active rule not yet drawn this week (what the weekly task does)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--rule", help="the rule's name")
        parser.add_argument("--rule-version", type=int, dest="rule_version")

    def handle(self, *args, project, rule, rule_version, **options):
        project = project_or_fail(project)
        if rule is None:
            outcome = production.draw_weekly_samples()
            for made in outcome.opened:
                if made.sample.project_id == project.pk:
                    self._report(made)
            for line in outcome.skipped:
                if line.startswith(f"{project.slug}/"):
                    self.stderr.write(line)
            return
        rules = sampling.latest_rules(project) if rule_version is None else SamplingRule.objects
        chosen = rules.filter(project=project, name=rule)
        if rule_version is not None:
            chosen = chosen.filter(version=rule_version)
        chosen = chosen.first()
        if chosen is None:
            version = f" v{rule_version}" if rule_version else ""
            raise unusable(f"No sampling rule {rule!r}{version} in {project.slug}.")
        try:
            made = production.draw_and_open(rule=chosen)
        except ServiceError as exc:
            raise unusable(str(exc))
        self._report(made)

    def _report(self, made):
        sample = made.sample
        self.stdout.write(
            f"Sample {sample.pk} of {sample.rule}: {sample.traces.count()} of "
            f"{sample.population:,} traces → question set {made.question_set.name}"
            + (f", pool {made.pool.name}" if made.pool else "")
            + "."
        )
        for note in made.notes:
            self.stdout.write(note)
