"""The order a labeller judges an adaptive pool's candidates in (`goldeval.pooling` decides).

A pool created with a judging order other than depth-k, or with a stopping rule, shows each
question's candidates in the order `goldeval.pooling.judging_order` gives: the candidates the
labeller judged, in the order they judged them, then the rest, most likely relevant first. What
it is given is read here:

- each retriever's ranking of the candidates the labeller may see, from their provenance
  (which stays on the server: the page shows the order only);
- the labeller's own judgements of the question, in the order they were first made;
- each retriever's record in the labeller's own judgements of the pool's other questions;
- each candidate's text (its document's title and the passage, as the page shows them), which
  the ``cal`` order learns from.

Only the labeller's own work is read, so no one's grades shape anyone else's page, not even as
an order. The order is asked again at every page load, so a reload re-orders what is left.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Count, Q

from goldeval.pooling import RunRecord, StoppingRule, judging_order
from labelling.models import Judgement, Provenance


def in_judging_order(rows: Sequence, *, assignment, user, strategy: str) -> list:
    """``rows`` (`passages_for_grading`'s, each with ``pk``, ``grade``, ``doc_title`` and
    ``passage``) in judging order."""
    by_id = {row.pk: row for row in rows}
    rankings_by_run: dict[int, list[int]] = {}
    provenance = (
        Provenance.objects.filter(candidate_id__in=by_id)
        .order_by("retriever_id", "rank", "candidate_id")
        .values_list("retriever_id", "candidate_id")
    )
    for retriever_id, candidate_id in provenance:
        rankings_by_run.setdefault(retriever_id, []).append(candidate_id)
    runs = sorted(rankings_by_run)
    judged = [
        (candidate_id, grade >= 1)
        for candidate_id, grade in Judgement.objects.filter(
            assignment_id=assignment.pk, candidate_id__in=by_id
        )
        .order_by("created_at", "pk")
        .values_list("candidate_id", "grade")
    ]
    prior = _records(assignment, user, runs)
    texts = {row.pk: f"{row.doc_title or ''}\n{row.passage or ''}" for row in rows}
    rest = judging_order(
        [rankings_by_run[run] for run in runs], judged, strategy, prior=prior, texts=texts
    )
    order = [candidate_id for candidate_id, _ in judged] + rest
    placed = set(order)
    # A candidate no retriever's provenance names (none should be) keeps its shuffled place
    # after the ordered ones, so nothing the labeller may see is ever left off the page.
    order += [row.pk for row in rows if row.pk not in placed]
    return [by_id[candidate_id] for candidate_id in order]


def _records(assignment, user, runs: list[int]) -> list[RunRecord]:
    """Each retriever's record in the user's judgements of the pool's other questions."""
    counts = {
        row["candidate__provenance__retriever_id"]: RunRecord(row["judged"], row["relevant"])
        for row in Judgement.objects.filter(
            assignment__pool_id=assignment.pool_id, assignment__labeller_id=user.pk
        )
        .exclude(assignment__question_id=assignment.question_id)
        .values("candidate__provenance__retriever_id")
        .annotate(
            judged=Count("pk", distinct=True),
            relevant=Count("pk", distinct=True, filter=Q(grade__gte=1)),
        )
        .order_by()
    }
    return [counts.get(run, RunRecord()) for run in runs]


def stop_reached(rule: StoppingRule, rows: Sequence) -> bool:
    """Whether the labeller may stop: ``rows`` in judging order, so their graded ones are the
    judgements in the order made (a write's new grade, set on a row read before it, is the
    only one out of place, and it is the newest)."""
    return rule.reached([row.grade >= 1 for row in rows if row.grade is not None])
