"""What the Gold and Adjudication pages show: the figures of the whole set and one page of its
rows, for one viewer.

At the default span F1 minimum everything comes from the stored decisions
(`labelling.services.gold_state`, filtered for the viewer): the figures are counted over them
in SQL, and the rows of a page are built from the page's stored rows (`ItemState.shown` holds
what the votes gave each item: its gold spans, why it waits, its grades), read as plain values,
never as the votes' model objects. Only a page of the gold per question with a decided passage
on a changed document (whose spans the Re-check answers place) reads its questions' votes in
full (`resolve_gold` with ``keys``). With another minimum (or ``stored=False``) everything is
decided again, as before the store existed. Both give the same page:
`tests/labelling/test_lead_pages.py` renders each on generated worlds and compares.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db import DEFAULT_DB_ALIAS
from django.db.models import Count, F

from corpus.models import Document, DocumentVersion
from labelling.models import Candidate, Question, QuestionSet
from labelling.resolution import DEFAULT_MIN_SPAN_F1, PENDING_KINDS
from labelling.services import gold_state
from labelling.services.adjudication import (
    THIRD_WAITING_REASON,
    QueueEntry,
    adjudication_queue,
    single_vote_reason,
)
from labelling.services.gold import (
    GoldSpanRow,
    changed_counts,
    count_by_kind,
    gold_question_row,
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
    states = gold_state.visible(question_set=question_set, viewer=viewer)
    # Every figure, the questions with unresolved items and the keys of the rows: the
    # verdicts (one a question), and the unresolved passages counted per question and kind.
    verdicts = [
        {"pool_id": pool, "question_id": question, "kind": kind, "answerable": answerable, "n": 1}
        for pool, question, kind, answerable in states.verdicts.values_list(
            "pool_id", "question_id", "kind", "answerable"
        )
    ]
    pending = [row for row in verdicts if row["kind"] in PENDING_KINDS] + list(
        states.items.filter(kind__in=PENDING_KINDS)
        .values("question_id", "kind")
        .annotate(n=Count("pk"))
        .order_by()
    )
    by_kind: dict[str, int] = {}
    for row in pending:
        by_kind[row["kind"]] = by_kind.get(row["kind"], 0) + row["n"]
    counts = [(k, label, by_kind[k]) for k, label in PENDING_KINDS.items() if by_kind.get(k)]
    shown = [row for row in pending if kind not in PENDING_KINDS or row["kind"] == kind]
    question_ids = sorted({row["question_id"] for row in shown})
    groups = Paginator(question_ids, GROUPS_PER_PAGE).get_page(page)
    if groups.object_list:
        listed = states.filter(
            question_id__in=groups.object_list,
            kind__in=[kind] if kind in PENDING_KINDS else list(PENDING_KINDS),
        )
        groups.object_list = group_unresolved(
            _entries(question_set, _read(listed), texts=True), by=by
        )
    rows = Paginator(
        sorted((row["pool_id"], row["question_id"]) for row in verdicts), QUESTIONS_PER_PAGE
    ).get_page(rows_page)
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
            states.items.filter(kind__in=gold_state.DECIDED, candidate__version__in=superseded)
            .values_list("pool_id", "question_id")
            .distinct()
        )
        if superseded
        else set()
    )
    if rows.object_list:
        on_page = set(rows.object_list)
        if on_page & changed_keys:
            # Their spans are placed by the Re-check answers: read their votes in full.
            rows.object_list = resolve_gold(
                question_set=question_set, viewer=viewer, keys=on_page
            ).questions
        else:
            rows.object_list = _gold_rows(
                question_set,
                _read(
                    states.filter(
                        question_id__in={question for _, question in on_page},
                        pool_id__in={pool for pool, _ in on_page},
                    )
                ),
                keys=rows.object_list,
            )
        mark_current([span for row in rows.object_list for span in row.spans])
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
        questions=len(verdicts),
        answerable=sum(1 for row in verdicts if row["answerable"] is True),
        unanswerable=sum(1 for row in verdicts if row["answerable"] is False),
        unresolved=sum(by_kind.values()),
        counts=counts,
        groups=groups,
        rows=rows,
        changed=changed,
    )


# The columns of a stored decision the pages show (`_read`).
STORED = (
    "pool_id",
    "question_id",
    "candidate_id",
    "kind",
    "resolved",
    "single_by_access",
    "escalated",
    "answerable",
    "distance",
    "shown",
    "document_id",
    "document__doc_id",
    "candidate__version_id",
    "candidate__version__version",
    "candidate__start",
    "candidate__end",
    "candidate__shuffle_rank",
)


def _read(states: gold_state.Visible) -> list[dict]:
    """The stored rows as plain values, each question's verdict first, then its passages in
    the order `gather_votes` reads them (as shuffled)."""
    rows = [row for queryset in states.both() for row in queryset.values(*STORED)]
    rows.sort(
        key=lambda row: (
            row["pool_id"],
            row["question_id"],
            row["candidate_id"] is not None,
            row["candidate__shuffle_rank"] or 0,
            row["candidate_id"] or 0,
        )
    )
    return rows


def _candidates(rows: list[dict], *, texts: bool) -> dict[int, Candidate]:
    """The candidates of ``rows`` as the templates read them: each with its version and
    document (and, with ``texts``, the version's text), built from the values read
    (`Model.from_db` with only those fields: the rest are deferred, never read)."""
    version_ids = {row["candidate__version_id"] for row in rows if row["candidate_id"]}
    text_of = (
        dict(DocumentVersion.objects.filter(pk__in=version_ids).values_list("pk", "text"))
        if texts and version_ids
        else {}
    )
    versions: dict[int, DocumentVersion] = {}
    candidates = {}
    for row in rows:
        if row["candidate_id"] is None:
            continue
        version_id = row["candidate__version_id"]
        if version_id not in versions:
            version = DocumentVersion.from_db(
                DEFAULT_DB_ALIAS,
                ["id", "document_id", "version", "text"],
                (
                    version_id,
                    row["document_id"],
                    row["candidate__version__version"],
                    text_of.get(version_id, ""),
                ),
            )
            version.document = Document.from_db(
                DEFAULT_DB_ALIAS, ["id", "doc_id"], (row["document_id"], row["document__doc_id"])
            )
            versions[version_id] = version
        candidate = Candidate.from_db(
            DEFAULT_DB_ALIAS,
            ["id", "pool_id", "question_id", "version_id", "start", "end", "shuffle_rank"],
            (
                row["candidate_id"],
                row["pool_id"],
                row["question_id"],
                version_id,
                row["candidate__start"],
                row["candidate__end"],
                row["candidate__shuffle_rank"],
            ),
        )
        candidate.version = versions[version_id]
        candidates[candidate.pk] = candidate
    return candidates


def _entries(
    question_set, rows: list[dict], *, texts: bool = False, moved: dict | None = None
) -> list[QueueEntry]:
    """Queue entries (`QueueEntry`) of stored rows, in their order: the Gold page's pending
    items (kind and reason their own, as `resolve_gold` gives them), or with ``moved``, the
    Adjudication page's, as `adjudication_queue` gives them: "escalated_waiting",
    "single_by_access" or "resolved" for the sections it sets apart, and the queue's distance
    and moves."""
    pools = {pool.pk: pool for pool in question_set.pools.all()}
    questions = Question.objects.in_bulk({row["question_id"] for row in rows})
    candidates = _candidates(rows, texts=texts)
    entries = []
    for row in rows:
        shown = row["shown"]
        candidate = candidates.get(row["candidate_id"])
        kind = row["kind"] if moved is None else gold_state.queue_kind(row)
        reason = {
            "escalated_waiting": THIRD_WAITING_REASON,
            "single_by_access": single_vote_reason(shown.get("unseen_by", [])),
            "resolved": "resolved",
        }.get(kind) or shown.get("reason", "")
        entry = QueueEntry(
            pool=pools[row["pool_id"]],
            question=questions[row["question_id"]],
            candidate=candidate,
            reason=reason,
            kind=kind,
            shown=shown,
        )
        if moved is not None:
            if candidate is None:
                entry.moves = 1  # a verdict moves its own question's answerability
            else:
                entry.distance = row["distance"]
                entry.moves = moved.get(
                    (
                        row["question_id"],
                        row["candidate__version_id"],
                        candidate.start,
                        candidate.end,
                    ),
                    0,
                )
        entries.append(entry)
    return entries


def _gold_rows(question_set, rows: list[dict], *, keys: list[tuple[int, int]]) -> list:
    """The gold per question (`GoldQuestionRow`, as `resolve_gold` gives it) of ``keys`` from
    their stored rows, none of them on a changed document."""
    questions = Question.objects.in_bulk({key[1] for key in keys})
    spanned = {
        row["candidate__version_id"]
        for row in rows
        if row["kind"] in gold_state.DECIDED and row["shown"].get("spans")
    }
    texts = (
        dict(DocumentVersion.objects.filter(pk__in=spanned).values_list("pk", "text"))
        if spanned
        else {}
    )
    by_key: dict[tuple[int, int], list[dict]] = {}
    for row in rows:
        by_key.setdefault((row["pool_id"], row["question_id"]), []).append(row)
    gold = []
    for key in keys:
        verdict, *items = by_key[key]
        spans, judged, single = [], [], []
        for item in items:
            if item["kind"] not in gold_state.DECIDED:
                continue
            doc_id, version = item["document__doc_id"], item["candidate__version__version"]
            start, end = item["candidate__start"], item["candidate__end"]
            shown = item["shown"]
            if item["single_by_access"]:
                single.append((doc_id, start, end, shown.get("unseen_by", [])))
            judged.append((doc_id, version, start, end))
            text = texts.get(item["candidate__version_id"], "")
            spans += [
                GoldSpanRow(
                    version_id=item["candidate__version_id"],
                    doc_id=doc_id,
                    version=version,
                    start=span_start,
                    end=span_end,
                    grade=shown["grade"],
                    quote=text[span_start:span_end],
                )
                for span_start, span_end in shown.get("spans", [])
            ]
        gold.append(
            gold_question_row(
                question=questions[key[1]],
                answerable=verdict["answerable"],
                verdict_source=verdict["kind"] if verdict["kind"] in gold_state.DECIDED else "",
                spans=spans,
                texts=texts,
                judged=judged,
                single_by_access=single,
            )
        )
    return gold


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
    visible = gold_state.visible(question_set=question_set, viewer=viewer)
    states = visible if question_id is None else visible.filter(question_id=question_id)
    rows = [row for row in _read(states.filter(gold_state.QUEUE)) if gold_state.queue_kind(row)]
    kinds = [gold_state.queue_kind(row) for row in rows]
    totals = {
        "open_total": sum(1 for kind in kinds if kind not in SET_APART),
        "resolved_total": kinds.count("resolved"),
        "single_total": kinds.count("single_by_access"),
        "third_total": kinds.count("escalated_waiting"),
    }
    # The whole queue's order decides which questions come first: how many questions a
    # passage moves is counted over every undecided passage the viewer may see.
    ordered, moved = gold_state.queue_order(rows, visible=visible.items)
    questions = list(dict.fromkeys(row["question_id"] for row in ordered))
    shown = Paginator(questions, ADJUDICATION_QUESTIONS_PER_PAGE).get_page(page)
    on_page = set(shown.object_list)
    listed = _entries(
        question_set, [row for row in ordered if row["question_id"] in on_page], moved=moved
    )
    return AdjudicationPage(
        totals["open_total"],
        totals["resolved_total"],
        totals["single_total"],
        totals["third_total"],
        shown,
        *_split(listed),
    )
