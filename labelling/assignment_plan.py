"""Who labels which question: an even spread, with a sample double-labelled (DESIGN.md §1, step 5).

Django-free, like doccano's assignment strategies, so the plan can be tested directly. Questions
and labellers are opaque hashable keys (the service passes primary keys).

Every labeller ends up with the same amount of work, give or take one assignment, counting
second labels too; a double-labelled question always gets two *different* labellers. The sample
and the spread are drawn from a seeded generator, so the same inputs and seed give the same plan.

Access groups come first: with ``hidden`` (how many of a question's passages each labeller's
access groups hide), a question goes to the labellers who can see the most of it, and the
double-labelled sample is drawn from questions two labellers can see whole. Evenness is kept
among the labellers who qualify; a passage no second labeller can see stays single-labelled.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_DOUBLE_SHARE = 0.2

# hidden[question][labeller]: how many of the question's passages the labeller cannot see.
Hidden = Mapping[Hashable, Mapping[Hashable, int]]


class PlanError(ValueError):
    """A plan that cannot be made; the message is shown to the lead as is."""


@dataclass(frozen=True)
class PlannedAssignment:
    """Slot 1 is a question's first labeller, slot 2 its second; ``labeller`` None = unclaimed."""

    question: Hashable
    slot: int
    labeller: Hashable | None


def double_labelled_count(
    *, questions: int, double_share: float = DEFAULT_DOUBLE_SHARE, double_count: int | None = None
) -> int:
    """How many questions get a second labeller: an absolute count wins over a share."""
    if double_count is not None:
        if double_count < 0:
            raise PlanError("The number of double-labelled questions cannot be negative.")
        if double_count > questions:
            raise PlanError(
                f"Cannot double-label {double_count} questions: there are only {questions} to plan."
            )
        return double_count
    if not 0 <= double_share <= 1:
        raise PlanError(f"The double-labelled share must be between 0 and 1, got {double_share}.")
    # Half-up rounding, so 20% of 5 questions is 1 and 20% of 2.5 rounds the same on every run.
    return min(questions, int(double_share * questions + 0.5))


def plan_assignments(
    *,
    questions: Sequence[Hashable],
    labellers: Sequence[Hashable],
    double_share: float = DEFAULT_DOUBLE_SHARE,
    double_count: int | None = None,
    seed: int = 0,
    current_load: Mapping[Hashable, int] | None = None,
    hidden: Hidden | None = None,
) -> list[PlannedAssignment]:
    """Slots for every question, spread evenly over ``labellers``.

    With no labellers every slot is left unclaimed, for labellers to claim with "next question".
    ``current_load`` counts work labellers already hold (earlier plans), so a top-up plan keeps
    the spread even; ``hidden`` steers questions to labellers who can see their passages. The
    result is ordered by question (in the given order), then slot.
    """
    if len(set(questions)) != len(questions):
        raise PlanError("A question appears twice in the plan.")
    if len(set(labellers)) != len(labellers):
        raise PlanError("A labeller appears twice in the plan.")
    doubles = double_labelled_count(
        questions=len(questions), double_share=double_share, double_count=double_count
    )
    if labellers and doubles and len(labellers) < 2:
        raise PlanError("Double-labelling needs at least two labellers.")

    rng = random.Random(seed)
    doubled = _sample_doubles(rng, questions, doubles, labellers, hidden)
    if not labellers:
        return [
            PlannedAssignment(question=q, slot=slot, labeller=None)
            for q in questions
            for slot in ((1, 2) if q in doubled else (1,))
        ]

    spread = _Spread(labellers=labellers, rng=rng, current_load=current_load or {}, hidden=hidden)
    chosen: dict[tuple[Hashable, int], Hashable] = {}
    # Pairs first: with every load within one of the others, the two least-loaded distinct
    # labellers can always take a pair without opening a gap of two.
    pair_order = [q for q in questions if q in doubled]
    rng.shuffle(pair_order)
    for question in spread.most_constrained_first(pair_order):
        first, second = spread.take(2, question)
        if rng.random() < 0.5:
            first, second = second, first
        chosen[(question, 1)] = first
        chosen[(question, 2)] = second
    single_order = [q for q in questions if q not in doubled]
    rng.shuffle(single_order)
    for question in spread.most_constrained_first(single_order):
        (chosen[(question, 1)],) = spread.take(1, question)

    return [
        PlannedAssignment(question=q, slot=slot, labeller=chosen[(q, slot)])
        for q in questions
        for slot in ((1, 2) if q in doubled else (1,))
    ]


def plan_second_labels(
    *,
    first_labellers: Mapping[Hashable, Hashable | None],
    labellers: Sequence[Hashable],
    count: int,
    seed: int = 0,
    current_load: Mapping[Hashable, int] | None = None,
    hidden: Hidden | None = None,
) -> list[PlannedAssignment]:
    """Second labellers for ``count`` of the single-labelled questions (question → its first
    labeller, None when unclaimed): raising the double-labelled share after planning.

    The sample prefers questions a second labeller can see whole; each second labeller differs
    from the first and is the least loaded of those who see the most of the question. Without
    labellers the new slots are left for "next question". Ordered by question as given.
    """
    questions = list(first_labellers)
    if count < 0:
        raise PlanError("The number of double-labelled questions cannot be negative.")
    if count > len(questions):
        raise PlanError(
            f"Only {len(questions)} single-labelled question{'s' if len(questions) != 1 else ''} "
            f"can get a second labeller, not {count}."
        )
    if len(set(labellers)) != len(labellers):
        raise PlanError("A labeller appears twice in the plan.")
    rng = random.Random(seed)
    others = {q: [lab for lab in labellers if lab != first_labellers[q]] for q in questions}
    if labellers and any(not others[q] for q in questions) and count:
        # Only questions with someone else to give them to can be sampled.
        questions = [q for q in questions if others[q]]
        if count > len(questions):
            raise PlanError("Double-labelling needs a second labeller other than the first.")
    chosen = _sample_doubles(rng, questions, count, labellers, hidden, needed=1, others=others)
    if not labellers:
        return [
            PlannedAssignment(question=q, slot=2, labeller=None) for q in questions if q in chosen
        ]
    spread = _Spread(labellers=labellers, rng=rng, current_load=current_load or {}, hidden=hidden)
    order = [q for q in questions if q in chosen]
    rng.shuffle(order)
    second = {}
    for question in spread.most_constrained_first(order):
        (second[question],) = spread.take(1, question, exclude=first_labellers[question])
    return [
        PlannedAssignment(question=q, slot=2, labeller=second[q])
        for q in first_labellers
        if q in second
    ]


def _sample_doubles(
    rng: random.Random,
    questions: Sequence[Hashable],
    count: int,
    labellers: Sequence[Hashable],
    hidden: Hidden | None,
    *,
    needed: int = 2,
    others: Mapping[Hashable, Sequence[Hashable]] | None = None,
) -> set[Hashable]:
    """``count`` questions drawn at random, from those at least ``needed`` labellers (among
    ``others[q]``, if given) can see whole first, then from the rest."""
    if not hidden or not labellers:
        return set(rng.sample(list(questions), count))

    def seeing_all(question) -> int:
        pool = others[question] if others is not None else labellers
        return sum(1 for lab in pool if not hidden.get(question, {}).get(lab, 0))

    whole = [q for q in questions if seeing_all(q) >= needed]
    if len(whole) >= count:
        return set(rng.sample(whole, count))
    rest = sorted((q for q in questions if q not in set(whole)), key=lambda q: -seeing_all(q))
    return set(whole) | set(rest[: count - len(whole)])


class _Spread:
    """Hands out labellers least-loaded first among those who can see the most of the
    question; ties go to whoever waited longest, then to a seeded order, so no labeller is
    always first in line."""

    def __init__(
        self,
        *,
        labellers: Sequence[Hashable],
        rng: random.Random,
        current_load: Mapping,
        hidden: Hidden | None = None,
    ) -> None:
        order = list(labellers)
        rng.shuffle(order)
        self._position = {labeller: i for i, labeller in enumerate(order)}
        self._load = {labeller: int(current_load.get(labeller, 0)) for labeller in order}
        self._last_given = dict.fromkeys(order, -1)
        self._step = 0
        self._hidden = hidden or {}

    def _hidden_from(self, question, labeller) -> int:
        return self._hidden.get(question, {}).get(labeller, 0)

    def most_constrained_first(self, questions: list[Hashable]) -> list[Hashable]:
        """Questions few labellers can see whole go first, while every labeller is free."""
        if not self._hidden:
            return questions
        return sorted(
            questions,
            key=lambda q: sum(1 for lab in self._load if not self._hidden_from(q, lab)),
        )

    def take(self, count: int, question=None, exclude=None) -> list[Hashable]:
        ranked = sorted(
            (labeller for labeller in self._load if labeller != exclude),
            key=lambda labeller: (
                self._hidden_from(question, labeller),
                self._load[labeller],
                self._last_given[labeller],
                self._position[labeller],
            ),
        )
        taken = ranked[:count]
        for labeller in taken:
            self._load[labeller] += 1
            self._last_given[labeller] = self._step
        self._step += 1
        return taken


def workload(plan: Sequence[PlannedAssignment]) -> dict[Hashable, int]:
    """Assignments per labeller in a plan (unclaimed slots left out)."""
    counts: dict[Hashable, int] = {}
    for planned in plan:
        if planned.labeller is not None:
            counts[planned.labeller] = counts.get(planned.labeller, 0) + 1
    return counts
