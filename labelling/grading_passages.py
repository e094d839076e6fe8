"""The passages a labeller sees on the grading page (`passages_for_grading`), with what the
page and every grading write need to know of each, in one query."""

from __future__ import annotations

from django.db.models import Case, Count, F, IntegerField, OuterRef, Subquery, Value, When
from django.db.models.functions import Coalesce, Substr

from labelling.models import Candidate, Change, ChangeSubject, Judgement


def passages_for_grading(
    *, assignment, user, context_chars: int = 0, candidate_id: int | None = None
) -> list[Candidate]:
    """The passages of an assignment that the user sees (`not_hidden_from`), in page order,
    each with `grade` (the assignment's judgement of it, or None), `graded`, `revision`
    (changes made to its judgement), `passage` (its text),
    `doc_id`, `doc_title` and, with `context_chars`, `window`/`window_start`: its text with
    that much around it. Only one candidate with `candidate_id`."""
    if not user.is_authenticated:
        return []
    changes = (
        Change.objects.filter(
            assignment_id=assignment.pk,
            subject=ChangeSubject.JUDGEMENT,
            candidate_id=OuterRef("pk"),
        )
        .order_by()
        .values("candidate_id")
        .annotate(count=Count("*"))
        .values("count")
    )
    grade = Judgement.objects.filter(assignment_id=assignment.pk, candidate_id=OuterRef("pk"))
    passages = (
        Candidate.objects.of_assignment(assignment)
        .not_hidden_from(user)
        .only("id", "pool_id", "question_id", "version_id", "start", "end", "shuffle_rank")
        .annotate(
            doc_id=F("version__document__doc_id"),
            doc_title=F("version__document__title"),
            grade=Subquery(grade.values("grade")[:1]),
            revision=Coalesce(Subquery(changes), 0),
            passage=Substr("version__text", F("start") + 1, F("end") - F("start")),
        )
        .order_by("shuffle_rank", "id")
    )
    if candidate_id is not None:
        passages = passages.filter(pk=candidate_id)
    if context_chars:
        window_start = Case(
            When(start__gt=context_chars, then=F("start") - context_chars),
            default=Value(0),
            output_field=IntegerField(),
        )
        passages = passages.annotate(
            window_start=window_start,
            window=Substr(
                "version__text",
                window_start + 1,
                F("end") + context_chars - window_start,
            ),
        )
    rows = list(passages)
    for row in rows:
        row.graded = row.grade is not None
    return rows
