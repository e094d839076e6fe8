"""Agreement between the two reviews of an answer, and the lead's decision when they differ.

The statistics are `labelling.agreement`'s (percent, Cohen's kappa, Krippendorff's alpha, the
confusion matrix), once per judgement kind: a claim's support (none < partial < full), a
citation's grade (0 < 1 < 2) and a fact's presence (no < partly < yes), over the items both
reviewers of a double-reviewed answer graded. Answers citing a document the viewer may not see
are left out of everything here, as the passage pages leave hidden passages out.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from answers.models import Answer, AnswerAssignment, AnswerResolution
from answers.services.gold import review_of
from corpus.models import Document
from goldset.errors import ServiceError
from labelling.agreement import pairwise_report
from labelling.models import QuestionSet, included_q

SUPPORT_ORDER = {"none": 0, "partial": 1, "full": 2}
PRESENCE_ORDER = {"no": 0, "partly": 1, "yes": 2}
KINDS = ("claim support", "citation grade", "fact presence")


# The review page's words for a citation's grade (support and presence have model labels).
CITATION_WORDS = {2: "supports", 1: "partly", 0: "does not support"}


@dataclass
class Disagreement:
    answer: Answer
    # Each review with its grades quoted: the claim's words, the cited text, the fact's text.
    reviews: list[tuple[AnswerAssignment, dict]]
    resolution: AnswerResolution | None


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


def _double_reviewed(question_set: QuestionSet, viewer) -> list[Answer]:
    answers = (
        Answer.objects.filter(included_q("question__"), run__question_set=question_set)
        .exclude(passages__version__document__in=Document.objects.hidden_from(viewer))
        .select_related("run", "question")
        .prefetch_related(
            "assignments__labeller",
            "assignments__claims__citations__passage__version__document",
            "assignments__facts__fact",
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
    """Per judgement kind, `labelling.agreement.pairwise_report` over the paired grades."""
    pairs: dict[str, list[tuple[int, int]]] = {kind: [] for kind in KINDS}
    for answer in _double_reviewed(question_set, viewer):
        first, second = (review_of(a) for a in sorted(answer.assignments.all(), key=_slot))
        for a, b in zip(first["claims"], second["claims"], strict=False):
            if (a["start"], a["end"]) != (b["start"], b["end"]):
                continue  # claims split differently: not the same item
            pairs["claim support"].append(
                (SUPPORT_ORDER[a["support"]], SUPPORT_ORDER[b["support"]])
            )
            for x, y in zip(a["citations"], b["citations"], strict=False):
                pairs["citation grade"].append((x["grade"], y["grade"]))
        theirs = {fact["fact_id"]: fact["present"] for fact in second["facts"]}
        for fact in first["facts"]:
            if fact["fact_id"] in theirs:
                pairs["fact presence"].append(
                    (PRESENCE_ORDER[fact["present"]], PRESENCE_ORDER[theirs[fact["fact_id"]]])
                )
    return {kind: pairwise_report(kind_pairs) for kind, kind_pairs in pairs.items()}


def _slot(assignment: AnswerAssignment) -> int:
    return assignment.slot


def answer_disagreements(*, question_set: QuestionSet, viewer) -> list[Disagreement]:
    """Double-reviewed answers whose reviews differ, resolved or not (the queue shows both)."""
    found = []
    for answer in _double_reviewed(question_set, viewer):
        assignments = sorted(answer.assignments.all(), key=_slot)
        if review_of(assignments[0]) == review_of(assignments[1]):
            continue
        resolution = AnswerResolution.objects.filter(answer=answer).first()
        reviews = [(a, quoted_review(a)) for a in assignments]
        found.append(Disagreement(answer=answer, reviews=reviews, resolution=resolution))
    return found


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
