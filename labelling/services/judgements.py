"""A labeller's work on one assignment: grades, evidence spans, notes, the question's verdict,
and undo.

Every write follows the same steps inside one transaction: lock the assignment row (so two
requests about the same assignment run one after the other), check the request against the
current state, write, and append a `Change` with the state before and after.

Revisions: the revision of a judgement (or of the verdict) is the number of changes ever made
to it, so it only grows, even when an undo removes the row. A page sends the revision it shows;
if the thing changed since, the edit is refused (`StaleEdit`, HTTP 409) and nothing is written.
A request that asks for the state that is already saved (a double submit, a retry) succeeds
without writing anything, so a double click never creates two rows or a false conflict.

Guideline: every write records the guideline version the labeller was reading — the one the
page showed (`guideline_version`; 0 when it showed none) — not whatever a lead saved since.

Blindness: an item a lead has resolved answers a labeller's edit exactly as any other item of a
finished question does (the edit is saved and appended to the history); the resolution, not the
vote, is what the gold set takes (`labelling.services.gold`), so refusing the edit would only
tell the labeller that the question was double-labelled and disputed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models.functions import Length, Substr

from corpus.models import DocumentVersion
from goldeval.text.spans import overlaps
from goldset.errors import ServiceError
from labelling.grading_passages import passages_for_grading
from labelling.models import (
    Assignment,
    Candidate,
    Change,
    ChangeSubject,
    Judgement,
    Span,
    Verdict,
    VerdictOutcome,
)
from labelling.services import gold_state, leases, write_lock
from labelling.services.completion import Progress, update_completion

GRADES = {0: "Not relevant", 1: "Partly answers", 2: "Fully answers"}
MAX_NOTE_CHARS = 5_000
# Characters of document text the grading page shows on each side of a passage.
PAGE_CONTEXT_CHARS = 600
MAX_REASON_CHARS = 5_000
MAX_SPANS_PER_JUDGEMENT = 50
# Time between two actions beyond this is a coffee break, not work on the passage.
MAX_SECONDS_PER_ACTION = 600.0
# What an edit of a judgement writes (not the ids and created_at it read).
JUDGEMENT_EDIT_FIELDS = ["grade", "note", "guideline", "seconds_spent", "revision", "updated_at"]

JudgementState = dict | None  # {"grade": int, "note": str, "spans": [[version_id, start, end]]}
VerdictState = dict | None  # {"outcome": str, "reason": str}


class GradingError(ServiceError):
    """Bad input; the message tells the labeller what to do. Nothing was written."""

    status = 400


class NotInQueue(GradingError):
    """An assignment, passage or span the labeller cannot reach (theirs or not, hidden or
    absent: the answer is the same, so it reveals nothing)."""

    status = 404


class StaleEdit(GradingError):
    """The page was based on a state that has changed since (another tab, another window)."""

    status = 409


class NothingToUndo(GradingError):
    """No change of the labeller's on this question is left to undo."""


NOTHING_TO_UNDO = "Nothing to undo on this question."
GRADED_BY_SPAN = (
    "Marked as evidence, and the passage is now graded 1 (partly answers). Press 2 if it fully "
    "answers the question."
)
UNKNOWN_GUIDELINE = (
    "This page shows a guideline version that does not exist in this project, so nothing was "
    "saved. Reload the page."
)

STALE_MESSAGE = (
    "This was changed in another tab or window after this page loaded, so your change was not "
    "saved. The page now shows what is saved; make your change again if you still want it."
)


@dataclass(frozen=True)
class Outcome:
    """What a write did, for the page to re-render: which candidate (None = the verdict), its
    new revision and the question's progress (both None when nothing changed)."""

    subject: str
    candidate: Candidate | None
    changed: bool
    message: str = ""
    revision: int | None = None
    progress: Progress | None = None
    # The judgement as saved (None: there is none now), with its spans in `saved_spans`;
    # only set when `judgement_saved`, so the page can be re-rendered without reading it again.
    judgement: Judgement | None = None
    judgement_saved: bool = False
    # The current guideline version when it is newer than the one the page showed.
    newer_guideline: int | None = None
    # Until when the question stays the labeller's (None: no lease), for the status bar.
    lease_until: datetime | None = None


# Public services --------------------------------------------------------------------------


def record_grade(
    *,
    assignment: Assignment,
    candidate_id: int,
    labeller,
    grade: int,
    revision: int,
    seconds: float = 0.0,
    guideline_version: int | None = None,
) -> Outcome:
    """Grade a candidate 0/1/2. Grading 1 or 2 without evidence yet records the candidate's
    passage as the default span; grading 0 drops the spans (undo brings them back).

    ``guideline_version`` is the version the labeller's page showed (0: none; None: the
    current one, for callers without a page)."""
    if grade not in GRADES:
        raise GradingError("A grade is 0 (not relevant), 1 (partly answers) or 2 (fully answers).")

    def apply(state: JudgementState, candidate: Candidate) -> JudgementState:
        new = _copy(state) or {"grade": grade, "note": "", "spans": []}
        new["grade"] = grade
        if grade == 0:
            new["spans"] = []
        elif not new["spans"]:
            new["spans"] = [[candidate.version_id, candidate.start, candidate.end]]
        return new

    return _edit_judgement(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=labeller,
        revision=revision,
        seconds=seconds,
        action=f"grade {grade}",
        apply=apply,
        guideline_version=guideline_version,
    )


def record_note(
    *,
    assignment: Assignment,
    candidate_id: int,
    labeller,
    note: str,
    revision: int,
    seconds: float = 0.0,
    guideline_version: int | None = None,
) -> Outcome:
    note = note.replace("\r\n", "\n").strip()
    if len(note) > MAX_NOTE_CHARS:
        raise GradingError(f"A note can be at most {MAX_NOTE_CHARS:,} characters.")

    def apply(state: JudgementState, candidate: Candidate) -> JudgementState:
        if state is None:
            raise GradingError("Grade this passage before writing a note about it.")
        return {**_copy(state), "note": note}

    return _edit_judgement(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=labeller,
        revision=revision,
        seconds=seconds,
        action="note",
        apply=apply,
        guideline_version=guideline_version,
    )


def add_span(
    *,
    assignment: Assignment,
    candidate_id: int,
    labeller,
    version_id: int,
    start: int,
    end: int,
    quote: str,
    revision: int,
    seconds: float = 0.0,
    guideline_version: int | None = None,
) -> Outcome:
    """Add evidence from a text selection, validated against the stored text.

    A selection inside an existing span narrows it (the usual case: the default span is the
    whole passage and the labeller picks the sentence that answers); one overlapping spans is
    merged with them; anything else is added beside them. Evidence marked in a passage that is
    not graded yet (or graded 0) grades it 1, in the same change: marking evidence says the
    passage answers at least in part, and the labeller is told so and can press 2.
    """
    graded_by_span = []

    def apply(state: JudgementState, candidate: Candidate) -> JudgementState:
        if version_id != candidate.version_id:
            raise GradingError(
                "Evidence must come from this passage's own document version; reload the page "
                "and select the text again."
            )
        _check_quote(version_id=version_id, start=start, end=end, quote=quote)
        if state is None or state["grade"] == 0:
            graded_by_span.append(True)
            new = {"grade": 1, "note": state["note"] if state else "", "spans": []}
        else:
            new = _copy(state)
        spans = [tuple(s) for s in new["spans"]]
        span = (version_id, start, end)
        if span in spans:
            return new
        containing = [s for s in spans if s[0] == version_id and s[1] <= start and end <= s[2]]
        overlapping = [s for s in spans if s[0] == version_id and overlaps(s[1:], (start, end))]
        if containing:
            spans = [s for s in spans if s not in containing] + [span]
        elif overlapping:
            merged = (
                version_id,
                min([start] + [s[1] for s in overlapping]),
                max([end] + [s[2] for s in overlapping]),
            )
            spans = [s for s in spans if s not in overlapping] + [merged]
        else:
            spans.append(span)
        if len(spans) > MAX_SPANS_PER_JUDGEMENT:
            raise GradingError(f"A passage can have at most {MAX_SPANS_PER_JUDGEMENT} spans.")
        new["spans"] = [list(s) for s in sorted(spans)]
        return new

    outcome = _edit_judgement(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=labeller,
        revision=revision,
        seconds=seconds,
        action="add span",
        apply=apply,
        quotes={(version_id, start, end): quote},
        guideline_version=guideline_version,
    )
    if graded_by_span and outcome.changed:
        return replace(outcome, message=GRADED_BY_SPAN)
    return outcome


def remove_span(
    *,
    assignment: Assignment,
    candidate_id: int,
    labeller,
    span_id: int,
    revision: int,
    guideline_version: int | None = None,
) -> Outcome:
    def apply(state: JudgementState, candidate: Candidate) -> JudgementState:
        span = (
            Span.objects.filter(
                pk=span_id, judgement__assignment=assignment, judgement__candidate=candidate
            )
            .order_by()
            .first()
        )
        if span is None:
            raise NotInQueue("That evidence span no longer exists; the page now shows the rest.")
        new = _copy(state)
        new["spans"] = [s for s in new["spans"] if s != [span.version_id, span.start, span.end]]
        if not new["spans"]:
            raise GradingError(
                "A passage graded 1 or 2 keeps at least one evidence span. Select the evidence "
                "first, or grade the passage 0."
            )
        return new

    return _edit_judgement(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=labeller,
        revision=revision,
        seconds=0.0,
        action="remove span",
        apply=apply,
        guideline_version=guideline_version,
    )


def record_verdict(
    *,
    assignment: Assignment,
    labeller,
    outcome: str,
    reason: str,
    revision: int,
    guideline_version: int | None = None,
) -> Outcome:
    """The question-level outcome: answerable, unanswerable (no passage answers it), or can't
    tell, which needs a reason (it is what tells the lead the guideline needs work)."""
    if outcome not in VerdictOutcome.values:
        raise GradingError("Choose answerable, unanswerable or can't tell.")
    reason = reason.replace("\r\n", "\n").strip()
    if len(reason) > MAX_REASON_CHARS:
        raise GradingError(f"A reason can be at most {MAX_REASON_CHARS:,} characters.")
    if outcome == VerdictOutcome.CANT_TELL and not reason:
        raise GradingError("Say why you can't tell; the lead uses it to improve the guideline.")
    wanted = {"outcome": outcome, "reason": reason}
    with transaction.atomic():
        locked = _locked(assignment, labeller, guideline_version)
        verdict = Verdict.objects.filter(assignment=locked).first()
        before = _verdict_state(verdict)
        if before == wanted:
            return Outcome(
                subject=ChangeSubject.VERDICT,
                candidate=None,
                changed=False,
                newer_guideline=locked.newer_guideline,
                lease_until=locked.lease_expires_at,
            )
        current = _revision(locked, ChangeSubject.VERDICT, None)
        if revision != current:
            raise StaleEdit(STALE_MESSAGE)
        _write_verdict(locked, verdict, wanted, revision=current + 1)
        _append(locked, ChangeSubject.VERDICT, None, f"verdict {outcome}", before, wanted, labeller)
        progress = update_completion(locked, labeller)
    return Outcome(
        subject=ChangeSubject.VERDICT,
        candidate=None,
        changed=True,
        revision=current + 1,
        progress=progress,
        newer_guideline=locked.newer_guideline,
        lease_until=locked.lease_expires_at,
    )


def undo_last_change(
    *, assignment: Assignment, labeller, guideline_version: int | None = None
) -> Outcome:
    """Revert the labeller's most recent change to this assignment that is not yet undone.

    The undo is itself a change (history stays append-only); pressing undo again reverts the
    change before, like an editor's undo stack.
    """
    with transaction.atomic():
        locked = _locked(assignment, labeller, guideline_version)
        last = (
            Change.objects.filter(
                assignment=locked,
                made_by=labeller,
                subject__in=[ChangeSubject.JUDGEMENT, ChangeSubject.VERDICT],
                undoes__isnull=True,
                undone_by__isnull=True,
            )
            .select_related("candidate")
            .order_by("-pk")
            .first()
        )
        if last is None:
            raise NothingToUndo(NOTHING_TO_UNDO)
        revision = _revision(locked, last.subject, last.candidate) + 1
        judgement = None
        if last.subject == ChangeSubject.VERDICT:
            verdict = Verdict.objects.filter(assignment=locked).first()
            current = _verdict_state(verdict)
            if current != last.after:
                raise StaleEdit(STALE_MESSAGE)
            _write_verdict(locked, verdict, last.before, revision=revision)
        else:
            judgement = _judgement(locked, last.candidate)
            current = _judgement_state(judgement)
            if current != last.after:
                raise StaleEdit(STALE_MESSAGE)
            judgement = _write_judgement(
                locked, last.candidate, judgement, last.before, seconds=0.0, revision=revision
            )
        _append(
            locked,
            last.subject,
            last.candidate,
            "undo",
            current,
            last.before,
            labeller,
            undoes=last,
        )
        progress = update_completion(locked, labeller)
    return Outcome(
        subject=last.subject,
        candidate=last.candidate,
        changed=True,
        message=f"Undone: {last.action}.",
        revision=revision,
        progress=progress,
        judgement=judgement if last.subject == ChangeSubject.JUDGEMENT else None,
        judgement_saved=last.subject == ChangeSubject.JUDGEMENT,
        newer_guideline=locked.newer_guideline,
        lease_until=locked.lease_expires_at,
    )


def undo_latest_change_elsewhere(
    *, project, labeller, exclude: Assignment, guideline_version: int | None = None
) -> tuple[Assignment, Outcome]:
    """Undo the labeller's most recent change on another of their questions in ``project``
    (what undo does once nothing is left on the current one), and say which question."""
    own = Assignment.objects.in_project(project).held_by(labeller).exclude(pk=exclude.pk)
    last = (
        Change.objects.filter(
            assignment__in=own,
            made_by=labeller,
            subject__in=[ChangeSubject.JUDGEMENT, ChangeSubject.VERDICT],
            undoes__isnull=True,
            undone_by__isnull=True,
        )
        .select_related("assignment__question")
        .order_by("-pk")
        .first()
    )
    if last is None:
        raise NothingToUndo("Nothing left to undo.")
    assignment = last.assignment
    outcome = undo_last_change(
        assignment=assignment, labeller=labeller, guideline_version=guideline_version
    )
    return assignment, outcome


# Reads used by the grading page ------------------------------------------------------------


def verdict_revision(assignment: Assignment) -> int:
    """The revision of the assignment's verdict (judgements carry theirs, read with the
    passages: `passages_for_grading`)."""
    return _revision(assignment, ChangeSubject.VERDICT, None)


def clamp_seconds(raw) -> float:
    """Seconds reported by the page: anything odd counts as 0, long pauses are capped."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return 0.0
    if not math.isfinite(value) or value < 0:
        return 0.0
    return min(value, MAX_SECONDS_PER_ACTION)


# Internals -----------------------------------------------------------------------------------


def _edit_judgement(
    *,
    assignment: Assignment,
    candidate_id: int,
    labeller,
    revision: int,
    seconds: float,
    action: str,
    apply: Callable[[JudgementState, Candidate], JudgementState],
    quotes: dict | None = None,
    guideline_version: int | None = None,
) -> Outcome:
    seconds = clamp_seconds(seconds)
    for attempt in range(2):
        try:
            with transaction.atomic():
                locked = _locked(assignment, labeller, guideline_version)
                passages = _passages(locked, labeller)
                candidate = _candidate(locked, candidate_id, labeller, passages)
                judgement = None if candidate.grade is None else _judgement(locked, candidate)
                before = _judgement_state(judgement)
                after = apply(before, candidate)
                if after == before:
                    return Outcome(
                        ChangeSubject.JUDGEMENT,
                        candidate,
                        changed=False,
                        newer_guideline=locked.newer_guideline,
                        lease_until=locked.lease_expires_at,
                    )
                current = candidate.revision
                if revision != current:
                    raise StaleEdit(STALE_MESSAGE)
                known = {(candidate.version_id, candidate.start, candidate.end): candidate.passage}
                history = _history(
                    locked, ChangeSubject.JUDGEMENT, candidate, action, before, after, labeller
                )
                judgement = _write_judgement(
                    locked,
                    candidate,
                    judgement,
                    after,
                    seconds=seconds,
                    revision=current + 1,
                    quotes={**known, **(quotes or {})},
                    history=history,
                )
                candidate.revision = current + 1
                candidate.grade = after["grade"] if after is not None else None
                candidate.graded = after is not None
                progress = update_completion(
                    locked, labeller, passages=passages, verdict=locked.verdict_outcome
                )
                return Outcome(
                    ChangeSubject.JUDGEMENT,
                    candidate,
                    changed=True,
                    revision=current + 1,
                    progress=progress,
                    judgement=judgement,
                    judgement_saved=True,
                    newer_guideline=locked.newer_guideline,
                    lease_until=locked.lease_expires_at,
                )
        except IntegrityError:
            # Only reachable where the database has no row locks (SQLite): the unique
            # constraint refused a second row, so look again at what is now saved.
            if attempt:
                raise StaleEdit(STALE_MESSAGE)
    raise AssertionError("unreachable")


def _locked(assignment: Assignment, labeller, guideline_version: int | None = None) -> Assignment:
    """The assignment, locked for this write (`write_lock`), with `write_guideline_id` (the
    guideline the write records: the version the page showed, or the current one),
    `newer_guideline` (the current version when it is newer than the page's) and
    `verdict_outcome`, read in the same query; its lease renewed (or taken back, when it
    lapsed and nobody took the slot since)."""

    def lock() -> Assignment | None:
        return write_lock.locked_assignment(
            assignment_id=assignment.pk,
            labeller_id=getattr(labeller, "pk", None),
            guideline_version=guideline_version or 0,
        )

    locked = lock()
    # The lease lapsed and the slot went back to the pool: still free, it is theirs again
    # (nothing lost); someone else's now, `LeaseLost`.
    if (
        locked is None
        and labeller is not None
        and leases.retake_lapsed(assignment_id=assignment.pk, labeller=labeller)
    ):
        locked = lock()
    if locked is None:
        raise NotInQueue("This question is not in your queue.")
    leases.renew_lease(assignment=locked, lease_minutes=locked.lease_minutes or 0)
    current = locked.current_guideline_version
    if guideline_version is None:
        locked.write_guideline_id = locked.current_guideline_id
        locked.newer_guideline = None
    elif guideline_version == 0:
        locked.write_guideline_id = None
        locked.newer_guideline = current
    else:
        if locked.shown_guideline_id is None:
            raise GradingError(UNKNOWN_GUIDELINE)
        locked.write_guideline_id = locked.shown_guideline_id
        locked.newer_guideline = current if current and current > guideline_version else None
    return locked


def _passages(assignment: Assignment, labeller) -> list[Candidate]:
    """The candidates the labeller sees for the assignment, in page order, each with whether
    it is graded, its judgement's revision, its passage text and the page's window around it:
    one query serves the check of the candidate, the progress and the card the page redraws."""
    return passages_for_grading(
        assignment=assignment, user=labeller, context_chars=PAGE_CONTEXT_CHARS
    )


def _candidate(assignment: Assignment, candidate_id, labeller, passages) -> Candidate:
    """The candidate, if it is one of the passages the labeller sees for this question.

    Passages of other pools (or projects) and hidden ones get the same answer as ids that do
    not exist; only a passage of another question in the same pool is named as such."""
    wanted = int(candidate_id) if str(candidate_id).isdigit() else None
    for candidate in passages:
        if candidate.pk == wanted:
            return candidate
    elsewhere = (
        wanted is not None
        and Candidate.objects.not_hidden_from(labeller)
        .filter(pk=wanted, pool_id=assignment.pool_id)
        .exclude(question_id=assignment.question_id)
        .exists()
    )
    if elsewhere:
        raise GradingError("That passage belongs to another question.")
    raise NotInQueue("No such passage.")


def _check_quote(*, version_id: int, start: int, end: int, quote: str) -> None:
    if not (isinstance(start, int) and isinstance(end, int)) or start < 0 or end <= start:
        raise GradingError("A span needs a start before its end; select some text first.")
    row = (
        DocumentVersion.objects.filter(pk=version_id)
        .annotate(length=Length("text"), piece=Substr("text", start + 1, end - start))
        .values("length", "piece")
        .first()
    )
    if row is None:
        raise NotInQueue("No such document version.")
    if end > row["length"]:
        raise GradingError(
            f"The selection [{start}, {end}) runs past the end of the document "
            f"({row['length']} characters)."
        )
    if row["piece"] != quote:
        raise GradingError(
            "The selected text does not match the document at those positions, so it was not "
            "saved. Reload the page and select it again."
        )


def _revision(assignment: Assignment, subject: str, candidate: Candidate | None) -> int:
    return Change.objects.filter(
        assignment=assignment, subject=subject, candidate=candidate
    ).count()


def _append(*args, **kwargs) -> None:
    _history(*args, **kwargs).save(force_insert=True)


def _history(assignment, subject, candidate, action, before, after, labeller, undoes=None):
    """The unsaved history row of a write (`Change`), saved once the write is made."""
    return Change(
        assignment_id=assignment.pk,
        candidate_id=getattr(candidate, "pk", None),
        subject=subject,
        action=action,
        before=before,
        after=after,
        made_by_id=getattr(labeller, "pk", None),
        undoes_id=getattr(undoes, "pk", None),
    )


def _copy(state: JudgementState) -> JudgementState:
    if state is None:
        return None
    return {
        "grade": state["grade"],
        "note": state["note"],
        "spans": [list(s) for s in state["spans"]],
    }


def _judgement(assignment: Assignment, candidate: Candidate) -> Judgement | None:
    """The judgement with its spans (`judgement.spans.all()`, unordered: `_judgement_state`
    sorts), read in one query (`write_lock.judgement_with_spans`)."""
    return write_lock.judgement_with_spans(assignment_id=assignment.pk, candidate_id=candidate.pk)


def _judgement_state(judgement: Judgement | None) -> JudgementState:
    if judgement is None:
        return None
    spans = sorted([s.version_id, s.start, s.end] for s in judgement.spans.all())
    return {"grade": judgement.grade, "note": judgement.note, "spans": spans}


def _verdict_state(verdict: Verdict | None) -> VerdictState:
    if verdict is None:
        return None
    return {"outcome": verdict.outcome, "reason": verdict.reason}


def _write_judgement(
    assignment: Assignment,
    candidate: Candidate,
    judgement: Judgement | None,
    state: JudgementState,
    *,
    seconds: float,
    revision: int,
    quotes: dict | None = None,
    history: Change | None = None,
) -> Judgement | None:
    """Make the saved judgement match ``state``; ``quotes`` holds span texts already known
    (the passage, a validated selection), the rest are read from the version text; the
    write's `history` row is written with it (None: the caller appends the change)."""
    gold_state.mark_stale(pool_id=assignment.pool_id, question_id=assignment.question_id)
    if state is None:
        if judgement is not None:
            judgement.delete()
        if history is not None:
            history.save(force_insert=True)
        return None
    if judgement is None:
        judgement = Judgement(assignment=assignment, candidate=candidate, seconds_spent=0.0)
    judgement.grade = state["grade"]
    judgement.note = state["note"]
    judgement.guideline_id = assignment.write_guideline_id
    judgement.seconds_spent = (judgement.seconds_spent or 0.0) + seconds
    judgement.revision = revision
    is_new = judgement.pk is None
    existing = {} if is_new else {(s.version_id, s.start, s.end): s for s in judgement.spans.all()}
    wanted = {tuple(s) for s in state["spans"]}
    created = [
        Span(
            judgement=judgement,
            version_id=v,
            start=s,
            end=e,
            quote=(quotes or {}).get((v, s, e)) or _quote(v, s, e),
        )
        for v, s, e in sorted(wanted - set(existing))
    ]
    if is_new:
        judgement.save(force_insert=True)
    else:
        judgement.save(update_fields=JUDGEMENT_EDIT_FIELDS)
        stale = [s.pk for key, s in existing.items() if key not in wanted]
        if stale:
            Span.objects.filter(pk__in=stale).delete()
    if created:
        Span.objects.bulk_create(created)
    if history is not None:
        history.save(force_insert=True)
    kept = [span for key, span in existing.items() if key in wanted]
    judgement.saved_spans = sorted(kept + created, key=lambda span: (span.start, span.end))
    return judgement


def _quote(version_id: int, start: int, end: int) -> str:
    return (
        DocumentVersion.objects.filter(pk=version_id)
        .annotate(piece=Substr("text", start + 1, end - start))
        .values_list("piece", flat=True)
        .get()
    )


def _write_verdict(
    assignment: Assignment, verdict: Verdict | None, state: VerdictState, *, revision: int
) -> None:
    gold_state.mark_stale(pool_id=assignment.pool_id, question_id=assignment.question_id)
    if state is None:
        if verdict is not None:
            verdict.delete()
        return
    if verdict is None:
        verdict = Verdict(assignment=assignment)
    verdict.outcome = state["outcome"]
    verdict.reason = state["reason"]
    verdict.guideline_id = assignment.write_guideline_id
    verdict.revision = revision
    verdict.save()
