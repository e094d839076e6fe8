"""The gold rule's decision per item, stored, so the lead pages need not decide every item of a
set on every request (issue 37 item 4: 60,000 candidates took 15 s a page).

One row per item (`ItemState`: a candidate's grade decision or a question's verdict) says what
`labelling.resolution` decided at the default span F1 minimum: decided ("single", "agreed",
"resolved") or why it is pending, whether a lead resolved it, whether its one vote stands
because the other labeller cannot see it, and a verdict's outcome. The rows do not depend on
who reads them: each page keeps only the rows its viewer may see (`visible`, the
candidate's document through `corpus.visibility`; a question's verdict when one of its
candidates is visible, as `gather_votes` reads it), so no count leaks across users with
different access.

Keeping it current is this module's alone:

- `mark_stale(pool_id=…, question_id=…)` is **the hook**: every write that can change what the
  rule decides about a question (a grade, a span, a verdict, an undo, a resolution, an
  exclusion, an import, an assignment's labeller or completion, an AI judge's vote) calls it
  in its own transaction. It is one INSERT, so the grading request stays O(1 item).
  `mark_set_stale` and `mark_project_stale` do the same for writes that touch many questions
  at once (a plan of assignments, who may see which document, a deactivated account).
- `refresh(question_set)` recomputes the stale questions only (read once, under a lock on the
  set so two pages never write the same rows), before a page reads the rows; the markers it
  read are removed in the same transaction, so a write that lands meanwhile stays marked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet
from django.db.models.signals import post_delete, post_save

from corpus.models import Document, Membership
from corpus.visibility import hidden_q
from labelling.escalation import questions_moved, vote_distance
from labelling.models import (
    Assignment,
    Candidate,
    ItemState,
    ItemStateStale,
    QuestionSet,
    VerdictOutcome,
    included_q,
)
from labelling.resolution import DEFAULT_MIN_SPAN_F1, PENDING_KINDS, Pending
from labelling.services.votes import gather_votes

DECIDED = ("single", "agreed", "resolved")
NEEDS_LEAD = tuple(kind for kind in PENDING_KINDS if kind != "waiting")


def mark_stale(*, pool_id: int, question_id: int) -> None:
    """The hook: the stored decisions of this question of this pool may be out of date."""
    ItemStateStale.objects.create(pool_id=pool_id, question_id=question_id)


def mark_questions_stale(keys: Iterable[tuple[int, int]]) -> None:
    """`mark_stale` for several (pool id, question id) pairs in one statement."""
    ItemStateStale.objects.bulk_create(
        [ItemStateStale(pool_id=pool, question_id=question) for pool, question in set(keys)]
    )


def mark_set_stale(*, question_set_id: int) -> None:
    """Every assigned question of the set (a write that touches many of them)."""
    mark_questions_stale(
        Assignment.objects.work()
        .filter(pool__question_set_id=question_set_id)
        .values_list("pool_id", "question_id")
        .distinct()
    )


def mark_project_stale(*, project_id: int) -> None:
    """Every assigned question of the project: who may see which document changed, or who may
    still vote (an account deactivated, a member added or removed)."""
    mark_questions_stale(
        Assignment.objects.work()
        .filter(pool__question_set__project_id=project_id)
        .values_list("pool_id", "question_id")
        .distinct()
    )


def _membership_changed(sender, instance, **kwargs) -> None:
    """A member added, removed or given another role: who may claim an open slot changed."""
    mark_project_stale(project_id=instance.project_id)


def _user_saved(sender, instance, update_fields=None, **kwargs) -> None:
    """An account (de)activated: its planned votes can (no longer) come. A login's save of
    ``last_login`` alone changes nothing."""
    if update_fields is not None and "is_active" not in update_fields:
        return
    for project_id in Membership.objects.filter(user=instance).values_list("project_id", flat=True):
        mark_project_stale(project_id=project_id)


def connect_signals() -> None:
    """Writes made outside labelling's services (the admin, account management) that change
    who may vote; called once from `LabellingConfig.ready()`."""
    post_save.connect(_membership_changed, sender=Membership, dispatch_uid="gold-state-member")
    post_delete.connect(_membership_changed, sender=Membership, dispatch_uid="gold-state-left")
    post_save.connect(_user_saved, sender=get_user_model(), dispatch_uid="gold-state-user-active")


def refresh(*, question_set: QuestionSet) -> None:
    """Recompute the stored decisions of the set's stale questions (none when nothing changed),
    and of assigned questions that have none stored yet (data written before the store, or
    by a path that bypassed the services)."""
    # The pool's work: a calibration answer is no vote (`work_q`), and a question held only
    # for calibration has no state to store.
    assigned = Assignment.objects.work().filter(pool__question_set=question_set)
    unseen = set(
        assigned.filter(included_q("question__"))
        .exclude(
            Exists(
                ItemState.objects.filter(
                    pool_id=OuterRef("pool_id"),
                    question_id=OuterRef("question_id"),
                    candidate__isnull=True,
                )
            )
        )
        .exclude(  # a question without candidates has no state to store
            ~Exists(
                Candidate.objects.filter(
                    pool_id=OuterRef("pool_id"), question_id=OuterRef("question_id")
                )
            )
        )
        .values_list("pool_id", "question_id")
    )
    if not unseen and not ItemStateStale.objects.filter(pool__question_set=question_set).exists():
        return
    with transaction.atomic():
        # One refresh of a set at a time: two would write the same rows.
        QuestionSet.objects.select_for_update().filter(pk=question_set.pk).exists()
        stale = list(
            ItemStateStale.objects.filter(pool__question_set=question_set).values_list(
                "pk", "pool_id", "question_id"
            )
        )
        keys = {(pool, question) for _, pool, question in stale} | unseen
        if not keys:
            return
        rows = _states(gather_votes(question_set=question_set, keys=keys))
        stored = ItemState.objects.filter(pool__question_set=question_set)
        for pool_id in {pool for pool, _ in keys}:
            stored.filter(
                pool_id=pool_id, question_id__in=[q for p, q in keys if p == pool_id]
            ).delete()
        ItemState.objects.bulk_create(rows, batch_size=5000)
        ItemStateStale.objects.filter(pk__in=[pk for pk, _, _ in stale]).delete()


def version(*, question_set: QuestionSet) -> tuple[int, int]:
    """What moves whenever `refresh` rewrites any stored row of the set: the number of its
    questions' verdict rows and their largest id. `refresh` deletes every row of a stale
    question and inserts them again, its verdict row always among them; ids only grow, so a
    refresh that inserts moves the largest id and one that only deletes moves the count. A
    figure computed from the set's votes after `refresh` stays true while this is unchanged
    (the hook: every write that changes a vote marks its question stale). Read from the
    verdicts' own index (`itemstate_verdict`), a few hundred entries: an index-only scan once
    the table is vacuumed (0.2 ms at 60,000 rows; through the candidate index and the table
    before, 1.6-6 ms)."""
    verdicts = ItemState.objects.filter(
        pool__question_set=question_set, candidate__isnull=True
    ).aggregate(n=Count("pk"), last=Max("pk"))
    return verdicts["n"], verdicts["last"] or 0


def _states(questions) -> list[ItemState]:
    rows = []
    for q in questions:
        verdict = q.decide_verdict()
        rows.append(
            ItemState(
                pool_id=q.pool.pk,
                question_id=q.question.pk,
                kind=verdict.kind if isinstance(verdict, Pending) else verdict.source,
                resolved=q.resolution is not None and bool(q.resolution.outcome),
                answerable=None
                if isinstance(verdict, Pending)
                else verdict.outcome == VerdictOutcome.ANSWERABLE,
                shown=_shown(
                    reason=verdict.reason if isinstance(verdict, Pending) else "",
                    waiting_for=q.waiting_for,
                    outcome=q.resolution.get_outcome_display()
                    if q.resolution is not None and q.resolution.outcome
                    else "",
                ),
            )
        )
        for item in q.items:
            decision = item.decide(min_span_f1=DEFAULT_MIN_SPAN_F1)
            rows.append(
                ItemState(
                    pool_id=q.pool.pk,
                    question_id=q.question.pk,
                    candidate_id=item.candidate.pk,
                    document_id=item.candidate.version.document_id,
                    kind=decision.kind if isinstance(decision, Pending) else decision.source,
                    resolved=item.resolution is not None,
                    single_by_access=item.single_by_access,
                    distance=vote_distance([j.grade for j in item.judgements]),
                    escalated=item.escalation is not None
                    and item.escalation.assignment_id is not None,
                    shown=_item_shown(item, decision),
                )
            )
    return rows


def _shown(**shown) -> dict:
    """`ItemState.shown`, its empty keys left out (`SHOWN` says what each key holds)."""
    return {key: value for key, value in shown.items() if value not in (None, "", [])}


# What `ItemState.shown` holds, for the Gold and Adjudication pages (read by
# `labelling.services.lead_pages`, given to templates through `QueueEntry`):
SHOWN = {
    "grade": "a decided item's grade",
    "spans": "a decided item's gold spans, [start, end] pairs (before merging across items)",
    "reason": "why a pending item or verdict waits (`Pending.reason`)",
    "waiting_for": "the labellers (or open slots) it still waits for",
    "unseen_by": "the labellers of the question who cannot see the passage's document",
    "votes": "the labellers' grades, [grade, username] in slot order",
    "machine": "the grade of the AI judge's vote the rule counts, if any",
    "note": "what a lead is told about the item's escalation",
    "resolution_grade": "the grade of a lead's resolution of the item",
    "outcome": "a verdict's resolution, as displayed",
}


def _item_shown(item, decision) -> dict:
    counted = item.counted_machine_vote
    decided = not isinstance(decision, Pending)
    return _shown(
        grade=decision.grade if decided else None,
        spans=[list(span) for span in decision.spans] if decided else [],
        reason="" if decided else decision.reason,
        waiting_for=item.waiting_for,
        unseen_by=item.unseen_by,
        votes=[
            [j.grade, j.assignment.labeller.get_username() if j.assignment.labeller else ""]
            for j in item.judgements
        ],
        machine=counted.grade if counted is not None else None,
        note=item.escalation_note,
        resolution_grade=item.resolution.grade if item.resolution is not None else None,
    )


# The stored rows that can be entries of the Adjudication page (a superset: `queue_kind`
# says which are and in which section); a partial index holds them (`itemstate_queue`), so the
# whole queue is read without scanning every decided item of the set.
QUEUE = (
    Q(kind__in=list(PENDING_KINDS))
    | Q(resolved=True)
    | Q(single_by_access=True)
    | Q(escalated=True)
)

# The columns `queue_order` reads of each row (`QuerySet.values`).
QUEUE_COLUMNS = (
    "pool_id",
    "question_id",
    "candidate_id",
    "kind",
    "distance",
    "candidate__version_id",
    "candidate__shuffle_rank",
    "candidate__start",
    "candidate__end",
)


def queue_kind(row: dict) -> str | None:
    """The kind of Adjudication page entry a stored row (``kind``, ``candidate_id``,
    ``resolved``, ``single_by_access``, ``escalated``) is, as `adjudication_queue` with every
    section gives it, in its order of precedence: "escalated_waiting" (a third labeller holds
    the passage and has not graded it), "single_by_access" (one vote stands, not resolved), a
    pending kind that needs a lead, "resolved" (a lead's resolution; a resolved item still
    pending keeps its pending kind); None when it is no entry."""
    kind = row["kind"]
    if row["candidate_id"] is not None:
        if row["escalated"] and kind == "waiting":
            return "escalated_waiting"
        if row["single_by_access"] and not row["resolved"] and kind in DECIDED:
            return "single_by_access"
    if kind in NEEDS_LEAD:
        return kind
    if row["resolved"]:
        return kind if kind in PENDING_KINDS else "resolved"
    return None


def queue_order(
    entries: list[dict], *, visible: QuerySet[ItemState]
) -> tuple[list[dict], dict[tuple[int, int, int, int], int]]:
    """The stored ``entries`` (rows with `QUEUE_COLUMNS`) in the adjudication queue's order
    (`adjudication_queue`, `labelling.escalation`): the widest vote distance first, then the
    passages that can move the most questions, then as `gather_votes` reads them (pool,
    question, its verdict, its passages as shuffled). How many questions a passage moves is
    counted over ``visible`` (the viewer's stored passages, `Visible.items`), on the document
    versions of the entries only: a passage moves only questions with an undecided passage on
    its own version. Returns the rows in order and the moves by passage."""
    versions = {row["candidate__version_id"] for row in entries if row["candidate_id"]}
    moved = (
        questions_moved(
            visible.filter(kind__in=PENDING_KINDS, candidate__version_id__in=versions).values_list(
                "question_id", "candidate__version_id", "candidate__start", "candidate__end"
            )
        )
        if versions
        else {}
    )

    def order(row: dict) -> tuple:
        pool, question, candidate = row["pool_id"], row["question_id"], row["candidate_id"]
        if candidate is None:  # a verdict: no grades apart, it moves its own question
            return (0, -1, pool, question, False, 0, 0)
        passage = (question, row["candidate__version_id"])
        moves = moved.get((*passage, row["candidate__start"], row["candidate__end"]), 0)
        return (
            -row["distance"],
            -moves,
            pool,
            question,
            True,
            row["candidate__shuffle_rank"],
            candidate,
        )

    return sorted(entries, key=order), moved


@dataclass
class Visible:
    """The stored decisions of a set's included questions that a viewer may see, as two
    querysets: ``items``, the passages on documents not hidden from them, and ``verdicts``,
    the questions' verdicts where one of the question's candidates in that pool is not (as
    `gather_votes` reads them). Kept apart because one query over both (an OR of the two
    conditions) keeps PostgreSQL from joining: it tests each of a set's rows against the
    access subqueries, which at 60,000 rows it prices high enough to compile the query (JIT),
    seconds a request. Call `refresh` first."""

    items: QuerySet[ItemState]
    verdicts: QuerySet[ItemState]

    def both(self) -> tuple[QuerySet[ItemState], QuerySet[ItemState]]:
        return self.verdicts, self.items

    def filter(self, *args, **kwargs) -> Visible:
        return Visible(
            items=self.items.filter(*args, **kwargs), verdicts=self.verdicts.filter(*args, **kwargs)
        )


def _included(question_set: QuestionSet) -> QuerySet[ItemState]:
    """The stored rows of the set's included questions."""
    return ItemState.objects.filter(included_q("question__"), pool__question_set=question_set)


def visible(*, question_set: QuestionSet, viewer) -> Visible:
    """The stored decisions ``viewer`` may see (`Visible`). The documents hidden from them
    (`corpus.visibility.hidden_q`) are read first, as a list of ids: the rows are then kept
    by a plain test that PostgreSQL plans well with or without statistics of the tables (a
    subquery on access there was planned, before the tables were analyzed, as a nested loop
    testing every document against the access groups once per question: seconds a page)."""
    included = _included(question_set)
    if not viewer.is_authenticated:
        return Visible(items=included.none(), verdicts=included.none())
    hidden = list(
        Document.objects.filter(project_id=question_set.project_id)
        .filter(hidden_q(viewer))
        .values_list("pk", flat=True)
    )
    seen_candidate = Candidate.objects.filter(
        pool_id=OuterRef("pool_id"), question_id=OuterRef("question_id")
    ).exclude(version__document_id__in=hidden)
    return Visible(
        items=included.filter(candidate__isnull=False).exclude(document_id__in=hidden),
        verdicts=included.filter(candidate__isnull=True).filter(Exists(seen_candidate)),
    )


def single_by_access_count(*, question_set: QuestionSet, viewer=None) -> int:
    """How many stored passages of the set one labeller of two cannot see (their one vote
    stands), of those ``viewer`` may see (`visible`; without one, all). Call `refresh` first."""
    items = (
        _included(question_set).filter(candidate__isnull=False)
        if viewer is None
        else visible(question_set=question_set, viewer=viewer).items
    )
    return items.filter(single_by_access=True).count()
