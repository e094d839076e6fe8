"""Every URL in the URL conf, generated from it so a new view cannot be forgotten, requested by
people who must not reach it: anonymous users, members of another project, and members of this
project holding object ids of another project. Unsafe methods must leave every row unchanged."""

from __future__ import annotations

import json
import re

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from answers.models import AnswerAssignment
from answers.services.review import plan_answer_review
from answers.services.runs import import_answers
from corpus import jobs
from corpus.models import AccessGroup, Document, DuplicateGroup, Job, Membership, PermissionProfile
from corpus.services import documents, retrieval
from evaluation.models import EvaluationRun, PermissionReplay
from evaluation.services.gold_sets import finalise_gold_set
from judges.models import Judge, JudgePrompt
from judges.prompt import DEFAULT_PROMPT
from labelling.models import Assignment, Candidate, Span
from production.models import Sample
from production.services.sampling import check_rule, save_sampling_rule
from production.services.traces import create_api_token
from tests.conftest import GOLDSET_APPS
from tests.factories import (
    POLICY_TEXT,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    add_documents,
    labelled_question_set,
    login,
)

# No project in them: tested on their own (tests/corpus/test_team.py).
OPEN_URLS = {
    "login",
    "logout",
    "password_change",
    "password_change_done",
    "corpus:list-projects",
    "corpus:add-project",
    "corpus:accept-invitation",
    "favicon",
}
# Called by the team's system with a project API token, never a session: anonymous and
# session requests get 401 (after the CSRF check), tested in tests/production/test_trace_intake.py
# and below.
TOKEN_URLS = {"production:receive-traces"}
# What the open URLs that take arguments are requested with (a link that does not work).
OPEN_URL_KWARGS = {"corpus:accept-invitation": {"uidb64": "MQ", "token": "not-a-token"}}


def url_patterns(patterns=None, namespace=None):
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            if str(pattern.pattern).startswith("admin/"):
                continue  # Django's admin: staff-only, tested by Django itself
            yield from url_patterns(pattern.url_patterns, pattern.namespace or namespace)
        elif isinstance(pattern, URLPattern):
            yield f"{namespace}:{pattern.name}" if namespace else pattern.name, pattern


def world(prefix: str) -> dict:
    """A project with one object of every kind a URL can name."""
    project = ProjectFactory(slug=f"{prefix}-project")
    people = {
        role: UserFactory(username=f"{prefix}-{role}") for role in ("ann", "bob", "lead", "admin")
    }
    for name, user in people.items():
        MembershipFactory(
            project=project,
            user=user,
            role={"lead": "lead", "admin": "admin"}.get(name, "labeller"),
        )
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], restricted=True
    )
    add_documents(project, ("copy-a", POLICY_TEXT + " copy"), ("copy-b", POLICY_TEXT + " copy!"))
    scheme = documents.add_chunking_scheme(
        project=project, name="w50", strategy="fixed", size=50, overlap=0
    )
    documents.chunk_corpus(scheme=scheme)
    retriever = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    gold_set = finalise_gold_set(question_set=question_set, user=people["admin"])
    run = EvaluationRun.objects.create(
        gold_set=gold_set,
        name="r",
        source="upload",
        file_name="r.jsonl",
        content=b"",
        sha256="0" * 64,
    )
    candidate = Candidate.objects.filter(pool__question_set=question_set).order_by("pk").first()
    profile = PermissionProfile.objects.create(project=project, name="tester")
    replay = PermissionReplay.objects.create(gold_set=gold_set, source="upload", k=5)
    question = question_set.questions.order_by("pk").first()
    answer_line = {"question_id": question.external_id, "answer": "An answer.", "refused": False}
    answer_run = import_answers(
        question_set=question_set, data=json.dumps(answer_line), run_name="rag"
    ).run
    plan_answer_review(run=answer_run, labellers=[people["ann"]], double_share=0)
    api_token, _ = create_api_token(project=project, user=people["admin"], name="bot")
    rule = save_sampling_rule(
        project=project,
        user=people["lead"],
        name="weekly",
        spec=check_rule(filters={}, strategy="uniform", size=5),
    )
    sample = Sample.objects.create(
        project=project,
        rule=rule,
        window_start=timezone.now(),
        window_end=timezone.now(),
        population=0,
    )
    judge = Judge.objects.create(
        project=project, name="llm", url="https://llm.example.com/v1/chat/completions", model="m"
    )
    JudgePrompt.objects.create(judge=judge, version=1, text=DEFAULT_PROMPT)
    return {
        "project": project,
        "people": people,
        "ids": {
            "slug": project.slug,
            "set_id": question_set.pk,
            "pool_id": candidate.pool_id,
            "question_id": candidate.question_id,
            "candidate_id": candidate.pk,
            "assignment_id": Assignment.objects.filter(pool=candidate.pool)
            .order_by("pk")
            .first()
            .pk,
            "span_id": Span.objects.filter(judgement__candidate=candidate)
            .order_by("pk")
            .first()
            .pk,
            "document_id": Document.objects.get(project=project, doc_id="salaries").pk,
            "group_id": DuplicateGroup.objects.get(project=project).pk,
            "scheme_id": scheme.pk,
            "job_id": Job.objects.create(project=project, kind="chunk_corpus").pk,
            "retriever_id": retriever.pk,
            "gold_set_id": gold_set.pk,
            "run_id": run.pk,
            "profile_id": profile.pk,
            "replay_id": replay.pk,
            "token_id": api_token.pk,
            "rule_id": rule.pk,
            "sample_id": sample.pk,
            "membership_id": Membership.objects.get(project=project, user=people["ann"]).pk,
            "access_group_id": AccessGroup.objects.get(project=project, name="hr-confidential").pk,
            "answer_assignment_id": AnswerAssignment.objects.get(answer__run=answer_run).pk,
            "answer_run_id": answer_run.pk,
            "judge_id": judge.pk,
        },
    }


# The stored gold decisions are a cache of what the votes decide (`labelling.services.
# gold_state`): a lead's page that reads a question marked stale decides it again and stores the
# result, which changes no vote, resolution or anything a user made (tests/labelling/
# test_lead_pages.py proves the pages equal to deciding everything again). Left out of the
# snapshot so that "no GET changes anything" keeps meaning what users and CSRF care about.
DERIVED_CACHES = {"labelling.ItemState", "labelling.ItemStateStale"}


def snapshot() -> dict:
    return {
        model._meta.label: sorted(map(repr, model.objects.values_list()))
        for app in GOLDSET_APPS
        for model in apps.get_app_config(app).get_models()
        if model._meta.label not in DERIVED_CACHES
    }


@pytest.fixture
def worlds(db, monkeypatch):
    # Jobs a stray request might start must not run: the snapshot has to see them queued.
    monkeypatch.setattr("corpus.jobs.queue", lambda job: None)
    return world("a"), world("b")


def routes():
    for name, pattern in url_patterns():
        if name not in OPEN_URLS | TOKEN_URLS:
            yield name, re.findall(r"<(?:\w+:)?(\w+)>", str(pattern.pattern))


def test_every_url_kwarg_is_covered(worlds):
    known = set(worlds[0]["ids"])
    for name, kwargs in routes():
        assert set(kwargs) <= known, f"{name}: add {set(kwargs) - known} to world() in this test"


def test_anonymous_users_are_sent_to_log_in(worlds):
    a, _ = worlds
    before = snapshot()
    for name, kwargs in routes():
        url = reverse(name, kwargs={k: a["ids"][k] for k in kwargs})
        for method in ("get", "post"):
            response = getattr(Client(), method)(url)
            assert response.status_code in (302, 405), (name, method, response.status_code)
            if response.status_code == 302:
                assert response["Location"].startswith("/accounts/login/"), (name, method)
    assert snapshot() == before


@pytest.mark.parametrize("role", ["ann", "lead", "admin"])
def test_members_of_another_project_get_404(worlds, role):
    a, b = worlds
    outsider = login(b["people"][role])
    before = snapshot()
    for name, kwargs in routes():
        url = reverse(name, kwargs={k: a["ids"][k] for k in kwargs})
        for method in ("get", "post"):
            response = getattr(outsider, method)(url)
            assert response.status_code in (404, 405), (name, method, response.status_code)
    assert snapshot() == before


def test_object_ids_of_another_project_get_404(worlds):
    a, b = worlds
    admin = login(a["people"]["admin"])
    before = snapshot()
    for name, kwargs in routes():
        if kwargs == ["slug"]:
            continue
        ids = {k: (a if k == "slug" else b)["ids"][k] for k in kwargs}
        for method in ("get", "post"):
            response = getattr(admin, method)(reverse(name, kwargs=ids))
            assert response.status_code in (404, 405), (name, method, response.status_code)
    assert snapshot() == before


@pytest.mark.parametrize("role", [None, "ann", "admin"])
def test_token_urls_refuse_anonymous_and_session_requests(worlds, role):
    a, b = worlds
    client = login(b["people"][role]) if role else Client()
    own = login(a["people"]["admin"])
    before = snapshot()
    for name in TOKEN_URLS:
        url = reverse(name, kwargs={"slug": a["ids"]["slug"]})
        for browser in (client, own):
            for method in ("get", "post"):
                response = getattr(browser, method)(url)
                assert response.status_code == 401, (name, method, response.status_code)
    assert snapshot() == before


def test_lookup_style_query_parameters_are_refused(worlds):
    a, _ = worlds
    admin = login(a["people"]["admin"])
    for name, kwargs in routes():
        url = reverse(name, kwargs={k: a["ids"][k] for k in kwargs})
        response = admin.get(url, {"created_by__password__startswith": "pbkdf2"})
        assert response.status_code == 400, name
        assert b"Unknown filter created_by__password__startswith" in response.content


ORIGINAL_UPLOAD = (
    b'<html><body><script>alert("original-upload")</script><p>Leave rules.</p></body></html>'
)
ORIGINAL_RUN = b'{"q1": "<script>alert(\\"original-run\\")</script>"}\n'


def test_uploaded_originals_are_never_served_inline(worlds):
    """An uploaded file, opened from our origin, would run as our page. Originals are kept for
    the record and only a lead's own run file comes back, as an attachment the browser must
    not sniff."""
    a, _ = worlds
    admin = login(a["people"]["admin"])
    upload = SimpleUploadedFile("policy.html", ORIGINAL_UPLOAD, content_type="text/html")
    response = admin.post(
        reverse("corpus:upload-documents", kwargs={"slug": "a-project"}), {"files": [upload]}
    )
    assert response.status_code == 302
    job = Job.objects.get(project=a["project"], kind="import_uploads")
    jobs.task_named(job.task)(job.pk)  # the queue is switched off in this module; import here
    assert Document.objects.filter(project=a["project"], title__contains="policy").exists()
    EvaluationRun.objects.filter(pk=a["ids"]["run_id"]).update(content=ORIGINAL_RUN)
    ids = {**a["ids"], "job_id": job.pk}

    for name, kwargs in routes():
        response = admin.get(reverse(name, kwargs={k: ids[k] for k in kwargs}))
        if response.status_code != 200:
            continue
        body = b"".join(response) if response.streaming else response.content
        disposition = response.get("Content-Disposition", "")
        assert response["X-Content-Type-Options"] == "nosniff", name
        assert not disposition or disposition.startswith("attachment;"), name
        assert ORIGINAL_UPLOAD not in body and b"original-upload" not in body, name
        if ORIGINAL_RUN in body:
            assert name == "evaluation:download-run", name
            assert disposition.startswith("attachment;"), name
            assert response["Content-Type"] == "application/octet-stream"
