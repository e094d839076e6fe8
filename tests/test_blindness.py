"""What a labeller receives must not depend on anyone else's work, nor on documents their
access groups hide. Proven by rendering every page and htmx partial of the URL conf
(`tests/test_access_matrix.py`) before and after the hidden thing changes, and comparing."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from corpus.models import AccessGroup, Document
from corpus.services import projects
from judges.models import AIJudgement, GoldVoteSwitch, Judge
from labelling.models import Assignment, Candidate, Judgement, QuestionSet, Resolution, Span
from labelling.services import judgements
from labelling.services.adjudication import adjudication_queue
from tests import test_access_matrix
from tests.factories import SALARY_TEXT, QuestionFactory, UserFactory, add_documents, login
from tests.test_access_matrix import routes, snapshot

worlds = test_access_matrix.worlds  # the fixture: two projects with one of everything

HTMX = {"HTTP_HX_REQUEST": "true"}
# Django masks the CSRF token afresh on every render; it is the only part of a page that may
# differ between two loads of the same state.
TOKEN = re.compile(rb'(name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")[A-Za-z0-9]+')
BOB_NOTE = "bob thinks the cap moved to ten days in 2024"
SALARY_TRACES = (b"salaries", b"Band C", b"52,000", b"hr-confidential")
LEAD_PAGES = {
    "labelling:list-assignments",
    "labelling:show-assignment",
    "labelling:show-agreement",
    "labelling:list-adjudication",
    "labelling:resolve-item",
    "labelling:resolve-verdict",
    "labelling:show-gold",
}


def what_they_see(user, ids: dict) -> dict:
    """Status and body of every page and htmx partial, as `user` receives them."""
    browser = login(user)
    seen = {}
    for name, kwargs in routes():
        url = reverse(name, kwargs={k: ids[k] for k in kwargs})
        for kind, headers in (("page", {}), ("htmx", HTMX)):
            response = browser.get(url, **headers)
            seen[name, kind] = (response.status_code, TOKEN.sub(rb"\1-", response.content))
    # Both views of the grading page (issue 36 item 5); the cards last, as the session began.
    for view in ("question", "cards"):
        url = grading_url("labelling:grade-question", ids) + f"?view={view}"
        response = browser.get(url)
        seen[f"grade-question?view={view}", "page"] = (
            response.status_code,
            TOKEN.sub(rb"\1-", response.content),
        )
    return seen


def grading_url(name: str, ids: dict, **extra) -> str:
    kwargs = {"slug": ids["slug"], "pool_id": ids["pool_id"], "question_id": ids["question_id"]}
    return reverse(name, kwargs={**kwargs, **extra})


@pytest.fixture
def double_labelled(worlds):
    """World a with q1 graded by ann and bob and not yet adjudicated: world() has the lead
    resolve q1, but blindness matters while votes can still change, so the decision goes."""
    a, _ = worlds
    Resolution.objects.filter(question_id=a["ids"]["question_id"]).delete()
    return a


def bob_changes_his_work(world: dict) -> None:
    """Different grades, a span added and one removed, a note, two verdicts and an undo."""
    bob, ids = world["people"]["bob"], world["ids"]
    assignment = Assignment.objects.get(labeller=bob, question_id=ids["question_id"])
    leave, vpn = Candidate.objects.filter(question_id=ids["question_id"]).order_by("shuffle_rank")
    own = {"assignment": assignment, "labeller": bob}
    done = judgements.record_grade(**own, candidate_id=leave.pk, grade=1, revision=0)
    text = leave.version.text
    done = judgements.add_span(
        **own,
        candidate_id=leave.pk,
        version_id=leave.version_id,
        start=130,
        end=170,
        quote=text[130:170],
        revision=done.revision,
    )
    first = Span.objects.get(judgement__assignment=assignment, judgement__candidate=leave, start=20)
    judgements.remove_span(**own, candidate_id=leave.pk, span_id=first.pk, revision=done.revision)
    done = judgements.record_grade(**own, candidate_id=vpn.pk, grade=2, revision=0)
    judgements.record_note(**own, candidate_id=vpn.pk, note=BOB_NOTE, revision=done.revision)
    done = judgements.record_verdict(**own, outcome="answerable", reason="", revision=0)
    judgements.record_verdict(**own, outcome="cant_tell", reason=BOB_NOTE, revision=done.revision)
    judgements.undo_last_change(**own)
    assert Judgement.objects.get(assignment=assignment, candidate=vpn).note == BOB_NOTE


def test_nothing_ann_receives_changes_when_bob_changes_his_work(double_labelled):
    ann, ids = double_labelled["people"]["ann"], double_labelled["ids"]
    before = what_they_see(ann, ids)
    assert before["labelling:grade-question", "page"][0] == 200  # q1 is in ann's queue
    assert before["grade-question?view=question", "page"][0] == 200
    assert b"question-view" in before["grade-question?view=question", "page"][1]
    bob_changes_his_work(double_labelled)
    after = what_they_see(ann, ids)
    for key in before:
        assert after[key] == before[key], key
    for _, body in [*before.values(), *after.values()]:
        assert b"a-bob" not in body
        assert BOB_NOTE.encode() not in body


def test_refusals_say_the_same_whether_or_not_bob_has_worked(double_labelled):
    people, ids = double_labelled["people"], double_labelled["ids"]
    bob = people["bob"]
    leave, vpn = Candidate.objects.filter(question_id=ids["question_id"]).order_by("shuffle_rank")
    bobs_span = Span.objects.get(judgement__assignment__labeller=bob, judgement__candidate=leave)
    # A question of the same pool that only bob holds.
    only_bobs = QuestionFactory(question_set=QuestionSet.objects.get(pk=ids["set_id"]))
    bobs_passage = Candidate.objects.create(
        pool_id=ids["pool_id"], question=only_bobs, version=leave.version, start=0, end=90
    )
    only_bobs_assignment = Assignment.objects.create(
        pool_id=ids["pool_id"], question=only_bobs, slot=1, labeller=bob
    )
    only_bobs_ids = {**ids, "question_id": only_bobs.pk}
    attempts = [
        # bob's span, on a passage ann graded too
        (
            grading_url("labelling:remove-span", ids, candidate_id=leave.pk, span_id=bobs_span.pk),
            {"revision": "0"},
        ),
        # a stale page: ann's revisions count her own edits only
        (
            grading_url("labelling:grade-candidate", ids, candidate_id=vpn.pk),
            {"grade": "1", "revision": "7"},
        ),
        (grading_url("labelling:set-verdict", ids), {"outcome": "answerable", "revision": "7"}),
        # bob's edits are not ann's to undo
        (grading_url("labelling:undo-change", ids), {}),
        (
            grading_url("labelling:grade-candidate", only_bobs_ids, candidate_id=bobs_passage.pk),
            {"grade": "2", "revision": "0"},
        ),
    ]
    browser = login(people["ann"])

    def answers():
        rows = snapshot()
        seen = [browser.post(path, data, **HTMX) for path, data in attempts]
        assert snapshot() == rows  # every attempt was refused
        return [(r.status_code, TOKEN.sub(rb"\1-", r.content)) for r in seen]

    before = answers()
    assert [status for status, _ in before] == [404, 409, 409, 400, 404]
    bob_changes_his_work(double_labelled)
    judgements.record_grade(
        assignment=only_bobs_assignment,
        candidate_id=bobs_passage.pk,
        labeller=bob,
        grade=2,
        revision=0,
    )
    assert answers() == before


def test_labellers_cannot_download_gold_sets_or_reach_lead_pages(worlds):
    a, _ = worlds
    ann, bob = a["people"]["ann"], a["people"]["bob"]
    # show-assignment is the lead's view of one labeller's work: point it at bob's.
    bobs = Assignment.objects.filter(labeller=bob).order_by("pk").first()
    ids = {**a["ids"], "assignment_id": bobs.pk}
    browser = login(ann)
    rows = snapshot()
    checked = set()
    for name, kwargs in routes():
        if not (name.startswith(("evaluation:", "judges:")) or name in LEAD_PAGES):
            continue
        path = reverse(name, kwargs={k: ids[k] for k in kwargs})
        answers = {method: getattr(browser, method)(path).status_code for method in ("get", "post")}
        # one method is refused for the role, the other may not exist on the view (405)
        assert set(answers.values()) <= {403, 405} and 403 in answers.values(), (name, answers)
        checked.add(name)
    assert snapshot() == rows
    assert {"evaluation:download-gold-set", "evaluation:download-run"} <= checked
    assert {"judges:show-judge", "judges:list-judges", "judges:start-judging"} <= checked


AI_QUOTE = "the judge quotes this marker"


def test_nothing_a_labeller_receives_changes_when_the_judge_grades(double_labelled):
    """AI grades are voters for leads only: no page, partial, count or status a labeller
    receives moves when a judge grades (or fails to grade) every candidate, before or after
    they graded it."""
    ann, ids = double_labelled["people"]["ann"], double_labelled["ids"]
    before = what_they_see(ann, ids)
    judge = Judge.objects.get(pk=ids["judge_id"])
    for number, candidate in enumerate(Candidate.objects.filter(pool_id=ids["pool_id"])):
        AIJudgement.objects.create(
            judge=judge,
            prompt=judge.prompt,
            candidate=candidate,
            grade=number % 3 if number % 4 else None,
            quote=AI_QUOTE,
            raw=f'{{"grade": 2, "quote": "{AI_QUOTE}"}}',
            error="" if number % 4 else "the answer holds no JSON object",
        )
    after = what_they_see(ann, ids)
    for key in before:
        assert after[key] == before[key], key
    for _, body in after.values():
        assert AI_QUOTE.encode() not in body
    # A lead has the gold rule count the judge's vote: q1's items now wait for a lead where
    # the judge disagrees, and still nothing a labeller receives moves.
    GoldVoteSwitch.objects.create(question_set_id=ids["set_id"], judge=judge, on=True)
    question_set = QuestionSet.objects.get(pk=ids["set_id"])
    assert any("AI judge" in e.reason for e in adjudication_queue(question_set=question_set))
    counted = what_they_see(ann, ids)
    for key in before:
        assert counted[key] == before[key], key


def test_a_restricted_document_shows_nowhere_for_a_labeller_outside_its_group(worlds):
    a, _ = worlds
    ann, ids = a["people"]["ann"], a["ids"]
    salaries = Document.objects.get(project=a["project"], doc_id="salaries")
    before = what_they_see(ann, ids)
    assert ids["document_id"] == salaries.pk
    missing = what_they_see(ann, {**ids, "document_id": 999_999})
    for kind in ("page", "htmx"):  # as if it did not exist
        assert before["corpus:show-document", kind] == missing["corpus:show-document", kind]
        assert before["corpus:show-document", kind][0] == 404
    # A salary passage between q1's two in page order: a leak would renumber the second.
    hidden = Candidate.objects.create(
        pool_id=ids["pool_id"],
        question_id=ids["question_id"],
        version=salaries.latest_version,
        start=0,
        end=len(SALARY_TEXT),
        shuffle_rank=0,
    )
    after = what_they_see(ann, ids)
    for key in before:
        assert after[key] == before[key], key
    browser = login(ann)
    searches = [
        browser.get(reverse("corpus:list-documents", args=[ids["slug"]]), params)
        for params in ({"q": "sal"}, {"show": "restricted"})
    ]
    for search in searches:
        assert b"No documents match." in search.content
    bodies = [body for _, body in after.values()] + [r.content for r in searches]
    for body in bodies:
        for trace in SALARY_TRACES:
            assert trace not in body, trace
    rows = snapshot()
    refused = browser.post(
        grading_url("labelling:grade-candidate", ids, candidate_id=hidden.pk),
        {"grade": "2", "revision": "0"},
        **HTMX,
    )
    assert refused.status_code == 404
    assert snapshot() == rows
    document = grading_url("labelling:show-passage-document", ids, candidate_id=hidden.pk)
    assert browser.get(document, **HTMX).status_code == 404


def test_revoking_a_group_takes_its_passages_out_of_the_queue_at_once(worlds):
    a, _ = worlds
    ann, project, ids = a["people"]["ann"], a["project"], a["ids"]
    # q2: ann's alone, both passages graded; a salary passage joins them.
    q2 = Assignment.objects.get(labeller=ann, question__external_id="q2", pool_id=ids["pool_id"])
    salaries = Document.objects.get(project=project, doc_id="salaries")
    hidden = Candidate.objects.create(
        pool_id=ids["pool_id"],
        question_id=q2.question_id,
        version=salaries.latest_version,
        start=0,
        end=len(SALARY_TEXT),
        shuffle_rank=5,
    )
    ids = {**ids, "question_id": q2.question_id}
    projects.set_access_group_members(project=project, name="hr-confidential", users=[ann])
    browser = login(ann)
    page = grading_url("labelling:grade-question", ids)
    queue = reverse("labelling:show-queue", args=[ids["slug"]])
    grade = grading_url("labelling:grade-candidate", ids, candidate_id=hidden.pk)

    # The lead is outside the group: ann's work on the salary passage moves none of the
    # lead's progress figures (judgement counts, median seconds). q2 has no verdict, so it
    # stays "started" throughout (the factory marks it done regardless).
    Assignment.objects.filter(pk=q2.pk).update(completed_at=None)
    lead = login(a["people"]["lead"])
    progress = reverse("labelling:list-assignments", args=[ids["slug"]])
    leads_view = TOKEN.sub(rb"\1-", lead.get(progress, {"pool": ids["pool_id"]}).content)

    body = browser.get(page).content.decode()
    assert "Band C pays" in body
    assert "<strong>2 of 3</strong>" in body
    assert browser.post(grade, {"grade": "1", "revision": "0"}, **HTMX).status_code == 200
    assert TOKEN.sub(rb"\1-", lead.get(progress, {"pool": ids["pool_id"]}).content) == leads_view
    assert "<strong>3 of 3</strong>" in browser.get(page).content.decode()
    assert "<td>3</td>" in queue_row(browser.get(queue).content.decode(), "q2")

    projects.set_access_group_members(project=project, name="hr-confidential", users=[])

    body = browser.get(page).content.decode()
    assert "Band C pays" not in body
    assert "<strong>2 of 2</strong>" in body
    assert "<td>2</td>" in queue_row(browser.get(queue).content.decode(), "q2")
    rows = snapshot()
    refused = browser.post(grade, {"grade": "2", "revision": "1"}, **HTMX)
    assert refused.status_code == 404
    assert snapshot() == rows
    assert Judgement.objects.get(assignment=q2, candidate=hidden).grade == 1
    document = grading_url("labelling:show-passage-document", ids, candidate_id=hidden.pk)
    assert browser.get(document, **HTMX).status_code == 404


def queue_row(html: str, external_id: str) -> str:
    row = next(r for r in html.split("<tr>") if f"<code>{external_id}</code>" in r)
    return row.split("</tr>")[0]


def test_granting_and_revoking_access_recompute_whether_work_is_done(worlds):
    """Done means a grade on every passage the labeller may see, so it follows access at once:
    through the service, the admin's group page, and a re-import that changes a document's
    groups."""
    a, _ = worlds
    ann, project, ids = a["people"]["ann"], a["project"], a["ids"]
    q2 = Assignment.objects.get(labeller=ann, question__external_id="q2", pool_id=ids["pool_id"])
    salaries = Document.objects.get(project=project, doc_id="salaries")
    Candidate.objects.create(
        pool_id=ids["pool_id"],
        question_id=q2.question_id,
        version=salaries.latest_version,
        start=0,
        end=len(SALARY_TEXT),
        shuffle_rank=5,
    )
    judgements.record_verdict(
        assignment=q2, labeller=ann, outcome="answerable", reason="", revision=0
    )

    def done() -> bool:
        q2.refresh_from_db()
        return q2.completed_at is not None

    assert done()  # both passages ann sees are graded
    projects.set_access_group_members(project=project, name="hr-confidential", users=[ann])
    assert not done()  # the salary passage now waits for her grade

    superuser = UserFactory(is_staff=True, is_superuser=True)
    group = AccessGroup.objects.get(project=project, name="hr-confidential")
    response = login(superuser).post(
        reverse("admin:corpus_accessgroup_change", args=[group.pk]),
        {"name": group.name, "project": project.pk, "members": []},
    )
    assert response.status_code == 302
    assert done()

    # An import never widens access by naming no groups; naming others (the command line may)
    # changes them, and what is done follows at once.
    add_documents(project, ("salaries", SALARY_TEXT + " Revised."))
    assert done()
    projects.set_access_group_members(project=project, name="all-staff", users=[ann])
    add_documents(project, ("salaries", SALARY_TEXT + " Revised again.", ["all-staff"]))
    assert not done()
