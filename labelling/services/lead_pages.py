"""What the Gold and Adjudication pages show: the figures of the whole set and one page of its
rows, for one viewer.

At the default span F1 minimum the figures come from the stored decisions
(`labelling.services.gold_state`, filtered for the viewer) and only the questions on the page
are read in full (`resolve_gold` / `adjudication_queue` with ``keys``); with another minimum
(or ``stored=False``) everything is decided again, as before the store existed. Both give the
same page: `tests/labelling/test_lead_pages.py` renders each on generated worlds and compares.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Count, F, Q

from corpus.models import DocumentVersion
from labelling.models import QuestionSet
from labelling.resolution import DEFAULT_MIN_SPAN_F1, PENDING_KINDS
from labelling.services import gold_state
from labelling.services.adjudication import QueueEntry, adjudication_queue
from labelling.services.gold import (
    changed_counts,
    count_by_kind,
    group_unresolved,
    mark_current,
    resolve_gold,
)

GROUPS_PER_PAGE = 25  # unresolved groups on one Gold page
QUESTIONS_PER_PAGE = 10  # rows of "Gold per question" on one Gold page
ADJUDICATION_QUESTIONS_PER_PAGE = 25  # questions with entries on one Adjudication page


@dataclass
class GoldPage:
    questions: int
    answerable: int
    unanswerable: int
    unresolved: int
    counts: list[tuple[str, str, int]]  # `count_by_kind`
    groups: Page  # of `UnresolvedGroup`
    rows: Page  # of `GoldQuestionRow`
    changed: dict[str, int]  # `changed_counts` over every gold span


def _stored(min_span_f1: float, stored: bool) -> bool:
    return stored and min_span_f1 == DEFAULT_MIN_SPAN_F1


def gold_page(
    *,
    question_set: QuestionSet,
    viewer,
    min_span_f1: float = DEFAULT_MIN_SPAN_F1,
    by: str = "question",
    kind: str = "",
    page=None,
    rows_page=None,
    stored: bool = True,
) -> GoldPage:
    """The Gold page: ``kind`` (a `PENDING_KINDS` key, or "") filters the unresolved items,
    ``by`` groups them ("question" or "reason"); ``page`` is the page of groups, ``rows_page``
    the page of the gold per question."""
    if not _stored(min_span_f1, stored) or by == "reason":
        # Grouped by reason, each group holds every question's items of its kind.
        return _gold_page_recomputed(
            question_set=question_set,
            viewer=viewer,
            min_span_f1=min_span_f1,
            by=by,
            kind=kind,
            page=page,
            rows_page=rows_page,
        )
    gold_state.refresh(question_set=question_set)
    states = gold_state.visible_states(question_set=question_set, viewer=viewer)
    verdicts = states.filter(candidate__isnull=True).aggregate(
        questions=Count("pk"),
        answerable_total=Count("pk", filter=Q(answerable=True)),
        unanswerable_total=Count("pk", filter=Q(answerable=False)),
    )
    pending = states.filter(kind__in=PENDING_KINDS)
    by_kind = dict(pending.values_list("kind").annotate(n=Count("pk")).order_by())
    counts = [(k, label, by_kind[k]) for k, label in PENDING_KINDS.items() if by_kind.get(k)]
    shown = pending.filter(kind=kind) if kind in PENDING_KINDS else pending
    question_ids = list(shown.values_list("question_id", flat=True).distinct().order_by())
    groups = Paginator(sorted(question_ids), GROUPS_PER_PAGE).get_page(page)
    if groups.object_list:
        listed = shown.filter(question_id__in=groups.object_list)
        unresolved = resolve_gold(
            question_set=question_set,
            viewer=viewer,
            keys=set(listed.values_list("pool_id", "question_id")),
            candidate_ids=set(
                listed.exclude(candidate=None).values_list("candidate_id", flat=True)
            ),
        ).unresolved
        if kind in PENDING_KINDS:
            unresolved = [e for e in unresolved if e.kind == kind]
        groups.object_list = group_unresolved(unresolved, by=by)
    verdict_keys = states.filter(candidate__isnull=True).order_by("pool_id", "question_id")
    rows = Paginator(list(verdict_keys.values_list("pool_id", "question_id")), QUESTIONS_PER_PAGE)
    rows = rows.get_page(rows_page)
    if rows.object_list:
        rows.object_list = resolve_gold(
            question_set=question_set, viewer=viewer, keys=set(rows.object_list)
        ).questions
        mark_current([span for row in rows.object_list for span in row.spans])
    # Gold spans on changed documents: only questions with a decided passage on a document
    # that has a newer version can have any.
    superseded = list(
        DocumentVersion.objects.filter(document__project_id=question_set.project_id)
        .exclude(document__latest_version=None)
        .exclude(document__latest_version=F("pk"))
        .values_list("pk", flat=True)
    )
    changed_keys = (
        set(
            states.filter(kind__in=gold_state.DECIDED, candidate__version__in=superseded)
            .values_list("pool_id", "question_id")
            .distinct()
        )
        if superseded
        else set()
    )
    changed = changed_counts(
        [
            span
            for row in (
                resolve_gold(question_set=question_set, viewer=viewer, keys=changed_keys).questions
                if changed_keys
                else []
            )
            for span in row.spans
        ]
    )
    return GoldPage(
        questions=verdicts["questions"],
        answerable=verdicts["answerable_total"],
        unanswerable=verdicts["unanswerable_total"],
        unresolved=sum(by_kind.values()),
        counts=counts,
        groups=groups,
        rows=rows,
        changed=changed,
    )


def _gold_page_recomputed(
    *, question_set, viewer, min_span_f1, by, kind, page, rows_page
) -> GoldPage:
    gold = resolve_gold(question_set=question_set, min_span_f1=min_span_f1, viewer=viewer)
    shown = [e for e in gold.unresolved if e.kind == kind] if kind in PENDING_KINDS else None
    groups = group_unresolved(gold.unresolved if shown is None else shown, by=by)
    rows = Paginator(gold.questions, QUESTIONS_PER_PAGE).get_page(rows_page)
    mark_current([span for row in rows.object_list for span in row.spans])
    return GoldPage(
        questions=len(gold.questions),
        answerable=sum(1 for row in gold.questions if row.answerable),
        unanswerable=sum(1 for row in gold.questions if row.answerable is False),
        unresolved=len(gold.unresolved),
        counts=count_by_kind(gold.unresolved),
        groups=Paginator(groups, GROUPS_PER_PAGE).get_page(page),
        rows=rows,
        changed=changed_counts([span for row in gold.questions for span in row.spans]),
    )


@dataclass
class AdjudicationPage:
    open_total: int
    resolved_total: int
    single_total: int
    third_total: int
    page: Page  # of question ids with entries, in the order of their first entry
    open_entries: list[QueueEntry]
    resolved_entries: list[QueueEntry]
    single_entries: list[QueueEntry]
    third_entries: list[QueueEntry]  # waiting for a third labeller (escalated)


SET_APART = ("resolved", "single_by_access", "escalated_waiting")


def _split(entries: list[QueueEntry]) -> tuple[list, list, list, list]:
    return (
        [e for e in entries if e.kind not in SET_APART],
        [e for e in entries if e.kind == "resolved"],
        [e for e in entries if e.kind == "single_by_access"],
        [e for e in entries if e.kind == "escalated_waiting"],
    )


def adjudication_page(
    *,
    question_set: QuestionSet,
    viewer,
    min_span_f1: float = DEFAULT_MIN_SPAN_F1,
    question_id: int | None = None,
    page=None,
    stored: bool = True,
) -> AdjudicationPage:
    """The Adjudication page: the totals of items waiting for a decision, resolved, single
    votes to review and waiting for a third labeller, and the entries of one page of questions
    (with ``question_id``, of that one). Entries are in the queue's order
    (`adjudication_queue`); the questions are paged in the order of their first entry."""
    if not _stored(min_span_f1, stored):
        entries = adjudication_queue(
            question_set=question_set,
            min_span_f1=min_span_f1,
            include_resolved=True,
            include_single_by_access=True,
            include_escalated_waiting=True,
            viewer=viewer,
        )
        if question_id is not None:
            entries = [e for e in entries if e.question.pk == question_id]
        sections = _split(entries)
        questions = list(dict.fromkeys(e.question.pk for e in entries))
        shown = Paginator(questions, ADJUDICATION_QUESTIONS_PER_PAGE).get_page(page)
        on_page = set(shown.object_list)
        return AdjudicationPage(
            *(len(section) for section in sections),
            shown,
            *([e for e in section if e.question.pk in on_page] for section in sections),
        )
    gold_state.refresh(question_set=question_set)
    visible = gold_state.visible_states(question_set=question_set, viewer=viewer)
    states = visible if question_id is None else visible.filter(question_id=question_id)
    # As `adjudication_queue` sorts its items, in its order of precedence.
    third = Q(escalated=True, kind="waiting", candidate__isnull=False)
    single = Q(single_by_access=True, resolved=False, kind__in=gold_state.DECIDED) & ~third
    needs_lead = Q(kind__in=gold_state.NEEDS_LEAD) & ~third & ~single
    resolved = Q(resolved=True) & ~needs_lead & ~third & ~single
    entries = states.filter(needs_lead | resolved | single | third)
    totals = entries.aggregate(
        open_total=Count("pk", filter=needs_lead),
        resolved_total=Count("pk", filter=resolved),
        single_total=Count("pk", filter=single),
        third_total=Count("pk", filter=third),
    )
    # The whole queue's order decides which questions come first: how many questions a
    # passage moves is counted over every undecided passage the viewer may see.
    ordered, moved = gold_state.queue_order(entries, visible=visible)
    questions = list(dict.fromkeys(question for _, question, *_ in ordered))
    shown = Paginator(questions, ADJUDICATION_QUESTIONS_PER_PAGE).get_page(page)
    on_page = set(shown.object_list)
    on_page_rows = [row for row in ordered if row[1] in on_page]
    listed = (
        adjudication_queue(
            question_set=question_set,
            include_resolved=True,
            include_single_by_access=True,
            include_escalated_waiting=True,
            viewer=viewer,
            keys={(pool, question) for pool, question, *_ in on_page_rows},
            candidate_ids={row[2] for row in on_page_rows if row[2] is not None},
            moved=moved,
        )
        if on_page
        else []
    )
    return AdjudicationPage(
        totals["open_total"],
        totals["resolved_total"],
        totals["single_total"],
        totals["third_total"],
        shown,
        *_split(listed),
    )
