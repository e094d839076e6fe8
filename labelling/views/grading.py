"""The grading page for one question, and the small writes it makes while a labeller works.

The page is addressed by (pool, question), never by assignment id: a labeller only ever reaches
their own assignment, and ids cannot hint at anyone else's. Every write answers an htmx request
with out-of-band fragments (the passage it concerns with its message, the verdict, the status
bar), and says in headers which subject it concerns and that subject's saved revision, so the
page can send the labeller's next queued action on top of it; a plain form post (no
JavaScript) is redirected back to the page.

Every write says which account the page was opened for (`GradingPageForm.labeller`): an
action kept in a browser is never saved into another account that has logged in since.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache, wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.messages import get_messages
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import get_script_prefix, reverse
from django.views.decorators.http import require_GET, require_POST

from corpus.access import ProjectAccess, project_access
from corpus.models import DocumentVersion
from goldeval.pooling import Strategy
from labelling.forms import (
    GradeForm,
    GradingPageForm,
    GradingWriteForm,
    NoteForm,
    RevisionForm,
    SpanForm,
    UndoForm,
    VerdictForm,
)
from labelling.grading_passages import passages_for_grading
from labelling.highlight import Segment, highlight, whole_words
from labelling.labeller_order import labeller_order
from labelling.models import (
    Assignment,
    Candidate,
    ChangeSubject,
    Judgement,
    Span,
    Verdict,
    VerdictOutcome,
)
from labelling.passage_html import passage_html
from labelling.services import judgements as services
from labelling.services import leases
from labelling.services.completion import assignment_progress
from labelling.services.guidelines import current_guideline, render_guideline
from labelling.services.write_lock import held_assignment

# Characters of document text shown on each side of a passage when its context is expanded
# (a write reads them with the passages it locks, so its answer needs no second read).
CONTEXT_CHARS = services.PAGE_CONTEXT_CHARS
PAGE = "labelling/grade.html"
DOCUMENT = f"{PAGE}#passage_document"
ANSWER = f"{PAGE}#update"
GRADE_CHOICES = list(services.GRADES.items())
SESSION_EXPIRED = "Your session has expired. Log in again; your last action is kept."
# The page's two views of one question: its passages as large cards with their context, in the
# pool's shuffled order ("cards"), or as compact rows in the labeller's own order ("question").
# `?view=` chooses; the choice is remembered in the session (`_chosen_view`).
CARDS, QUESTION = "cards", "question"
VIEWS = (CARDS, QUESTION)
VIEW_KEY = "labelling.grading_view"
OTHER_ACCOUNT = (
    "This browser is now logged in as {user}, not as the account this page was opened for, so "
    "nothing was saved. Reload the page to work as {user}."
)


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
    message: str = ""  # what the last write said about this passage
    message_kind: str = ""

    @property
    def html(self) -> str:
        """The passage's text rendered (labelling.passage_html), each character at its offset."""
        return passage_html(self.segments)

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
    whole: bool = False,
) -> list[Card]:
    """The passages of an assignment as the labeller sees them (`passages_for_grading`). With
    `only`, just that one; its position then comes from the caller's progress, see `_answer`.
    With `saved` (an outcome that carries the judgement it wrote), that judgement is used
    instead of being read again. With `whole` (and `only`), the passage is shown in its whole
    document, as the labeller had opened it."""
    if saved is not None and saved.judgement_saved and hasattr(only, "window"):
        candidates = [only]  # read with its window by the write, revision already advanced
    else:
        candidates = passages_for_grading(
            assignment=assignment,
            user=user,
            context_chars=CONTEXT_CHARS,
            candidate_id=only.pk if only is not None else None,
        )
    if saved is not None and saved.judgement_saved:
        by_candidate = {only.pk: saved.judgement} if saved.judgement else {}
    else:
        # Built only here: a write's answer has its judgement already, and composing the
        # queryset it would never run cost a grade noticeable CPU. The spans in the order the
        # card shows them, by their columns: the model's ordering (version, start) would join
        # each span's version and document to sort spans of one version.
        spans = Prefetch("spans", queryset=Span.objects.order_by("version_id", "start"))
        judgements = Judgement.objects.filter(assignment=assignment).prefetch_related(spans)
        if only is not None:
            judgements = judgements.filter(candidate_id=only.pk)
        by_candidate = {j.candidate_id: j for j in judgements}
    base = candidate_url(assignment, slug)
    cards = []
    for position, candidate in enumerate(candidates, start=1):
        judgement = by_candidate.get(candidate.pk)
        spans = []
        if judgement is not None:
            spans = getattr(judgement, "saved_spans", None)
            if spans is None:  # read, not written by this request (a 0 grade saves none: [])
                spans = sorted(judgement.spans.all(), key=lambda s: (s.start, s.end))
        passage = (candidate.start, candidate.end)
        evidence = [(s.start, s.end) for s in spans if s.version_id == candidate.version_id]
        if whole and only is not None:
            text = DocumentVersion.objects.values_list("text", flat=True).get(
                pk=candidate.version_id
            )
            offset = 0
        else:
            text, offset = whole_words(
                candidate.window,
                offset=candidate.window_start,
                passage=passage,
                context_chars=CONTEXT_CHARS,
            )
        cards.append(
            Card(
                candidate=candidate,
                position=position,
                segments=highlight(text, offset=offset, passage=passage, layers={"e": evidence}),
                judgement=judgement,
                revision=candidate.revision,
                spans=spans,
                whole_document=whole and only is not None,
                cut_before=offset > 0,
                cut_after=not whole and _reaches_window_end(candidate),
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
    if page:
        access = project_access(request.user, slug)
        assignment = (
            Assignment.objects.in_project(access.project)
            .held_by(request.user)
            .for_question(pool_id=pool_id, question_id=question_id)
            .select_related("pool__question_set", "question", "verdict")
            .order_by()
            .first()
        )
    else:  # the same, with only the ids read (`write_lock`)
        access, assignment = held_assignment(
            user=request.user, slug=slug, pool_id=pool_id, question_id=question_id
        )
        if assignment is None:
            # Their lease lapsed: the write takes the slot back if it is still free, or says
            # someone else has it (`labelling.services.leases`).
            assignment = leases.lapsed_slot(
                project=access.project,
                labeller=request.user,
                pool_id=pool_id,
                question_id=question_id,
            )
            if assignment is not None:
                assignment.lapsed = True  # not theirs unless the write takes it back
    if assignment is None:
        raise Http404("This question is not in your queue.")
    return access, assignment


def _page_context(
    access: ProjectAccess, assignment: Assignment, user, *, view: str = CARDS
) -> dict:
    verdict_revision = services.verdict_revision(assignment)
    cards = _cards(assignment, user, slug=access.project.slug)
    verdict = _verdict_of(assignment)
    guideline = current_guideline(access.project)
    progress = assignment_progress(
        assignment,
        user,
        passages=[card.candidate for card in cards],
        verdict=verdict.outcome if verdict else None,
    )
    if view == QUESTION:
        cards = _in_question_view_order(cards, assignment, user)
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
        "guideline_version": guideline.version if guideline else 0,
        "guideline_html": render_guideline(guideline.text) if guideline else "",
        "queue": own.queue_counts(),
        "view": view,
        "question_view": view == QUESTION,
        "lease_until": assignment.lease_expires_at,
    }


def _in_question_view_order(cards: list[Card], assignment: Assignment, user) -> list[Card]:
    """The question view's order: the labeller's own (`labeller_order`), except in an adaptive
    pool, whose judging order (`passages_for_grading` gave it) holds in both views."""
    if not assignment.pool.adaptive:
        cards = labeller_order(
            cards,
            key=lambda card: card.candidate.pk,
            labeller_id=user.pk,
            pool_id=assignment.pool_id,
            question_id=assignment.question_id,
        )
    for position, card in enumerate(cards, start=1):
        card.position = position
    return cards


def _chosen_view(request: HttpRequest) -> str:
    """The view `?view=` asks for, remembered in the session; without a known one, the view
    remembered, else the cards. The session, not a column: it is read for every request
    already (no query added to the page or to a write), it belongs to one account (Django
    empties it when another logs in), and a view is a way of looking, not project data, so no
    table of the corpus below carries a grading page's setting."""
    asked = request.GET.get("view")
    if asked in VIEWS:
        if request.session.get(VIEW_KEY) != asked:
            request.session[VIEW_KEY] = asked
        return asked
    remembered = request.session.get(VIEW_KEY)
    return remembered if remembered in VIEWS else CARDS


def _verdict_of(assignment: Assignment) -> Verdict | None:
    """The verdict `_assignment_for` read with the assignment (None if there is none)."""
    try:
        return assignment.verdict
    except Verdict.DoesNotExist:
        return None


def _fixed_context(assignment: Assignment) -> dict:
    """What every piece of the page needs (the partials use ids only, never `question`)."""
    return {"assignment": assignment, "outcomes": VerdictOutcome.choices, "grades": GRADE_CHOICES}


# Views -------------------------------------------------------------------------------------


@login_required
@require_GET
def grade_question(request: HttpRequest, slug: str, pool_id: int, question_id: int) -> HttpResponse:
    """The page; opening it renews the labeller's lease on the question (or takes it back
    when it lapsed and nobody claimed it since)."""
    try:
        access, assignment = _assignment_for(request, slug, pool_id, question_id)
    except Http404:
        access = project_access(request.user, slug)
        try:
            retaken = leases.retake_for_page(
                project=access.project,
                labeller=request.user,
                pool_id=pool_id,
                question_id=question_id,
            )
        except leases.LeaseLost as exc:
            messages.warning(request, str(exc))
            return redirect("labelling:show-queue", slug=slug)
        if not retaken:
            raise
        access, assignment = _assignment_for(request, slug, pool_id, question_id)
    leases.renew_lease(assignment=assignment, lease_minutes=access.project.lease_minutes)
    view = _chosen_view(request)
    return render(request, PAGE, _page_context(access, assignment, request.user, view=view))


@login_required_or_401
@require_GET
def show_passage_document(
    request: HttpRequest, slug: str, pool_id: int, question_id: int, candidate_id: int
) -> HttpResponse:
    """The whole document around a passage (htmx swaps it in place of the context window);
    with `?view=passage`, the context window again."""
    _, assignment = _assignment_for(request, slug, pool_id, question_id)
    candidate = get_object_or_404(
        Candidate.objects.of_assignment(assignment).not_hidden_from(request.user), pk=candidate_id
    )
    whole = request.GET.get("view") != "passage"
    (card,) = _cards(assignment, request.user, slug=slug, only=candidate, whole=whole)
    return render(request, DOCUMENT, {"card": card, "doc_oob": True})


def _write(action: Callable[..., services.Outcome | HttpResponse]) -> Callable:
    """The common shape of every grading write: check the page's account, resolve the
    assignment, call one service, and answer with the re-rendered pieces (htmx) or a redirect
    (plain form)."""

    @login_required_or_401
    @require_POST
    @wraps(action)
    def view(
        request: HttpRequest, slug: str, pool_id: int, question_id: int, **ids
    ) -> HttpResponse:
        page = GradingPageForm(request.POST)
        if not page.is_valid():
            return _answer(request, None, None, _first_problem(page), status=400)
        opened_for = page.cleaned_data["labeller"]
        if opened_for is not None and opened_for != request.user.pk:
            message = OTHER_ACCOUNT.format(user=request.user.get_username())
            response = _answer(request, None, None, message, status=403)
            response["X-Goldset-Refused"] = "other-account"
            return response
        try:
            access, assignment = _assignment_for(request, slug, pool_id, question_id, page=False)
        except Http404 as exc:
            if not request.htmx:
                raise  # a plain 404, never a redirect into a project the user is not in
            return _answer(request, None, None, str(exc), status=404)
        whole = page.cleaned_data["whole"]  # the passages shown in their whole document
        try:
            outcome = action(request, access, assignment, **ids)
            if isinstance(outcome, HttpResponse):
                return outcome
            status, message = 200, outcome.message
        except leases.LeaseLost as exc:
            # Nothing of the question is rendered: it is another labeller's now.
            response = _answer(request, None, None, str(exc), status=exc.status, lease_lost=True)
            response["X-Goldset-Refused"] = "lease-lost"
            return response
        except services.GradingError as exc:
            if getattr(assignment, "lapsed", False):
                # Not taken back (the refusal undid the taking): nothing of it is shown, as it
                # is not the labeller's.
                return _answer(request, None, None, str(exc), status=exc.status)
            status, message = exc.status, str(exc)
            outcome = None
            if isinstance(exc, services.StaleEdit) or "candidate_id" in ids:
                outcome = _outcome_to_refresh(request, assignment, ids)
        return _answer(
            request, access, assignment, message, status=status, outcome=outcome, whole=whole
        )

    return view


def _first_problem(form) -> str:
    return next(iter(form.errors.values()))[0]


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


def _guideline_notice(outcome) -> str:
    newer = outcome.newer_guideline if outcome is not None else None
    if not newer:
        return ""
    return (
        f"The lead has published guideline v{newer} since this page loaded; this was saved "
        "under the version shown here. Reload the page to read the new one."
    )


def _answer(
    request,
    access,
    assignment,
    message: str,
    *,
    status: int,
    outcome=None,
    whole=frozenset(),
    lease_lost: bool = False,
) -> HttpResponse:
    notice = _guideline_notice(outcome) if status == 200 else ""
    if not request.htmx:
        for text in filter(None, (message, notice)):
            (messages.success if status == 200 else messages.error)(request, text)
        if assignment is None:
            return redirect("labelling:show-queue", slug=request.resolver_match.kwargs["slug"])
        return redirect(
            "labelling:grade-question",
            slug=access.project.slug,
            pool_id=assignment.pool_id,
            question_id=assignment.question_id,
        )
    kind = "ok" if status == 200 else "error"
    context: dict = {
        "message": message,
        "message_kind": kind,
        "oob": True,
        "notice": "",
        "messages": get_messages(request),
        "card": None,
        "progress": None,
        "verdict_section": False,
        "lease_section": lease_lost,
        "lease_lost": lease_lost,
        "queue_url": reverse("labelling:show-queue", args=[request.resolver_match.kwargs["slug"]])
        if lease_lost
        else "",
    }
    subject = revision = None
    if assignment is not None and outcome is not None:
        progress = outcome.progress or assignment_progress(assignment, request.user)
        context.update(progress=progress, notice=notice)
        if outcome.lease_until is not None:
            context.update(lease_section=True, lease_until=outcome.lease_until)
        candidate = outcome.candidate
        if outcome.subject == ChangeSubject.JUDGEMENT and candidate is not None:
            cards = _cards(
                assignment,
                request.user,
                slug=access.project.slug,
                only=candidate,
                saved=outcome,
                whole=candidate.pk in whole,
            )
            if cards and candidate.pk in progress.candidate_ids:
                card = cards[0]
                card.position = progress.candidate_ids.index(candidate.pk) + 1
                card.message = message
                card.message_kind = kind
                if status == 200 and card.grade and progress.contradiction:
                    card.message, card.message_kind = progress.contradiction, "warn"
                context.update(card=card, grades=GRADE_CHOICES)
                subject, revision = f"candidate-{candidate.pk}", card.revision
                if status == 200 and _learns_from_text(card):
                    context.update(order=_order_after(assignment, request.user))
        if outcome.subject == ChangeSubject.VERDICT:
            verdict_revision = (
                outcome.revision
                if outcome.revision is not None
                else services.verdict_revision(assignment)
            )
            context.update(
                _fixed_context(assignment),
                project=access.project,
                verdict_section=True,
                verdict=Verdict.objects.filter(assignment=assignment).first(),
                verdict_revision=verdict_revision,
                verdict_message=message,
                verdict_message_kind=kind,
            )
            subject, revision = "verdict", verdict_revision
    response = render(request, ANSWER, context, status=status)
    if subject is not None:
        response["X-Goldset-Subject"] = subject
        response["X-Goldset-Revision"] = str(revision)
    return response


def _learns_from_text(card: Card) -> bool:
    """Whether the pool's judging order learns from a grade of 1 or 2 as soon as it is made
    (`cal`): then the page re-orders the passages not graded yet."""
    strategy = getattr(card.candidate, "pool_strategy", None)
    return strategy == Strategy.CAL and card.grade is not None and card.grade >= 1


def _order_after(assignment: Assignment, user) -> list[int]:
    """The question's passages in judging order, the write just made included (the write's own
    read of them came before it)."""
    return [row.pk for row in passages_for_grading(assignment=assignment, user=user)]


def _cleaned(form: GradingWriteForm) -> dict:
    """The form's values, or its first problem as the refusal the page shows."""
    if not form.is_valid():
        raise services.GradingError(form.first_problem())
    data = dict(form.cleaned_data)
    data["guideline_version"] = data.pop("guideline")
    return data


@_write
def grade_candidate(request, access, assignment, *, candidate_id: int) -> services.Outcome:
    return services.record_grade(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=request.user,
        **_cleaned(GradeForm(request.POST)),
    )


@_write
def note_candidate(request, access, assignment, *, candidate_id: int) -> services.Outcome:
    return services.record_note(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=request.user,
        **_cleaned(NoteForm(request.POST)),
    )


@_write
def add_span(request, access, assignment, *, candidate_id: int) -> services.Outcome:
    data = _cleaned(SpanForm(request.POST))
    return services.add_span(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=request.user,
        version_id=data.pop("version"),
        **data,
    )


@_write
def remove_span(
    request, access, assignment, *, candidate_id: int, span_id: int
) -> services.Outcome:
    return services.remove_span(
        assignment=assignment,
        candidate_id=candidate_id,
        labeller=request.user,
        span_id=span_id,
        **_cleaned(RevisionForm(request.POST)),
    )


@_write
def set_verdict(request, access, assignment) -> services.Outcome:
    return services.record_verdict(
        assignment=assignment, labeller=request.user, **_cleaned(VerdictForm(request.POST))
    )


@_write
def undo_change(request, access, assignment) -> services.Outcome | HttpResponse:
    """Undo the labeller's last change on this question; with nothing left here, their last
    change on another question of the project, and go there (the undo stack spans questions)."""
    data = _cleaned(UndoForm(request.POST))
    try:
        return services.undo_last_change(assignment=assignment, labeller=request.user, **data)
    except services.NothingToUndo:
        other, outcome = services.undo_latest_change_elsewhere(
            project=access.project, labeller=request.user, exclude=assignment, **data
        )
    what = outcome.message.removeprefix("Undone: ")
    messages.success(request, f"Undone on question {other.question.external_id}: {what}")
    url = grade_url(other, access.project.slug)
    if not request.htmx:
        return redirect(url)
    response = HttpResponse(status=200)
    response["HX-Redirect"] = url
    return response


def candidate_url(assignment: Assignment, slug: str) -> str:
    """The common start of a passage's URLs (`<this>/<candidate id>/grade/`, `.../spans/`...),
    reversed once per question, not six times per passage: `labelling/urls.py` nests them all
    under `_candidate`, and reversing is a noticeable share of a page's and a write's time."""
    return _candidate_url(get_script_prefix(), slug, assignment.pool_id, assignment.question_id)


@lru_cache(maxsize=4096)
def _candidate_url(script_prefix: str, slug: str, pool_id: int, question_id: int) -> str:
    # `script_prefix` only keys the cache: reverse() reads it itself.
    page = reverse(
        "labelling:grade-question",
        kwargs={"slug": slug, "pool_id": pool_id, "question_id": question_id},
    )
    return f"{page}candidates/"


def grade_url(assignment: Assignment, slug: str) -> str:
    return reverse(
        "labelling:grade-question",
        kwargs={"slug": slug, "pool_id": assignment.pool_id, "question_id": assignment.question_id},
    )
