"""Sampling rules (versioned) and the samples they draw from production traces.

The thinking is `goldeval/scoring/sampling.py`'s; here the rule's filter becomes a query, the traces
become units, and the draw is stored with each trace's stratum and inclusion probability.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Max, Q, QuerySet
from django.utils import timezone

from corpus.models import Project, Retriever, RetrieverKind
from corpus.services import retrieval
from goldeval.scoring import sampling
from goldset.errors import ServiceError
from production.models import Sample, SampledTrace, SamplingRule, SamplingStrategy, Trace

FEEDBACK = {"": "all traces", "down": "negative", "up": "positive", "none": "none", "any": "any"}
STRATA = {
    "feedback": "feedback (up, down, none)",
    "refused": "refused or answered",
    "citations": "cited or not",
    "system_version": "system version",
    "user_group": "the user's first group",
}
DEFAULT_WINDOW_DAYS = 7


@dataclass(frozen=True)
class RuleSpec:
    """What a rule says, checked; two versions with the same spec are the same rule."""

    filters: dict
    strategy: str
    stratify_by: str
    quotas: dict
    size: int
    seed: int


def check_rule(
    *,
    filters: dict,
    strategy: str,
    stratify_by: str = "",
    quotas: dict | None = None,
    size: int,
    seed: int = 0,
) -> RuleSpec:
    filters = {
        k: v for k, v in (filters or {}).items() if v is not None and v != "" and v is not False
    }
    unknown = set(filters) - {
        "window_days",
        "feedback",
        "refused",
        "no_citation",
        "top_score_below",
        "user_group",
        "system_version",
    }
    if unknown:
        raise ServiceError(f"Unknown filter {', '.join(sorted(unknown))}.")
    if filters.get("feedback", "") not in FEEDBACK:
        raise ServiceError("Feedback is one of down, up, none or any.")
    days = filters.get("window_days", DEFAULT_WINDOW_DAYS)
    if not isinstance(days, int) or not 1 <= days <= 366:
        raise ServiceError("The time window is 1 to 366 days.")
    if strategy not in SamplingStrategy.values:
        raise ServiceError(f"Unknown strategy {strategy!r}.")
    if strategy == SamplingStrategy.STRATIFIED and stratify_by not in STRATA:
        raise ServiceError(f"Stratify by one of: {', '.join(STRATA)}.")
    if not 1 <= size <= 100_000:
        raise ServiceError("The sample size is 1 to 100,000 traces.")
    quotas = {str(k): v for k, v in (quotas or {}).items()}
    if any(not isinstance(v, int) or v < 0 for v in quotas.values()):
        raise ServiceError("Quotas are whole numbers from 0.")
    return RuleSpec(
        filters=filters,
        strategy=strategy,
        stratify_by=stratify_by if strategy == SamplingStrategy.STRATIFIED else "",
        quotas=quotas if strategy == SamplingStrategy.STRATIFIED else {},
        size=size,
        seed=seed,
    )


def save_sampling_rule(
    *,
    project: Project,
    user,
    name: str,
    spec: RuleSpec,
    retrievers: list[Retriever] | tuple = (),
    active: bool = True,
) -> SamplingRule:
    """The rule's next version (version 1 for a new name), or the latest version unchanged
    when nothing differs: samples keep pointing at the exact rule that drew them."""
    if any(r.project_id != project.pk for r in retrievers):
        raise ServiceError("A retriever belongs to another project.")
    if spec.strategy == SamplingStrategy.DISAGREEMENT:
        if not retrievers:
            raise ServiceError("Disagreement needs at least one built-in retriever to compare.")
        if any(r.kind in (RetrieverKind.RUN, RetrieverKind.HTTP) for r in retrievers):
            raise ServiceError("Compare with built-in retrievers (BM25 or embedding) only.")
    with transaction.atomic():
        latest = (
            SamplingRule.objects.select_for_update()
            .filter(project=project, name=name)
            .order_by("-version")
            .first()
        )
        if (
            latest is not None
            and _spec_of(latest) == spec
            and latest.active == active
            and {r.pk for r in latest.retrievers.all()} == {r.pk for r in retrievers}
        ):
            return latest
        rule = SamplingRule.objects.create(
            project=project,
            name=name,
            version=(latest.version + 1) if latest else 1,
            filters=spec.filters,
            strategy=spec.strategy,
            stratify_by=spec.stratify_by,
            quotas=spec.quotas,
            size=spec.size,
            seed=spec.seed,
            active=active,
            created_by=user,
        )
        rule.retrievers.set(retrievers)
        if latest is not None:
            # Only a rule's newest version is drawn by the weekly task.
            SamplingRule.objects.filter(project=project, name=name).exclude(pk=rule.pk).update(
                active=False
            )
    return rule


def _spec_of(rule: SamplingRule) -> RuleSpec:
    return RuleSpec(
        rule.filters, rule.strategy, rule.stratify_by, rule.quotas, rule.size, rule.seed
    )


def latest_rules(project: Project) -> QuerySet[SamplingRule]:
    newest = (
        SamplingRule.objects.filter(project=project)
        .values("name")
        .annotate(top=Max("version"))
        .values_list("name", "top")
    )
    wanted = Q(pk__in=[])
    for name, version in newest:
        wanted |= Q(name=name, version=version)
    return SamplingRule.objects.filter(project=project).filter(wanted).order_by("name")


def window_of(rule: SamplingRule, end: datetime) -> tuple[datetime, datetime]:
    return end - timedelta(days=rule.filters.get("window_days", DEFAULT_WINDOW_DAYS)), end


def filtered_traces(*, rule: SamplingRule, start: datetime, end: datetime) -> QuerySet[Trace]:
    """The traces of the window that pass the rule's filter: the population it samples."""
    traces = Trace.objects.filter(project=rule.project, occurred_at__gte=start, occurred_at__lt=end)
    f = rule.filters
    feedback = f.get("feedback", "")
    if feedback in ("down", "up"):
        traces = traces.filter(thumb=feedback)
    elif feedback == "none":
        traces = traces.filter(thumb="")
    elif feedback == "any":
        traces = traces.exclude(thumb="")
    if f.get("refused") in (True, False):
        traces = traces.filter(refused=f["refused"])
    if f.get("no_citation"):
        traces = traces.filter(has_citations=False)
    if f.get("top_score_below") is not None:
        traces = traces.filter(top_score__lt=f["top_score_below"])
    if f.get("system_version"):
        traces = traces.filter(system_version=f["system_version"])
    if f.get("user_group"):
        if connection.vendor == "postgresql":
            traces = traces.filter(user_groups__contains=[f["user_group"]])
        else:  # SQLite has no JSON containment: the group's JSON string, in the list's text
            traces = traces.filter(user_groups__icontains=f'"{f["user_group"]}"')
    return traces


# Each stratifying field: the column it reads, and the stratum a value falls in.
_STRATUM_OF = {
    "feedback": ("thumb", lambda v: v or "none"),
    "refused": ("refused", lambda v: "refused" if v else "answered"),
    "citations": ("has_citations", lambda v: "cited" if v else "no citation"),
    "system_version": ("system_version", lambda v: v or "(none)"),
    "user_group": ("user_groups", lambda v: v[0] if v else "(no group)"),
}


def _groups(rule: SamplingRule, traces: QuerySet[Trace]) -> dict[str, list[int]]:
    """The population's trace pks, grouped as the rule's strategy draws them
    (`goldeval.scoring.sampling.group_units`), read as plain tuples: no object per trace."""
    if rule.strategy == SamplingStrategy.STRATIFIED:
        column, stratum_of = _STRATUM_OF[rule.stratify_by]
        groups: dict[str, list[int]] = defaultdict(list)
        if column == "user_groups":
            for pk, value in traces.values_list("pk", column):
                groups[stratum_of(value)].append(pk)
            return dict(groups)
        # One stratum per distinct value: the database groups, Python only names them.
        for value in traces.order_by().values_list(column, flat=True).distinct():
            keys = list(traces.filter(**{column: value}).values_list("pk", flat=True))
            groups[stratum_of(value)].extend(keys)
        return dict(groups)
    if rule.strategy == SamplingStrategy.NEGATIVE_FIRST:
        negative = list(traces.filter(thumb="down").values_list("pk", flat=True))
        other = list(traces.exclude(thumb="down").values_list("pk", flat=True))
        return {sampling.NEGATIVE: negative, sampling.OTHER: other}
    return {"": list(traces.values_list("pk", flat=True))}


def _disagreement(rule: SamplingRule):
    retrievers = list(rule.retrievers.all())

    def score(keys: list[int]) -> dict[int, float]:
        rows = list(Trace.objects.filter(pk__in=keys).values_list("pk", "question", "retrieved"))
        k = max((len(r) for _, _, r in rows), default=10) or 10
        rankings = [
            retrieval.retrieve(retriever=r, questions=[q for _, q, _ in rows], k=k)
            for r in retrievers
        ]
        return {
            pk: sampling.disagreement_of(
                [p["doc_id"] for p in retrieved],
                [[hit.doc_id for hit in ranking[i]] for ranking in rankings],
            )
            for i, (pk, _, retrieved) in enumerate(rows)
        }

    return score


def draw_sample(*, rule: SamplingRule, user=None, end: datetime | None = None) -> Sample:
    """Draw the rule over its window ending at `end` (now) and store the sample; a rule that
    selects nothing raises `ServiceError` saying why, and stores nothing."""
    start, end = window_of(rule, end or timezone.now())
    traces = filtered_traces(rule=rule, start=start, end=end)
    groups = _groups(rule, traces)
    selected = sum(len(keys) for keys in groups.values())
    if not selected:
        in_window = Trace.objects.filter(
            project=rule.project, occurred_at__gte=start, occurred_at__lt=end
        ).count()
        where = f"between {start:%Y-%m-%d %H:%M} and {end:%Y-%m-%d %H:%M} UTC"
        raise ServiceError(
            f"The rule {rule} selects no trace {where}: "
            + (
                f"{in_window:,} traces arrived then, and none passes its filter. Loosen the filter."
                if in_window
                else "no trace arrived then. Widen the window or check that traces are sent."
            )
        )
    try:
        drawn = sampling.draw(
            groups=groups,
            strategy=rule.strategy,
            size=rule.size,
            seed=rule.seed,
            quotas=rule.quotas or None,
            disagreement=_disagreement(rule)
            if rule.strategy == SamplingStrategy.DISAGREEMENT
            else None,
        )
    except sampling.SamplingError as exc:
        raise ServiceError(str(exc)) from exc
    if drawn.empty:
        raise ServiceError(
            f"The rule {rule} selects {selected:,} traces but its quotas draw none of them: "
            f"the strata present are {', '.join(sorted(drawn.strata)) or 'none'}."
        )
    with transaction.atomic():
        sample = Sample.objects.create(
            project=rule.project,
            rule=rule,
            window_start=start,
            window_end=end,
            population=drawn.population,
            strata=drawn.strata,
            drawn_by=user,
        )
        SampledTrace.objects.bulk_create(
            SampledTrace(
                sample=sample,
                trace_id=d.key,
                stratum=d.stratum,
                inclusion_probability=d.probability,
            )
            for d in drawn.draws
        )
    return sample
