"""The gold of a question set: what its votes and resolutions say, or what still blocks it.

One rule, applied here and nowhere else: `labelling.resolution` decides each item (a candidate's
grade and spans, a question's verdict), and gold spans of one question that overlap become one
unit by `goldeval.text.spans`' merge rule. A gold span whose labellers answered the Re-check page
for it is placed where they put it in the new version (or dropped when the evidence is gone);
a resolved item's span where a lead put it (a resolution's evidence is the leads' to answer
for; its labellers' answers for their own spans do not move it). Every gold span on a changed
document says how it is kept (`GoldSpanRow.changed`), so the Gold page can mark it and
finalising can count it (`changed_counts`).
`resolve_gold` gives it per pool (the Gold page, as its viewer may see it); `collect_gold`
gives it per question, as a gold set freezes it (evaluation only stores what it gets).
Questions a lead excluded from the set are no part of either.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field, replace

from django.db.models import Q

from corpus.models import DocumentVersion
from goldeval.text.spans import merge_overlapping
from goldeval.text.worddiff import FACTS_CHANGED, Piece, word_diff
from labelling.models import (
    Assignment,
    Candidate,
    Pool,
    Question,
    QuestionSet,
    Resolution,
    SpanRecheck,
    VerdictOutcome,
    included_q,
    work_q,
)
from labelling.resolution import (
    DEFAULT_MIN_SPAN_F1,
    PENDING_KINDS,
    Pending,
    VerdictDecision,
    resolve_verdict,
)
from labelling.services import gold_state, recheck
from labelling.services.adjudication import QueueEntry, adjudication_queue
from labelling.services.machine_votes import MachineVote
from labelling.services.votes import finished_outcomes, gather_votes

# How a gold span on a changed document is kept, worst first (a merged unit takes the worst).
NOT_RECHECKED, FACTS, REMARKED, MOVED = "not_rechecked", FACTS_CHANGED, "re_marked", "moved"
CHANGED_KINDS = {
    NOT_RECHECKED: "not re-checked: scoring re-anchors it by its quote",
    FACTS: "the facts changed",
    REMARKED: "marked again in the new version",
    MOVED: "re-anchored: it moved, same words",
}


@dataclass
class GoldSpanRow:
    version_id: int
    doc_id: str
    version: int
    start: int
    end: int
    grade: int
    quote: str
    # On a document that changed after the span was marked: how the gold keeps it (a key of
    # `CHANGED_KINDS`), "" otherwise; the quote as marked in ``old_version``; where it is in
    # the newest version now (``current``, "" when not found: filled by `mark_current`); the
    # marked spans behind it, and whether a lead answers for them (a resolution's evidence).
    changed: str = ""
    old_version: int | None = None
    old_quote: str = ""
    newest_version: int | None = None
    current: str = ""
    span_ids: tuple[int, ...] = ()
    by_lead: bool = False

    @property
    def changed_said(self) -> str:
        return CHANGED_KINDS.get(self.changed, "")

    @property
    def words_changed(self) -> bool:
        """Whether the words now differ from the words as marked (the facts changed)."""
        return any(piece.kind != "same" for piece in self.diff)

    @property
    def diff(self) -> list[Piece]:
        """The old quote against the words the gold now has (or the quote found again)."""
        if not self.changed:
            return []
        new = self.current if self.changed == NOT_RECHECKED else self.quote
        return word_diff(self.old_quote, new) if new else []


@dataclass
class GoldQuestionRow:
    question: Question
    answerable: bool | None
    spans: list[GoldSpanRow]
    judged: list[tuple[str, int, int, int]]  # doc_id, version, start, end
    verdict_source: str
    # Passages of a double-labelled question that only one of its labellers can see, so
    # their single vote is the gold: (doc_id, start, end, labellers it is hidden from).
    single_by_access: list[tuple[str, int, int, list[str]]] = field(default_factory=list)


@dataclass
class GoldResolution:
    questions: list[GoldQuestionRow]
    unresolved: list[QueueEntry]
    # The AI judge's votes the rule counted in decided items (a lead turned that on for the
    # set; a lead's resolution overrides them, so those are not here).
    machine_votes: list[MachineVote] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.unresolved


def resolve_gold(
    *,
    question_set: QuestionSet,
    min_span_f1: float = DEFAULT_MIN_SPAN_F1,
    viewer=None,
    pool_id: int | None = None,
    question_id: int | None = None,
    keys: Collection[tuple[int, int]] | None = None,
    candidate_ids: Collection[int] | None = None,
) -> GoldResolution:
    """Apply the gold resolution rule (labelling/resolution.py) to every question of the set;
    with ``viewer``, to the items on documents they may see (the others do not exist here);
    with ``pool_id`` and ``question_id``, to that one question of that pool; with ``keys``, to
    those (pool id, question id) pairs (and with ``candidate_ids``, of their candidates only
    those: a page listing some items, `gather_votes`)."""
    rows, unresolved, counted = [], [], []
    votes = gather_votes(
        question_set=question_set,
        viewer=viewer,
        pool_id=pool_id,
        question_id=question_id,
        keys=keys,
        candidate_ids=candidate_ids,
    )
    rechecked = SpanRecheck.objects.filter(
        Q(span__judgement__candidate__pool__question_set=question_set)
        | Q(span__resolution__pool__question_set=question_set)
    )
    if keys is not None:
        questions = {question for _, question in keys}
        rechecked = rechecked.filter(
            Q(span__judgement__candidate__question__in=questions)
            | Q(span__resolution__question__in=questions)
        )
    rechecks = {r.span_id: r for r in rechecked.select_related("version")}
    for q in votes:
        verdict = q.decide_verdict()
        if isinstance(verdict, Pending):
            unresolved.append(
                QueueEntry(
                    pool=q.pool,
                    question=q.question,
                    candidate=None,
                    reason=verdict.reason,
                    question_votes=q,
                    kind=verdict.kind,
                )
            )
        spans, judged, texts, single = [], [], {}, []
        for item in q.items:
            decision = item.decide(min_span_f1=min_span_f1)
            candidate = item.candidate
            if item.single_by_access and not isinstance(decision, Pending):
                single.append(
                    (
                        candidate.version.document.doc_id,
                        candidate.start,
                        candidate.end,
                        item.unseen_by,
                    )
                )
            if isinstance(decision, Pending):
                unresolved.append(
                    QueueEntry(
                        pool=q.pool,
                        question=q.question,
                        candidate=candidate,
                        reason=decision.reason,
                        item=item,
                        question_votes=q,
                        kind=decision.kind,
                    )
                )
                continue
            if decision.source != "resolved" and item.counted_machine_vote is not None:
                counted.append(item.counted_machine_vote)
            document = candidate.version.document
            texts[candidate.version_id] = candidate.version.text
            judged.append(
                (document.doc_id, candidate.version.version, candidate.start, candidate.end)
            )
            changed = document.latest_version_id not in (None, candidate.version_id)
            for start, end in decision.spans:
                sources = _sources(item, start, end, resolved=decision.source == "resolved")
                placed = _rechecked(sources, rechecks)
                old_quote = candidate.version.text[start:end]
                about = {
                    "old_version": candidate.version.version,
                    "old_quote": old_quote,
                    "span_ids": tuple(span.pk for span in sources),
                    "by_lead": decision.source == "resolved",
                }
                if placed is None:
                    spans.append(
                        GoldSpanRow(
                            version_id=candidate.version_id,
                            doc_id=document.doc_id,
                            version=candidate.version.version,
                            start=start,
                            end=end,
                            grade=decision.grade,
                            quote=old_quote,
                            **({"changed": NOT_RECHECKED, **about} if changed else {}),
                        )
                    )
                elif placed:
                    version, new_start, new_end, how = placed
                    texts[version.pk] = version.text
                    spans.append(
                        GoldSpanRow(
                            version_id=version.pk,
                            doc_id=document.doc_id,
                            version=version.version,
                            start=new_start,
                            end=new_end,
                            grade=decision.grade,
                            quote=version.text[new_start:new_end],
                            changed=how,
                            newest_version=version.version,
                            **about,
                        )
                    )
        answerable = None
        if isinstance(verdict, VerdictDecision):
            answerable = verdict.outcome == VerdictOutcome.ANSWERABLE
        rows.append(
            gold_question_row(
                question=q.question,
                answerable=answerable,
                verdict_source=verdict.source if isinstance(verdict, VerdictDecision) else "",
                spans=spans,
                texts=texts,
                judged=judged,
                single_by_access=single,
            )
        )
    return GoldResolution(questions=rows, unresolved=unresolved, machine_votes=counted)


def gold_question_row(
    *,
    question: Question,
    answerable: bool | None,
    verdict_source: str,
    spans: list[GoldSpanRow],
    texts: dict[int, str],
    judged: list[tuple[str, int, int, int]],
    single_by_access: list,
) -> GoldQuestionRow:
    """A question's row of the gold from its decided items' gold spans (in the order of its
    passages): overlapping ones merged (`coalesce_spans`), none when it is unanswerable.
    ``texts`` holds the text of each version the spans are on."""
    return GoldQuestionRow(
        question=question,
        answerable=answerable,
        spans=coalesce_spans(spans, texts) if answerable is not False else [],
        judged=judged,
        verdict_source=verdict_source,
        single_by_access=single_by_access,
    )


def question_gold_spans(*, question: Question, viewer=None) -> list[GoldSpanRow]:
    """The question's gold spans as the rule gives them now, in every pool it was labelled in,
    on the documents ``viewer`` may see (what a lead links a reference fact to). Items still
    unresolved have no gold span yet; an unanswerable verdict has none at all."""
    spans: list[GoldSpanRow] = []
    pools = question.question_set.pools.filter(
        work_q("assignments__"), assignments__question=question
    ).distinct()
    for pool_id in pools.values_list("pk", flat=True):
        resolution = resolve_gold(
            question_set=question.question_set,
            viewer=viewer,
            pool_id=pool_id,
            question_id=question.pk,
        )
        spans += [span for row in resolution.questions for span in row.spans]
    unique = {(s.doc_id, s.version, s.start, s.end): s for s in spans}
    return sorted(unique.values(), key=lambda s: (s.doc_id, s.version, s.start, s.end))


def _sources(item, start: int, end: int, *, resolved: bool) -> list:
    """The marked spans behind the gold span [start, end) of an item, whose re-check answers
    place it: of a resolved item, its resolution's overlapping spans (the lead's evidence,
    which leads answer for; the labellers' answers for their own spans do not move a lead's
    decision); else the labellers' overlapping spans."""
    if resolved and item.resolution is not None:
        return [s for s in item.resolution.spans.all() if s.start < end and start < s.end]
    return [
        span
        for judgement in item.judgements
        for span in judgement.span_list
        if span.start < end and start < span.end
    ]


def _rechecked(sources: list, rechecks: dict) -> tuple | None | bool:
    """Where the re-check answers for the marked spans ``sources`` put their gold span of an
    older version: None when none was answered (the span stays, and scoring re-anchors it by
    its quote); False when every answer says the evidence is gone; else (the newest answered
    version, start, end, how: a key of `CHANGED_KINDS`), covering the answered places."""
    answers = [rechecks[span.pk] for span in sources if span.pk in rechecks]
    if not answers:
        return None
    placed = [a for a in answers if a.start is not None]
    if not placed:
        return False
    newest = max(placed, key=lambda a: a.version.version).version
    on_it = [a for a in placed if a.version_id == newest.pk]
    outcomes = {a.outcome for a in on_it}
    how = (
        FACTS if FACTS_CHANGED in outcomes else REMARKED if recheck.REMARKED in outcomes else MOVED
    )
    return newest, min(a.start for a in on_it), max(a.end for a in on_it), how


@dataclass
class UnresolvedGroup:
    """Unresolved items of one question (``question``) or of one kind of reason (``kind``)."""

    title: str
    entries: list[QueueEntry]
    question: Question | None = None
    kind: str = ""

    @property
    def needs_lead(self) -> list[QueueEntry]:
        return [e for e in self.entries if e.kind != "waiting"]

    @property
    def waiting(self) -> list[QueueEntry]:
        return [e for e in self.entries if e.kind == "waiting"]

    @property
    def waiting_for(self) -> list[str]:
        """Everyone the group's waiting items wait for, once each."""
        return list(dict.fromkeys(name for e in self.waiting for name in e.waiting_for))


def _entry_order(entry: QueueEntry) -> tuple:
    kinds = list(PENDING_KINDS)
    return (
        kinds.index(entry.kind) if entry.kind in kinds else len(kinds),
        entry.candidate is not None,  # a question's verdict first, then its passages
        entry.candidate.shuffle_rank if entry.candidate else 0,
        entry.candidate.pk if entry.candidate else 0,
    )


def group_unresolved(entries: list[QueueEntry], *, by: str = "question") -> list[UnresolvedGroup]:
    """The Gold page's unresolved items, grouped by question (in the set's order, most urgent
    kind first within each) or by kind of reason (in `PENDING_KINDS` order)."""
    groups: dict[object, UnresolvedGroup] = {}
    if by == "reason":
        for kind, title in PENDING_KINDS.items():
            groups[kind] = UnresolvedGroup(title=title, entries=[], kind=kind)
        for entry in sorted(entries, key=lambda e: (e.question.pk, e.pool.pk, _entry_order(e))):
            groups[entry.kind].entries.append(entry)
        return [group for group in groups.values() if group.entries]
    for entry in sorted(entries, key=lambda e: (e.question.pk, e.pool.pk)):
        key = entry.question.pk
        if key not in groups:
            groups[key] = UnresolvedGroup(
                title=entry.question.external_id, entries=[], question=entry.question
            )
        groups[key].entries.append(entry)
    for group in groups.values():
        group.entries.sort(key=lambda e: (e.pool.pk, _entry_order(e)))
    return list(groups.values())


def count_by_kind(entries: list[QueueEntry]) -> list[tuple[str, str, int]]:
    """(kind, its label, how many entries) for every kind present, in `PENDING_KINDS` order."""
    return [
        (kind, label, n)
        for kind, label in PENDING_KINDS.items()
        if (n := sum(1 for e in entries if e.kind == kind))
    ]


def coalesce_spans(spans: list[GoldSpanRow], texts: dict[int, str]) -> list[GoldSpanRow]:
    """Overlapping gold spans of one question and version become one unit with the higher grade,
    so evidence that two candidates share is credited once (`goldeval.text.spans`' rule: touching
    spans stay two units)."""
    by_version: dict[int, list[GoldSpanRow]] = defaultdict(list)
    for span in spans:
        by_version[span.version_id].append(span)
    merged: list[GoldSpanRow] = []
    for version_id in sorted(by_version):
        for start, end, group in merge_overlapping(by_version[version_id], offsets=_offsets):
            unit = replace(group[0])
            if len(group) > 1:
                unit.end = end
                unit.grade = max(span.grade for span in group)
                unit.quote = texts[version_id][start:end]
                _merge_changes(unit, group)
            merged.append(unit)
    return merged


def _merge_changes(unit: GoldSpanRow, group: list[GoldSpanRow]) -> None:
    """A unit merged from spans on a changed document takes the worst of their kinds, all of
    their marked spans, and their old quotes."""
    changed = [span for span in group if span.changed]
    if not changed:
        return
    order = list(CHANGED_KINDS)
    unit.changed = min((span.changed for span in changed), key=order.index)
    unit.span_ids = tuple(dict.fromkeys(i for span in group for i in span.span_ids))
    unit.by_lead = any(span.by_lead for span in group)
    unit.old_quote = " … ".join(dict.fromkeys(span.old_quote for span in changed))
    unit.old_version = changed[0].old_version


def changed_counts(spans) -> dict[str, int]:
    """How many of ``spans`` (`GoldSpanRow`) lie on changed documents, by how they are kept:
    ``{"spans": n, "moved": …, "facts_changed": …, "re_marked": …, "not_rechecked": …}``."""
    counts = {"spans": 0, **dict.fromkeys(reversed(CHANGED_KINDS), 0)}
    for span in spans:
        if span.changed:
            counts["spans"] += 1
            counts[span.changed] += 1
    return counts


def mark_current(spans) -> None:
    """Fill ``current`` of the not re-checked spans: their quote as found now in the newest
    version (`labelling.services.recheck.find_again`, the rule scoring applies), "" when not
    found."""
    waiting = [span for span in spans if span.changed == NOT_RECHECKED]
    if not waiting:
        return
    old = {
        pk: (text, latest)
        for pk, text, latest in DocumentVersion.objects.filter(
            pk__in={span.version_id for span in waiting}
        ).values_list("pk", "text", "document__latest_version")
    }
    newest = {
        version.pk: version
        for version in DocumentVersion.objects.filter(
            pk__in={latest for _, latest in old.values()}
        ).only("pk", "version", "text")
    }
    for span in waiting:
        old_text, latest = old[span.version_id]
        version = newest.get(latest)
        if version is None:
            continue
        span.newest_version = version.version
        found = recheck.find_again(
            quote=span.old_quote,
            old_text=old_text,
            start=span.start,
            end=span.end,
            new_text=version.text,
        )
        span.current = "" if found is None else version.text[found.start : found.end]


def _offsets(span: GoldSpanRow) -> tuple[int, int]:
    return span.start, span.end


# --- per question, as a gold set freezes it ---------------------------------------------------


@dataclass(frozen=True)
class UnresolvedItem:
    question_id: str
    pool: str
    item: str  # "verdict", "question" or "doc_id [start–end)"
    reason: str
    # The candidate's document (its primary key), so a page can leave out what an access
    # group hides from its viewer; None for a verdict or a question.
    document: int | None = field(default=None, compare=False)

    def describe(self) -> str:
        pool = f" (pool {self.pool})" if self.pool else ""
        return f"{self.question_id}{pool} — {self.item}: {self.reason}"


@dataclass
class FrozenQuestion:
    question_id: str
    text: str
    answerable: bool
    spans: list[GoldSpanRow]
    judged: list[tuple[str, int, int, int]]  # doc_id, version, start, end


@dataclass
class FrozenGold:
    questions: list[FrozenQuestion]
    unresolved: list[UnresolvedItem]
    machine_votes: list[MachineVote]  # the AI judge's votes the rule counted


def collect_gold(
    *, question_set: QuestionSet, min_span_f1: float = DEFAULT_MIN_SPAN_F1
) -> tuple[list[FrozenQuestion], list[UnresolvedItem]]:
    """Every question of the set with its resolved gold, or the items that still block it
    (`freeze_gold`'s)."""
    frozen = freeze_gold(question_set=question_set, min_span_f1=min_span_f1)
    return frozen.questions, frozen.unresolved


def freeze_gold(
    *, question_set: QuestionSet, min_span_f1: float = DEFAULT_MIN_SPAN_F1
) -> FrozenGold:
    """Every question of the set with its resolved gold, or the items that still block it, and
    the AI judge's votes the rule counted (for the gold set's manifest).

    The rule is `resolve_gold`'s. Around it: a question pooled in several pools gets one line
    (spans and judged passages of all pools), and a question no pool assigned to anyone blocks,
    since a run over the set would carry a question the gold set does not know.
    """
    resolution = resolve_gold(question_set=question_set, min_span_f1=min_span_f1)
    unresolved = [_unresolved_item(entry) for entry in resolution.unresolved]
    rows_of = defaultdict(list)
    for row in resolution.questions:
        rows_of[row.question.pk].append(row)
    without_candidates = _verdicts_without_candidates(question_set, covered=set(rows_of))
    questions: list[FrozenQuestion] = []
    for question in question_set.questions.included().order_by("pk"):
        rows = rows_of.get(question.pk)
        if rows is None:
            verdict = without_candidates.get(question.pk)
            if verdict is None:
                unresolved.append(
                    UnresolvedItem(
                        question.external_id,
                        "",
                        "question",
                        "not labelled: no pool has assigned it to a labeller",
                    )
                )
            elif isinstance(verdict, Pending):
                unresolved.append(
                    UnresolvedItem(question.external_id, "", "verdict", verdict.reason)
                )
            else:
                questions.append(
                    FrozenQuestion(
                        question_id=question.external_id,
                        text=question.text,
                        answerable=verdict.outcome == VerdictOutcome.ANSWERABLE,
                        spans=[],
                        judged=[],
                    )
                )
            continue
        outcomes = {row.answerable for row in rows}
        if None in outcomes:
            continue  # its pending verdict is already listed
        if len(outcomes) > 1:
            unresolved.append(
                UnresolvedItem(
                    question.external_id,
                    "",
                    "verdict",
                    "its pools disagree on whether it is answerable",
                )
            )
            continue
        spans = [replace(s) for row in rows for s in row.spans]
        if len(rows) > 1:
            spans = _coalesce_across_pools(spans)
        judged = list(dict.fromkeys(passage for row in rows for passage in row.judged))
        questions.append(
            FrozenQuestion(
                question_id=question.external_id,
                text=question.text,
                answerable=rows[0].answerable,
                spans=spans,
                judged=judged,
            )
        )
    return FrozenGold(
        questions=questions, unresolved=unresolved, machine_votes=resolution.machine_votes
    )


def _unresolved_item(entry: QueueEntry) -> UnresolvedItem:
    if entry.candidate is None:
        item = "verdict"
    else:
        item = (
            f"{entry.candidate.version.document.doc_id} "
            f"[{entry.candidate.start}–{entry.candidate.end})"
        )
    return UnresolvedItem(
        entry.question.external_id,
        entry.pool.name,
        item,
        entry.reason,
        document=entry.candidate.version.document_id if entry.candidate else None,
    )


def _verdicts_without_candidates(question_set: QuestionSet, *, covered: set[int]) -> dict:
    """The verdict rule for questions labellers saw with no candidate at all (a retriever found
    nothing): their outcome is all there is to resolve."""
    assignments = defaultdict(list)
    for assignment in (
        Assignment.objects.work()
        .filter(included_q("question__"), pool__question_set=question_set)
        .exclude(question_id__in=covered)
        .select_related("verdict")
    ):
        assignments[assignment.question_id].append(assignment)
    resolutions = {
        question_id: outcome
        for question_id, outcome in Resolution.objects.filter(
            pool__question_set=question_set, candidate__isnull=True
        )
        .exclude(outcome="")
        .values_list("question_id", "outcome")
    }
    decided = {}
    for question_id, held in assignments.items():
        decided[question_id] = resolve_verdict(
            finished_outcomes(held),
            planned_votes=len(held),
            resolution=resolutions.get(question_id),
        )
    return decided


def _coalesce_across_pools(spans: list[GoldSpanRow]) -> list[GoldSpanRow]:
    """Overlapping spans of one version from different pools become one unit, higher grade."""
    texts = dict(
        DocumentVersion.objects.filter(pk__in={s.version_id for s in spans}).values_list(
            "pk", "text"
        )
    )
    return coalesce_spans(spans, texts)


def next_to_decide(
    *,
    question_set: QuestionSet,
    viewer,
    pool_id: int,
    question_id: int,
    candidate_id: int | None,
    from_gold: bool = False,
    min_span_f1: float = DEFAULT_MIN_SPAN_F1,
) -> QueueEntry | None:
    """The item a lead meets after this one (a candidate, or the verdict with None): the next
    in the adjudication queue, or among the Gold page's unresolved items ``from_gold``,
    wrapping round; None when this was the last. Read before this item is resolved, so it
    can be found in the order. At the default span F1 minimum the order comes from the stored
    decisions (`gold_state`), not from deciding every item again."""
    if min_span_f1 == DEFAULT_MIN_SPAN_F1:
        return _next_stored(
            question_set=question_set,
            viewer=viewer,
            current=(pool_id, question_id, candidate_id),
            from_gold=from_gold,
        )
    if from_gold:
        resolution = resolve_gold(question_set=question_set, min_span_f1=min_span_f1, viewer=viewer)
        order = [e for g in group_unresolved(resolution.unresolved) for e in g.entries]
    else:
        order = adjudication_queue(
            question_set=question_set, min_span_f1=min_span_f1, viewer=viewer
        )

    def key(entry: QueueEntry) -> tuple:
        return (entry.pool.pk, entry.question.pk, entry.candidate.pk if entry.candidate else None)

    current = (pool_id, question_id, candidate_id)
    position = next((i for i, e in enumerate(order) if key(e) == current), -1)
    rest = order[position + 1 :] + order[: max(position, 0)]
    return next((e for e in rest if key(e) != current), None)


def _next_stored(*, question_set, viewer, current: tuple, from_gold: bool) -> QueueEntry | None:
    """`next_to_decide` from the stored decisions: the same order (the queue's:
    `gold_state.queue_order`; the Gold page's: question, pool, then `_entry_order`), read from
    the stored rows."""
    gold_state.refresh(question_set=question_set)
    kinds = list(PENDING_KINDS)
    visible = gold_state.visible(question_set=question_set, viewer=viewer)
    if from_gold:
        rows = [
            row
            for queryset in visible.filter(kind__in=kinds).both()
            for row in queryset.values_list(
                "pool_id", "question_id", "candidate_id", "kind", "candidate__shuffle_rank"
            )
        ]

        def order(row) -> tuple:
            pool, question, candidate, kind, rank = row
            return (
                question,
                pool,
                kinds.index(kind),
                candidate is not None,
                rank or 0,
                candidate or 0,
            )

        keys = [row[:3] for row in sorted(rows, key=order)]
    else:
        entries = visible.filter(kind__in=gold_state.NEEDS_LEAD)
        ordered, _ = gold_state.queue_order(
            [
                row
                for queryset in entries.both()
                for row in queryset.values(*gold_state.QUEUE_COLUMNS)
            ],
            visible=visible.items,
        )
        keys = [(row["pool_id"], row["question_id"], row["candidate_id"]) for row in ordered]
    position = keys.index(current) if current in keys else -1
    rest = keys[position + 1 :] + keys[: max(position, 0)]
    following = next((key for key in rest if key != current), None)
    if following is None:
        return None
    pool_id, question_id, candidate_id = following
    return QueueEntry(
        pool=Pool.objects.get(pk=pool_id),
        question=Question.objects.get(pk=question_id),
        candidate=Candidate.objects.get(pk=candidate_id) if candidate_id else None,
        reason="",
    )
