import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.models import PermissionProfile, Retriever, RetrieverKind
from corpus.services import http_retrieval, retrieval
from goldeval.formats.runfiles import jsonl_run_line
from goldset.batching import in_batches
from goldset.errors import ServiceError
from labelling.models import QuestionSet

BATCH = 64


class Command(BaseCommand):
    help = (
        "Write the run of a retriever (built-in or HTTP) for one or more question sets, in the "
        'JSONL run format ({"question_id", "results": [{"doc_id", "start", "end", "score"}]}) '
        "that `python -m goldeval` scores. With --as-test-user, the run a permission replay "
        "checks: made as that test user, canaries included."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--set", dest="set_name", required=True, help="comma-separated")
        parser.add_argument("--retriever", required=True)
        parser.add_argument("--k", type=int, default=100)
        parser.add_argument("--out", required=True, type=Path)
        parser.add_argument(
            "--as-test-user",
            default="",
            help="search as this test user: a built-in retriever leaves out what their groups "
            "hide before the top k; an HTTP one sends their headers and {{user}}",
        )

    def handle(self, *args, project, set_name, retriever, k, out, as_test_user, **options):
        project = project_or_fail(project)
        found = Retriever.objects.filter(project=project, name=retriever).first()
        if found is None:
            raise unusable(f"No retriever {retriever!r} in {project.slug}.")
        if found.kind == RetrieverKind.RUN:
            raise unusable(f"{found.name} is an uploaded run; it has nothing to search with.")
        questions = []
        for name in [n.strip() for n in set_name.split(",") if n.strip()]:
            question_set = QuestionSet.objects.filter(project=project, name=name).first()
            if question_set is None:
                raise unusable(f"No question set {name!r} in {project.slug}.")
            questions += question_set.questions.order_by("pk").values_list("external_id", "text")
        ids = [external_id for external_id, _ in questions]
        if len(set(ids)) != len(ids):
            raise unusable("The question sets share question ids; write one run per set.")
        if k < 1:
            raise unusable("--k must be at least 1.")
        profile = None
        if as_test_user:
            profile = PermissionProfile.objects.filter(project=project, name=as_test_user).first()
            if profile is None:
                names = ", ".join(project.test_users.values_list("name", flat=True)) or "none"
                raise unusable(
                    f"No test user {as_test_user!r} in {project.slug} (it has: {names})."
                )
        try:
            if found.kind == RetrieverKind.HTTP:
                lines = self._http(found, questions, k=k, profile=profile)
            else:
                lines = self._built_in(found, questions, k=k, profile=profile)
        except ServiceError as exc:
            raise unusable(str(exc))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(lines), encoding="utf-8")
        who = f" as {profile.name}" if profile else ""
        self.stdout.write(f"{len(lines)} questions, top {k} each{who}, written to {out}.")

    def _built_in(self, retriever, questions, *, k, profile):
        retrieval.load_index(retriever)
        groups = None
        if profile is not None and not profile.unrestricted:
            groups = list(profile.access_groups.values_list("pk", flat=True))
        lines = []
        for batch in in_batches(questions, size=BATCH):
            found = retrieval.retrieve(
                retriever=retriever,
                questions=[text for _, text in batch],
                k=k,
                groups=groups,
                with_canaries=profile is not None,
            )
            lines += [
                jsonl_run_line(question_id=external_id, results=hits)
                for (external_id, _), hits in zip(batch, found, strict=True)
            ]
        return lines

    def _http(self, retriever, questions, *, k, profile):
        run = http_retrieval.search_http(
            retriever=retriever, questions=list(questions), k=k, profile=profile
        )
        for problem in run.errors + run.warnings:
            # The shell's user runs with the endpoint's credentials: they see what it answered.
            answered = f" (the server answered: {problem['remote']})" if "remote" in problem else ""
            print(f"{problem['source']}: {problem['error']}{answered}", file=sys.stderr)
        run.raise_for_errors(retriever)
        # As a test user: everything the system returned, for the replay to check; otherwise
        # only corpus content, as an evaluation run keeps.
        rankings = (
            run.rankings
            if profile is not None
            else http_retrieval.content_rankings(run, project=retriever.project)
        )
        self.stdout.write(f"{retriever.name}: {run.summary()}.")
        return [
            jsonl_run_line(question_id=external_id, results=ranking)
            for (external_id, _), ranking in zip(questions, rankings, strict=True)
        ]
