"""Canaries planted from the browser: the canaries page starts a job that runs the service the
`plant_canaries` command runs (`questions.plant_canaries`), with the same options and checks.

Only the project's admins in the canaries' group (and whoever started it) see the job at all
(`corpus.job_display.visible_jobs`): canaries and their question set are never shown to leads.
Its figures carry each canary's share (`corpus.jobs.add_shares`), so the admin who started it
from outside the group reads it without them, as every page treats restricted documents.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from corpus import jobs
from corpus.models import Document, Job, JobState, Project
from corpus.services import canaries
from labelling.services.questions import plant_canaries

KIND = canaries.JOB_KIND
# The same planting asked again this soon by the same admin is the same click twice.
SAME_CLICK_SECONDS = 30


def start_planting(*, project: Project, user, group: str, count: int, set_name: str) -> Job:
    """Queue the planting of ``count`` canaries restricted to ``group``, their questions in
    ``set_name`` (checked by the form with the service's own rules, and again by the job)."""
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # one start at a time
        same = (
            Job.objects.filter(
                project=project,
                kind=KIND,
                created_by=user,
                created_at__gte=timezone.now() - timedelta(seconds=SAME_CLICK_SECONDS),
                params__group=group,
                params__count=count,
                params__set_name=set_name,
            )
            .order_by("-pk")
            .first()
        )
        if same is not None:
            return same  # a double click plants once
        return _start(project=project, user=user, group=group, count=count, set_name=set_name)


def _start(*, project: Project, user, group: str, count: int, set_name: str) -> Job:
    then = {
        "url": reverse("labelling:plant-canaries", args=[project.slug]),
        "text": "Open Canaries",
    }
    return jobs.start(
        project=project,
        task="labelling.tasks.plant_canaries",
        kind=KIND,
        user=user,
        params={
            "group": group,
            "access_groups": [group],  # who may see the job at all (`corpus.job_display`)
            "count": count,
            "set_name": set_name,
            "then": then,
        },
        total=count,
        description="Plant canaries",  # no count: the job page counts for those who may see
    )


def run_planting(job: Job) -> None:
    """The job of `start_planting`: plant, and close the job in the same transaction, so a
    worker that dies and runs it again never plants twice."""
    params = job.params
    with transaction.atomic():
        planted_canaries = plant_canaries(
            project=job.project,
            group=params["group"],
            count=int(params["count"]),
            set_name=params["set_name"],
        )
        planted = Document.objects.filter(
            project=job.project, doc_id__in=[c.doc_id for c in planted_canaries]
        ).values_list("pk", flat=True)
        job.done = job.total = len(planted_canaries)
        job.result = {"link": params["then"], "redirect": True}
        jobs.add_shares(job, {pk: {"planted": 1, "done": 1, "total": 1} for pk in planted})
        template = [
            {
                "items": [
                    (
                        "{planted:plural:canary/canaries} planted in {group}, each with its "
                        "question in the set {set_name}. Rebuild the built-in indexes and give "
                        "your own system their texts before replaying",
                        "planted",
                    )
                ],
                "join": "",
                "empty": "Done. The canaries are restricted to an access group you are not in, "
                "so nothing about them is shown to you",
            },
            ".",
        ]
        figures = {
            "planted": len(planted_canaries),
            "group": params["group"],
            "set_name": params["set_name"],
        }
        jobs.finish(job, JobState.SUCCEEDED, template, figures=figures)
