from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.management.commands._jobs import wait_for_job
from corpus.models import JobState, Retriever
from goldeval.pooling import Strategy
from goldset.errors import ServiceError
from labelling.models import QuestionSet
from labelling.services import pools


class Command(BaseCommand):
    help = (
        "Pool candidates for every question of a set: the depth-k union of several retrievers, "
        "overlapping passages merged, provenance kept. Runs as the web app's pooling tasks do."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--set", dest="set_name", required=True)
        parser.add_argument("--retrievers", required=True, help="comma-separated names")
        parser.add_argument("--depth", type=int, default=10)
        parser.add_argument(
            "--order",
            choices=[s.value for s in Strategy],
            default=Strategy.DEPTH.value,
            help="judging order: depth (shuffled), mtf or bandit (adaptive)",
        )
        parser.add_argument(
            "--stop-misses", type=int, help="a question may stop after this many 0s in a row"
        )
        parser.add_argument(
            "--stop-budget", type=int, help="a question may stop after this many judgements"
        )
        parser.add_argument("--name", default="", help="pool name (default: SET-pool-N)")
        parser.add_argument("--timeout", type=float, default=6 * 3600, help="seconds to wait")

    def handle(
        self,
        *args,
        project,
        set_name,
        retrievers,
        depth,
        name,
        timeout,
        order,
        stop_misses,
        stop_budget,
        **options,
    ):
        project = project_or_fail(project)
        question_set = QuestionSet.objects.filter(project=project, name=set_name).first()
        if question_set is None:
            raise unusable(f"No question set {set_name!r} in {project.slug}.")
        names = [n.strip() for n in retrievers.split(",") if n.strip()]
        found = {r.name: r for r in Retriever.objects.filter(project=project, name__in=names)}
        missing = [n for n in names if n not in found]
        if missing:
            raise unusable(f"No retriever {', '.join(map(repr, missing))} in {project.slug}.")
        if not name:
            number = question_set.pools.count() + 1
            while question_set.pools.filter(name=f"{set_name}-pool-{number}").exists():
                number += 1
            name = f"{set_name}-pool-{number}"
        try:
            pool = pools.start_pool(
                question_set=question_set,
                name=name,
                retrievers=[found[n] for n in dict.fromkeys(names)],
                depth=depth,
                strategy=order,
                stop_misses=stop_misses,
                stop_budget=stop_budget,
            )
        except ServiceError as exc:
            raise unusable(str(exc))
        try:
            job = wait_for_job(pool.job, out=self.stdout, timeout=timeout)
        except TimeoutError as exc:
            raise unusable(str(exc))
        if job.state != JobState.SUCCEEDED:
            raise unusable(f"Pooling failed: {job.message}")
        self.stdout.write(job.message)
