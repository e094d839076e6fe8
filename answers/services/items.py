"""The items of an answer's review, each settled on its own (issue 36 item 6).

A review is a set of items: each claim's support, each of its citations' grades, the groups of
its partial citations that support it together, each reference fact's presence and, when the
system refused, whether the refusal was wrong. An item's key is the same in both reviews of an
answer (a claim is known by its ``[start, end)`` in the answer's text, a citation by its
passage, a fact by its id), so the two reviews are compared item by item.

The settle rule, per item: the reviewers' value when they agree (or when one review is all
there is); else the lead's decision on that item (`AnswerItemDecision`); else, for decisions
made before items existed, the review the lead chose whole (`AnswerResolution`: read as it is,
never rewritten); else the item is **undecided**, and the answer stays out of the gold until it
is decided — one reviewer's value is never taken silently. When the two reviewers split the
answer into claims differently, its claims are not the same items: only a whole-review decision
settles them (the facts and the refusal call are still settled item by item).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from answers.models import Answer, AnswerAssignment, AnswerItemDecision, AnswerResolution

SUPPORT = "support"
CITATION = "citation"
TOGETHER = "together"
FACT = "fact"
REFUSAL = "refusal"
# The claims as split into items differ between the reviews: one key for the whole split.
SPLIT = "split"
CLAIM_KINDS = (SUPPORT, CITATION, TOGETHER)

# The graded kinds agreement is measured on (supporting groups are not a grade), each value
# mapped onto its order.
AGREEMENT_KINDS = {
    SUPPORT: ("claim support", {"none": 0, "partial": 1, "full": 2}),
    CITATION: ("citation grade", {0: 0, 1: 1, 2: 2}),
    FACT: ("fact presence", {"no": 0, "partly": 1, "yes": 2}),
    REFUSAL: ("refusal", {False: 0, True: 1}),
}

# The values a lead may decide for an item of each kind.
CHOICES: dict[str, dict[str, Any]] = {
    SUPPORT: {"full": "full", "partial": "partial", "none": "none"},
    CITATION: {"2": 2, "1": 1, "0": 0},
    FACT: {"yes": "yes", "partly": "partly", "no": "no"},
    REFUSAL: {"wrong": True, "right": False},
}

WORDS: dict[str, dict[Any, str]] = {
    SUPPORT: {"full": "supported", "partial": "partly supported", "none": "not supported"},
    CITATION: {2: "supports", 1: "partly", 0: "does not support"},
    FACT: {"yes": "present", "partly": "partly", "no": "missing"},
    REFUSAL: {True: "the refusal is wrong", False: "the refusal is right"},
}

AGREED = "agreed"
SINGLE = "single"
DECIDED = "decided"
CHOSEN_REVIEW = "chosen review"
UNDECIDED = "undecided"


@dataclass
class Item:
    key: str
    kind: str
    claim: tuple[int, int] | None = None
    passage: int | None = None  # AnswerPassage pk of a citation
    fact: int | None = None  # ReferenceFact pk
    # One value per review, in slot order; None: that review has no value for it.
    votes: list[Any] = field(default_factory=list)
    status: str = UNDECIDED
    value: Any = None
    decision: AnswerItemDecision | None = None

    @property
    def disputed(self) -> bool:
        return self.status not in (AGREED, SINGLE)

    @property
    def settled(self) -> bool:
        return self.status != UNDECIDED


def claim_key(start: int, end: int) -> str:
    return f"{start}-{end}"


def _grades(assignment: AnswerAssignment, *, refused: bool) -> dict[str, Item]:
    """One review's items with its value; claims, citations and facts in their order."""
    items: dict[str, Item] = {}
    for claim in assignment.claims.all():
        span = (claim.start, claim.end)
        at = claim_key(*span)
        items[f"{SUPPORT}:{at}"] = Item(
            f"{SUPPORT}:{at}", SUPPORT, claim=span, value=claim.support or None
        )
        for citation in claim.citations.all():
            key = f"{CITATION}:{at}:{citation.passage_id}"
            items[key] = Item(
                key, CITATION, claim=span, passage=citation.passage_id, value=citation.grade
            )
        items[f"{TOGETHER}:{at}"] = Item(
            f"{TOGETHER}:{at}",
            TOGETHER,
            claim=span,
            value=[list(group) for group in claim.supporting_sets],
        )
    for judgement in sorted(assignment.facts.all(), key=lambda f: f.fact_id):
        key = f"{FACT}:{judgement.fact_id}"
        items[key] = Item(key, FACT, fact=judgement.fact_id, value=judgement.present)
    if refused or assignment.wrongly_refused:
        items[REFUSAL] = Item(REFUSAL, REFUSAL, value=assignment.wrongly_refused)
    return items


def _claims(assignment: AnswerAssignment) -> list[tuple[int, int]]:
    return [(claim.start, claim.end) for claim in assignment.claims.all()]


@dataclass
class AnswerItems:
    """An answer's reviews compared item by item, each item settled or not."""

    answer: Answer
    assignments: list[AnswerAssignment]
    items: list[Item]
    resolution: AnswerResolution | None
    # The reviews split the answer into claims differently: its claim items are settled only
    # by a whole-review decision.
    split_differs: bool = False

    @property
    def disputed(self) -> list[Item]:
        return [item for item in self.items if item.disputed]

    @property
    def undecided(self) -> list[Item]:
        return [item for item in self.items if not item.settled]


def answer_items(answer: Answer) -> AnswerItems | None:
    """The answer's finished reviews compared item by item; None until every review is done
    (prefetch ``assignments__claims__citations``, ``assignments__facts``, ``item_decisions``
    and ``resolution`` for many answers)."""
    assignments = sorted(answer.assignments.all(), key=lambda a: a.slot)
    if not assignments or any(a.done_at is None for a in assignments):
        return None
    resolution = _resolution(answer)
    chosen = None
    if resolution is not None:
        chosen = next((a for a in assignments if a.pk == resolution.chosen_id), None)
    decisions = {d.item: d for d in answer.item_decisions.all()}
    reviews = [_grades(a, refused=answer.refused) for a in assignments]
    split_differs = len({tuple(_claims(a)) for a in assignments}) > 1
    keys: list[str] = []
    for review in reviews:
        keys += [key for key in review if key not in keys]
    items = []
    for key in keys:
        shape = next(review[key] for review in reviews if key in review)
        item = Item(key, shape.kind, claim=shape.claim, passage=shape.passage, fact=shape.fact)
        item.votes = [review[key].value if key in review else None for review in reviews]
        if split_differs and item.kind in CLAIM_KINDS:
            # Not the same items in both reviews: the chosen review's claims, or none yet (the
            # split item below stands for them).
            chosen_review = reviews[assignments.index(chosen)] if chosen is not None else {}
            if key not in chosen_review:
                continue
            decision = decisions.get(key)
            if decision is not None:
                item.status, item.value, item.decision = DECIDED, decision.value, decision
            else:
                item.status, item.value = CHOSEN_REVIEW, chosen_review[key].value
            items.append(item)
            continue
        _settle(item, decisions.get(key), chosen_vote=_vote_of(item, assignments, chosen))
        items.append(item)
    if split_differs and chosen is None:
        items.append(Item(SPLIT, SPLIT, votes=[_claims(a) for a in assignments]))
    return AnswerItems(
        answer=answer,
        assignments=assignments,
        items=items,
        resolution=resolution,
        split_differs=split_differs,
    )


def _resolution(answer: Answer) -> AnswerResolution | None:
    try:
        return answer.resolution
    except AnswerResolution.DoesNotExist:
        return None


_NO_VOTE = object()


def _vote_of(item: Item, assignments: list[AnswerAssignment], chosen) -> Any:
    if chosen is None:
        return _NO_VOTE
    return item.votes[[a.pk for a in assignments].index(chosen.pk)]


def _settle(item: Item, decision: AnswerItemDecision | None, *, chosen_vote: Any) -> None:
    votes = item.votes
    if len(votes) == 1:
        item.status, item.value = SINGLE, votes[0]
    elif None not in votes and all(vote == votes[0] for vote in votes):
        item.status, item.value = AGREED, votes[0]
    elif decision is not None:
        item.status, item.value, item.decision = DECIDED, decision.value, decision
    elif chosen_vote is not _NO_VOTE and chosen_vote is not None:
        item.status, item.value = CHOSEN_REVIEW, chosen_vote
    else:
        item.status, item.value = UNDECIDED, None


def settled_review(compared: AnswerItems) -> dict[str, Any] | None:
    """The answer's gold grades in the bundle's shape (`answers.services.gold.review_of`), built
    item by item; None while any item is undecided."""
    if compared.undecided:
        return None
    by_key = {item.key: item for item in compared.items}
    if compared.split_differs:
        chosen = next(a for a in compared.assignments if a.pk == compared.resolution.chosen_id)
        structure = chosen
    else:
        structure = compared.assignments[0]
    claims = []
    for claim in structure.claims.all():
        at = claim_key(claim.start, claim.end)
        record: dict[str, Any] = {
            "start": claim.start,
            "end": claim.end,
            "support": by_key[f"{SUPPORT}:{at}"].value,
            "citations": [
                {
                    **_passage(citation.passage),
                    "grade": by_key[f"{CITATION}:{at}:{citation.passage_id}"].value,
                }
                for citation in claim.citations.all()
            ],
        }
        # As on the review page, a citation that does not support the claim (a grade the lead
        # may have decided) cannot help a group support it.
        grades = [citation["grade"] for citation in record["citations"]]
        groups = [
            group
            for group in by_key[f"{TOGETHER}:{at}"].value
            if all(i < len(grades) and grades[i] != 0 for i in group)
        ]
        if groups:
            record["supporting_sets"] = [list(group) for group in groups]
        claims.append(record)
    facts = sorted(
        (
            {"fact_id": str(item.fact), "present": item.value}
            for item in compared.items
            if item.kind == FACT
        ),
        key=lambda fact: int(fact["fact_id"]),
    )
    refusal = by_key.get(REFUSAL)
    return {
        "claims": claims,
        "facts": facts,
        "wrongly_refused": bool(refusal.value) if refusal is not None else False,
    }


def _passage(passage) -> dict[str, Any]:
    doc_id = passage.version.document.doc_id
    if passage.start is None:
        return {"doc_id": doc_id}
    return {"doc_id": doc_id, "start": passage.start, "end": passage.end}


def agreement_pairs(compared: AnswerItems) -> dict[str, list[tuple[int, int]]]:
    """Per graded kind, the two reviewers' values of each item both gave (in order), for
    `labelling.agreement`; a claim counts when both reviews have it (the same words)."""
    pairs: dict[str, list[tuple[int, int]]] = {kind: [] for kind in AGREEMENT_KINDS}
    if len(compared.assignments) != 2:
        return pairs
    reviews = [_grades(a, refused=compared.answer.refused) for a in compared.assignments]
    first, second = reviews
    for key, item in first.items():
        if item.kind not in AGREEMENT_KINDS or key not in second:
            continue
        a, b = item.value, second[key].value
        if a is None or b is None:
            continue
        order = AGREEMENT_KINDS[item.kind][1]
        pairs[item.kind].append((order[a], order[b]))
    return pairs
