"""The grading pages as labellers and leads use them: bad input, 409, double submit, history,
blindness, and a role × URL access matrix over every labelling view and htmx partial."""

import re
from copy import copy
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from corpus.models import Retriever
from labelling.models import (
    Assignment,
    Change,
    Guideline,
    Judgement,
    Provenance,
    Span,
    Verdict,
)
from labelling.services import judgements as judgement_services
from tests.factories import (
    POLICY_SENTENCES,
    POLICY_TEXT,
    DocumentVersionFactory,
    MembershipFactory,
    PoolCandidateFactory,
    ReadyPoolFactory,
    UserFactory,
    grading_pool,
)

HTMX = {"HTTP_HX_REQUEST": "true"}


def fast_user(project=None, role="labeller", **fields):
    """A user without a hashed password (hashing is slow); log in with force_login."""
    user = UserFactory(password=None, **fields)
    if project is not None:
        MembershipFactory(project=project, user=user, role=role)
    return user


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


class World:
    """ana and ben share a double-labelled question q1; q2 is ana's alone."""

    def __init__(self, project):
        self.project = project
        self.ana = fast_user(project, username="ana")
        self.ben = fast_user(project, username="ben")
        self.lead = fast_user(project, "lead", username="lena")
        self.admin = fast_user(project, "admin", username="adam")
        self.stranger = fast_user(None, username="stranger")
        self.pool = grading_pool(project, questions=2, passages=3, restricted_group="hr")
        self.q1, self.q2 = self.pool.question_set.questions.order_by("pk")
        self.a1 = Assignment.objects.create(pool=self.pool, question=self.q1, labeller=self.ana)
        self.b1 = Assignment.objects.create(
            pool=self.pool, question=self.q1, slot=2, labeller=self.ben
        )
        self.a2 = Assignment.objects.create(pool=self.pool, question=self.q2, labeller=self.ana)
        self.hidden = self.pool.candidates.get(
            question=self.q1, version__document__access_groups__name="hr"
        )
        self.c1, self.c2 = self.pool.candidates.filter(question=self.q1).exclude(pk=self.hidden.pk)
        self.other_question_candidate = self.pool.candidates.filter(question=self.q2).first()
        retriever = Retriever.objects.create(project=project, name="secret-ranker", kind="bm25")
        Provenance.objects.create(
            candidate=self.c1, retriever=retriever, rank=7, score=12.3456, start=0, end=10
        )

    def url(self, name, *, question=None, candidate=None, **extra):
        question = question or self.q1
        kwargs = {"slug": self.project.slug, "pool_id": self.pool.pk, "question_id": question.pk}
        if candidate is not None:
            kwargs["candidate_id"] = candidate.pk
        kwargs.update(extra)
        return reverse(f"labelling:{name}", kwargs=kwargs)


@pytest.fixture
def world(project):
    return World(project)


def post(client, url, data=None, htmx=True):
    return client.post(url, data or {}, **(HTMX if htmx else {}))


def flash(response) -> str:
    match = re.search(r'<p id="flash"[^>]*>(.*?)</p>', response.content.decode(), re.S)
    return unescape(match.group(1)).strip() if match else response.content.decode()


# The page ----------------------------------------------------------------------------------


def test_page_shows_the_question_verbatim_and_passages_without_provenance(world):
    world.q1.text = "how many  leave days can i carry ovr?  <b>"
    world.q1.save()
    response = client_for(world.ana).get(world.url("grade-question"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "how many  leave days can i carry ovr?  &lt;b&gt;" in body
    assert "secret-ranker" not in body and "12.3456" not in body and "rank" not in body.lower()
    assert len(re.findall(r'<li class="candidate[ "]', body)) == 2  # not the hidden passage
    assert "SECRET" not in body
    assert "Passage 1 of 2" in body and "Passage 2 of 2" in body
    assert 'id="keys-help"' in body and "goldset/grading.js" in body
    # Passage URLs are built from one reversed prefix; they must be the real routes.
    for name in ("grade-candidate", "add-span", "note-candidate", "show-passage-document"):
        assert world.url(name, candidate=world.c1) in body
    assert "<script>" not in body and " onclick=" not in body and " style=" not in body


def test_document_view_segments_carry_exact_offsets(world):
    judgement_services.record_grade(
        assignment=world.a1, candidate_id=world.c1.pk, labeller=world.ana, grade=2, revision=0
    )
    start, end = POLICY_SENTENCES[0]
    judgement_services.add_span(
        assignment=world.a1,
        candidate_id=world.c1.pk,
        labeller=world.ana,
        version_id=world.c1.version_id,
        start=start + 9,
        end=start + 20,
        quote=POLICY_TEXT[start + 9 : start + 20],
        revision=1,
    )
    body = client_for(world.ana).get(world.url("grade-question")).content.decode()
    view = re.search(rf'id="doc-view-{world.c1.pk}"[^>]*>(.*?)</div>', body, re.S).group(1)
    segments = re.findall(r'<span class="seg ([^"]*)" data-start="(\d+)">(.*?)</span>', view, re.S)
    for _classes, offset, text in segments:
        text = unescape(text)
        assert POLICY_TEXT[int(offset) : int(offset) + len(text)] == text
    evidence = [unescape(t) for c, _, t in segments if "evidence" in c]
    assert evidence == [POLICY_TEXT[start + 9 : start + 20]]


def test_numbers_the_script_reads_are_never_localized(project, settings):
    """Offsets, ids and revisions go back to the server as typed: a deployment that turns on
    thousand separators must not turn an offset of 1,250 into text the page cannot read."""
    settings.USE_THOUSAND_SEPARATOR, settings.NUMBER_GROUPING = True, 3
    padding = "Preamble text. " * 100
    start = len(padding)
    version = DocumentVersionFactory(document__project=project, text=padding + POLICY_TEXT)
    candidate = PoolCandidateFactory(
        pool=ReadyPoolFactory(question_set__project=project),
        version=version,
        start=start,
        end=start + POLICY_SENTENCES[0][1],
    )
    labeller = fast_user(project)
    Assignment.objects.create(pool=candidate.pool, question=candidate.question, labeller=labeller)
    ids = {"pool_id": candidate.pool_id, "question_id": candidate.question_id}
    page = reverse("labelling:grade-question", kwargs={"slug": project.slug, **ids})
    client = client_for(labeller)
    body = client.get(page).content.decode()
    assert f'data-start="{start}"' in body and start >= 1000
    grade_url = f"{page}candidates/{candidate.pk}/grade/"
    assert post(client, grade_url, {"grade": 1, "revision": 0, "guideline": 0}).status_code == 200
    first = Change.objects.get(candidate=candidate)  # a passage edited 1,234 times
    first.pk = None
    Change.objects.bulk_create([copy(first) for _ in range(1233)])
    answer = post(client, grade_url, {"grade": 2, "revision": 1234, "guideline": 0})
    assert answer.status_code == 200, answer.content
    text = answer.content.decode()
    assert answer["X-Goldset-Revision"] == "1235"
    assert f'data-start="{start}"' in text and 'data-revision="1235"' in text
    assert 'name="revision" value="1235"' in text and "1,235" not in text
    whole = client.get(f"{page}candidates/{candidate.pk}/document/", **HTMX).content.decode()
    assert f'data-start="{start}"' in whole and "1,500" not in whole


def test_whole_document_partial(world):
    client = client_for(world.ana)
    response = client.get(world.url("show-passage-document", candidate=world.c2), **HTMX)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.strip().startswith('<div class="doc-view whole"') and 'data-start="0"' in body
    assert response.status_code == 200
    hidden = client.get(world.url("show-passage-document", candidate=world.hidden), **HTMX)
    assert hidden.status_code == 404


def test_grading_through_htmx_saves_at_once_and_answers_with_the_card(world):
    client = client_for(world.ana)
    response = post(
        client, world.url("grade-candidate", candidate=world.c1), {"grade": "2", "revision": "0"}
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert f'id="candidate-{world.c1.pk}"' in body and 'data-revision="1"' in body
    assert 'id="question-progress"' in body and "1 of 2" in body
    judgement = Judgement.objects.get()
    assert judgement.grade == 2 and judgement.assignment == world.a1
    assert Span.objects.get().quote == POLICY_TEXT[world.c1.start : world.c1.end]


def test_plain_form_posts_redirect_back_to_the_page(world):
    client = client_for(world.ana)
    url = world.url("grade-candidate", candidate=world.c1)
    response = post(client, url, {"grade": "1", "revision": "0"}, htmx=False)
    assert response.status_code == 302 and response["Location"] == world.url("grade-question")
    response = post(client, url, {"grade": "9", "revision": "1"}, htmx=False)
    assert response.status_code == 302
    page = client.get(world.url("grade-question")).content.decode()
    assert "A grade is 0" in page


# Bad input: 4xx, a clear message, nothing written ------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "status", "message"),
    [
        ("grade-candidate", {"grade": "3", "revision": "0"}, 400, "A grade is 0"),
        ("grade-candidate", {"grade": "-1", "revision": "0"}, 400, "A grade is 0"),
        ("grade-candidate", {"grade": "", "revision": "0"}, 400, "A grade is 0"),
        ("grade-candidate", {"grade": "1", "revision": "x"}, 400, "whole number"),
        (
            "add-span",
            {"start": "0", "end": "99999", "quote": "x", "revision": "1"},
            400,
            "runs past the end",
        ),
        (
            "add-span",
            {"start": "0", "end": "9", "quote": "Nope", "revision": "1"},
            400,
            "does not match",
        ),
        ("add-span", {"start": "a", "end": "9", "quote": "", "revision": "1"}, 400, "whole number"),
        ("note-candidate", {"note": "x" * 5001, "revision": "1"}, 400, "at most"),
        (
            "note-candidate",
            {"note": "see\x00below", "revision": "1"},
            400,
            "A note cannot contain a NUL character",
        ),
        (
            "set-verdict",
            {"outcome": "cant_tell", "reason": "why\x00", "revision": "0"},
            400,
            "A reason cannot contain a NUL character",
        ),
        ("set-verdict", {"outcome": "perhaps", "revision": "0"}, 400, "Choose answerable"),
        ("set-verdict", {"outcome": "cant_tell", "reason": "", "revision": "0"}, 400, "Say why"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(world, name, data, status, message):
    client = client_for(world.ana)
    post(client, world.url("grade-candidate", candidate=world.c1), {"grade": "2", "revision": "0"})
    before = (Judgement.objects.count(), Span.objects.count(), Change.objects.count())
    if name == "add-span":
        data = {**data, "version": str(world.c1.version_id)}
    candidate = None if name == "set-verdict" else world.c1
    response = post(client, world.url(name, candidate=candidate), data)
    assert response.status_code == status
    assert message in flash(response)
    assert (Judgement.objects.count(), Span.objects.count(), Change.objects.count()) == before
    assert Judgement.objects.get().grade == 2 and not Verdict.objects.exists()


def test_a_candidate_of_another_question_is_a_400(world):
    response = post(
        client_for(world.ana),
        world.url("grade-candidate", candidate=world.other_question_candidate),
        {"grade": "1", "revision": "0"},
    )
    assert response.status_code == 400 and "another question" in flash(response)
    assert not Judgement.objects.exists()


def test_a_passage_of_an_excluded_document_is_a_404_that_reveals_nothing(world):
    response = post(
        client_for(world.ana),
        world.url("grade-candidate", candidate=world.hidden),
        {"grade": "2", "revision": "0"},
    )
    assert response.status_code == 404 and flash(response) == "No such passage."
    assert "SECRET" not in response.content.decode()
    assert not Judgement.objects.exists()


def test_questions_not_in_ones_queue_are_404(world):
    ben = client_for(world.ben)
    # q2 is ana's alone: for ben it is not assigned.
    response = post(
        ben,
        world.url("grade-candidate", question=world.q2, candidate=world.other_question_candidate),
        {"grade": "1", "revision": "0"},
    )
    assert response.status_code == 404 and "not in your queue" in flash(response)
    assert ben.get(world.url("grade-question", question=world.q2)).status_code == 404
    assert not Judgement.objects.exists()


def test_another_labellers_assignment_id_is_refused(world):
    ben = client_for(world.ben)
    url = reverse("labelling:show-assignment", args=[world.project.slug, world.a1.pk])
    assert ben.get(url).status_code == 403
    url = reverse("labelling:unassign-assignment", args=[world.project.slug, world.a1.pk])
    assert ben.post(url).status_code == 403
    assert Assignment.objects.get(pk=world.a1.pk).labeller == world.ana


# Integrity: 409, double submit, history -------------------------------------------------------


def test_a_stale_page_gets_409_and_the_saved_state(world):
    client = client_for(world.ana)
    url = world.url("grade-candidate", candidate=world.c1)
    post(client, url, {"grade": "1", "revision": "0"})
    post(client, url, {"grade": "2", "revision": "1"})  # another tab
    response = post(client, url, {"grade": "0", "revision": "1"})
    assert response.status_code == 409
    assert "changed in another tab or window" in flash(response)
    body = response.content.decode()
    assert f'id="candidate-{world.c1.pk}"' in body and 'data-revision="2"' in body
    assert Judgement.objects.get().grade == 2 and Change.objects.count() == 2


def test_a_double_submit_yields_one_row(world):
    client = client_for(world.ana)
    url = world.url("grade-candidate", candidate=world.c1)
    first = post(client, url, {"grade": "2", "revision": "0"})
    second = post(client, url, {"grade": "2", "revision": "0"})
    assert first.status_code == second.status_code == 200
    assert Judgement.objects.count() == 1 and Change.objects.count() == 1


def test_every_action_lands_in_history_and_undo_reverts_it(world):
    client = client_for(world.ana)
    start, _ = POLICY_SENTENCES[0]
    post(client, world.url("grade-candidate", candidate=world.c1), {"grade": "2", "revision": "0"})
    post(
        client,
        world.url("add-span", candidate=world.c1),
        {
            "version": world.c1.version_id,
            "start": start,
            "end": start + 9,
            "quote": POLICY_TEXT[start : start + 9],
            "revision": "1",
        },
    )
    post(client, world.url("note-candidate", candidate=world.c1), {"note": "ok", "revision": "2"})
    post(client, world.url("set-verdict"), {"outcome": "unanswerable", "revision": "0"})
    assert list(Change.objects.order_by("pk").values_list("action", flat=True)) == [
        "grade 2",
        "add span",
        "note",
        "verdict unanswerable",
    ]
    response = post(client, world.url("undo-change"))
    assert response.status_code == 200 and "Undone: verdict unanswerable" in flash(response)
    assert 'id="verdict"' in response.content.decode() and not Verdict.objects.exists()
    response = post(client, world.url("undo-change"))
    assert f'id="candidate-{world.c1.pk}"' in response.content.decode()
    assert Judgement.objects.get().note == ""
    span = Span.objects.get()
    response = post(
        client,
        world.url("remove-span", candidate=world.c1, span_id=span.pk),
        {"revision": "6"},
    )
    assert response.status_code == 400 and "keeps at least one" in flash(response)
    assert Change.objects.count() == 6


def test_an_expired_session_gets_401_for_htmx_and_the_login_page_otherwise(world):
    anonymous = Client()
    url = world.url("grade-candidate", candidate=world.c1)
    response = post(anonymous, url, {"grade": "2", "revision": "0"})
    assert response.status_code == 401 and "session has expired" in response.content.decode()
    response = post(anonymous, url, {"grade": "2", "revision": "0"}, htmx=False)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not Judgement.objects.exists()


# Blindness ------------------------------------------------------------------------------------


def test_the_second_labeller_sees_none_of_the_firsts_work(world):
    ana = client_for(world.ana)
    post(ana, world.url("grade-candidate", candidate=world.c1), {"grade": "2", "revision": "0"})
    post(
        ana, world.url("note-candidate", candidate=world.c1), {"note": "ANA-NOTE", "revision": "1"}
    )
    post(ana, world.url("grade-candidate", candidate=world.c2), {"grade": "0", "revision": "0"})
    post(
        ana,
        world.url("set-verdict"),
        {"outcome": "cant_tell", "reason": "ANA-REASON", "revision": "0"},
    )

    ben = client_for(world.ben)
    page = ben.get(world.url("grade-question")).content.decode()
    assert "ANA-NOTE" not in page and "ANA-REASON" not in page
    assert "chosen" not in page and 'class="seg passage evidence"' not in page
    assert "0 of 2" in page and "no verdict yet" in page
    assert 'data-revision="0"' in page and 'data-revision="1"' not in page
    for word in ("double", "second labeller", "slot", "ana"):
        assert not re.search(rf"\b{word}\b", page.lower()), word
    # ben's own writes start from scratch and are his alone.
    response = post(
        ben, world.url("grade-candidate", candidate=world.c1), {"grade": "1", "revision": "0"}
    )
    assert response.status_code == 200 and "ANA-NOTE" not in response.content.decode()
    assert Judgement.objects.filter(assignment=world.b1).count() == 1
    assert Judgement.objects.get(assignment=world.a1, candidate=world.c1).grade == 2


def test_undo_only_ever_touches_ones_own_work(world):
    post(
        client_for(world.ana),
        world.url("grade-candidate", candidate=world.c1),
        {"grade": "2", "revision": "0"},
    )
    response = post(client_for(world.ben), world.url("undo-change"))
    assert response.status_code == 400 and flash(response) == "Nothing left to undo."
    assert Judgement.objects.get().grade == 2


def test_queue_counts_only_ones_own_assignments(world):
    post(
        client_for(world.ana),
        world.url("grade-candidate", candidate=world.c1),
        {"grade": "2", "revision": "0"},
    )
    page = client_for(world.ben).get(reverse("labelling:show-queue", args=[world.project.slug]))
    body = page.content.decode()
    done, remaining = re.findall(r"<dt>(?:Done|Remaining)</dt><dd>(\d+)</dd>", body)
    assert (done, remaining) == ("0", "1")
    assert body.count("<tr>") == 2  # header + ben's single question
    assert "double" not in body.lower() and "slot" not in body.lower()


def test_next_question_hands_out_work_and_says_the_same_when_none_is_left(world):
    ben = client_for(world.ben)
    url = reverse("labelling:next-question", args=[world.project.slug])
    response = ben.post(url)
    assert response.status_code == 302 and response["Location"] == world.url("grade-question")
    Assignment.objects.filter(labeller=world.ben).update(completed_at="2026-01-01T00:00Z")
    response = ben.post(url, follow=True)
    assert "Nothing left to grade" in response.content.decode()


# Leads ----------------------------------------------------------------------------------------


def test_lead_plans_reassigns_and_sees_progress_and_everyones_work(world):
    lead = client_for(world.lead)
    slug = world.project.slug
    pool = grading_pool(world.project, questions=5, passages=1)
    response = lead.post(
        reverse("labelling:plan-assignments", args=[slug]),
        {
            "pool": pool.pk,
            "labellers": [world.ana.pk, world.ben.pk],
            "double_percent": "40",
            "seed": "1",
        },
    )
    assert response.status_code == 302
    assert Assignment.objects.filter(pool=pool).count() == 7
    page = lead.get(response["Location"]).content.decode()
    assert "7 assignments planned" in page and "2 questions double-labelled" in page
    assert "Progress per labeller" in page and "Progress per question set" in page
    fresh = grading_pool(world.project, questions=2, passages=1)
    bad = lead.post(
        reverse("labelling:plan-assignments", args=[slug]),
        {"pool": fresh.pk, "labellers": [world.ana.pk], "double_percent": "50", "seed": "1"},
    )
    assert bad.status_code == 400 and "at least two labellers" in bad.content.decode()
    assert not Assignment.objects.filter(pool=fresh).exists()
    post(
        client_for(world.ana),
        world.url("grade-candidate", candidate=world.c1),
        {"grade": "2", "revision": "0"},
    )
    review = lead.get(reverse("labelling:show-assignment", args=[slug, world.a1.pk]))
    body = review.content.decode()
    assert review.status_code == 200 and "grade 2" in body and "also labelled by ben" in body
    started = lead.post(
        reverse("labelling:reassign-assignment", args=[slug, world.a1.pk]),
        {"labeller": world.lead.pk},
        follow=True,
    )
    assert "already started" in started.content.decode()
    moved = lead.post(
        reverse("labelling:reassign-assignment", args=[slug, world.a2.pk]),
        {"labeller": world.ben.pk},
        follow=True,
    )
    assert "now belongs to ben" in moved.content.decode()
    assert Assignment.objects.get(pk=world.a2.pk).labeller == world.ben


def test_plan_form_errors_are_shown(world):
    response = client_for(world.lead).post(
        reverse("labelling:plan-assignments", args=[world.project.slug]),
        {"pool": world.pool.pk, "labellers": [world.ana.pk], "double_percent": "50", "seed": "0"},
    )
    # Every question of this pool is already planned, so nothing is added and nothing fails.
    assert response.status_code == 302
    response = client_for(world.lead).post(
        reverse("labelling:plan-assignments", args=[world.project.slug]),
        {"pool": world.pool.pk, "double_percent": "150", "seed": "0"},
    )
    assert response.status_code == 400 and "less than or equal to 100" in response.content.decode()


def test_guideline_edits_make_versions_and_render_safely(world):
    slug = world.project.slug
    lead = client_for(world.lead)
    for text in ("# Grades\n\n2 = fully", "# Grades\n\n2 = fully\n\n<script>alert(1)</script>"):
        response = lead.post(reverse("labelling:edit-guideline", args=[slug]), {"text": text})
        assert response.status_code == 302
    assert list(Guideline.objects.values_list("version", flat=True).order_by("version")) == [1, 2]
    page = client_for(world.ana).get(reverse("labelling:show-guideline", args=[slug]))
    body = page.content.decode()
    assert "<h1>Grades</h1>" in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    old = client_for(world.ana).get(reverse("labelling:show-guideline", args=[slug]) + "?version=1")
    assert "script" not in old.content.decode().split("<article", 1)[1].split("</article>")[0]
    grading = client_for(world.ana).get(world.url("grade-question")).content.decode()
    assert 'Guideline <span class="muted">v2</span>' in grading
    assert (
        lead.post(reverse("labelling:edit-guideline", args=[slug]), {"text": " "}).status_code
        == 400
    )


# Role × URL access matrix -----------------------------------------------------------------------


def matrix_urls(world):
    slug = world.project.slug
    a1 = world.a1.pk
    span_candidate = world.c1
    return [
        # (name, method, url, data, htmx)
        ("show-queue", "get", reverse("labelling:show-queue", args=[slug]), None, False),
        ("next-question", "get", reverse("labelling:next-question", args=[slug]), None, False),
        (
            "list-assignments",
            "get",
            reverse("labelling:list-assignments", args=[slug]),
            None,
            False,
        ),
        (
            "plan-assignments",
            "post",
            reverse("labelling:plan-assignments", args=[slug]),
            {"pool": world.pool.pk, "double_percent": "0", "seed": "0"},
            False,
        ),
        (
            "show-assignment",
            "get",
            reverse("labelling:show-assignment", args=[slug, a1]),
            None,
            False,
        ),
        (
            "reassign-assignment",
            "post",
            reverse("labelling:reassign-assignment", args=[slug, world.a2.pk]),
            {"labeller": world.ana.pk},
            False,
        ),
        (
            "unassign-assignment",
            "post",
            reverse("labelling:unassign-assignment", args=[slug, world.b1.pk]),
            None,
            False,
        ),
        ("show-guideline", "get", reverse("labelling:show-guideline", args=[slug]), None, False),
        ("edit-guideline", "get", reverse("labelling:edit-guideline", args=[slug]), None, False),
        ("grade-question", "get", world.url("grade-question"), None, False),
        (
            "show-passage-document",
            "get",
            world.url("show-passage-document", candidate=world.c1),
            None,
            True,
        ),
        (
            "grade-candidate",
            "post",
            world.url("grade-candidate", candidate=world.c1),
            {"grade": "2", "revision": "0"},
            True,
        ),
        (
            "add-span",
            "post",
            world.url("add-span", candidate=span_candidate),
            {
                "version": world.c1.version_id,
                "start": world.c1.start,
                "end": world.c1.start + 8,
                "quote": POLICY_TEXT[world.c1.start : world.c1.start + 8],
                "revision": "1",
            },
            True,
        ),
        (
            "note-candidate",
            "post",
            world.url("note-candidate", candidate=world.c1),
            {"note": "n", "revision": "2"},
            True,
        ),
        (
            "remove-span",
            "post",
            world.url("remove-span", candidate=world.c1, span_id=999_999),
            {"revision": "3"},
            True,
        ),
        (
            "set-verdict",
            "post",
            world.url("set-verdict"),
            {"outcome": "answerable", "revision": "0"},
            True,
        ),
        ("undo-change", "post", world.url("undo-change"), None, True),
    ]


# Expected status per role; names not listed for a role follow its default.
EXPECTED = {
    "anonymous": {"default": 302, "htmx": 401},
    "stranger": {"default": 404},
    "assignee": {
        "default": 200,
        "next-question": 302,
        "list-assignments": 403,
        "plan-assignments": 403,
        "show-assignment": 403,
        "reassign-assignment": 403,
        "unassign-assignment": 403,
        "edit-guideline": 403,
        "remove-span": 404,  # a span id that is not hers
    },
    "other labeller": {
        "default": 404,
        "show-queue": 200,
        "next-question": 302,
        "show-guideline": 200,
        "list-assignments": 403,
        "plan-assignments": 403,
        "show-assignment": 403,
        "reassign-assignment": 403,
        "unassign-assignment": 403,
        "edit-guideline": 403,
    },
    "lead": {
        "default": 404,  # a lead grades only questions in their own queue
        "show-queue": 200,
        "next-question": 302,
        "show-guideline": 200,
        "edit-guideline": 200,
        "list-assignments": 200,
        "plan-assignments": 302,
        "show-assignment": 200,
        "reassign-assignment": 302,
        "unassign-assignment": 302,
    },
}
EXPECTED["admin"] = EXPECTED["lead"]


@pytest.mark.parametrize("role", list(EXPECTED))
def test_role_by_url_access_matrix(project, role):
    world = World(project)
    other = fast_user(project, username="olga")
    user = {
        "anonymous": None,
        "stranger": world.stranger,
        "assignee": world.ana,
        "other labeller": other,
        "lead": world.lead,
        "admin": world.admin,
    }[role]
    client = client_for(user)
    expected = EXPECTED[role]
    seen = {}
    for name, method, url, data, htmx in matrix_urls(world):
        headers = HTMX if htmx else {}
        response = getattr(client, method)(url, data or {}, **headers)
        want = expected.get(name, expected.get("htmx" if htmx else "default", expected["default"]))
        seen[name] = response.status_code
        assert response.status_code == want, (role, name, response.status_code)
        if role == "anonymous" and response.status_code == 302:
            assert "/accounts/login/" in response["Location"]
    if role in ("stranger", "other labeller", "anonymous"):
        assert not Judgement.objects.exists() and not Verdict.objects.exists()
        assert Assignment.objects.get(pk=world.b1.pk).labeller == world.ben
    assert set(seen) == {row[0] for row in matrix_urls(world)}


# Issue 14 and issue 12 items 5, 7, 8: what the page's htmx transport relies on -------------


def test_every_write_answers_with_out_of_band_fragments_and_its_subjects_revision(world):
    client = client_for(world.ana)
    response = post(
        client, world.url("grade-candidate", candidate=world.c1), {"grade": "2", "revision": "0"}
    )
    body = response.content.decode()
    for fragment in ('id="flash"', f'id="candidate-{world.c1.pk}"', 'id="question-progress"'):
        tag = re.search(rf"<[^>]*{fragment}[^>]*>", body).group(0)
        assert 'hx-swap-oob="true"' in tag, fragment
    assert response["X-Goldset-Subject"] == f"candidate-{world.c1.pk}"
    assert response["X-Goldset-Revision"] == "1"
    # A refusal says the saved revision too (the page's next action is not moved onto it).
    stale = post(
        client, world.url("grade-candidate", candidate=world.c1), {"grade": "0", "revision": "0"}
    )
    assert stale.status_code == 409 and stale["X-Goldset-Revision"] == "1"
    verdict = post(client, world.url("set-verdict"), {"outcome": "answerable", "revision": "0"})
    assert verdict["X-Goldset-Subject"] == "verdict" and verdict["X-Goldset-Revision"] == "1"
    assert 'id="verdict"' in verdict.content.decode()


def test_swapped_in_forms_carry_no_csrf_token_and_the_page_keeps_its_own(world):
    """Only the page's script submits a swapped-in form (with the page's token header), so an
    answer mints no token, and sets no cookie; the page and a plain form post work as before."""
    client = client_for(world.ana)
    post(client, world.url("grade-candidate", candidate=world.c1), {"grade": "2", "revision": "0"})
    grade = world.url("grade-candidate", candidate=world.c1)
    answers = [
        post(client, grade, {"grade": "1", "revision": "1"}),
        post(client, world.url("set-verdict"), {"outcome": "answerable", "revision": "0"}),
    ]
    for answer in answers:
        body = answer.content.decode()
        assert answer.status_code == 200 and 'data-action="' in body
        assert 'data-action="remove-span"' in body or 'id="verdict"' in body
        assert "csrfmiddlewaretoken" not in body and 'name="labeller"' not in body
        assert "csrftoken" not in answer.cookies
    page = client.get(world.url("grade-question")).content.decode()
    forms = page.count('data-action="grade"') + page.count('data-action="remove-span"')
    assert page.count('name="csrfmiddlewaretoken"') >= forms + 1  # + the note and verdict forms
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(world.ana)
    strict.get(world.url("grade-question"))
    token = strict.cookies["csrftoken"].value
    plain = strict.post(
        world.url("grade-candidate", candidate=world.c2),
        {"grade": "2", "revision": "0", "csrfmiddlewaretoken": token},
    )
    assert plain.status_code == 302 and Judgement.objects.filter(candidate=world.c2).exists()


def test_a_grade_request_reads_the_database_no_more_than_before(
    world, django_assert_max_num_queries
):
    client = client_for(world.ana)
    url = world.url("grade-candidate", candidate=world.c1)
    # The session comes from the cache. A first grade reads the user, the membership, the
    # assignment, the locked assignment and the passages, then writes the judgement, its
    # default span and the history row, with the test's savepoint and its release; and one
    # INSERT marks the question's stored gold decisions stale (`gold_state.mark_stale`, issue
    # 37 item 4: one statement, whatever the set's size).
    with django_assert_max_num_queries(11):
        assert post(client, url, {"grade": "2", "revision": "0"}).status_code == 200
    # A first 0 writes no span, and its answer reads none back.
    zero = world.url("grade-candidate", candidate=world.c2)
    with django_assert_max_num_queries(10) as seen:
        assert post(client, zero, {"grade": "0", "revision": "0"}).status_code == 200
    assert not [q for q in seen.captured_queries if Span._meta.db_table in q["sql"]]
    fields = {"grade": "1", "revision": "1", "guideline": "0", "labeller": str(world.ana.pk)}
    # An edit reads the judgement and its spans (two queries), and writes its UPDATE, the
    # history row and the stale mark.
    with django_assert_max_num_queries(12):
        assert post(client, url, fields).status_code == 200
    assert Judgement.objects.get(assignment__labeller=world.ana, candidate=world.c1).grade == 1


def test_the_page_and_next_question_read_the_database_no_more_than_before(
    world, django_assert_max_num_queries
):
    """Issue 19: labellers first. Session, user and membership are 3 of these."""
    client = client_for(world.ana)
    client.get(world.url("grade-question"))
    with django_assert_max_num_queries(10):  # 11 before the verdict came with the assignment
        page = client.get(world.url("grade-question"))
    assert page.status_code == 200 and world.q1.text in page.content.decode()
    next_url = reverse("labelling:next-question", kwargs={"slug": world.project.slug})
    with django_assert_max_num_queries(5):
        moved = client.post(next_url)
    assert moved.status_code == 302
    # From q1 to ana's other open question: her open rows are the only read after the
    # membership (6 before: the question she was on, then the next row, were read again)
    with django_assert_max_num_queries(4):
        moved = client.post(next_url, {"pool": world.pool.pk, "question": world.q1.pk})
    assert moved["Location"] == world.url("grade-question", question=world.q2)


def test_an_action_made_on_another_accounts_page_is_refused_and_writes_nothing(world):
    """Issue 12 item 5: a page opened (and its actions kept) as ana, sent while ben is the
    session in that browser, never becomes ben's judgement."""
    ben = client_for(world.ben)
    for name, data in [
        ("grade-candidate", {"grade": "2", "revision": "0"}),
        (
            "add-span",
            {
                "version": world.c1.version_id,
                "start": world.c1.start,
                "end": world.c1.start + 5,
                "quote": POLICY_TEXT[world.c1.start :][:5],
                "revision": "0",
            },
        ),
        ("note-candidate", {"note": "ana's", "revision": "0"}),
    ]:
        response = post(
            ben, world.url(name, candidate=world.c1), {**data, "labeller": str(world.ana.pk)}
        )
        assert response.status_code == 403 and response["X-Goldset-Refused"] == "other-account"
        assert "now logged in as ben" in flash(response)
    response = post(
        ben, world.url("set-verdict"), {"outcome": "unanswerable", "labeller": world.ana.pk}
    )
    assert response.status_code == 403
    response = post(ben, world.url("undo-change"), {"labeller": world.ana.pk})
    assert response.status_code == 403
    plain = post(
        ben,
        world.url("grade-candidate", candidate=world.c1),
        {"grade": "2", "revision": "0", "labeller": world.ana.pk},
        htmx=False,
    )
    assert plain.status_code == 302 and "/queue/" in plain["Location"]
    assert not Judgement.objects.exists() and not Verdict.objects.exists()
    assert not Change.objects.exists()
    # ben's own page works as ever.
    mine = post(
        ben,
        world.url("grade-candidate", candidate=world.c1),
        {"grade": "2", "revision": "0", "labeller": world.ben.pk},
    )
    assert mine.status_code == 200 and Judgement.objects.get().assignment == world.b1


def test_a_write_records_the_guideline_version_the_page_showed(world):
    """Issue 12 item 7: a grade made on a page showing v1, after the lead saved v2, is v1's."""
    from labelling.services.guidelines import save_guideline

    v1 = save_guideline(project=world.project, text="Version one.", user=world.lead)
    client = client_for(world.ana)
    page = client.get(world.url("grade-question")).content.decode()
    assert 'data-guideline="1"' in page and 'name="guideline" value="1"' in page
    v2 = save_guideline(project=world.project, text="Version two.", user=world.lead)
    response = post(
        client,
        world.url("grade-candidate", candidate=world.c1),
        {"grade": "2", "revision": "0", "guideline": "1"},
    )
    assert response.status_code == 200
    assert Judgement.objects.get(candidate=world.c1).guideline == v1
    assert "published guideline v2" in flash(response)
    post(
        client,
        world.url("set-verdict"),
        {"outcome": "answerable", "revision": "0", "guideline": "1"},
    )
    assert Verdict.objects.get().guideline == v1
    # A page read before any guideline existed records none; no version means the current.
    post(
        client,
        world.url("grade-candidate", candidate=world.c2),
        {"grade": "1", "revision": "0", "guideline": "0"},
    )
    assert Judgement.objects.get(candidate=world.c2).guideline is None
    post(client, world.url("grade-candidate", candidate=world.c2), {"grade": "0", "revision": "1"})
    assert Judgement.objects.get(candidate=world.c2).guideline == v2
    # Undo records the version on the page too; a version the project never had is refused.
    post(client, world.url("undo-change"), {"guideline": "1"})
    assert Judgement.objects.get(candidate=world.c2).guideline == v1
    before = Change.objects.count()
    bad = post(
        client,
        world.url("grade-candidate", candidate=world.c1),
        {"grade": "1", "revision": "1", "guideline": "9"},
    )
    assert bad.status_code == 400 and "guideline version that does not exist" in flash(bad)
    assert Change.objects.count() == before and Judgement.objects.get(candidate=world.c1).grade == 2
    # The current page shows v2 and says nothing about a newer one.
    fresh = post(
        client,
        world.url("grade-candidate", candidate=world.c1),
        {"grade": "1", "revision": "1", "guideline": "2"},
    )
    assert "published" not in flash(fresh)
    assert Judgement.objects.get(candidate=world.c1).guideline == v2


def test_editing_an_item_a_lead_resolved_gets_the_answer_any_item_gets(world):
    """Issue 12 item 8: no "a lead has reviewed this" (it would reveal a double-labelled,
    disputed item); the edit is saved exactly as on an item nobody reviewed."""
    from labelling.models import Resolution

    ana = client_for(world.ana)
    for candidate in (world.c1, world.c2):
        post(
            ana, world.url("grade-candidate", candidate=candidate), {"grade": "2", "revision": "0"}
        )
    Resolution.objects.create(pool=world.pool, question=world.q1, candidate=world.c1, grade=1)
    Resolution.objects.create(
        pool=world.pool, question=world.q1, candidate=None, outcome="answerable"
    )
    answers = []
    for candidate in (world.c1, world.c2):
        response = post(
            ana, world.url("grade-candidate", candidate=candidate), {"grade": "0", "revision": "1"}
        )
        body = response.content.decode().replace(str(candidate.pk), "ID")
        answers.append((response.status_code, flash(response), re.sub(r"Passage \d", "", body)))
    assert answers[0][:2] == answers[1][:2] == (200, "")
    for _status, _message, body in answers:
        assert "lead" not in body.lower() and "review" not in body.lower()
    verdict = post(ana, world.url("set-verdict"), {"outcome": "unanswerable", "revision": "0"})
    assert verdict.status_code == 200 and "review" not in verdict.content.decode().lower()
    undo = post(ana, world.url("undo-change"))
    assert undo.status_code == 200 and "review" not in undo.content.decode().lower()
    assert Judgement.objects.get(assignment=world.a1, candidate=world.c1).grade == 0


def test_marking_evidence_in_an_ungraded_passage_grades_it_1_and_says_so(world):
    client = client_for(world.ana)
    start = world.c1.start
    response = post(
        client,
        world.url("add-span", candidate=world.c1),
        {
            "version": world.c1.version_id,
            "start": start,
            "end": start + 9,
            "quote": POLICY_TEXT[start : start + 9],
            "revision": "0",
        },
    )
    assert response.status_code == 200
    body = unescape(response.content.decode())
    assert judgement_services.GRADED_BY_SPAN in body
    assert re.search(rf'id="card-message-{world.c1.pk}"[^>]*>[^<]*graded 1', body)
    assert 'class="candidate graded grade-1"' in body
    assert Judgement.objects.get().grade == 1


def test_unanswerable_with_a_passage_graded_2_is_warned_about_everywhere(world):
    client = client_for(world.ana)
    post(client, world.url("set-verdict"), {"outcome": "unanswerable", "revision": "0"})
    response = post(
        client, world.url("grade-candidate", candidate=world.c1), {"grade": "2", "revision": "0"}
    )
    body = unescape(response.content.decode())
    warning = "You marked the question unanswerable, but a passage is graded 1 or 2"
    assert re.search(rf'id="card-message-{world.c1.pk}"[^>]*>{warning}', body)
    assert "verdict and grades disagree" in body  # the status bar's progress
    page = unescape(client.get(world.url("grade-question")).content.decode())
    assert warning in page and "verdict and grades disagree" in page
    verdict = post(client, world.url("set-verdict"), {"outcome": "answerable", "revision": "1"})
    assert "disagree" not in verdict.content.decode()
    assert Verdict.objects.get().outcome == "answerable"  # warned, never refused


def test_a_write_from_a_page_showing_the_whole_document_answers_with_the_whole_document(world):
    client = client_for(world.ana)
    response = post(
        client,
        world.url("grade-candidate", candidate=world.c2),
        {"grade": "2", "revision": "0", "whole": f"{world.c1.pk},{world.c2.pk}"},
    )
    pattern = rf'<div class="doc-view whole[^"]*" id="doc-view-{world.c2.pk}"[^>]*>(.*?)</div>'
    view = re.search(pattern, response.content.decode(), re.S)
    assert view and 'data-start="0"' in view.group(1)
    assert "Show the passage only" in response.content.decode()
    # Only the passages the page shows whole come back whole.
    other = post(
        client,
        world.url("grade-candidate", candidate=world.c1),
        {"grade": "1", "revision": "0", "whole": str(world.c2.pk)},
    ).content.decode()
    assert "doc-view whole" not in other and "Show the whole document" in other
    passage = client.get(
        world.url("show-passage-document", candidate=world.c2) + "?view=passage", **HTMX
    ).content.decode()
    assert 'class="doc-view' in passage and "doc-view whole" not in passage
    assert 'hx-swap-oob="true"' in passage.split(">", 1)[0]


def test_undo_goes_on_to_the_labellers_previous_question(world):
    """Issue 14 item 9: undo beyond the current question."""
    client = client_for(world.ana)
    other = world.other_question_candidate
    post(
        client,
        world.url("grade-candidate", question=world.q2, candidate=other),
        {"grade": "2", "revision": "0"},
    )
    response = post(client, world.url("undo-change"))  # q1: nothing of ana's here yet
    assert response.status_code == 200
    assert response["HX-Redirect"] == world.url("grade-question", question=world.q2)
    assert not Judgement.objects.filter(candidate=other).exists()
    page = client.get(response["HX-Redirect"]).content.decode()
    assert f"Undone on question {world.q2.external_id}: grade 2." in page
    # The current question's own changes come first.
    post(client, world.url("grade-candidate", candidate=world.c1), {"grade": "1", "revision": "0"})
    response = post(client, world.url("undo-change"))
    assert "HX-Redirect" not in response and "Undone: grade 1." in flash(response)
    # Nothing older is left: an undo is not undone again (there is no redo).
    again = post(client, world.url("undo-change"), htmx=False)
    assert again.status_code == 302 and again["Location"] == world.url("grade-question")
    assert "Nothing left to undo." in client.get(again["Location"]).content.decode()
    assert not Judgement.objects.filter(candidate=other).exists()


def test_a_labeller_lands_on_their_queue_with_continue_and_a_short_menu(world):
    slug = world.project.slug
    client = client_for(world.ana)
    landing = client.get(reverse("corpus:show-project", args=[slug]))
    assert landing.status_code == 302
    queue = client.get(landing["Location"]).content.decode()
    nav = queue.split('<nav class="project-nav"', 1)[1].split("</nav>", 1)[0]
    assert "My queue" in nav and "Guideline" in nav
    for engineering in ("Documents", "Chunking", "Retrievers", "Pools", "Duplicates", "Jobs"):
        assert engineering not in nav
    assert 'id="continue-button"' in queue and "Start grading" not in queue
    assert f'href="{world.url("grade-question")}" id="continue-button"' in queue
    post(
        client,
        world.url("grade-candidate", question=world.q2, candidate=world.other_question_candidate),
        {"grade": "2", "revision": "0"},
    )
    queue = client.get(landing["Location"]).content.decode()
    assert f'href="{world.url("grade-question", question=world.q2)}" id="continue-button"' in queue
    assert "where you left off" in queue
    lead = client_for(world.lead).get(reverse("corpus:show-project", args=[slug]))
    assert lead.status_code == 200
    assert "Chunking" in lead.content.decode().split("</nav>", 1)[0]
