"""A lead or an admin outside an access group learns nothing of its documents (issue 12,
item 2, and the access matrix's extension): with group members' judgements on a restricted
document, every page, htmx partial, statistic and download they receive is byte for byte what
they receive when the document does not exist. Members of the group do see it.

The project has no chunking scheme: chunk and passage counts are issue 12 item 4's
(`tests/corpus`), and a scheme would add the document's chunks to them. The gold set was
finalised before the document arrived, as a bundle carrying it is refused to outsiders
(item 3)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from answers.models import AnswerAssignment
from answers.services.review import plan_answer_review
from answers.services.runs import import_answers
from corpus.models import (
    AccessGroup,
    Document,
    DuplicateGroup,
    Job,
    Membership,
    PermissionProfile,
)
from corpus.services import projects, retrieval
from evaluation.models import EvaluationRun, PermissionReplay
from evaluation.services.gold_sets import finalise_gold_set
from judges.models import AIJudgement, Judge, JudgeCanary, JudgeCanaryResult, JudgePrompt
from judges.prompt import DEFAULT_PROMPT
from labelling.models import Assignment, Candidate, Span, Verdict
from labelling.services import judgements
from tests.factories import (
    POLICY_TEXT,
    SALARY_TEXT,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    add_documents,
    labelled_question_set,
    login,
)
from tests.test_access_matrix import routes
from tests.test_blindness import HTMX, TOKEN

SALARY_TRACES = (b"salaries", b"Band C", b"52,000", b"Band D")
RUN = b'{"question_id": "q1", "results": [{"doc_id": "leave", "start": 0, "end": 100}]}\n'


@pytest.fixture
def world(db, monkeypatch):
    monkeypatch.setattr("corpus.jobs.queue", lambda job: None)
    project = ProjectFactory(slug="acme")
    people = {name: UserFactory(username=name) for name in ("ann", "bob", "insider", "leo", "ada")}
    roles = {"insider": "lead", "leo": "lead", "ada": "admin"}
    for name, user in people.items():
        MembershipFactory(project=project, user=user, role=roles.get(name, "labeller"))
    # The group exists all along (only its document is new); leo and ada are not in it.
    projects.set_access_group_members(
        project=project,
        name="hr-confidential",
        users=[people["ann"], people["bob"], people["insider"]],
    )
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["insider"]
    )
    add_documents(project, ("copy-a", POLICY_TEXT + " copy"), ("copy-b", POLICY_TEXT + " copy!"))
    retriever = retrieval.add_retriever(project=project, name="ours", kind="run")
    gold_set = finalise_gold_set(question_set=question_set, user=people["ada"])
    # After v1, q1 is being labelled again (the restricted passages join it); q2 and q3 stay
    # finished, with a verdict, as the grading page finishes them.
    Assignment.objects.filter(question__external_id="q1").update(completed_at=None)
    Verdict.objects.create(
        assignment=Assignment.objects.get(question__external_id="q2"), outcome="answerable"
    )
    run = EvaluationRun.objects.create(
        gold_set=gold_set,
        name="r",
        source="upload",
        file_name="r.jsonl",
        content=RUN,
        sha256="0" * 64,
        questions=1,
    )
    candidate = Candidate.objects.filter(pool__question_set=question_set).order_by("pk").first()
    q1 = candidate.question
    answer = {
        "question_id": "q1",
        "answer": "Five days.",
        "refused": False,
        "context": [{"doc_id": "leave"}],
    }
    answer_run = import_answers(question_set=question_set, data=json.dumps(answer), run_name="a")
    plan_answer_review(run=answer_run.run, labellers=[people["ann"]], double_share=0)
    # The team's judge may read hr-confidential (its grades of salaries come with them below).
    judge = Judge.objects.create(
        project=project, name="llm", url="https://llm.example.com/v1/chat/completions", model="m"
    )
    judge.access_groups.set(AccessGroup.objects.filter(project=project))
    JudgePrompt.objects.create(judge=judge, version=1, text=DEFAULT_PROMPT)
    ids = {
        "slug": project.slug,
        "set_id": question_set.pk,
        "pool_id": candidate.pool_id,
        "question_id": q1.pk,
        "candidate_id": candidate.pk,
        "assignment_id": Assignment.objects.get(question=q1, slot=1).pk,
        "span_id": Span.objects.filter(judgement__candidate=candidate).order_by("pk").first().pk,
        "document_id": Document.objects.get(project=project, doc_id="leave").pk,
        "group_id": DuplicateGroup.objects.get(project=project).pk,
        "scheme_id": 999_999,
        "token_id": 999_999,
        "rule_id": 999_999,
        "sample_id": 999_999,
        "job_id": Job.objects.create(project=project, kind="chunk_corpus").pk,
        "retriever_id": retriever.pk,
        "gold_set_id": gold_set.pk,
        "run_id": run.pk,
        "membership_id": Membership.objects.get(project=project, user=people["ann"]).pk,
        "access_group_id": AccessGroup.objects.get(project=project, name="hr-confidential").pk,
        "profile_id": PermissionProfile.objects.create(project=project, name="tester").pk,
        "replay_id": PermissionReplay.objects.create(gold_set=gold_set, source="upload", k=5).pk,
        "answer_run_id": answer_run.run.pk,
        "answer_assignment_id": AnswerAssignment.objects.get().pk,
        "judge_id": judge.pk,
    }
    return {"project": project, "people": people, "ids": ids, "q1": q1, "set": question_set}


def group_members_judge_a_restricted_document(world) -> None:
    """salaries, restricted to hr-confidential, joins q1, which ann and bob are labelling: they
    disagree on one passage, agree on another (with spans), and a third nobody graded yet.
    The judgements are made through the grading service, so their history rows exist too."""
    project, people, q1 = world["project"], world["people"], world["q1"]
    add_documents(project, ("salaries", SALARY_TEXT, ["hr-confidential"]))
    version = Document.objects.get(project=project, doc_id="salaries").latest_version
    pool_id = world["ids"]["pool_id"]
    band_c = Candidate.objects.create(
        pool_id=pool_id, question=q1, version=version, start=0, end=44, shuffle_rank=5
    )
    band_d = Candidate.objects.create(
        pool_id=pool_id,
        question=q1,
        version=version,
        start=45,
        end=len(SALARY_TEXT),
        shuffle_rank=6,
    )
    Candidate.objects.create(
        pool_id=pool_id,
        question=q1,
        version=version,
        start=0,
        end=len(SALARY_TEXT),
        shuffle_rank=7,
    )
    votes = [
        ("ann", q1, band_c, 2),
        ("bob", q1, band_c, 0),
        ("ann", q1, band_d, 1),
        ("bob", q1, band_d, 1),
    ]
    for name, question, candidate, grade in votes:
        labeller = people[name]
        assignment = Assignment.objects.get(question=question, labeller=labeller)
        done = judgements.record_grade(
            assignment=assignment,
            labeller=labeller,
            candidate_id=candidate.pk,
            grade=grade,
            revision=0,
            seconds=17.5,
        )
        if grade:
            judgements.add_span(
                assignment=assignment,
                labeller=labeller,
                candidate_id=candidate.pk,
                version_id=version.pk,
                start=candidate.start,
                end=candidate.start + 11,
                quote=SALARY_TEXT[candidate.start : candidate.start + 11],
                revision=done.revision,
            )
    # The judge grades every salaries passage, a quote of it too, and fails on one; a canary
    # of the set is one of them (a paraphrase) and the judge passes it.
    judge = Judge.objects.get(project=project)
    for number, candidate in enumerate(Candidate.objects.filter(version=version)):
        AIJudgement.objects.create(
            judge=judge,
            prompt=judge.prompt,
            candidate=candidate,
            grade=None if number == 2 else 2,
            quote=SALARY_TEXT[:11],
            error="the answer holds no JSON object" if number == 2 else "",
        )
    canary = JudgeCanary.objects.create(
        question_set=world["set"], question=q1, kind="paraphrase", candidate=band_d
    )
    JudgeCanaryResult.objects.create(canary=canary, judge=judge, prompt=judge.prompt, grade=1)


def extra_urls(ids: dict) -> list[str]:
    """The lead pages again with the query parameters their filters take."""
    set_args = [ids["slug"], ids["set_id"]]
    assignments = reverse("labelling:list-assignments", args=[ids["slug"]])
    return [
        reverse("labelling:show-gold", args=set_args) + "?group=reason",
        reverse("labelling:show-gold", args=set_args) + "?kind=disagreement",
        reverse("labelling:show-gold", args=set_args) + "?kind=waiting&group=reason",
        reverse("labelling:list-adjudication", args=set_args) + f"?question={ids['question_id']}",
        reverse("labelling:show-agreement", args=set_args) + "?min_span_f1=0.9",
        f"{assignments}?pool={ids['pool_id']}&status=started&sort=graded",
        f"{assignments}?pool={ids['pool_id']}&q=carry&sort=labeller",
        reverse("evaluation:show-evaluation", args=[ids["slug"]]) + "?shown=1&baseline=1",
    ]


def what_they_get(user, ids: dict) -> dict:
    browser = login(user)
    seen = {}
    for name, kwargs in routes():
        url = reverse(name, kwargs={k: ids[k] for k in kwargs})
        for kind, headers in (("page", {}), ("htmx", HTMX)):
            response = browser.get(url, **headers)
            body = b"".join(response) if response.streaming else response.content
            seen[name, kind] = (response.status_code, TOKEN.sub(rb"\1-", body))
    for url in extra_urls(ids):
        response = browser.get(url)
        seen[url, "page"] = (response.status_code, TOKEN.sub(rb"\1-", response.content))
    return seen


@pytest.mark.parametrize("outsider", ["leo", "ada"])
def test_an_outsider_lead_or_admin_gets_what_they_get_without_the_document(world, outsider):
    user, ids = world["people"][outsider], world["ids"]
    without = what_they_get(user, ids)
    reached = [key for key, (status, _) in without.items() if status == 200]
    assert ("labelling:show-gold", "page") in reached and (
        "labelling:show-agreement",
        "page",
    ) in reached
    assert ("evaluation:download-gold-set", "page") in reached
    group_members_judge_a_restricted_document(world)
    with_it = what_they_get(user, ids)
    differing = [key for key in without if with_it[key] != without[key]]
    assert differing == [], differing
    for _, body in with_it.values():
        for trace in SALARY_TRACES:
            assert trace not in body, trace


def test_a_member_of_the_group_sees_it(world):
    group_members_judge_a_restricted_document(world)
    ids, insider = world["ids"], world["people"]["insider"]
    browser = login(insider)
    set_args = [ids["slug"], ids["set_id"]]
    queue = browser.get(reverse("labelling:list-adjudication", args=set_args)).content
    gold = browser.get(reverse("labelling:show-gold", args=set_args)).content
    agreement = browser.get(reverse("labelling:show-agreement", args=set_args)).content.decode()
    assert b"salaries [0\xe2\x80\x9344)" in queue and b"grades differ (2 vs 0)" in queue
    assert b"Band C pays" in gold
    assert "4 double-labelled passages" in agreement  # q1's two public and two salary ones
    history = browser.get(
        reverse("labelling:show-assignment", args=[ids["slug"], ids["assignment_id"]])
    ).content
    assert history.count(b"<td>grade") >= 2 and b"salaries" in history


def job_pages(user, ids: dict, job_ids: list[int]) -> dict:
    """Every page that shows a job (its page, its htmx progress, the jobs list, the project
    page's recent jobs), job ids set aside."""
    from tests.corpus.test_job_pages import NOISE

    browser = login(user)
    slug, seen = ids["slug"], {}
    for number, pk in enumerate(job_ids):
        for kind, headers in (("page", {}), ("htmx", HTMX)):
            response = browser.get(reverse("corpus:show-job", args=[slug, pk]), **headers)
            seen[number, kind] = (response.status_code, NOISE.sub(b"", response.content))
    for name in ("corpus:list-jobs", "corpus:show-project"):
        response = browser.get(reverse(name, args=[slug]))
        seen[name] = (response.status_code, NOISE.sub(b"", response.content))
    return seen


def a_job_of_every_kind(project, *, document=None) -> list[int]:
    """A finished job of each kind the apps start, its figures, progress and problems as the
    work records them: with ``document`` (restricted), each counts it once more and a warning
    names it, and what it adds is recorded as its share (`corpus.jobs.add_shares`)."""
    from corpus import jobs
    from tests.test_job_tasks import started_tasks

    made = []
    for kind, task in sorted(started_tasks().items()):
        extra = 1 if document is not None else 0
        job = Job.objects.create(
            project=project, kind=kind, task=task, description=f"A {kind} job", done=0, total=0
        )
        job.done = job.total = 3 + extra
        job.errors = [{"source": "question q1", "error": "result 1 names a document"}]
        if document is not None:
            job.errors.append(
                {
                    "source": "question q1",
                    "document_id": document.pk,
                    "error": f"result 2 is past the end of {document.doc_id} (2272 characters)",
                }
            )
            jobs.add_shares(job, {document.pk: {"done": 1, "total": 1, "items": 1, "placed": 1}})
        jobs.finish(
            job,
            "succeeded",
            ["{kind}: {items:plural:item/items}", [", {placed} placed", "placed"]],
            figures={"kind": kind, "items": 3 + extra, "placed": extra},
        )
        made.append(job.pk)
    return made


@pytest.mark.parametrize("outsider", ["leo", "ada"])
def test_an_outsider_reads_every_kind_of_job_as_if_the_document_did_not_exist(world, outsider):
    """Job pages follow the rule of every other page: each kind's job, run without the
    restricted document and run again with it, reads the same to a lead or an admin outside
    its group. (`tests/corpus/test_job_pages.py` runs the kinds that count documents.)"""
    project, ids, user = world["project"], world["ids"], world["people"][outsider]
    Job.objects.filter(project=project).delete()
    a_job_of_every_kind(project)
    without = job_pages(user, ids, list(Job.objects.order_by("pk").values_list("pk", flat=True)))
    Job.objects.filter(project=project).delete()
    group_members_judge_a_restricted_document(world)
    salaries = Document.objects.get(project=project, doc_id="salaries")
    with_it_ids = a_job_of_every_kind(project, document=salaries)
    with_it = job_pages(user, ids, with_it_ids)
    differing = [key for key in without if with_it[key] != without[key]]
    import difflib

    assert differing == [], "\n".join(
        difflib.unified_diff(
            without[0, "page"][1].decode().splitlines(),
            with_it[0, "page"][1].decode().splitlines(),
            lineterm="",
        )
    )
    for _, body in with_it.values():
        assert b"salaries" not in body and b"2272" not in body
    insider = job_pages(world["people"]["insider"], ids, with_it_ids)
    assert b"4 items, 1 placed" in insider[0, "page"][1] and b"2272" in insider[0, "page"][1]
