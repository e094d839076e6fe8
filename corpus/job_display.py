"""What a job shows one viewer: its message, progress and problems over what they may see.

A job's figures (documents imported, passages indexed, candidates pooled, results placed)
are counted by a worker that sees everything. Job pages and job lists follow the rule of every
other page (`corpus.visibility`): a lead or an admin outside a document's access groups reads
each figure as if that document did not exist. The work records what each restricted document
added (`corpus.jobs.add_shares`, the ``shares`` of ``Job.result``); here the shares of the
documents hidden from the viewer are taken out of ``done``, ``total`` and the figures of the
message template (`corpus.jobs.finish`), and problems naming such a document are left out.

An upload restricted to access groups the viewer is in none of (a job of new restricted
documents, file names included) is not theirs to see at all: `visible_jobs` leaves it out and
its page is a 404, unless they started it themselves. So is a planting of canaries, for anyone
but the project's admins in the canaries' group.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import QuerySet

from corpus import jobs, visibility
from corpus.models import AccessGroup, Document, Job, JobState, Membership, Role
from corpus.services.canaries import JOB_KIND as CANARY_JOB_KIND

UPLOAD_KIND = "import_uploads"
# Said instead of a message whose figures rest on documents hidden from the viewer (a gold
# set's), as the gold set's own pages say it: without a count.
WITHHELD = (
    "Its figures rest on documents that an access group hides from you, so they are not shown "
    "to you."
)


@dataclass
class JobView:
    job: Job
    message: str
    done: int
    total: int
    errors: list[dict] = field(default_factory=list)
    withheld: bool = False

    @property
    def percent(self) -> int:
        if self.job.finished:
            return 100
        return int(100 * self.done / self.total) if self.total else 0


def visible_jobs(jobs: QuerySet, user) -> QuerySet:
    """``jobs`` without the uploads restricted to access groups the user is in none of (and
    did not start), and without the plantings of canaries unless the user is an admin of the
    project in the canaries' group (or started it): canaries and their question set are the
    admins' alone (`corpus.services.canaries`)."""
    restricted = jobs.filter(kind__in=[UPLOAD_KIND, CANARY_JOB_KIND]).exclude(created_by_id=user.pk)
    own_groups: dict[int, set[str]] = {}
    admin_of: dict[int, bool] = {}
    hidden = []
    for pk, project_id, kind, params in restricted.values_list(
        "pk", "project_id", "kind", "params"
    ):
        if kind == CANARY_JOB_KIND:
            if project_id not in admin_of:
                admin_of[project_id] = Membership.objects.filter(
                    project_id=project_id, user_id=user.pk, role=Role.ADMIN
                ).exists()
            if not admin_of[project_id]:
                hidden.append(pk)
                continue
        groups = params.get("access_groups") if isinstance(params, dict) else None
        if not groups:
            continue
        if project_id not in own_groups:
            own_groups[project_id] = set(
                AccessGroup.objects.filter(project_id=project_id, members=user).values_list(
                    "name", flat=True
                )
            )
        if not visibility.may_see(own_groups[project_id], groups):
            hidden.append(pk)
    return jobs.exclude(pk__in=hidden) if hidden else jobs


def hidden_shares(job: Job, user) -> dict[str, int]:
    """The sum, per figure, of what the documents hidden from ``user`` added to the job. A
    document gone since counts as hidden: the viewer never saw it either."""
    shares = (job.result if isinstance(job.result, dict) else {}).get("shares") or {}
    if not isinstance(shares, dict) or not shares:
        return {}
    named = {int(pk) for pk in shares if str(pk).isdigit()}
    visible = {
        str(pk)
        for pk in Document.objects.filter(project_id=job.project_id, pk__in=named)
        .visible_to(user)
        .values_list("pk", flat=True)
    }
    taken: dict[str, int] = {}
    for pk, amounts in shares.items():
        if str(pk) in visible or not isinstance(amounts, dict):
            continue
        for name, amount in amounts.items():
            if isinstance(amount, int):
                taken[name] = taken.get(name, 0) + amount
    return taken


def _message(job: Job, taken: dict[str, int]) -> str:
    result = job.result if isinstance(job.result, dict) else {}
    if taken.get(jobs.WITHHOLD) and job.message:
        return WITHHELD
    template, figures = result.get("message"), result.get("figures")
    if not isinstance(template, str | list) or not isinstance(figures, dict):
        return job.message
    shown = {
        name: max(0, value - taken.get(name, 0)) if isinstance(value, int) else value
        for name, value in figures.items()
    }
    try:
        return jobs.render_message(template, shown)
    except (KeyError, IndexError, ValueError, TypeError):
        return job.message


def view_job(job: Job, user, *, problems: bool = True) -> JobView:
    """``job`` as ``user`` may read it (its problems too, unless ``problems`` is False: lists
    do not show them)."""
    taken = hidden_shares(job, user)
    total = max(0, job.total - taken.get("total", 0))
    done = min(max(0, job.done - taken.get("done", 0)), total) if total else 0
    if not job.total:
        done = job.done
    errors, withheld = job_errors_for(job, user) if problems else ([], False)
    return JobView(
        job=job,
        message=_message(job, taken),
        done=done,
        total=total,
        errors=errors,
        withheld=withheld,
    )


def failure_shown(job: Job | None, user) -> JobView | None:
    """The failure of the job that last tried to compute a page's figures, as ``user`` may
    read it (None when it did not fail, or is not theirs to see): the page says why its
    figures are missing instead of only offering to compute them again."""
    if job is None or job.state != JobState.FAILED:
        return None
    if not visible_jobs(Job.objects.filter(pk=job.pk), user).exists():
        return None
    return view_job(job, user, problems=False)


def job_errors_for(job: Job, user) -> tuple[list[dict], bool]:
    """The job's per-item problems the user may read, and whether some were left out: an
    entry naming a document (``document_id``) that an access group hides from them is not
    shown, not even counted."""
    errors = [
        e for e in (job.errors if isinstance(job.errors, list) else []) if isinstance(e, dict)
    ]
    named = {e["document_id"] for e in errors if e.get("document_id")}
    if not named:
        return errors, False
    visible = set(
        Document.objects.filter(project=job.project, pk__in=named)
        .visible_to(user)
        .values_list("pk", flat=True)
    )
    shown = [e for e in errors if not e.get("document_id") or e["document_id"] in visible]
    return shown, len(shown) < len(errors)
