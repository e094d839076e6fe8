"""The gold resolution rule, free of Django: what the gold set says about one item.

An item is one candidate of a question (its grade and evidence spans), or the question itself
(its verdict). The rule, also written in the lead's guide (docs/guides/lead.md):

- a lead's resolution, when there is one, is the answer;
- an item judged by its only planned labeller takes that judgement;
- a double-labelled item whose two votes agree takes the shared grade, and its spans are the
  union of both labellers' spans, overlapping spans coalesced into one (`goldeval.text.spans`' rule:
  spans sharing a character merge, touching ones stay two units, as the metrics see them).
  Why union: both experts agree the passage answers; each span is evidence one of them marked,
  and a retrieved passage that reaches either has delivered supporting text. Coalescing keeps a
  paragraph both marked a single relevant unit, so it is credited once, not twice. Votes only
  count as agreeing when their span F1 reaches the configured minimum, so the union stays close
  to each labeller's own spans;
- the AI judge's vote counts only where a lead turned that on for the set: then its newest
  valid grade of the item (never an error) is one more vote beside the labellers'. Its grade
  must agree with theirs: a single-labelled item the judge agrees with is "agreed", one it
  disagrees with goes to a lead, as does a pair of agreeing labellers it disagrees with. The
  gold's spans stay the labellers' (the judge's quote is the shortest stretch that supports its
  grade, shown to the lead, never a marked unit of the gold). It never stands in for a
  labeller: the item still waits for every planned labeller, and an item no labeller can vote
  on still goes to a lead;
- an escalated item (the first two grades far apart, so a third labeller graded it too,
  `labelling.escalation`) is pending with its three votes: a third vote never settles it;
- anything else (grades differ, spans overlap too little, verdicts differ, a "can't tell"
  verdict, a vote still missing) is pending: it blocks finalising until a lead resolves it.
  A pending item that needs a lead's decision (every kind but "waiting") goes to the
  adjudication queue; one still waiting for a labeller stays out of it, but a lead may settle
  it early. A vote that can never come (its labeller cannot see the passage's document any
  more, their account is deactivated, nobody left can claim the slot) is not waited for: the
  item is "unreachable" and goes to the queue with the reason.

Who counts as a planned voter is the caller's business: a labeller whose access groups hide a
passage never votes on it, so the caller leaves them out, and a double-labelled question's
passage that only one of its labellers can see counts as single-labelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from labelling.agreement import merge_spans, span_f1

Spans = tuple[tuple[int, int], ...]
DEFAULT_MIN_SPAN_F1 = 0.5


@dataclass(frozen=True)
class Vote:
    labeller: str
    grade: int
    spans: Spans = ()


@dataclass(frozen=True)
class Decision:
    grade: int
    spans: Spans
    source: str  # "single", "agreed" or "resolved"


@dataclass(frozen=True)
class VerdictDecision:
    outcome: str
    source: str


# Why an item is pending, for the queue and the Gold page's grouping (see `Pending.kind`).
PENDING_KINDS = {
    "disagreement": "The votes disagree",
    "cant_tell": "A labeller could not tell",
    "unreachable": "A vote can never come",
    "waiting": "Waiting for labellers",
}


@dataclass(frozen=True)
class Pending:
    reason: str
    # "disagreement", "cant_tell", "unreachable" (a lead must decide) or "waiting" (a labeller
    # still has to vote). Not part of equality: the reason says it all for a reader.
    kind: str = field(default="disagreement", compare=False)

    @property
    def needs_lead(self) -> bool:
        return self.kind != "waiting"


def union(*span_sets: Sequence[tuple[int, int]]) -> Spans:
    """Union of several labellers' spans, overlapping ones coalesced (touching ones kept apart),
    by start."""
    return tuple(merge_spans([span for spans in span_sets for span in spans]))


def disagreement(
    votes: Sequence[Vote],
    *,
    min_span_f1: float = DEFAULT_MIN_SPAN_F1,
    machine: Vote | None = None,
) -> str | None:
    """Why the votes need a lead, or None when they agree: the labellers' (one or two) and the
    ``machine``'s grades are the same, and two labellers' spans overlap enough (the machine's
    quote is never held against them: it is the shortest supporting stretch, not a marked
    unit)."""
    grades = [vote.grade for vote in votes] + ([machine.grade] if machine is not None else [])
    if len(set(grades)) > 1:
        said = [str(vote.grade) for vote in votes]
        if machine is not None:
            said.append(f"the AI judge's {machine.grade}")
        return f"grades differ ({' vs '.join(said)})"
    if len(votes) == 2 and votes[0].grade >= 1:
        f1 = span_f1(votes[0].spans, votes[1].spans)
        if f1.defined and f1.value < min_span_f1:
            return f"spans overlap too little (F1 {f1.value:.2f} < {min_span_f1:.2f})"
    return None


def resolve_item(
    votes: Sequence[Vote],
    *,
    planned_votes: int,
    resolution: Decision | None = None,
    min_span_f1: float = DEFAULT_MIN_SPAN_F1,
    unreachable: str = "",
    machine: Vote | None = None,
) -> Decision | Pending:
    """``planned_votes`` counts the labellers who may still vote on the item; ``unreachable``
    says why a planned vote can never come (and makes the item wait for a lead instead);
    ``machine`` is the AI judge's vote when the gold rule counts it."""
    if resolution is not None:
        return resolution
    if unreachable:
        return Pending(f"can never get its vote: {unreachable}", kind="unreachable")
    if not votes and not planned_votes:
        return Pending(
            "can never get its vote: none of its labellers can see this document",
            kind="unreachable",
        )
    if len(votes) < planned_votes:
        missing = planned_votes - len(votes)
        return Pending(
            f"waiting for {missing} more vote{'s' if missing != 1 else ''}", kind="waiting"
        )
    if len(votes) > 2:
        # An escalated item's third labeller (`labelling.escalation`), or votes imported from
        # elsewhere: they stay for a lead, whatever the third one says.
        grades = " vs ".join(str(vote.grade) for vote in votes)
        return Pending(f"{len(votes)} votes ({grades}): a lead decides")
    if len(votes) == 1 and machine is None:
        vote = votes[0]
        return Decision(
            grade=vote.grade, spans=union(vote.spans) if vote.grade else (), source="single"
        )
    reason = disagreement(votes, min_span_f1=min_span_f1, machine=machine)
    if reason:
        return Pending(reason)
    grade = votes[0].grade
    spans = union(*(vote.spans for vote in votes)) if grade else ()
    return Decision(grade=grade, spans=spans, source="agreed")


def resolve_verdict(
    outcomes: Sequence[str],
    *,
    planned_votes: int,
    resolution: str | None = None,
    unreachable: str = "",
) -> VerdictDecision | Pending:
    """Outcomes are "answerable", "unanswerable" or "cant_tell" ("answerable" when a labeller
    finished without marking the question); ``unreachable`` as for `resolve_item`."""
    if resolution:
        return VerdictDecision(outcome=resolution, source="resolved")
    if unreachable:
        return Pending(f"can never get its verdict: {unreachable}", kind="unreachable")
    if len(outcomes) < planned_votes or not outcomes:
        return Pending("waiting for a labeller to finish the question", kind="waiting")
    if "cant_tell" in outcomes:
        return Pending("a labeller could not tell", kind="cant_tell")
    if len(set(outcomes)) > 1:
        return Pending(f"verdicts differ ({' vs '.join(outcomes)})")
    return VerdictDecision(outcome=outcomes[0], source="single" if len(outcomes) == 1 else "agreed")
