"""The production loop's evaluation side: a sample's misses report (as its viewer may see it)
and the trend over samples. The figures are `goldeval/scoring/misses.py`'s."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from corpus.models import Document, DocumentVersion, Project
from goldeval.formats.gold import GoldSpan
from goldeval.formats.runfiles import Passage
from goldeval.scoring.misses import MissesReport, SampledQuestion, misses_report, place_on, unplaced
from goldset.errors import ServiceError
from labelling.models import Provenance
from labelling.services.gold import resolve_gold
from production.models import Sample, SampledTrace
from production.services import promotion
from production.services.draws import PRODUCTION_RETRIEVER

TREND_SAMPLES = 12


def _visible(project: Project, viewer, doc_ids: set[str]) -> set[str]:
    """The doc ids the viewer may see, plus ids the corpus does not have (those are index drift,
    already shown on the traces page; nothing hides behind them)."""
    known = dict(
        Document.objects.filter(project=project, doc_id__in=doc_ids).values_list("doc_id", "pk")
    )
    visible = set(
        Document.objects.visible_to(viewer)
        .filter(project=project, doc_id__in=list(known))
        .values_list("doc_id", flat=True)
    )
    return visible | (doc_ids - set(known))


def sampled_questions(*, sample: Sample, viewer) -> list[SampledQuestion]:
    """The sample's questions with their gold (as `viewer` may see it), production's ranking
    and each built-in retriever's, without documents hidden from the viewer."""
    question_set = sample.question_set
    if question_set is None:
        return []
    project = sample.project
    resolution = resolve_gold(question_set=question_set, viewer=viewer)
    pending = {entry.question.pk for entry in resolution.unresolved}
    gold_of = defaultdict(list)
    for row in resolution.questions:
        gold_of[row.question.pk].append(row)
    rows = list(
        SampledTrace.objects.filter(sample=sample, question__isnull=False)
        .select_related("trace", "question")
        .order_by("pk")
    )
    pool = question_set.pools.order_by("created_at").first()
    built_in: dict[int, dict[str, list[tuple[int, Passage]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    if pool is not None:
        provenance = (
            Provenance.objects.filter(candidate__pool=pool)
            .exclude(retriever__name=PRODUCTION_RETRIEVER)
            .values_list(
                "candidate__question_id",
                "retriever__name",
                "rank",
                "candidate__version__document__doc_id",
                "candidate__version__version",
                "start",
                "end",
            )
        )
        for question_id, name, rank, doc_id, version, start, end in provenance:
            built_in[question_id][name].append((rank, (Passage(doc_id, start, end), version)))
    doc_ids = {p["doc_id"] for row in rows for p in row.trace.retrieved} | {
        passage.doc_id
        for by_name in built_in.values()
        for ranked in by_name.values()
        for _, (passage, _) in ranked
    }
    visible = _visible(project, viewer, doc_ids)
    versions = _Versions(project, visible)
    questions = []
    for row in rows:
        trace, question = row.trace, row.question
        golds = gold_of.get(question.pk, [])
        outcomes = {g.answerable for g in golds}
        answerable = None
        if golds and question.pk not in pending and None not in outcomes and len(outcomes) == 1:
            answerable = outcomes.pop()
        spans = tuple(
            GoldSpan(s.doc_id, s.start, s.end, s.grade, s.version, s.quote)
            for g in golds
            for s in g.spans
        )
        target = _gold_versions(spans)
        production, lost = [], 0
        for p in sorted(trace.retrieved, key=lambda p: p["rank"]):
            if p["doc_id"] not in visible:
                continue
            version = versions.named_or_current(p["doc_id"], p.get("version"), trace.occurred_at)
            passage = Passage(p["doc_id"], p.get("start"), p.get("end"))
            placed = versions.place(passage, version, target)
            lost += placed != passage and placed == unplaced(passage.doc_id)
            production.append(placed)
        rankings = {
            name: [
                versions.place(p, v, target)
                for _, (p, v) in sorted(ranked, key=lambda r: r[0])
                if p.doc_id in visible
            ]
            for name, ranked in built_in[question.pk].items()
        }
        questions.append(
            SampledQuestion(
                question_id=question.external_id,
                text=question.text,
                trace_id=trace.trace_id,
                probability=row.inclusion_probability,
                stratum=row.stratum,
                answerable=answerable,
                spans=spans,
                production=tuple(production),
                refused=trace.refused,
                answered=trace.refused is False or (trace.refused is None and bool(trace.answer)),
                built_in=rankings,
                unplaced=lost,
            )
        )
    return questions


def _gold_versions(spans) -> dict[str, int]:
    """Per document, the version of the question's gold spans there (the newest, should they
    point at several)."""
    target: dict[str, int] = {}
    for span in spans:
        if span.version is not None:
            target[span.doc_id] = max(span.version, target.get(span.doc_id, span.version))
    return target


class _Versions:
    """The versions of the visible documents the report meets, their texts read when a passage
    must be placed on another version than its own."""

    def __init__(self, project: Project, doc_ids: set[str]):
        self.project = project
        self.created: dict[str, list[tuple[int, object]]] = defaultdict(list)
        rows = DocumentVersion.objects.filter(
            document__project=project, document__doc_id__in=doc_ids
        ).values_list("document__doc_id", "version", "created_at")
        for doc_id, version, created_at in rows.order_by("document__doc_id", "version"):
            self.created[doc_id].append((version, created_at))
        self.texts: dict[tuple[str, int], str] = {}

    def named_or_current(self, doc_id: str, named: int | None, at) -> int | None:
        """The version a trace's passage is in: the one it names, else the newest the corpus
        had when the trace occurred (the oldest, for a trace older than all of them)."""
        known = self.created.get(doc_id, [])
        if named is not None and any(v == named for v, _ in known):
            return named
        before = [v for v, created_at in known if created_at <= at]
        return before[-1] if before else (known[0][0] if known else None)

    def text(self, doc_id: str, version: int) -> str:
        if (doc_id, version) not in self.texts:
            self.texts[doc_id, version] = DocumentVersion.objects.get(
                document__project=self.project, document__doc_id=doc_id, version=version
            ).text
        return self.texts[doc_id, version]

    def place(self, passage: Passage, version: int | None, target: dict[str, int]) -> Passage:
        """The passage on the version of the gold spans of its document (re-anchored where the
        versions differ; reaching nothing when its text is not found there)."""
        gold = target.get(passage.doc_id)
        if gold is None or version is None or version == gold or passage.start is None:
            return passage
        placed = place_on(
            passage,
            text=self.text(passage.doc_id, version),
            onto=self.text(passage.doc_id, gold),
        )
        return placed if placed is not None else unplaced(passage.doc_id)


def sample_misses(*, sample: Sample, viewer) -> MissesReport:
    return misses_report(
        sampled_questions(sample=sample, viewer=viewer), k=sample.project.k_sent_to_model
    )


@dataclass(frozen=True)
class TrendPoint:
    sample: Sample
    report: MissesReport


def misses_trend(*, project: Project, viewer) -> list[TrendPoint]:
    """The misses report of the project's latest samples, oldest first: production over time."""
    samples = (
        Sample.objects.filter(project=project, question_set__isnull=False)
        .select_related("rule", "question_set", "project")
        .order_by("-window_end")[:TREND_SAMPLES]
    )
    return [
        TrendPoint(sample, sample_misses(sample=sample, viewer=viewer))
        for sample in reversed(list(samples))
    ]


def promote_sample(*, sample: Sample, target, user, only_misses: bool) -> list:
    """Add the sample's labelled questions (or only its misses: gold evidence production did
    not retrieve, or an unanswerable question it answered) to `target`, for its next gold set
    version. Undecided questions wait: they are never promoted half-labelled."""
    report = sample_misses(sample=sample, viewer=user)
    if only_misses:
        wanted = {row.question.question_id for row in report.missed} | {
            q.question_id for q in report.answered_unanswerable
        }
    else:
        wanted = {
            row.question.question_id for row in report.per_question
        } | {  # answerable ones, then unanswerable ones
            q.question_id
            for q in sampled_questions(sample=sample, viewer=user)
            if q.answerable is False
        }
    if not wanted:
        raise ServiceError(
            "Nothing to promote: no miss among the labelled questions."
            if only_misses
            else "Nothing to promote: no question of this sample is labelled yet."
        )
    ids = list(
        sample.question_set.questions.filter(external_id__in=wanted).values_list("pk", flat=True)
    )
    return promotion.promote_questions(sample=sample, target=target, question_ids=ids, user=user)
