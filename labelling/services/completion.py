"""Where a labeller stands on one assignment, and whether it is done.

Done means a verdict and a grade on every passage the labeller may see now (or, in a pool
with a stopping rule, on every passage up to where the rule is reached), so it is recomputed
after every write (`labelling.services.judgements`) and whenever access to a document changes
(`refresh_completion`, which the corpus calls through the listener `LabellingConfig.ready()`
hands it). Only the labeller's own work is counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Exists, OuterRef
from django.utils import timezone

from goldeval.pooling import StoppingRule
from labelling.grading_passages import passages_for_grading
from labelling.models import Assignment, Candidate, Verdict, VerdictOutcome
from labelling.services import gold_state
from labelling.services.escalation import escalate_if_due
from labelling.services.judging_order import stop_reached


@dataclass(frozen=True)
class Progress:
    """Where one labeller stands on one question (only their own work, only what they see)."""

    candidate_ids: list[int]  # the passages the labeller sees, in page order
    graded: int
    verdict: str | None  # the outcome, if any
    done: bool
    relevant: int = 0  # passages graded 1 or 2
    # The pool's stopping rule, said in words ("" if none), and once it is reached, how many
    # passages are left that the labeller may grade for a full pass but need not.
    stop_rule: str = ""
    optional: int = 0

    @property
    def total(self) -> int:
        return len(self.candidate_ids)

    @property
    def contradiction(self) -> str:
        """What contradicts itself in this labeller's answers, said plainly ("" if nothing)."""
        if self.verdict == VerdictOutcome.UNANSWERABLE and self.relevant:
            passages = "a passage is" if self.relevant == 1 else f"{self.relevant} passages are"
            return (
                f"You marked the question unanswerable, but {passages} graded 1 or 2 (answers "
                "it at least in part). Change the verdict or the grades."
            )
        return ""

    @property
    def verdict_label(self) -> str:
        return VerdictOutcome(self.verdict).label if self.verdict else ""


_UNREAD = object()


def assignment_progress(
    assignment: Assignment, labeller, *, passages=None, verdict=_UNREAD
) -> Progress:
    """Done means a verdict and a grade on every passage the labeller can see, or on those
    judged until the pool's stopping rule is reached (the rest are then optional).

    ``passages`` (`passages_for_grading`, with `grade` kept up to date by the write
    that read them) saves reading them again; so does ``verdict`` (the verdict's outcome or
    None, read by the caller under the assignment's lock).
    """
    if passages is None:
        passages = passages_for_grading(assignment=assignment, user=labeller)
    visible = [(c.pk, c.grade) for c in passages]
    if verdict is _UNREAD:
        outcomes = Verdict.objects.filter(assignment=assignment).values_list("outcome", flat=True)
        outcome = outcomes.order_by().first()
    else:
        outcome = verdict
    graded_visible = sum(1 for _, grade in visible if grade is not None)
    rule = _stopping_rule(passages)
    stopped = graded_visible < len(visible) and rule is not None and stop_reached(rule, passages)
    return Progress(
        candidate_ids=[pk for pk, _ in visible],
        graded=graded_visible,
        verdict=outcome,
        done=outcome is not None and (graded_visible == len(visible) or stopped),
        relevant=sum(1 for _, grade in visible if grade is not None and grade >= 1),
        optional=len(visible) - graded_visible if stopped else 0,
        stop_rule=rule.describe() if rule is not None else "",
    )


def _stopping_rule(passages) -> StoppingRule | None:
    """The pool's stopping rule, as `passages_for_grading` read it with the passages (None if
    the pool has none: every passage then waits for a grade)."""
    if not passages or not hasattr(passages[0], "pool_stop_misses"):
        return None
    first = passages[0]
    rule = StoppingRule(misses=first.pool_stop_misses, budget=first.pool_stop_budget)
    return rule if rule.active else None


def update_completion(
    assignment: Assignment, labeller, *, passages=None, verdict=_UNREAD
) -> Progress:
    """Mark the assignment done or not done, as its labeller's work now stands. The write
    that completes a question's second assignment may give the question a third labeller
    (`labelling.services.escalation`), in the same transaction."""
    progress = assignment_progress(assignment, labeller, passages=passages, verdict=verdict)
    if progress.done and assignment.completed_at is None:
        assignment.completed_at = timezone.now()
        assignment.save(update_fields=["completed_at"])
        gold_state.mark_stale(pool_id=assignment.pool_id, question_id=assignment.question_id)
        escalate_if_due(assignment=assignment)
    elif not progress.done and assignment.completed_at is not None:
        assignment.completed_at = None
        assignment.save(update_fields=["completed_at"])
        gold_state.mark_stale(pool_id=assignment.pool_id, question_id=assignment.question_id)
    return progress


def refresh_completion(project, user_ids: set[int] | None, document_ids: set[int] | None) -> None:
    """Recompute "done" where access changed: a revoked passage no longer waits for a grade, a
    granted one does. Only assignments with a verdict can be done, so only they are read.
    Who may vote on which passage changed too, so the project's stored gold decisions are
    marked stale (`labelling.services.gold_state`)."""
    gold_state.mark_project_stale(project_id=project.pk)
    assignments = (
        Assignment.objects.in_project(project)
        .filter(labeller__isnull=False)
        .filter(Exists(Verdict.objects.filter(assignment=OuterRef("pk"))))
        .select_related("labeller")
    )
    if user_ids is not None:
        assignments = assignments.filter(labeller_id__in=user_ids)
    if document_ids is not None:
        touched = Candidate.objects.filter(
            pool_id=OuterRef("pool_id"),
            question_id=OuterRef("question_id"),
            version__document_id__in=document_ids,
        )
        assignments = assignments.filter(Exists(touched))
    for assignment in assignments:
        update_completion(assignment, assignment.labeller)
