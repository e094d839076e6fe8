"""Replay a gold set's questions (and the canary questions) as each test user, through a
retriever, and check every result against the documents' access groups: the app's permission
replay from a CI script, against the team's live system.

Exit codes: 0 no leak (or leaks without --fail-on-leak); 1 a leak with --fail-on-leak;
2 nothing replayed (bad arguments, or the replay failed: each problem on stderr).
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from corpus.management.commands._exit import project_or_fail, unusable
from corpus.management.commands._jobs import wait_for_job
from corpus.models import JobState, PermissionProfile, Retriever
from evaluation.models import GoldSet
from evaluation.services import permission_replays
from evaluation.services.gold_sets import GoldSetError

LEAK = 1


class Command(BaseCommand):
    help = (
        "Run every question of a gold set as each test user through a retriever (an HTTP one "
        "calls the team's live system as them) and report leaks, over-restriction, visible "
        "recall and side channels; --fail-on-leak exits 1 on any leak."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--set", dest="set_name", required=True, help="its newest gold set")
        parser.add_argument("--retriever", required=True)
        parser.add_argument("--users", default="", help="comma-separated (default: all)")
        parser.add_argument("--k", type=int, default=10)
        parser.add_argument("--no-canaries", action="store_true")
        parser.add_argument("--fail-on-leak", action="store_true")
        parser.add_argument(
            "--json", dest="json_out", type=Path, default=None, help="also write the report"
        )
        parser.add_argument("--timeout", type=float, default=6 * 3600, help="seconds to wait")

    def handle(
        self,
        *args,
        project,
        set_name,
        retriever,
        users,
        k,
        no_canaries,
        fail_on_leak,
        json_out,
        timeout,
        **options,
    ):
        project = project_or_fail(project)
        gold_set = (
            GoldSet.objects.in_project(project)
            .filter(question_set__name=set_name)
            .order_by("-number")
            .first()
        )
        if gold_set is None:
            raise unusable(f"{set_name!r} has no gold set in {project.slug}: finalise one first.")
        found = Retriever.objects.filter(project=project, name=retriever).first()
        if found is None:
            raise unusable(f"No retriever {retriever!r} in {project.slug}.")
        profiles = PermissionProfile.objects.filter(project=project).order_by("name")
        names = [n.strip() for n in users.split(",") if n.strip()]
        if names:
            chosen = {p.name: p for p in profiles.filter(name__in=names)}
            missing = [n for n in names if n not in chosen]
            if missing:
                raise unusable(f"No test user {', '.join(map(repr, missing))} in {project.slug}.")
            profiles = [chosen[n] for n in names]
        try:
            replay = permission_replays.start_permission_replay(
                gold_set=gold_set,
                test_users=list(profiles),
                k=k,
                retriever=found,
                with_canaries=not no_canaries,
            )
            job = wait_for_job(replay.job, out=self.stdout, timeout=timeout)
        except (GoldSetError, TimeoutError) as exc:
            raise unusable(str(exc))
        if job.state != JobState.SUCCEEDED:
            for problem in job.errors:
                self.stderr.write(f"{problem.get('source', '')}: {problem.get('error', '')}")
            raise unusable(f"The replay failed: {job.message}")
        replay.refresh_from_db()
        report = replay.report
        self._print(report)
        if json_out is not None:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(_dumps(report), encoding="utf-8")
        self.stdout.write(job.message)
        if fail_on_leak and report["leaks"]:
            raise CommandError(job.message, returncode=LEAK)

    def _print(self, report: dict) -> None:
        for user in report["users"]:
            recall = ", ".join(
                f"{name.removeprefix('visible_')} {value:.3f}"
                for name, value in user["visible_recall"].items()
                if value is not None
            )
            self.stdout.write(
                f"  {user['name']}: {user['leaked_results']} leaked of {user['results']} "
                f"results ({user['questions']} questions), leak rate {user['leak_rate']:.4f}"
                + (f"; visible {recall}" if recall else "")
                + (
                    f"; over-restricted {user['over_restricted']}"
                    if user["over_restricted"] is not None
                    else ""
                )
            )
        for finding in report["findings"]:
            self.stderr.write(
                f"leak: {finding['user']} got {finding['doc_id']} (groups "
                f"{', '.join(finding['groups'])}) at rank {finding['rank']} for question "
                f"{finding['question_id']}" + (" — a canary" if finding["canary"] else "")
            )


def _dumps(report: dict) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
