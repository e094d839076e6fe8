"""The lead's progress plots: questions done over time per question set, and each labeller's
speed. Read as the viewer may see them: judgements on documents an access group hides from
the viewer count nowhere (`labelling.services.judgement_time`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.utils import timezone

from corpus.models import Project
from labelling.charts import BarChart, TimeChart, bar_chart, time_chart
from labelling.models import Assignment, included_q
from labelling.services.judgement_time import JudgementTime, judgement_time

User = get_user_model()


@dataclass(frozen=True)
class LabellerSpeed:
    labeller: str
    judgements: int
    timed: int  # judgements with the seconds the page measured (imported ones have none)
    hours: float
    median_seconds: float | None

    @property
    def per_hour(self) -> float | None:
        """Judgements per hour spent on passages (the grading page's own clock)."""
        return self.timed / self.hours if self.hours else None

    def describe(self) -> str:
        if self.per_hour is None:
            return f"{self.judgements} judgement{'s' if self.judgements != 1 else ''}, not timed"
        return (
            f"{self.per_hour:.0f} per hour · median {self.median_seconds:.0f} s · "
            f"{self.judgements} judgement{'s' if self.judgements != 1 else ''}"
        )


@dataclass(frozen=True)
class ProgressPlots:
    progress: TimeChart | None
    speed: BarChart | None
    speeds: list[LabellerSpeed]
    sets: list[tuple[str, int, int]]  # question set, assignments done, assignments

    @property
    def progress_label(self) -> str:
        """What the progress plot shows, in words (its SVG's accessible name and tooltip)."""
        done = "; ".join(f"{name} {d} of {n} assignments done" for name, d, n in self.sets)
        return f"Labelling progress over time: {done}"


def progress_plots(
    *, project: Project, viewer, seconds: JudgementTime | None = None
) -> ProgressPlots:
    """The plots end at the last finished question, not at the moment of the request: the
    same work draws the same picture whenever it is looked at. ``seconds``:
    `labelling.services.judgement_time.judgement_time`, if read already."""
    assignments = (
        Assignment.objects.in_project(project)
        .work()
        .filter(included_q("question__"))
        .values_list("pool__question_set__name", "assigned_at", "created_at", "completed_at")
    )
    by_set: dict[str, list] = defaultdict(list)
    for name, assigned_at, created_at, completed_at in assignments:
        by_set[name].append((assigned_at or created_at, completed_at))
    series, sets, starts, ends = [], [], [], []
    for name in sorted(by_set):
        rows = by_set[name]
        done = sorted(timezone.localtime(c) for _, c in rows if c is not None)
        sets.append((name, len(done), len(rows)))
        if not done:
            continue
        # Work imported with its times may be done before it was assigned here.
        start = min([timezone.localtime(begun) for begun, _ in rows] + done[:1])
        points = [(start, 0.0)] + [(moment, (i + 1) / len(rows)) for i, moment in enumerate(done)]
        series.append((name, points))
        starts.append(start)
        ends.append(done[-1])
    progress = time_chart(series, start=min(starts), end=max(ends)) if series else None

    if seconds is None:
        seconds = judgement_time(project=project, viewer=viewer)
    per_labeller = {pk: s for pk, s in seconds.by_labeller.items() if pk is not None}
    names = dict(User.objects.filter(pk__in=per_labeller).values_list("pk", "username"))
    speeds = [
        LabellerSpeed(
            labeller=names[labeller_id],
            judgements=summary.judgements,
            timed=summary.timed,
            hours=summary.timed_sum / 3600,
            median_seconds=summary.timed_median,
        )
        for labeller_id, summary in sorted(per_labeller.items(), key=lambda i: names[i[0]])
    ]
    speed = bar_chart([(s.labeller, s.per_hour, s.describe()) for s in speeds]) if speeds else None
    return ProgressPlots(progress=progress, speed=speed, speeds=speeds, sets=sets)
