"""The AI judge as one more vote in the gold rule: shown to leads always, counted only where a
lead turned that on for the set.

`JudgeVoter` is what judges hands to labelling at start-up (`judges.apps.JudgesConfig.ready`,
`labelling.services.machine_votes`): for each candidate, each judge's newest valid AI
judgement (the newest prompt version's, then the latest judged; an error is never a vote), as
a `MachineVote` marked "AI judge (model, prompt vN)". The one of the judge a lead chose for the
set, while the switch is on, is ``counted``: the gold rule then takes it as one vote (never
more than one per item). `set_gold_vote` is the lead's switch.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from goldset.errors import ServiceError
from judges.models import AIJudgement, GoldVoteSwitch, Judge
from labelling.models import QuestionSet
from labelling.services import gold_state
from labelling.services.machine_votes import MachineVote


def gold_vote_switch(question_set: QuestionSet) -> GoldVoteSwitch | None:
    return GoldVoteSwitch.objects.filter(question_set=question_set).select_related("judge").first()


def counted_judge(question_set: QuestionSet) -> Judge | None:
    """The judge whose vote the set's gold rule counts, or None (the default)."""
    switch = gold_vote_switch(question_set)
    return switch.judge if switch is not None and switch.on else None


@transaction.atomic
def set_gold_vote(*, question_set: QuestionSet, judge: Judge, on: bool, user) -> GoldVoteSwitch:
    """Turn counting ``judge``'s vote in the set's gold rule on or off. One judge at a time:
    turning it on for another judge moves it there. Who may (a lead of the project) is the
    caller's check."""
    if judge.project_id != question_set.project_id:
        raise ServiceError("The judge and the question set belong to different projects.")
    if question_set.is_canary:
        raise ServiceError("A canary question set has no gold rule to count a judge in.")
    switch = GoldVoteSwitch.objects.select_for_update().filter(question_set=question_set).first()
    if switch is None:
        switch = GoldVoteSwitch(question_set=question_set)
    elif not on and switch.judge_id != judge.pk:
        return switch  # turning off a judge that is not counted changes nothing
    switch.judge, switch.on, switch.changed_by = judge, on, user
    switch.save()
    gold_state.mark_set_stale(question_set_id=question_set.pk)
    return switch


class JudgeVoter:
    """The judges' `labelling.services.machine_votes.MachineVoter`."""

    def votes(
        self, *, question_set: QuestionSet, candidates: QuerySet
    ) -> dict[int, list[MachineVote]]:
        counted = counted_judge(question_set)
        rows = (
            AIJudgement.objects.filter(
                candidate__in=candidates,
                judge__project_id=question_set.project_id,
                grade__isnull=False,
                error="",
            )
            .order_by("candidate_id", "judge__name", "-prompt__version", "-judged_at", "-pk")
            .values_list(
                "candidate_id",
                "judge_id",
                "grade",
                "quote",
                "span_start",
                "span_end",
                "model",
                "prompt__version",
                "judge__name",
            )
        )
        found: dict[int, list[MachineVote]] = {}
        seen: set[tuple[int, int]] = set()
        for (
            candidate_id,
            judge_id,
            grade,
            quote,
            span_start,
            span_end,
            model,
            version,
            name,
        ) in rows:
            if (candidate_id, judge_id) in seen:
                continue  # an older vote of the same judge
            seen.add((candidate_id, judge_id))
            placed = span_start is not None and span_end is not None and span_start < span_end
            spans = ((span_start, span_end),) if grade and placed else ()
            found.setdefault(candidate_id, []).append(
                MachineVote(
                    voter=f"AI judge ({model or name}, prompt v{version})",
                    grade=grade,
                    quote=quote,
                    spans=spans,
                    counted=counted is not None and judge_id == counted.pk,
                    source={"judge": name, "model": model, "prompt_version": version},
                )
            )
        return found

    def counting(self, *, question_set: QuestionSet) -> dict[str, Any] | None:
        switch = gold_vote_switch(question_set)
        if switch is not None and switch.on:
            return {"counted": True, "judge": switch.judge.name}
        judged = AIJudgement.objects.filter(
            candidate__pool__question_set=question_set, judge__project_id=question_set.project_id
        ).exists()
        return {"counted": False} if switch is not None or judged else None
