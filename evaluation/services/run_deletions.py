"""Deleting a run of a gold set: leads and admins do it in the browser, and it is recorded.

A run stored by mistake, or with values no reader can hold (stored before they were checked),
would otherwise stay in every default figure and on every page that lists runs. Deleting it
removes the run, the stored figures that used it and its points on a retriever's plot over
changes; a `RunDeletion` row keeps what it was, who deleted it and when, shown on the
evaluation page.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from evaluation.models import EvaluationReport, EvaluationRun, RunDeletion
from evaluation.services import reports
from evaluation.services.gold_sets import GoldSetError


def delete_run(*, run: EvaluationRun, user) -> RunDeletion:
    """Delete ``run`` and what was computed from it, record who did it and when, then queue the
    evaluation page's default figures without it. Access is the caller's to check."""
    with transaction.atomic():
        locked = (
            EvaluationRun.objects.select_for_update()
            .select_related("gold_set")
            .filter(pk=run.pk)
            .first()
        )
        if locked is None:
            raise GoldSetError(f"The run {run.name} was already deleted.")
        deletion = RunDeletion.objects.create(
            gold_set=locked.gold_set,
            name=locked.name,
            source=locked.source,
            file_name=locked.file_name,
            sha256=locked.sha256,
            questions=locked.questions,
            stored_by_id=locked.created_by_id,
            stored_at=locked.created_at,
            deleted_by=user,
            deleted_at=timezone.now(),
        )
        # Stored figures of any choice that included the run: a gold set has a handful, and
        # a JSON containment lookup is PostgreSQL's only, so they are picked here.
        stale = [
            pk
            for pk, choice in EvaluationReport.objects.filter(
                gold_set_id=locked.gold_set_id
            ).values_list("pk", "choice")
            if locked.pk in ((choice or {}).get("runs") or [])
        ]
        EvaluationReport.objects.filter(pk__in=stale).delete()
        locked.delete()  # its IndexEvaluation rows (the retriever's plot) go with it
        gold_set = locked.gold_set
        choice = reports.default_choice(gold_set)
        if reports.stored_report(gold_set, choice) is None:
            reports.start_report(gold_set=gold_set, choice=choice, user=user)
    return deletion
