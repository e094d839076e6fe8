import json

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import Retriever
from goldset.errors import ServiceError
from production.models import SamplingStrategy
from production.services import sampling


def _pairs(values: list[str], what: str) -> dict:
    pairs = {}
    for value in values:
        key, equals, raw = value.partition("=")
        if not equals or not key:
            raise unusable(f"Write each {what} as name=value, not {value!r}.")
        try:
            pairs[key] = json.loads(raw)
        except ValueError:
            pairs[key] = raw
    return pairs


class Command(BaseCommand):
    help = (
        "Save a sampling rule (its next version when the name exists and something changed). "
        "Filters: window_days, feedback (down/up/none/any), refused (true/false), no_citation, "
        "top_score_below, user_group, system_version. Example: --filter feedback=down "
        "--filter window_days=7 --strategy stratified --stratify-by feedback --quota down=20"
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--strategy", choices=SamplingStrategy.values, default="uniform")
        parser.add_argument("--size", type=int, default=50)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--filter", action="append", default=[], dest="filters")
        parser.add_argument("--stratify-by", default="")
        parser.add_argument("--quota", action="append", default=[], dest="quotas")
        parser.add_argument("--retriever", action="append", default=[], dest="retrievers")
        parser.add_argument("--inactive", action="store_true", help="not drawn weekly")

    def handle(
        self,
        *args,
        project,
        name,
        strategy,
        size,
        seed,
        filters,
        stratify_by,
        quotas,
        retrievers,
        inactive,
        **options,
    ):
        project = project_or_fail(project)
        chosen = list(Retriever.objects.filter(project=project, name__in=retrievers))
        missing = set(retrievers) - {r.name for r in chosen}
        if missing:
            raise unusable(f"No retriever named {', '.join(sorted(missing))} in {project.slug}.")
        try:
            spec = sampling.check_rule(
                filters=_pairs(filters, "filter"),
                strategy=strategy,
                stratify_by=stratify_by,
                quotas=_pairs(quotas, "quota"),
                size=size,
                seed=seed,
            )
            rule = sampling.save_sampling_rule(
                project=project,
                user=None,
                name=name,
                spec=spec,
                retrievers=chosen,
                active=not inactive,
            )
        except ServiceError as exc:
            raise unusable(str(exc))
        self.stdout.write(f"Sampling rule {rule} saved.")
