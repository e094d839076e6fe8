"""The grading page for one question, and the small writes it makes while a labeller works.

The page is addressed by (pool, question), never by assignment id: a labeller only ever reaches
their own assignment, and ids cannot hint at anyone else's. Every write answers an htmx/fetch
request with the re-rendered piece of the page (plus a message); a plain form post (no
JavaScript) is redirected back to the page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from corpus.access import ProjectAccess, project_access
from corpus.models import DocumentVersion
from labelling.forms import (
    GradeForm,
    GradingWriteForm,
    NoteForm,
    RevisionForm,
    SpanForm,
    VerdictForm,
)
from labelling.highlight import Segment, highlight, whole_words
from labelling.models import (
    Assignment,
    Candidate,
    ChangeSubject,
    Judgement,
    Verdict,
    VerdictOutcome,
)
from labelling.services import judgements as services
from labelling.services.guidelines import current_guideline, render_guideline

# Characters of document text shown on each side of a passage when its context is expanded.
CONTEXT_CHARS = 600
PAGE = "labelling/grade.html"
SESSION_EXPIRED = "Your session has expired. Log in again; your last action is kept."


def login_required_or_401(view: Callable) -> Callable:
    """Like login_required, but an htmx/fetch request gets a 401 instead of the login page, so
    the page can keep the action and replay it after logging in."""
    redirecting = login_required(view)

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_authenticated and request.htmx:
            return HttpResponse(SESSION_EXPIRED, status=401, content_type="text/plain")
        return redirecting(request, *args, **kwargs)

    return wrapped


# Page data ---------------------------------------------------------------------------------


@dataclass
class Card:
    candidate: Candidate
    position: int
    segments: list[Segment]
    judgement: Judgement | None
    revision: int
    spans: list = field(default_factory=list)
    whole_document: bool = False
    cut_before: bool = False
    cut_after: bool = False
    url: str = ""  # this passage's URLs start here (see `candidate_url`)

    @property
    def grade(self) -> int | None:
        return self.judgement.grade if self.judgement else None

    @property
    def grade_meaning(self) -> str:
        return services.GRADES[self.grade] if self.judgement else "Not graded yet"


def _cards(
    assignment: Assignment,
    user,
    *,
    slug: str,
    only: Candidate | None = None,
    saved: services.Outcome | None = None,
) -> list[Card]:
    """The passages of an assignment as the labeller sees them (`Candidate.for_grading`). With
    `only`, just that one; its position then comes from the caller's progress, see `_answer`.
    With `saved` (an outcome that carries the judgement it wrote), that judgement is used
    instead of being read again."""
    judgements = Judgement.objects.filter(assignment=assignment).prefetch_related("spans")
    candidates = Candidate.objects.for_grading(
        assignment=assignment,
        user=user,
        context_chars=CONTEXT_CHARS,
        candidate_id=only.pk if only is not None else None,
    )
    if only is not None:
        judgements = judgements.filter(candidate_id=only.pk)
    if saved is not None and saved.judgement_saved:
        by_candidate = {only.pk: saved.judgement} if saved.judgement else {}
    else:
        by_candidate = {j.candidate_id: j for j in judgements}
    base = candidate_url(assignment, slug)
    cards = []
    for position, candidate in enumerate(candidates, start=1):
        judgement = by_candidate.get(candidate.pk)
        spans = []
        if judgement is not None:
            spans = getattr(judgement, "saved_spans", None) or sorted(
                judgement.spans.all(), key=lambda s: (s.start, s.end)
            )
        passage = (candidate.start, candidate.end)
        text, offset = whole_words(
            candidate.window,
            offset=candidate.window_start,
            passage=passage,
            context_chars=CONTEXT_CHARS,
        )
        evidence = [(s.start, s.end) for s in spans if s.version_id == candidate.version_id]
        cards.append(
            Card(
                candidate=candidate,
                position=position,
                segments=highlight(text, offset=offset, passage=passage, layers={"e": evidence}),
                judgement=judgement,
                revision=candidate.revision,
                spans=spans,
                cut_before=offset > 0,
                cut_after=_reaches_window_end(candidate),
                url=f"{base}{candidate.pk}/",
            )
        )
    return cards


def _reaches_window_end(candidate: Candidate) -> bool:
    """Whether the window stopped short of the document's end (it asked for CONTEXT_CHARS)."""
    return len(candidate.window) - (candidate.end - candidate.window_start) >= CONTEXT_CHARS


def _assignment_for(
    request: HttpRequest, slug: str, pool_id: int, question_id: int, *, page: bool = True
):
    """The user's own assignment for (pool, question), or 404. Writes (`page=False`) need only
    its ids; the services lock and read the row themselves."""
    access = project_access(request.user, slug)
    assignments = (
        Assignment.objects.in_project(access.project)
        .held_by(request.user)
        .for_question(pool_id=pool_id, question_id=question_id)
        .order_by()
    )
    if page:
        assignments = assignments.select_related("pool__question_set", "question")
    else:
        assignments = assignments.only("pk", "pool_id", "question_id", "labeller_id")
    assignment = assignments.first()
    if assignment is None:
        raise Http404("This question is not in your queue.")
    return access, assignment


def _page_context(access: ProjectAccess, assignment: Assignment, user) -> dict:
    verdict_revision = services.verdict_revision(assignment)
    cards = _cards(assignment, user, slug=access.project.slug)
    verdict = Verdict.objects.filter(assignment=assignment).first()
    guideline = current_guideline(access.project)
    progress = services.Progress(
        candidate_ids=[card.candidate.pk for card in cards],
        graded=sum(1 for card in cards if card.judgement is not None),
        verdict=verdict.outcome if verdict else None,
        done=assignment.completed_at is not None,
    )
    own = Assignment.objects.in_project(access.project).held_by(user)
    return {
        "access": access,
        "project": access.project,
        **_fixed_context(assignment),
        "question": assignment.question,
        "pool": assignment.pool,
        "cards": cards,
        "progress": progress,
        "verdict": verdict,
        "verdict_revision": verdict_revision,
        "guideline": guideline,
        "guideline_html": render_guideline(guideline.text) if guideline else "",
        "queue": own.queue_counts(),
    }


def _fixed_context(assignment: Assignment) -> dict:
    """What every piece of the page needs (the partials use ids only, never `question`)."""
    return {
        "assignment": assignment,
        "outcomes": VerdictOutcome.choices,
        "grades": list(services.GRADES.items()),
    }


# Views -------------------------------------------------------------------------------------


@login_required
@require_GET
def grade_question(request: HttpRequest, slug: str, pool_id: int, question_id: int) -> HttpResponse:
    access, assignment = _assignment_for(request, slug, pool_id, question_id)
    return render(request, PAGE, _page_context(access, assignment, request.user))


@login_required_or_401
@require_GET
def show_passage_document(
    request: HttpRequest, slug: str, pool_id: int, question_id: int, candidate_id: int
) -> HttpResponse:
    """The whole document around a passage (htmx swaps it in place of the context window)."""
    _, assignment = _assignment_for(request, slug, pool_id, question_id)
    candidate = get_object_or_404(
        Candidate.objects.of_assignment(assignment).not_hidden_from(request.user), pk=candidate_id
    )
    version = DocumentVersion.objects.only("id", "text").get(pk=candidate.version_id)
    judgement = (
        Judgement.objects.filter(assignment=assignment, candidate=candidate)
        .prefetch_related("spans")
        .first()
    )
    spans = [
        (s.start, s.end)
        for s in (judgement.spans.all() if judgement else [])
        if s.version_id == candidate.version_id
    ]
    card = Card(
        candidate=candidate,
        position=0,
        segments=highlight(
            version.text, passage=(candidate.start, candidate.end), layers={"e": spans}
        ),
        judgement=judgement,
        revision=0,
        whole_document=True,
    )
    return render(request, f"{PAGE}#document", {"card": card})


def _write(action: Callable[..., services.Outcome]) -> Callable:
    """The common shape of every grading write: resolve the assignment, call one service, and
    answer with the re-rendered pieces (htmx) or a redirect (plain form)."""

    @login_required_or_401
    @require_POST
    @wraps(action)
    def view(
        request: HttpRequest, slug: str, pool_id: int, question_id: int, **ids
    ) -> HttpResponse:
        try:
            access, assignment = _assignment_for(request, slug, pool_id, question_id, page=False)
        except Http404 as exc:
            if not request.htmx:
                raise  # a plain 404, never a redirect into a project the user is not in
            return _answer(request, None, None, str(exc), status=404)
        try:
            outcome = action(request, assignment, **ids)
            status, message = 200, outcome.message
        except services.GradingError as exc:
            status, message = exc.status, str(exc)
            outcome = None
            if isinstance(exc, services.StaleEdit) or "candidate_id" in ids:
                outcome = _outcome_to_refresh(request, assignment, ids)
        return _answer(request, access, assignment, message, status=status, outcome=outcome)

    return view


def _outcome_to_refresh(request, assignment, ids) -> services.Outcome | None:
    """After a refused write, re-render what the labeller was acting on, so the page shows the
    saved state (never anything they could not see)."""
    candidate_id = ids.get("candidate_id")
    if candidate_id is None:
        return services.Outcome(subject=ChangeSubject.VERDICT, candidate=None, changed=False)
    candidate = (
        Candidate.objects.of_assignment(assignment)
        .not_hidden_from(request.user)
        .filter(pk=candidate_id)
        .order_by()
        .first()
    )
    if candidate is None:
        return None
    return services.Outcome(subject=ChangeSubject.JUDGEMENT, candidate=candidate, changed=False)


def _answer(
    request, access, assignment, message: str, *, status: int, outcome=None
) -> HttpResponse:
    if not request.htmx:
        if message:
            (messages.success if status == 200 else messages.error)(request, message)
        if assignment is None:
            return redirect("labelling:show-queue", slug=request.resolver_match.kwargs["slug"])
        return redirect(
            "labelling:grade-question",
            slug=access.project.slug,
            pool_id=assignment.pool_id,
            question_id=assignment.question_id,
        )
    context: dict = {"message": message, "message_kind": "ok" if status == 200 else "error"}
    if assignment is not None and outcome is not None:
        progress = outcome.progress or services.assignment_progress(assignment, request.user)
        context.update(_fixed_context(assignment))
        context.update({"project": access.project, "progress": progress})
        candidate = outcome.candidate
        if outcome.subject == ChangeSubject.JUDGEMENT and candidate is not None:
            cards = _cards(
                assignment,
                request.user,
                slug=access.project.slug,
                only=candidate,
                saved=outcome,
            )
            if cards and candidate.pk in progress.candidate_ids:
                cards[0].position = progress.candidate_ids.index(candidate.pk) + 1
                context["card"] = cards[0]
        if outcome.subject == ChangeSubject.VERDICT:
            context["show_verdict"] = True
            context["verdict"] = Verdict.objects.filter(assignment=assignment).first()
            context["verdict_revision"] = (
                outcome.revision
                if outcome.revision is not None
                else services.verdict_revision(assignment)
            )
    return render(request, "labelling/grade_update.html", context, status=status)


def _cleaned(form: GradingWriteForm) -> dict:
    """The form's values, or its first problem as the refusal the page shows."""
    if not form.is_valid():
        raise services.GradingError(form.first_problem())
    return form.cleaned_data


@_write
def grade_candidate(request, assignment, *, candidate_id: int) -> services.Outcome:
    return services.record_grade(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=request.user,
        **_cleaned(GradeForm(request.POST)),
    )


@_write
def note_candidate(request, assignment, *, candidate_id: int) -> services.Outcome:
    return services.record_note(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=request.user,
        **_cleaned(NoteForm(request.POST)),
    )


@_write
def add_span(request, assignment, *, candidate_id: int) -> services.Outcome:
    data = _cleaned(SpanForm(request.POST))
    return services.add_span(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=request.user,
        version_id=data.pop("version"),
        **data,
    )


@_write
def remove_span(request, assignment, *, candidate_id: int, span_id: int) -> services.Outcome:
    return services.remove_span(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=request.user,
        span_id=span_id,
        **_cleaned(RevisionForm(request.POST)),
    )


@_write
def set_verdict(request, assignment) -> services.Outcome:
    return services.record_verdict(
        assignment=assignment, labeller=request.user, **_cleaned(VerdictForm(request.POST))
    )


@_write
def undo_change(request, assignment) -> services.Outcome:
    return services.undo_last_change(assignment=assignment, labeller=request.user)


def candidate_url(assignment: Assignment, slug: str) -> str:
    """The common start of a passage's URLs (`<this>/<candidate id>/grade/`, `.../spans/`...),
    reversed once per page instead of six times per passage: `labelling/urls.py` nests them all
    under `_candidate`, and reversing is a noticeable share of the page's time."""
    page = reverse(
        "labelling:grade-question",
        kwargs={
            "slug": slug,
            "pool_id": assignment.pool_id,
            "question_id": assignment.question_id,
        },
    )
    return f"{page}candidates/"


def grade_url(assignment: Assignment, slug: str) -> str:
    return reverse(
        "labelling:grade-question",
        kwargs={"slug": slug, "pool_id": assignment.pool_id, "question_id": assignment.question_id},
    )
