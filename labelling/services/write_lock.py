"""The rows every grading write starts from: the project access with the assignment the write
is for (`held_assignment`, what the view checks), that assignment locked, with what the write
needs to know about guidelines and the verdict (`locked_assignment`, what
`labelling.services.judgements` starts every write with), and the judgement the write changes
with its spans (`judgement_with_spans`)."""

from __future__ import annotations

from django.db.models import F, OuterRef, Prefetch, Subquery

from corpus.access import ProjectAccess, project_access
from labelling.models import Assignment, Guideline, Judgement, Span, Verdict


def held_assignment(
    *, user, slug: str, pool_id: int, question_id: int
) -> tuple[ProjectAccess, Assignment | None]:
    """`project_access(user, slug)`, and the user's assignment for that question in the
    project with only `id`, `pool_id`, `question_id` and `labeller_id` read (the rest load on
    first use), or None if the user holds none."""
    access = project_access(user, slug)
    assignment = (
        Assignment.objects.in_project(access.project)
        .held_by(user)
        .for_question(pool_id=pool_id, question_id=question_id)
        .only("id", "pool_id", "question_id", "labeller_id", "slot")
        .order_by("pk")
        .first()
    )
    return access, assignment


def locked_assignment(
    *, assignment_id: int, labeller_id: int | None, guideline_version: int
) -> Assignment | None:
    """The assignment (None unless it is `labeller_id`'s), locked until the transaction ends
    where the database locks rows, with `current_guideline_id` and `current_guideline_version`
    (the project's newest guideline, or None), `shown_guideline_id` (the project's guideline
    of `guideline_version`, or None), `verdict_outcome` (the assignment's verdict, or None)
    and `lease_minutes` (the project's lease, which the write renews).
    """
    if labeller_id is None:
        return None
    guidelines = Guideline.objects.filter(project_id=OuterRef("pool__question_set__project_id"))
    newest = guidelines.order_by("-version")
    return (
        Assignment.objects.filter(pk=assignment_id, labeller_id=labeller_id)
        .annotate(
            current_guideline_id=Subquery(newest.values("pk")[:1]),
            current_guideline_version=Subquery(newest.values("version")[:1]),
            shown_guideline_id=Subquery(
                guidelines.filter(version=guideline_version).values("pk")[:1]
            ),
            verdict_outcome=Subquery(
                Verdict.objects.filter(assignment_id=OuterRef("pk")).values("outcome")[:1]
            ),
            # A column of a join the guideline subqueries make anyway: cheaper to build than a
            # third subquery (a grade's CPU is mostly building its queries).
            lease_minutes=F("pool__question_set__project__lease_minutes"),
        )
        .select_for_update(of=("self",))
        # By pk alone: the model's ordering (pool, question, slot) would join three tables
        # into a query that finds one row by its key.
        .order_by()
        .first()
    )


def judgement_with_spans(*, assignment_id: int, candidate_id: int) -> Judgement | None:
    """The assignment's judgement of the candidate (None if there is none) with its spans in
    `judgement.spans.all()` (unordered); a span's `created_at` loads on first use (a write
    never reads it)."""
    return (
        Judgement.objects.filter(assignment_id=assignment_id, candidate_id=candidate_id)
        # Unordered: the spans' model ordering (version, start) joins the version and the
        # document to sort what the caller sorts itself.
        .prefetch_related(Prefetch("spans", queryset=Span.objects.defer("created_at").order_by()))
        .first()
    )
