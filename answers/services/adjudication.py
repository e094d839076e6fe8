"""Agreement between the two reviews of an answer, and the lead's decision when they differ.

The statistics are `labelling.agreement`'s (percent, Cohen's kappa, Krippendorff's alpha, each
with its bootstrap interval, the confusion matrix), once per judgement kind: a claim's support
(none < partial < full), a citation's grade (0 < 1 < 2), a fact's presence (no < partly < yes)
and the refusal call (right < wrong), over the items both reviewers of a double-reviewed answer
graded. The lead decides item by item (`decide_item`) what the reviewers differ on; items they
agree on are settled without the lead (`answers.services.items`). Answers citing a document the
viewer may not see are left out of everything here (rows and counts), as the passage pages
leave hidden passages out; so are answers the viewer reviewed (blind review).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from answers.models import Answer, AnswerAssignment, AnswerItemDecision, AnswerResolution
from answers.services import items
from corpus.models import Document
from goldset.errors import ServiceError
from labelling.agreement import pairwise_report
from labelling.models import QuestionSet, included_q

# The review page's words for a citation's grade (support and presence have model labels).
CITATION_WORDS = {2: "supports", 1: "partly", 0: "does not support"}


def quoted_review(assignment: AnswerAssignment) -> dict:
    """A review as the lead reads it to decide: text quoted, never offsets or ids."""
    text = assignment.answer.text
    claims = []
    for claim in assignment.claims.all():
        citations = []
        for citation in claim.citations.all():
            passage = citation.passage
            version_text = passage.version.text
            quote = (
                version_text if passage.start is None else version_text[passage.start : passage.end]
            )
            citations.append(
                {
                    "doc_id": passage.version.document.doc_id,
                    "quote": quote,
                    "grade": CITATION_WORDS.get(citation.grade, "not graded"),
                }
            )
        claims.append(
            {
                "quote": text[claim.start : claim.end],
                "support": claim.get_support_display() if claim.support else "not graded",
                "citations": citations,
                # Partial citations recorded as supporting the claim together, by document.
                "supporting": [
                    [citations[i]["doc_id"] for i in group if i < len(citations)]
                    for group in claim.supporting_sets
                ],
            }
        )
    facts = [
        {"quote": judgement.fact.text, "present": judgement.get_present_display()}
        for judgement in sorted(assignment.facts.all(), key=lambda f: f.fact.position)
    ]
    return {"claims": claims, "facts": facts, "wrongly_refused": assignment.wrongly_refused}


def adjudicable(question_set: QuestionSet, viewer):
    """The answers of the set a lead may adjudicate: questions still in the set, every passage
    one the viewer may see, and none the viewer reviewed themselves (a reviewer never sees the
    other review of the same answer)."""
    return (
        Answer.objects.filter(included_q("question__"), run__question_set=question_set)
        .exclude(passages__version__document__in=Document.objects.hidden_from(viewer))
        .exclude(assignments__labeller=viewer)
    )


def _double_reviewed(question_set: QuestionSet, viewer) -> list[Answer]:
    answers = (
        adjudicable(question_set, viewer)
        .select_related("run", "question", "resolution__chosen__labeller")
        .prefetch_related(
            "assignments__labeller",
            "assignments__claims__citations__passage__version__document",
            "assignments__facts__fact",
            "item_decisions__decided_by",
        )
        .order_by("run__name", "question_id")
        .distinct()
    )
    return [
        answer
        for answer in answers
        if len(answer.assignments.all()) == 2
        and all(a.done_at is not None for a in answer.assignments.all())
    ]


def answer_agreement(*, question_set: QuestionSet, viewer) -> dict[str, dict]:
    """Per judgement kind (claim support, citation grade, fact presence, refusal),
    `labelling.agreement.pairwise_report` over the items both reviewers of a double-reviewed
    answer graded: each statistic with its bootstrap interval, and the number of items."""
    pairs: dict[str, list[tuple[int, int]]] = {kind: [] for kind in items.AGREEMENT_KINDS}
    for answer in _double_reviewed(question_set, viewer):
        compared = items.answer_items(answer)
        for kind, kind_pairs in items.agreement_pairs(compared).items():
            pairs[kind] += kind_pairs
    return {
        items.AGREEMENT_KINDS[kind][0]: pairwise_report(kind_pairs)
        for kind, kind_pairs in pairs.items()
    }


def _slot(assignment: AnswerAssignment) -> int:
    return assignment.slot


@dataclass
class Choice:
    value: str  # as posted
    label: str
    keys: str  # the page's keys for it, space-separated
    checked: bool = False


@dataclass
class ItemRow:
    """A disputed item as the lead reads it to decide: what it is about (the claim's words, the
    cited text, the fact), each reviewer's value in words, and the choices with their keys."""

    item: items.Item
    anchor: str  # the row's HTML id
    kind: str
    claim: str = ""
    doc_id: str = ""
    quote: str = ""
    fact: str = ""
    votes: list[tuple[str, str]] = field(default_factory=list)
    choices: list[Choice] = field(default_factory=list)
    # The row the page goes on to once this one is decided: the next undecided one.
    next: str = ""


@dataclass
class AnswerDispute:
    answer: Answer
    rows: list[ItemRow]
    # Each review quoted whole, for the whole-review decision (and claims split differently).
    reviews: list[tuple[AnswerAssignment, dict]]
    resolution: AnswerResolution | None
    split_differs: bool
    undecided: int


KIND_NAMES = {
    items.SUPPORT: "claim support",
    items.CITATION: "citation grade",
    items.TOGETHER: "citations that support the claim together",
    items.FACT: "fact presence",
    items.REFUSAL: "refusal",
}

_CHOICES = {
    items.SUPPORT: [("full", "supported", "f 2"), ("partial", "partly", "p 1"),
                    ("none", "not supported", "n 0")],
    items.CITATION: [("2", "supports", "2"), ("1", "partly", "1"), ("0", "does not support", "0")],
    items.FACT: [("yes", "present", "y 2"), ("partly", "partly", "p 1"), ("no", "missing", "n 0")],
    items.REFUSAL: [("wrong", "wrong: it could be answered", "y"), ("right", "right", "n")],
}  # fmt: skip


def _anchor(answer: Answer, key: str) -> str:
    return f"item-{answer.pk}-" + key.replace(":", "-")


def _words(kind: str, value) -> str:
    if value is None:
        return "not graded"
    if kind == items.TOGETHER:
        return "; ".join(" + ".join(f"citation {i + 1}" for i in group) for group in value) or (
            "no group"
        )
    return items.WORDS[kind].get(value, str(value))


def _row(answer: Answer, compared: items.AnswerItems, item: items.Item) -> ItemRow:
    row = ItemRow(item=item, anchor=_anchor(answer, item.key), kind=KIND_NAMES[item.kind])
    if item.claim is not None:
        row.claim = answer.text[item.claim[0] : item.claim[1]]
    if item.passage is not None:
        passage = next(
            c.passage
            for a in compared.assignments
            for claim in a.claims.all()
            for c in claim.citations.all()
            if c.passage_id == item.passage
        )
        text = passage.version.text
        row.doc_id = passage.version.document.doc_id
        row.quote = text if passage.start is None else text[passage.start : passage.end]
    if item.fact is not None:
        row.fact = next(
            f.fact.text
            for a in compared.assignments
            for f in a.facts.all()
            if f.fact_id == item.fact
        )
    names = [a.labeller.get_username() for a in compared.assignments]
    row.votes = [
        (name, _words(item.kind, vote)) for name, vote in zip(names, item.votes, strict=True)
    ]
    if item.kind == items.TOGETHER:
        row.choices = [
            Choice(
                str(a.slot),
                f"{name}'s",
                str(index + 1),
                item.decision is not None and vote == item.value,
            )
            for index, (a, name, vote) in enumerate(
                zip(compared.assignments, names, item.votes, strict=True)
            )
        ]
    else:
        row.choices = [
            Choice(
                value,
                label,
                keys,
                item.decision is not None and items.CHOICES[item.kind][value] == item.value,
            )
            for value, label, keys in _CHOICES[item.kind]
        ]
    return row


def answer_disputes(*, question_set: QuestionSet, viewer) -> list[AnswerDispute]:
    """Double-reviewed answers whose reviews differ, each differing item on its own row,
    decided or not (the queue shows both); items the reviewers agree on are not listed."""
    found = []
    for answer in _double_reviewed(question_set, viewer):
        compared = items.answer_items(answer)
        disputed = [item for item in compared.disputed if item.kind != items.SPLIT]
        if not disputed and not compared.split_differs:
            continue
        found.append(
            AnswerDispute(
                answer=answer,
                rows=[_row(answer, compared, item) for item in disputed],
                reviews=[(a, quoted_review(a)) for a in compared.assignments],
                resolution=compared.resolution,
                split_differs=compared.split_differs,
                undecided=len(compared.undecided),
            )
        )
    rows = [row for dispute in found for row in dispute.rows]
    for index, row in enumerate(rows):
        later = rows[index + 1 :] + rows[:index]
        following = next((r for r in later if not r.item.settled), None)
        row.next = (following or row).anchor
    return found


def decide_item(*, answer: Answer, item: str, value: str, user) -> AnswerItemDecision:
    """The lead decides one disputed item of the answer; deciding again replaces it."""
    compared = items.answer_items(answer)
    if compared is None or len(compared.assignments) != 2:
        raise ServiceError("This answer has no two finished reviews to decide between.")
    found = next((i for i in compared.disputed if i.key == item), None)
    if found is None or found.kind == items.SPLIT:
        raise ServiceError("The reviewers agree on that item, or it is gone; reload the page.")
    if found.kind == items.TOGETHER:
        slots = {
            str(a.slot): vote for a, vote in zip(compared.assignments, found.votes, strict=True)
        }
        if value not in slots:
            raise ServiceError("Choose one reviewer's groups of citations.")
        decided = slots[value]
    else:
        if value not in items.CHOICES[found.kind]:
            words = ", ".join(label for _, label, _ in _CHOICES[found.kind])
            raise ServiceError(f"Choose one of: {words}.")
        decided = items.CHOICES[found.kind][value]
    with transaction.atomic():
        decision, _ = AnswerItemDecision.objects.update_or_create(
            answer=answer, item=item, defaults={"value": decided, "decided_by": user}
        )
    return decision


def resolve_answer(*, answer: Answer, chosen: AnswerAssignment, user) -> AnswerResolution:
    """The lead decides which review of the answer stands; deciding again replaces it."""
    if chosen.answer_id != answer.pk:
        raise ServiceError("That review is of another answer.")
    if chosen.done_at is None:
        raise ServiceError("That review is not finished yet.")
    with transaction.atomic():
        resolution, _ = AnswerResolution.objects.update_or_create(
            answer=answer, defaults={"chosen": chosen, "decided_by": user}
        )
    return resolution
