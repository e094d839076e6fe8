"""Votes cast by a machine (the team's LLM judge) beside the labellers', handed to labelling.

The judges app sits above labelling, so labelling cannot ask it for its votes; instead judges
hands over a `MachineVoter` at start-up (`judges.apps.JudgesConfig.ready`), as the corpus hands
its access listener to labelling. Without one (judges not installed), there are no such votes.

A machine vote is shown to leads on the adjudication page, marked as the machine's, and the
gold rule counts it as one more vote only when it is ``counted``: the voter decides that from
the lead's switch for the set (`judges.services.gold_vote`). Calibration and canary planting
read the humans' gold alone (`labelling.services.votes.gather_votes` with ``machine=False``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db.models import QuerySet

from labelling.models import QuestionSet
from labelling.resolution import Spans, Vote


@dataclass(frozen=True)
class MachineVote:
    """One machine's grade of one candidate, with the evidence it quoted."""

    voter: str  # how pages name it, e.g. "AI judge (qwen, prompt v3)"
    grade: int
    quote: str = ""
    spans: Spans = ()  # where its quote was placed (version offsets), for the lead to see
    counted: bool = False  # the gold rule counts it as a vote
    # What a gold set's manifest records about a counted vote: judge, model, prompt version.
    source: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def as_vote(self) -> Vote:
        return Vote(labeller=self.voter, grade=self.grade, spans=self.spans)


class MachineVoter(Protocol):
    def votes(
        self, *, question_set: QuestionSet, candidates: QuerySet
    ) -> dict[int, list[MachineVote]]:
        """The machine votes on ``candidates`` (a queryset of the set's candidates' pks), by
        candidate pk; at most one counted vote per candidate."""

    def counting(self, *, question_set: QuestionSet) -> dict[str, Any] | None:
        """Whether the set's gold rule counts a machine's votes now, for pages and the gold
        set's manifest: ``{"counted": True, "judge": NAME}`` or ``{"counted": False}``; None
        when no machine has voted on the set and no lead set the switch (nothing to say)."""


_voter: MachineVoter | None = None


def provide_machine_votes(voter: MachineVoter | None) -> None:
    """Name the voter whose votes labelling shows and (where a lead said so) counts."""
    global _voter
    _voter = voter


def machine_votes(*, question_set: QuestionSet, candidates: QuerySet) -> dict[int, list]:
    if _voter is None:
        return {}
    return _voter.votes(question_set=question_set, candidates=candidates)


def machine_counting(*, question_set: QuestionSet) -> dict[str, Any] | None:
    return None if _voter is None else _voter.counting(question_set=question_set)
