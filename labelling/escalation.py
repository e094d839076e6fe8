"""When two labellers' grades of a passage call for a third labeller, and in which order a lead
meets the items that need a decision. Django-free, so the rules are tested directly; the
service (`labelling.services.escalation`) and the adjudication queue apply them.

Escalation (issue 36): a passage the first two labellers of a question graded apart goes to a
third labeller, blind, before it reaches a lead. The project's rule (`Project.escalate_on`):

- ``two_apart`` (the default): the grades differ by two (0 against 2), the disagreements a
  guideline cannot excuse as a matter of degree;
- ``any_difference``: the grades differ at all;
- ``never``: no third labeller; disagreements go straight to a lead.

The third vote never settles an item on its own: an escalated item always reaches a lead, with
its three votes, once the third labeller has graded it. A majority of two would hide the very
items whose guideline reading is in question; the lead sees where the third labeller stands.

The adjudication queue's order: the widest disagreement first (vote distance: the highest
grade minus the lowest among the labellers' votes), then the passages that can move the most
questions' figures (`questions_moved`), then the page's usual order (stable).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

TWO_APART = "two_apart"
ANY_DIFFERENCE = "any_difference"
NEVER = "never"
RULES = (TWO_APART, ANY_DIFFERENCE, NEVER)

# The rule in words, for the adjudication page and the project page.
RULE_TEXT = {
    TWO_APART: "a passage whose two grades are two apart (0 against 2) goes to a third "
    "labeller before it reaches a lead",
    ANY_DIFFERENCE: "a passage whose two grades differ at all goes to a third labeller before "
    "it reaches a lead",
    NEVER: "no third labeller: disagreements come straight here",
}

ORDER_TEXT = (
    "Widest disagreement first (the highest grade minus the lowest), then the passages that "
    "can move the most questions' figures: the questions of this set that pooled the same "
    "text (the same document version, overlapping characters) and whose gold on it is still "
    "undecided, so their relevant passages, and with them their recall, wait on it."
)


def needs_third_vote(first: int, second: int, *, rule: str) -> bool:
    """Whether two grades (0–2) of one passage call for a third labeller under ``rule``."""
    if rule not in RULES:
        raise ValueError(f"Unknown escalation rule {rule!r}.")
    apart = abs(first - second)
    if rule == TWO_APART:
        return apart >= 2
    if rule == ANY_DIFFERENCE:
        return apart >= 1
    return False


def vote_distance(grades: Sequence[int]) -> int:
    """The highest grade minus the lowest (0 with fewer than two votes)."""
    return max(grades) - min(grades) if len(grades) > 1 else 0


Passage = tuple[int, int, int, int]  # (question key, version id, start, end)


def questions_moved(passages: Iterable[Passage]) -> dict[Passage, int]:
    """For each undecided passage, how many questions have an undecided passage on the same
    document version overlapping it (its own question included, each question once).

    A sweep per version, by start: a passage overlaps exactly the later ones that start before
    it ends, so each overlapping pair is met once and the cost is the sorting plus the pairs
    (a set at the start of labelling has every one of its candidates undecided)."""
    by_version: dict[int, list[Passage]] = {}
    for passage in passages:
        by_version.setdefault(passage[1], []).append(passage)
    moved: dict[Passage, int] = {}
    for group in by_version.values():
        group.sort(key=lambda p: (p[2], p[3]))
        questions = [{p[0]} for p in group]
        for i, (question, _, _, end) in enumerate(group):
            j = i + 1
            while j < len(group) and group[j][2] < end:
                questions[i].add(group[j][0])
                questions[j].add(question)
                j += 1
        for passage, seen in zip(group, questions, strict=True):
            moved[passage] = max(moved.get(passage, 0), len(seen))
    return moved
