"""Calibration: adjudicated questions mixed blind into labellers' queues, and each labeller's
figures against the gold they carry.

A lead sets a project's share (0–50 %). When a labeller asks for their next question and real
work is waiting for them, with that probability they get a *calibration question* instead: a
question of the project with passages a lead decided (`Resolution` with a grade) that the
labeller has never held, whose passages they may see (the grading page shows them only those),
in a ready pool with no open slot left. It is an `Assignment` like any other (same page, URL,
queue row and counts); only its `purpose` says otherwise, and no page a labeller sees renders
it. Its answers count for nothing else: every reader of votes, progress and exports filters
with `labelling.models.work_q`.

The figures compare, per labeller, the grade they gave each decided passage with the lead's:
only on calibration questions they finished (the gold is shown to them only then, on their
"My calibration" page), and with the grade as it stood when they finished (from the history),
so an edit made after seeing the gold changes nothing. Leads see every labeller, over the
passages they may see; a labeller sees their own.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from corpus import visibility
from corpus.models import Membership, Project
from goldset.errors import ServiceError
from labelling import calibration as stats
from labelling.models import (
    Assignment,
    AssignmentPurpose,
    CalibrationShare,
    Candidate,
    Change,
    ChangeSubject,
    Guideline,
    Judgement,
    PoolState,
    Resolution,
    included_q,
)
from labelling.services.guidelines import render_guideline

User = get_user_model()

MAX_SHARE_PERCENT = 50
CALIBRATION_SLOT = 0


class CalibrationError(ServiceError):
    """A calibration setting that cannot be saved."""


def share_percent(project: Project) -> int:
    row = CalibrationShare.objects.filter(project=project).values_list("percent", flat=True)
    return row.first() or 0


def set_share(*, project: Project, percent: int, user) -> CalibrationShare:
    """Set the share of "next question"s that are calibration questions (0 switches it off)."""
    if not isinstance(percent, int) or not 0 <= percent <= MAX_SHARE_PERCENT:
        raise CalibrationError(
            f"The calibration share is a whole percentage from 0 to {MAX_SHARE_PERCENT}: a "
            "labeller's queue is for real work first."
        )
    share, _ = CalibrationShare.objects.update_or_create(
        project=project, defaults={"percent": percent, "updated_by": user}
    )
    return share


def eligible_questions(*, project: Project, labeller) -> list[tuple[int, int]]:
    """(pool id, question id) of the questions that may be given to ``labeller`` for
    calibration: in a ready pool of a content set, still in their set, with a passage a lead
    decided that the labeller may see, no open slot (calibration never takes real work's
    place), and never held by the labeller in any pool."""
    open_slot = Assignment.objects.work().filter(
        pool=OuterRef("pool"), question=OuterRef("question"), labeller__isnull=True
    )
    held = Assignment.objects.filter(labeller=labeller).values("question_id")
    rows = (
        Resolution.objects.filter(
            included_q("question__"),
            pool__question_set__project=project,
            pool__question_set__is_canary=False,
            pool__state=PoolState.READY,
            candidate__isnull=False,
            grade__isnull=False,
        )
        .filter(visibility.not_hidden_q(labeller, prefix="candidate__version__document__"))
        .exclude(question_id__in=held)
        .exclude(Exists(open_slot))
        .values_list("pool_id", "question_id")
        .distinct()
    )
    return sorted(rows)


def serve(*, project: Project, labeller, rng: random.Random | None = None) -> Assignment | None:
    """With the project's share as probability, a new calibration question for ``labeller``
    (None: none this time). Callers ask only when real work is waiting for the labeller, so
    a calibration question never appears where "nothing left" would have been said."""
    percent = share_percent(project)
    rng = rng or random.SystemRandom()
    if percent <= 0 or rng.random() * 100 >= percent:
        return None
    mine = Assignment.objects.in_project(project).calibration()
    if mine.open_for(labeller).exists():
        return None  # one at a time: the open one is in their queue already (checked again
        # below, under a lock, for two "next"s at once)
    choices = eligible_questions(project=project, labeller=labeller)
    if not choices:
        return None
    # The pools the labeller works in first, so its question set is one they already see.
    working = set(
        Assignment.objects.in_project(project)
        .work()
        .filter(labeller=labeller)
        .values_list("pool_id", flat=True)
    ) | set(
        Assignment.objects.in_project(project)
        .claimable_by(labeller)
        .order_by()
        .values_list("pool_id", flat=True)
        .distinct()
    )
    near = [choice for choice in choices if choice[0] in working]
    pool_id, question_id = rng.choice(near or choices)
    try:
        with transaction.atomic():
            # The labeller's membership row serialises their parallel "next" requests, so two
            # of them cannot each open a calibration question: the later one, let through
            # once the first commits, finds the first one's question open.
            Membership.objects.select_for_update().filter(project=project, user=labeller).first()
            if mine.open_for(labeller).exists():
                return None
            assignment = Assignment.objects.create(
                pool_id=pool_id,
                question_id=question_id,
                slot=CALIBRATION_SLOT,
                labeller=labeller,
                assigned_at=timezone.now(),
                purpose=AssignmentPurpose.CALIBRATION,
            )
            # The same history row a claim writes, so nothing tells the two apart.
            Change.objects.create(
                assignment=assignment,
                subject=ChangeSubject.ASSIGNMENT,
                action="claim",
                before=None,
                after={"labeller": labeller.get_username()},
                made_by=labeller,
            )
    except IntegrityError:
        return None  # a parallel request gave the labeller this question already
    return assignment


# Figures (reads) ---------------------------------------------------------------------------


@dataclass
class AnsweredItem:
    """One decided passage of a finished calibration question, as its labeller answered it."""

    assignment: Assignment
    candidate: Candidate
    resolution: Resolution
    grade: int
    seconds: float

    @property
    def gold(self) -> int:
        return self.resolution.grade

    @property
    def agrees(self) -> bool:
        return self.grade == self.gold


@dataclass
class LabellerCalibration:
    labeller: object
    items: list[AnsweredItem]
    questions: int
    figures: stats.Figures

    @property
    def disagreements(self) -> list[AnsweredItem]:
        return [item for item in self.items if not item.agrees]


def _answered_grades(assignments: list[Assignment]) -> dict[tuple[int, int], int | None]:
    """Each (assignment, candidate)'s grade as it stood when the assignment was finished, from
    the history (None: removed by then). Items without history keep their current grade."""
    finished = {a.pk: a.completed_at for a in assignments}
    grades: dict[tuple[int, int], int | None] = {}
    changes = (
        Change.objects.filter(
            assignment_id__in=list(finished),
            subject=ChangeSubject.JUDGEMENT,
            candidate__isnull=False,
        )
        .order_by("made_at", "pk")
        .values_list("assignment_id", "candidate_id", "made_at", "after")
    )
    for assignment_id, candidate_id, made_at, after in changes:
        if made_at <= finished[assignment_id]:
            grades[(assignment_id, candidate_id)] = after.get("grade") if after else None
    return grades


def answered_items(*, project: Project, viewer, labeller=None) -> list[AnsweredItem]:
    """The decided passages of finished calibration questions in ``project`` that ``viewer``
    may see (and their labeller saw and graded), of ``labeller`` or of everyone."""
    assignments = (
        Assignment.objects.in_project(project)
        .calibration()
        .filter(included_q("question__"), completed_at__isnull=False, labeller__isnull=False)
        .select_related("labeller", "question", "pool__question_set")
    )
    if labeller is not None:
        assignments = assignments.filter(labeller=labeller)
    assignments = list(assignments.order_by("completed_at", "pk"))
    if not assignments:
        return []
    keys = {(a.pool_id, a.question_id) for a in assignments}
    resolutions = defaultdict(list)
    for resolution in (
        Resolution.objects.filter(
            pool_id__in={p for p, _ in keys},
            question_id__in={q for _, q in keys},
            candidate__isnull=False,
            grade__isnull=False,
        )
        .filter(visibility.not_hidden_q(viewer, prefix="candidate__version__document__"))
        .select_related("candidate__version__document", "resolved_by")
    ):
        resolutions[(resolution.pool_id, resolution.question_id)].append(resolution)
    seconds, current = {}, {}
    for assignment_id, candidate_id, grade, spent in Judgement.objects.filter(
        assignment__in=[a.pk for a in assignments]
    ).values_list("assignment_id", "candidate_id", "grade", "seconds_spent"):
        seconds[(assignment_id, candidate_id)] = spent
        current[(assignment_id, candidate_id)] = grade
    history = _answered_grades(assignments)
    items = []
    for assignment in assignments:
        for resolution in resolutions.get((assignment.pool_id, assignment.question_id), []):
            key = (assignment.pk, resolution.candidate_id)
            grade = history[key] if key in history else current.get(key)
            if grade is None:
                continue  # not graded when finished (hidden from the labeller, or stopped)
            items.append(
                AnsweredItem(
                    assignment=assignment,
                    candidate=resolution.candidate,
                    resolution=resolution,
                    grade=grade,
                    seconds=seconds.get(key, 0.0),
                )
            )
    return items


def calibration_by_labeller(
    *, project: Project, viewer, labeller=None, n_boot: int = 1000
) -> list[LabellerCalibration]:
    """Per labeller (by name), their answered items and figures; only ``labeller``'s if given."""
    grouped: dict[int, list[AnsweredItem]] = defaultdict(list)
    people = {}
    for item in answered_items(project=project, viewer=viewer, labeller=labeller):
        grouped[item.assignment.labeller_id].append(item)
        people[item.assignment.labeller_id] = item.assignment.labeller
    rows = []
    for labeller_id, items in grouped.items():
        rows.append(
            LabellerCalibration(
                labeller=people[labeller_id],
                items=items,
                questions=len({item.assignment.pk for item in items}),
                figures=stats.figures(
                    [
                        stats.CalibrationItem(
                            gold=item.gold,
                            grade=item.grade,
                            seconds=item.seconds,
                            answered_at=item.assignment.completed_at,
                        )
                        for item in items
                    ],
                    n_boot=n_boot,
                ),
            )
        )
    return sorted(rows, key=lambda row: row.labeller.get_username())


# The guideline behind a decision -----------------------------------------------------------


@dataclass
class GuidelineBasis:
    """What a labeller reads for a passage they graded otherwise than the lead: the lead's
    note, the guideline version in force when the lead decided, and its sections the note
    names (by heading)."""

    note: str
    version: Guideline | None
    sections: list[str] = field(default_factory=list)  # safe HTML, rendered Markdown


_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def guideline_sections(text: str) -> list[tuple[str, str]]:
    """(heading, Markdown of the section under it, heading included) for each heading."""
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            sections.append((match.group(2), [line]))
        elif sections:
            sections[-1][1].append(line)
    return [(heading, "\n".join(lines).strip()) for heading, lines in sections]


def guideline_basis(resolution: Resolution, project: Project) -> GuidelineBasis:
    version = (
        Guideline.objects.filter(project=project, created_at__lte=resolution.resolved_at)
        .order_by("-version")
        .first()
    )
    sections = []
    note = resolution.note.casefold()
    if version is not None and note:
        sections = [
            render_guideline(markdown)
            for heading, markdown in guideline_sections(version.text)
            if heading.casefold() in note
        ]
    return GuidelineBasis(note=resolution.note, version=version, sections=sections)
