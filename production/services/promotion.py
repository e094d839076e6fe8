"""Promotion: labelled production questions join another question set with their labels, so
that set's next gold set version holds them. Frozen gold sets never change: a gold set is a
stored bundle, and promotion only adds to the question set the next finalise reads.

Each question is copied with everything the gold rule reads: its pool candidates (with their
provenance), every labeller's assignment, grades, spans and verdict, and the lead's resolutions,
in a pool of its own (`production-<sample>`) in the target set.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from goldset.errors import ServiceError
from labelling.models import (
    Assignment,
    Candidate,
    Judgement,
    Pool,
    PoolState,
    Provenance,
    Question,
    QuestionSet,
    Resolution,
    Span,
    Verdict,
)
from production.models import PromotedQuestion, Sample, SampledTrace


def promote_questions(
    *, sample: Sample, target: QuestionSet, question_ids: Sequence[int], user=None
) -> list[Question]:
    """Copy the sample's questions `question_ids` (with their labels) into `target`. A
    question already promoted into `target` is not copied twice."""
    source_set = sample.question_set
    if source_set is None:
        raise ServiceError("This sample has no question set yet.")
    if target.project_id != sample.project_id:
        raise ServiceError("The gold set belongs to another project.")
    if target.pk == source_set.pk:
        raise ServiceError("Promote into another question set than the sample's own.")
    source_pool = source_set.pools.order_by("created_at").first()
    if source_pool is None:
        raise ServiceError("The sample's questions were never pooled, so nothing is labelled.")
    rows = list(
        SampledTrace.objects.filter(sample=sample, question_id__in=question_ids)
        .select_related("trace", "question")
        .order_by("pk")
    )
    done = set(
        PromotedQuestion.objects.filter(question__question_set=target).values_list(
            "sampled_trace__trace_id", flat=True
        )
    )
    rows = [row for row in rows if row.trace_id not in done]
    if not rows:
        return []
    taken = set(target.questions.values_list("external_id", flat=True))
    made = []
    with transaction.atomic():
        pool, _ = Pool.objects.get_or_create(
            question_set=target,
            name=f"production-{sample.pk}",
            defaults={"depth": source_pool.depth, "state": PoolState.READY, "created_by": user},
        )
        pool.retrievers.add(*source_pool.retrievers.all())
        for row in rows:
            external_id = row.trace.trace_id
            if external_id in taken:
                external_id = f"{external_id}-sample-{sample.pk}"
            taken.add(external_id)
            source = row.question
            question = Question.objects.create(
                question_set=target,
                external_id=external_id,
                text=source.text,
                source="production",
                tags=[*source.tags, f"trace:{row.trace.trace_id}", f"sample:{sample.pk}"],
            )
            _copy_labels(source_pool, source, pool, question)
            promoted = PromotedQuestion.objects.create(
                question=question, sampled_trace=row, promoted_by=user
            )
            question.origin = production_origin(row, promoted_at=promoted.promoted_at)
            question.save(update_fields=["origin"])
            made.append(question)
    return made


def production_origin(row: SampledTrace, *, promoted_at) -> dict:
    """What a gold set's manifest says of a question promoted from this sampled trace."""
    return {
        "trace_id": row.trace.trace_id,
        "sample": row.sample_id,
        "rule": row.sample.rule.name,
        "rule_version": row.sample.rule.version,
        "stratum": row.stratum,
        "inclusion_probability": row.inclusion_probability,
        "promoted_at": promoted_at.isoformat(),
    }


def _copy_labels(source_pool: Pool, source: Question, pool: Pool, question: Question) -> None:
    candidates = {}
    for candidate in Candidate.objects.filter(pool=source_pool, question=source).order_by("pk"):
        old = candidate.pk
        candidate.pk, candidate.pool, candidate.question = None, pool, question
        candidate.save()
        candidates[old] = candidate
    Provenance.objects.bulk_create(
        Provenance(
            candidate=candidates[p.candidate_id],
            retriever_id=p.retriever_id,
            rank=p.rank,
            score=p.score,
            start=p.start,
            end=p.end,
        )
        for p in Provenance.objects.filter(candidate_id__in=list(candidates))
    )
    # Calibration answers are no labels of the question: they stay behind.
    for assignment in Assignment.objects.work().filter(pool=source_pool, question=source):
        old_assignment = assignment.pk
        assignment.pk, assignment.pool, assignment.question = None, pool, question
        assignment.save()
        for judgement in Judgement.objects.filter(assignment_id=old_assignment):
            old_judgement = judgement.pk
            judgement.pk, judgement.assignment = None, assignment
            judgement.candidate = candidates[judgement.candidate_id]
            judgement.save()
            _copy_spans(Span.objects.filter(judgement_id=old_judgement), judgement=judgement)
        verdict = Verdict.objects.filter(assignment_id=old_assignment).first()
        if verdict is not None:
            verdict.pk, verdict.assignment = None, assignment
            verdict.save()
    for resolution in Resolution.objects.filter(pool=source_pool, question=source):
        old_resolution = resolution.pk
        resolution.pk, resolution.pool, resolution.question = None, pool, question
        if resolution.candidate_id is not None:
            resolution.candidate = candidates[resolution.candidate_id]
        resolution.save()
        _copy_spans(Span.objects.filter(resolution_id=old_resolution), resolution=resolution)


def _copy_spans(spans, **owner) -> None:
    Span.objects.bulk_create(
        Span(version_id=s.version_id, start=s.start, end=s.end, quote=s.quote, **owner)
        for s in spans
    )
