"""Write a question set's newest gold set as a bundle folder, optionally finalising a new one.

Exit codes (corpus/management/commands/_exit.py): 0 written; 2 nothing written: bad arguments,
no gold set yet, or finalising blocked by unresolved items (listed).
"""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.management.commands._progress import ProgressBar, progress_stream
from corpus.models import Membership, Role
from evaluation.services import gold_sets
from labelling.models import QuestionSet
from labelling.resolution import DEFAULT_MIN_SPAN_F1


class Command(BaseCommand):
    help = (
        "Write the newest gold set of a question set to a folder (gold.jsonl, corpus.jsonl, "
        "manifest.json, qrels, BEIR, judgements.csv); --finalise freezes a new version first."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--set", dest="set_name", required=True)
        parser.add_argument("--out", required=True, type=Path)
        parser.add_argument(
            "--finalise", action="store_true", help="finalise a new gold set version first"
        )
        parser.add_argument("--min-span-f1", type=float, default=DEFAULT_MIN_SPAN_F1)
        parser.add_argument(
            "--user", default="", help="record this admin of the project as the creator"
        )

    def handle(self, *args, project, set_name, out, finalise, min_span_f1, user, **options):
        project = project_or_fail(project)
        question_set = QuestionSet.objects.filter(project=project, name=set_name).first()
        if question_set is None:
            raise unusable(f"No question set {set_name!r} in {project.slug}.")
        if out.exists() and not out.is_dir():
            raise unusable(f"{out} exists and is not a folder.")
        if finalise:
            creator = self._admin(project, user) if user else None
            try:
                with ProgressBar(
                    label=f"Finalise {question_set.name}",
                    unit="stages",
                    stream=progress_stream(self),
                ) as bar:
                    gold_set = gold_sets.finalise_gold_set(
                        question_set=question_set,
                        user=creator,
                        min_span_f1=min_span_f1,
                        progress=lambda done, _: bar.update(done, len(gold_sets.FINALISE_STAGES)),
                    )
            except gold_sets.FinaliseBlocked as blocked:
                listed = "\n".join(f"  {item.describe()}" for item in blocked.unresolved)
                raise unusable(f"{blocked}\n{listed}")
            except gold_sets.GoldSetError as error:
                raise unusable(str(error))
            self.stdout.write(f"Finalised {gold_set}.")
        else:
            gold_set = gold_sets.newest_gold_set(question_set)
            if gold_set is None:
                raise unusable(
                    f"{question_set.name} has no gold set yet: run again with --finalise."
                )
        written = gold_sets.write_bundle(gold_set=gold_set, folder=out)
        manifest = gold_set.manifest
        self.stdout.write(
            f"{gold_set}: {manifest['questions']} questions ({manifest['answerable']} answerable, "
            f"{manifest['unanswerable']} unanswerable), {len(written)} files written to {out}; "
            f"checksum {gold_set.checksum}."
        )

    def _admin(self, project, username):
        found = get_user_model().objects.filter(username=username).first()
        membership = (
            Membership.objects.filter(project=project, user=found).first() if found else None
        )
        if membership is None or not membership.allows(Role.ADMIN):
            raise unusable(f"{username!r} is not an admin of {project.slug}.")
        return found
