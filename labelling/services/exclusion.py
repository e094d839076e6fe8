"""Taking a question out of its set, and putting it back.

An excluded question (a duplicate, one this corpus cannot answer) is nobody's work and no part
of the gold: `AssignmentQuerySet.held_by` and `claimable_by` leave it out of every labeller's
queue, and `labelling.services.votes` and `labelling.services.gold` out of agreement and gold.
Its labels stay, and every assignment's history records who excluded it and why.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from goldset.errors import ServiceError
from labelling.models import Assignment, Change, ChangeSubject, Question
from labelling.services import gold_state

MAX_EXCLUSION_REASON = 500


def exclude_question(*, question: Question, user, reason: str = "") -> Question:
    """Take a question out of its set (a duplicate, one this corpus cannot answer): it leaves
    every labeller's work and the gold set at once; its labels stay, and every assignment's
    history records who excluded it and why. Excluding it again changes nothing."""
    reason = reason.strip()
    if len(reason) > MAX_EXCLUSION_REASON:
        raise ServiceError(f"Keep the reason under {MAX_EXCLUSION_REASON} characters.")
    if "\x00" in reason:
        raise ServiceError("The reason contains a NUL character; type it again.")
    with transaction.atomic():
        locked = Question.objects.select_for_update().get(pk=question.pk)
        if locked.excluded_at is not None:
            return locked
        locked.excluded_at = timezone.now()
        locked.excluded_by = user
        locked.exclusion_reason = reason
        locked.save(update_fields=["excluded_at", "excluded_by", "exclusion_reason"])
        _record_question_change(locked, action="exclude question", reason=reason, user=user)
        gold_state.mark_questions_stale(_keys(locked))
    return locked


def include_question(*, question: Question, user) -> Question:
    """Put an excluded question back into its set, with its assignments and labels."""
    with transaction.atomic():
        locked = Question.objects.select_for_update().get(pk=question.pk)
        if locked.excluded_at is None:
            return locked
        locked.excluded_at = None
        locked.excluded_by = None
        locked.exclusion_reason = ""
        locked.save(update_fields=["excluded_at", "excluded_by", "exclusion_reason"])
        _record_question_change(locked, action="include question", reason="", user=user)
        gold_state.mark_questions_stale(_keys(locked))
    return locked


def _keys(question: Question):
    """The (pool, question) pairs the question was assigned in."""
    return Assignment.objects.filter(question=question).values_list("pool_id", "question_id")


def _record_question_change(question: Question, *, action: str, reason: str, user) -> None:
    Change.objects.bulk_create(
        [
            Change(
                assignment=assignment,
                subject=ChangeSubject.ASSIGNMENT,
                action=action,
                after={"reason": reason} if reason else None,
                made_by=user,
            )
            for assignment in Assignment.objects.filter(question=question)
        ]
    )
