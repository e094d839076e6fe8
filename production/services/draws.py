"""A drawn sample becomes work: its questions a question set (`production-2026-W49`), the
production retrieval a `run` source pooled with the built-in retrievers, the leads told."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from corpus import jobs
from corpus.models import Job, JobState, Membership, Project, Retriever, RetrieverKind, Role
from corpus.services import retrieval
from goldset.errors import ServiceError
from labelling.models import Pool, Question, QuestionSet
from labelling.services import pools, run_import
from production.models import Sample, SampledTrace, SamplingRule
from production.services import sampling as sampling_services

log = logging.getLogger(__name__)
PRODUCTION_RETRIEVER = "production"


def set_name_for(moment: datetime) -> str:
    year, week, _ = moment.isocalendar()
    return f"production-{year}-W{week:02d}"


def pool_name_for(question_set: QuestionSet) -> str:
    """The sample's pool is named after its question set (``production-2026-w49``), which is
    unique in the project: a list of pools never shows two "production" pools."""
    return slugify(question_set.name)[:100]


class AlreadyDrawn(ServiceError):
    """The rule (this version of it) has drawn a sample in this ISO week already."""

    def __init__(self, sample: Sample):
        self.sample = sample
        name = sample.question_set.name if sample.question_set else f"sample {sample.pk}"
        super().__init__(
            f"The rule {sample.rule} already drew {name} this week: drawing is once a week per "
            "rule. To draw anew, change the rule (its next version draws again)."
        )


def drawn_in_week(*, rule: SamplingRule, moment: datetime) -> Sample | None:
    """The sample ``rule`` drew in the ISO week of ``moment`` (by its window's end), if any:
    the one rule of "once per rule and week", for the weekly loop and "Draw now" alike."""
    week = moment.isocalendar()[:2]
    for sample in rule.samples.select_related("question_set", "rule").order_by("-window_end"):
        if sample.window_end.isocalendar()[:2] == week:
            return sample
    return None


def production_retriever(project: Project) -> Retriever:
    """The project's `run` retriever holding what the production system retrieved."""
    retriever = Retriever.objects.filter(project=project, name=PRODUCTION_RETRIEVER).first()
    if retriever is None:
        retriever = retrieval.add_retriever(
            project=project, name=PRODUCTION_RETRIEVER, kind=RetrieverKind.RUN
        )
    elif retriever.kind != RetrieverKind.RUN:
        raise ServiceError(
            f"The retriever {PRODUCTION_RETRIEVER!r} is not a run: rename it, so the production "
            "retrieval can be stored under that name."
        )
    return retriever


@dataclass
class ProductionSet:
    sample: Sample
    question_set: QuestionSet
    pool: Pool | None
    notes: list[str] = field(default_factory=list)


def open_production_set(*, sample: Sample, user=None, depth: int = 10) -> ProductionSet:
    """Make the sample's question set (each question the trace's text, byte for byte, linked
    to its trace), store the production retrieval as its run, and start a pool of it with
    every built-in retriever that has an index. Passages of documents the corpus lacks cannot
    be pooled: they are left out of the run (the traces keep them, flagged)."""
    if sample.question_set_id:
        raise ServiceError(f"Sample {sample.pk} already has its question set.")
    project = sample.project
    name = set_name_for(sample.window_end)
    if QuestionSet.objects.filter(project=project, name=name).exists():
        name = f"{name}-{sample.rule.name}"[:100]
    if QuestionSet.objects.filter(project=project, name=name).exists():
        name = f"{name}-{sample.pk}"[:100]
    rows = list(SampledTrace.objects.filter(sample=sample).select_related("trace").order_by("pk"))
    notes: list[str] = []
    with transaction.atomic():
        question_set = QuestionSet.objects.create(
            project=project,
            name=name,
            description=f"Production sample {sample.pk}: {len(rows)} of {sample.population:,} "
            f"traces, rule {sample.rule}.",
        )
        first_with_text: dict[str, Question] = {}
        for row in rows:
            question = Question.objects.create(
                question_set=question_set,
                external_id=row.trace.trace_id,
                text=row.trace.question,
                source="production",
                tags=[f"stratum:{row.stratum}"] if row.stratum else [],
                duplicate_of=first_with_text.get(row.trace.question),
            )
            first_with_text.setdefault(row.trace.question, question)
            row.question = question
        SampledTrace.objects.bulk_update(rows, ["question"])
        sample.question_set = question_set
        retriever = production_retriever(project)
        run = _run_lines(rows)
        if run:
            run_import.import_run(
                retriever=retriever, question_set=question_set, data=run, name="production traces"
            )
        else:
            notes.append("No sampled trace retrieved a document the corpus has.")
            retriever = None
        sample.retriever = retriever
        sample.save(update_fields=["question_set", "retriever"])
        built_in = [
            r
            for r in Retriever.objects.filter(project=project, active_index__isnull=False)
            if r.kind in (RetrieverKind.BM25, RetrieverKind.EMBEDDING)
        ]
        sources = ([retriever] if retriever else []) + built_in
        pool = None
        if sources:
            pool = pools.start_pool(
                question_set=question_set,
                name=pool_name_for(question_set),
                retrievers=sources,
                depth=depth,
                user=user,
            )
        else:
            notes.append("No retriever to pool from: build an index, then make a pool.")
    return ProductionSet(sample=sample, question_set=question_set, pool=pool, notes=notes)


def _run_lines(rows: list[SampledTrace]) -> str:
    lines = []
    for row in rows:
        unknown = set(row.trace.unknown_doc_ids)
        results = [
            {k: p[k] for k in ("doc_id", "start", "end", "score") if k in p}
            for p in sorted(row.trace.retrieved, key=lambda p: p["rank"])
            if p["doc_id"] not in unknown
        ]
        if results:
            lines.append(json.dumps({"question_id": row.trace.trace_id, "results": results}))
    return "\n".join(lines) + "\n" if lines else ""


def tell_leads(*, sample: Sample) -> int:
    """Email the project's leads and admins that a sample waits (the banner shows it too)."""
    people = (
        Membership.objects.filter(project=sample.project, role__in=[Role.LEAD, Role.ADMIN])
        .exclude(user__email="")
        .values_list("user__email", flat=True)
    )
    recipients = sorted(set(people))
    if not recipients or sample.question_set is None:
        return 0
    link = reverse(
        "production:show-sample", kwargs={"slug": sample.project.slug, "sample_id": sample.pk}
    )
    body = (
        f"A new production sample is ready in {sample.project.name}: "
        f"{sample.traces.count()} questions from {sample.population:,} traces "
        f"(rule {sample.rule}), in the question set {sample.question_set.name}.\n\n"
        f"Open it: {settings.GOLDSET_SITE_URL.rstrip('/')}{link}\n"
    )
    return send_mail(
        subject=f"[Goldset] {sample.question_set.name} is ready to label",
        message=body,
        from_email=None,
        recipient_list=recipients,
        fail_silently=True,
    )


def draw_and_open(
    *,
    rule: SamplingRule,
    user=None,
    end: datetime | None = None,
    then: Callable[[ProductionSet], None] | None = None,
) -> ProductionSet:
    """Draw the rule, open its question set and pool, tell the leads: the weekly loop's step.
    All or nothing: a sample is never left without its question set. ``then`` runs in the same
    transaction (a job records what it drew, so a retry finds it). A rule draws once per ISO
    week (`AlreadyDrawn` otherwise); the rule's row is locked while it draws, so two draws at
    the same moment (a double click, the weekly task) make one sample."""
    end = end or timezone.now()
    with transaction.atomic():
        SamplingRule.objects.select_for_update().filter(pk=rule.pk).first()
        earlier = drawn_in_week(rule=rule, moment=end)
        if earlier is not None:
            raise AlreadyDrawn(earlier)
        sample = sampling_services.draw_sample(rule=rule, user=user, end=end)
        made = open_production_set(sample=sample, user=user)
        if then is not None:
            then(made)
    tell_leads(sample=sample)
    return made


def start_draw(*, rule: SamplingRule, user=None) -> Job:
    """A lead's "Draw now", as a job: a rule that orders traces by disagreement searches every
    one of its retrievers for each trace (an embedding retriever encodes them all), which can
    take minutes, so it is a worker's work and no web request waits for it."""
    return jobs.start(
        project=rule.project,
        task="production.tasks.draw_sample",
        kind="draw_sample",
        description=f"Draw a sample by the rule {rule.name} (version {rule.version})",
        params={"rule_id": rule.pk},
        user=user,
    )


def run_draw(job: Job) -> None:
    """The job of `start_draw`. What it drew is stored on the job in the draw's transaction, so
    a retry of a job whose worker died after the draw finishes with that draw, not a second."""
    if not job.result.get("sample_id"):
        rule = SamplingRule.objects.filter(
            pk=job.params.get("rule_id"), project=job.project
        ).first()
        if rule is None:
            raise ServiceError("This sampling rule is gone, so nothing was drawn.")

        def record(made: ProductionSet, notes: list[str] | None = None) -> None:
            url = reverse("production:show-sample", args=[job.project.slug, made.sample.pk])
            job.result = {
                "sample_id": made.sample.pk,
                "notes": made.notes if notes is None else notes,
                "redirect": True,
                "link": {
                    "url": url,
                    "text": f"Open the sample ({made.question_set or made.sample})",
                },
            }
            Job.objects.filter(pk=job.pk).update(result=job.result)

        try:
            draw_and_open(rule=rule, user=job.created_by, then=record)
        except AlreadyDrawn as exc:
            # A second click, or the weekly task first: this job shows the week's sample.
            earlier = exc.sample
            record(ProductionSet(earlier, earlier.question_set, None), notes=[str(exc)])
            jobs.finish(job, JobState.SUCCEEDED, str(exc))
            return
    sample = Sample.objects.select_related("question_set").get(pk=job.result["sample_id"])
    lines = [f"Drew {sample.traces.count()} traces into {sample.question_set.name}."]
    jobs.finish(job, JobState.SUCCEEDED, " ".join(lines + job.result.get("notes", [])))


@dataclass
class WeeklyOutcome:
    opened: list[ProductionSet] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def draw_weekly_samples(*, now: datetime | None = None) -> WeeklyOutcome:
    """Every active rule's newest version, once per ISO week: a rule already drawn this week is
    left alone (the task may run twice), one that selects nothing is reported, not fatal."""
    now = now or timezone.now()
    outcome = WeeklyOutcome()
    for rule in SamplingRule.objects.filter(active=True).select_related("project"):
        try:
            outcome.opened.append(draw_and_open(rule=rule, end=now))
        except AlreadyDrawn:
            outcome.skipped.append(f"{rule.project.slug}/{rule}: already drawn this week")
        except ServiceError as exc:
            log.warning("Weekly sample of %s/%s: %s", rule.project.slug, rule, exc)
            outcome.skipped.append(f"{rule.project.slug}/{rule}: {exc}")
    return outcome
