"""The answer review: who reviews which answer, and each grade a labeller gives it.

Planning reuses the passages' plan (`labelling.assignment_plan`: an even spread, a seeded
double-labelled share); an answer goes only to labellers who may see every document it cites
or was given as context, so no review page shows a hidden passage. A labeller's grades are
theirs alone: every write names the assignment and is refused for anyone else's.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from answers.models import (
    Answer,
    AnswerAssignment,
    AnswerPassage,
    AnswerRun,
    CitationJudgement,
    ClaimEvidence,
    ClaimJudgement,
    FactJudgement,
    ReferenceAnswer,
    ReferenceFact,
)
from corpus.models import Document
from goldeval.formats.answer_gold import MAX_SUPPORTING_SETS
from goldset.errors import ServiceError
from labelling.assignment_plan import DEFAULT_DOUBLE_SHARE, PlanError, plan_assignments

SUPPORTS = ("full", "partial", "none")
CITATION_GRADES = (2, 1, 0)
PRESENCES = ("yes", "partly", "no")


@dataclass
class ReviewPlan:
    assignments: int
    answers: int
    unreachable: int  # answers no labeller may see whole: a lead's to grade


def plan_answer_review(
    *,
    run: AnswerRun,
    labellers: list,
    double_share: float = DEFAULT_DOUBLE_SHARE,
    seed: int = 0,
) -> ReviewPlan:
    """Assign every answer of the run not assigned yet; refused answers are reviewed too (the
    labeller says whether the refusal was wrong)."""
    answers = list(
        run.answers.filter(assignments__isnull=True).order_by("pk").prefetch_related("passages")
    )
    if not answers:
        raise ServiceError("Every answer of this run is already assigned.")
    if not labellers:
        raise ServiceError("Choose at least one labeller.")
    hidden_documents = {
        user.pk: set(
            Document.objects.hidden_from(user)
            .filter(project_id=run.project_id)
            .values_list("latest_version_id", flat=True)
        )
        for user in labellers
    }
    hidden = {
        answer.pk: {
            user.pk: sum(p.version_id in hidden_documents[user.pk] for p in answer.passages.all())
            for user in labellers
        }
        for answer in answers
    }
    try:
        plan = plan_assignments(
            questions=[answer.pk for answer in answers],
            labellers=[user.pk for user in labellers],
            double_share=double_share,
            seed=seed,
            hidden=hidden,
        )
    except PlanError as error:
        raise ServiceError(str(error)) from None
    by_pk = {answer.pk: answer for answer in answers}
    kept = [
        planned
        for planned in plan
        if planned.labeller is not None and hidden[planned.question][planned.labeller] == 0
    ]
    with transaction.atomic():
        for planned in kept:
            _create_assignment(
                by_pk[planned.question], labeller_id=planned.labeller, slot=planned.slot
            )
    reached = {planned.question for planned in kept}
    return ReviewPlan(
        assignments=len(kept), answers=len(reached), unreachable=len(answers) - len(reached)
    )


def _create_assignment(answer: Answer, *, labeller_id: int, slot: int) -> AnswerAssignment:
    """The assignment with one claim per sentence, each with its sentence's citations (none for
    a refusal whose sentences Goldset split itself: a refusal states nothing to grade)."""
    assignment = AnswerAssignment.objects.create(answer=answer, labeller_id=labeller_id, slot=slot)
    if answer.refused and not answer.sentences_given:
        return assignment
    citations: dict[int, list[int]] = {}
    for passage in answer.passages.filter(role="citation").order_by("position"):
        citations.setdefault(passage.sentence_id, []).append(passage.pk)
    for position, sentence in enumerate(answer.sentences.order_by("position")):
        claim = ClaimJudgement.objects.create(
            assignment=assignment, position=position, start=sentence.start, end=sentence.end
        )
        CitationJudgement.objects.bulk_create(
            CitationJudgement(claim=claim, passage_id=pk) for pk in citations.get(sentence.pk, [])
        )
    return assignment


def _open(assignment: AnswerAssignment, labeller) -> None:
    if assignment.labeller_id != labeller.pk:
        # Never said whose it is: the view 404s first; this guards other callers.
        raise ServiceError("This review is not yours.")


def record_claim_support(
    *, assignment: AnswerAssignment, labeller, claim: int, support: str
) -> ClaimJudgement:
    _open(assignment, labeller)
    if support not in SUPPORTS:
        raise ServiceError("Choose supported, partly supported or not supported.")
    found = assignment.claims.filter(position=claim).first()
    if found is None:
        raise ServiceError("This answer has no such claim; reload the page.")
    found.support = support
    found.save(update_fields=["support", "updated_at"])
    return found


def record_citation_grade(
    *, assignment: AnswerAssignment, labeller, claim: int, passage: int, grade: int
) -> CitationJudgement:
    _open(assignment, labeller)
    if grade not in CITATION_GRADES:
        raise ServiceError("A citation supports (2), partly supports (1) or does not (0).")
    found = CitationJudgement.objects.filter(
        claim__assignment=assignment, claim__position=claim, passage_id=passage
    ).first()
    if found is None:
        raise ServiceError("This claim has no such citation; reload the page.")
    with transaction.atomic():
        found.grade = grade
        found.save(update_fields=["grade"])
        if grade == 0:
            # A citation that does not support the claim cannot help a group support it.
            _drop_groups_with(found.claim, passage)
    return found


def _citation_passages(claim: ClaimJudgement) -> list[int]:
    """The claim's citations in the order the export lists them (positions are indexes here)."""
    return list(claim.citations.order_by("passage_id").values_list("passage_id", flat=True))


def _drop_groups_with(claim: ClaimJudgement, passage: int) -> None:
    passages = _citation_passages(claim)
    if passage not in passages:
        return
    index = passages.index(passage)
    kept = [group for group in claim.supporting_sets if index not in group]
    if kept != claim.supporting_sets:
        claim.supporting_sets = kept
        claim.save(update_fields=["supporting_sets", "updated_at"])


def add_supporting_set(
    *, assignment: AnswerAssignment, labeller, claim: int, citations: list[int]
) -> ClaimJudgement:
    """Record that the claim's citations at positions ``citations`` (0-based, passage order)
    together support it: two or more citations, each graded as partly supporting."""
    _open(assignment, labeller)
    found = assignment.claims.filter(position=claim).first()
    if found is None:
        raise ServiceError("This answer has no such claim; reload the page.")
    grades = list(found.citations.order_by("passage_id").values_list("grade", flat=True))
    group = sorted(set(citations))
    if len(group) != len(citations) or any(not 0 <= i < len(grades) for i in group):
        raise ServiceError("Supporting citations: choose citations of this claim; reload the page.")
    if len(group) < 2:
        raise ServiceError(
            "Supporting citations: tick two or more citations that support it together."
        )
    if any(grades[i] != 1 for i in group):
        raise ServiceError("Supporting citations: only citations graded partly (1) form a group.")
    if group in found.supporting_sets:
        raise ServiceError("Supporting citations: this group is already recorded.")
    if len(found.supporting_sets) >= MAX_SUPPORTING_SETS:
        raise ServiceError(
            f"Supporting citations: a claim holds at most {MAX_SUPPORTING_SETS} groups."
        )
    found.supporting_sets = [*found.supporting_sets, group]
    found.save(update_fields=["supporting_sets", "updated_at"])
    return found


def remove_supporting_set(
    *, assignment: AnswerAssignment, labeller, claim: int, group: int
) -> ClaimJudgement:
    _open(assignment, labeller)
    found = assignment.claims.filter(position=claim).first()
    if found is None or not 0 <= group < len(found.supporting_sets):
        raise ServiceError("That group of citations is already gone; reload the page.")
    found.supporting_sets = [g for i, g in enumerate(found.supporting_sets) if i != group]
    found.save(update_fields=["supporting_sets", "updated_at"])
    return found


def split_claim(
    *, assignment: AnswerAssignment, labeller, claim: int, at: int
) -> list[ClaimJudgement]:
    """Cut a claim in two at offset ``at`` of the answer (white space around the cut is left
    out of both). Both halves keep the sentence's citations and are graded afresh."""
    _open(assignment, labeller)
    found = assignment.claims.filter(position=claim).first()
    if found is None:
        raise ServiceError("This answer has no such claim; reload the page.")
    text = assignment.answer.text
    if not found.start < at < found.end or not (text[at].isspace() or text[at - 1].isspace()):
        raise ServiceError("Split a claim between two of its words.")
    left_end, right_start, end = at, at, found.end
    while left_end > found.start and text[left_end - 1].isspace():
        left_end -= 1
    while right_start < end and text[right_start].isspace():
        right_start += 1
    if not (found.start < left_end and right_start < end):
        raise ServiceError("Split a claim between two of its words.")
    passages = list(found.citations.values_list("passage_id", flat=True))
    with transaction.atomic():
        later = assignment.claims.filter(position__gt=claim).order_by("-position")
        for other in later:  # make room from the end, so positions never collide
            other.position += 1
            other.save(update_fields=["position"])
        found.end, found.support, found.supporting_sets = left_end, "", []
        found.save(update_fields=["end", "support", "supporting_sets", "updated_at"])
        found.citations.update(grade=None)
        second = ClaimJudgement.objects.create(
            assignment=assignment, position=claim + 1, start=right_start, end=end
        )
        CitationJudgement.objects.bulk_create(
            CitationJudgement(claim=second, passage_id=pk) for pk in passages
        )
    return [found, second]


def join_claims(*, assignment: AnswerAssignment, labeller, claim: int) -> ClaimJudgement:
    """Undo a split: the claim and the one after it become one again, to be graded afresh.
    Only claims of one sentence join (their citations are the same)."""
    _open(assignment, labeller)
    first = assignment.claims.filter(position=claim).first()
    second = assignment.claims.filter(position=claim + 1).first()
    if first is None or second is None:
        raise ServiceError("There is no next claim to join this one with.")
    inside = assignment.answer.sentences.filter(start__lte=first.start, end__gte=second.end)
    if not inside.exists():
        raise ServiceError("Only claims split from one sentence can be joined.")
    with transaction.atomic():
        first.end, first.support, first.supporting_sets = second.end, "", []
        first.save(update_fields=["end", "support", "supporting_sets", "updated_at"])
        first.citations.update(grade=None)
        second.delete()
        for other in assignment.claims.filter(position__gt=claim + 1).order_by("position"):
            other.position -= 1
            other.save(update_fields=["position"])
    return first


def add_claim_evidence(
    *,
    assignment: AnswerAssignment,
    labeller,
    claim: int,
    version: int,
    start: int,
    end: int,
    quote: str,
) -> ClaimEvidence:
    """A span of a context passage as evidence for the claim. It must lie inside a passage the
    answer was given, and its quote must be the stored text there (what the labeller saw)."""
    _open(assignment, labeller)
    found = assignment.claims.filter(position=claim).first()
    if found is None:
        raise ServiceError("This answer has no such claim; reload the page.")
    if not 0 <= start < end:
        raise ServiceError("Select some text of a context passage first.")
    inside = False
    for passage in assignment.answer.passages.filter(role="context", version_id=version):
        low = 0 if passage.start is None else passage.start
        high = len(passage.version.text) if passage.end is None else passage.end
        if low <= start and end <= high:
            inside = True
            text = passage.version.text
            break
    if not inside:
        raise ServiceError("Evidence must lie inside a passage the system was given.")
    if text[start:end] != quote:
        raise ServiceError("The selected text does not match the passage; reload the page.")
    return ClaimEvidence.objects.create(
        claim=found, version_id=version, start=start, end=end, quote=quote
    )


def remove_claim_evidence(*, assignment: AnswerAssignment, labeller, evidence: int) -> None:
    _open(assignment, labeller)
    deleted, _ = ClaimEvidence.objects.filter(claim__assignment=assignment, pk=evidence).delete()
    if not deleted:
        raise ServiceError("That evidence is already gone; reload the page.")


def reference_for(assignment: AnswerAssignment) -> ReferenceAnswer | None:
    """The facts this review grades: the version pinned at the first fact grade, else the
    question's current one."""
    if assignment.reference_id is not None:
        return assignment.reference
    return assignment.answer.question.reference_answers.order_by("-version").first()


def record_fact_presence(
    *, assignment: AnswerAssignment, labeller, fact: int, present: str
) -> FactJudgement:
    _open(assignment, labeller)
    if present not in PRESENCES:
        raise ServiceError("Choose present, partly or missing.")
    reference = reference_for(assignment)
    found = ReferenceFact.objects.filter(reference=reference, pk=fact).first()
    if reference is None or found is None:
        raise ServiceError("This fact is not one of the question's reference facts; reload.")
    with transaction.atomic():
        if assignment.reference_id is None:
            assignment.reference = reference
            assignment.save(update_fields=["reference"])
        judgement, _ = FactJudgement.objects.update_or_create(
            assignment=assignment, fact=found, defaults={"present": present}
        )
    return judgement


def set_wrongly_refused(*, assignment: AnswerAssignment, labeller, value: bool) -> None:
    _open(assignment, labeller)
    if value and not assignment.answer.refused:
        raise ServiceError("This answer did not refuse.")
    assignment.wrongly_refused = value
    assignment.save(update_fields=["wrongly_refused"])


def missing_grades(assignment: AnswerAssignment) -> list[str]:
    """What the labeller still has to grade, in plain words (empty: ready to finish)."""
    missing = []
    claims = list(assignment.claims.all())
    if any(not claim.support for claim in claims):
        missing.append("a claim's support")
    if CitationJudgement.objects.filter(claim__assignment=assignment, grade__isnull=True).exists():
        missing.append("a citation's grade")
    reference = reference_for(assignment)
    if reference is not None and not assignment.answer.refused:
        graded = set(assignment.facts.values_list("fact_id", flat=True))
        if any(fact.pk not in graded for fact in reference.facts.all()):
            missing.append("a reference fact")
    return missing


def finish_answer_review(*, assignment: AnswerAssignment, labeller) -> AnswerAssignment:
    _open(assignment, labeller)
    missing = missing_grades(assignment)
    if missing:
        raise ServiceError("Grade " + " and ".join(missing) + " before finishing.")
    if assignment.done_at is None:
        assignment.done_at = timezone.now()
        assignment.save(update_fields=["done_at"])
    return assignment


def passages_of(assignment: AnswerAssignment) -> list[AnswerPassage]:
    return list(
        assignment.answer.passages.select_related("version__document").order_by(
            "role", "sentence__position", "position"
        )
    )
