"""Runs stored with values no reader can hold, and deleting runs in the browser.

A run stored before its values were checked (a NaN score from an HTTP retriever, an infinite
one in a TREC file) must not make the evaluation page, its figures job or the Index health page
fail for everyone: it is flagged and left out. Leads and admins delete a run (asked first,
recorded who and when); labellers and people outside the project cannot, nor can a lead an
access group hides one of the gold set's documents from. Figures that used the run stop using
it."""

import hashlib

import pytest
from django.test import Client
from django.urls import reverse

from corpus.models import AccessGroup, Job, JobState, Retriever
from evaluation.models import (
    EvaluationReport,
    EvaluationRun,
    IndexEvaluation,
    PermissionReplay,
    PermissionReplayRun,
    RunDeletion,
)
from evaluation.services import gold_sets, index_evaluations, reports
from tests.factories import (
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    labelled_question_set,
    login,
)

GOOD = (
    '{"question_id": "q1", "results": [{"doc_id": "leave", "start": 0, "end": 100}]}\n'
    '{"question_id": "q2", "results": [{"doc_id": "vpn", "start": 0, "end": 40}]}\n'
)
# What an HTTP retriever's NaN score became before answers were checked, and its neighbours.
BROKEN = {
    "nan-score": '{"question_id": "q1", "results": [{"doc_id": "leave", "score": NaN}]}\n',
    "infinite-score": '{"question_id": "q1", "results": [{"doc_id": "a", "score": -Infinity}]}\n',
    "huge-score": '{"question_id": "q1", "results": [{"doc_id": "leave", "score": 1e39}]}\n',
    "trec-nan": "q1 Q0 leave 1 nan team\n",
    "not-utf8": b'{"question_id": "q1", "results": [{"doc_id": "le\xffave"}]}\n',
}


@pytest.fixture
def people(member):
    people = {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lead": member("lead", username="lea"),
        "admin": member("admin", username="ada"),
        # A lead outside hr-confidential: the gold set names a document hidden from them.
        "outsider_lead": member("lead", username="olga"),
    }
    return people


@pytest.fixture
def gold_set(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], restricted=True
    )
    group = AccessGroup.objects.get(project=project, name="hr-confidential")
    group.members.add(people["lead"], people["admin"])
    gold_set = gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])
    # The bundle carries the restricted document, so olga is refused its files and figures.
    assert gold_set.hidden_document_count(people["outsider_lead"]) > 0
    return gold_set


def _stored(gold_set, name, content, *, user=None, file_name=None) -> EvaluationRun:
    """A run row as it was stored before the checks (straight to the table)."""
    data = content if isinstance(content, bytes) else content.encode()
    return EvaluationRun.objects.create(
        gold_set=gold_set,
        name=name,
        source="upload",
        file_name=file_name or f"{name}.jsonl",
        content=data,
        sha256=hashlib.sha256(data).hexdigest(),
        questions=2,
        created_by=user,
    )


def _html(response) -> str:
    return response.content.decode()


def _evaluation_page(client, project, gold_set, capture):
    """The evaluation page once its default figures are computed (the job runs in-process)."""
    url = reverse("evaluation:show-evaluation", args=[project.slug])
    page = client.get(url, {"gold_set": gold_set.pk})
    if page.context.get("report") is None:
        with capture(execute=True):
            reports.start_report(gold_set=gold_set, choice=reports.default_choice(gold_set))
        page = client.get(url, {"gold_set": gold_set.pk})
    return page


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_stored_run_no_reader_can_hold_is_flagged_and_the_rest_is_scored(
    project, people, gold_set, inline_jobs, django_capture_on_commit_callbacks, broken
):
    _stored(gold_set, "good", GOOD)
    file_name = "broken.trec" if broken.startswith("trec") else "broken.jsonl"
    _stored(gold_set, "broken", BROKEN[broken], file_name=file_name)
    client = login(people["lead"])
    page = _evaluation_page(client, project, gold_set, django_capture_on_commit_callbacks)
    assert page.status_code == 200
    job = Job.objects.filter(kind="evaluation_report").latest("pk")
    assert job.state == JobState.SUCCEEDED, job.message
    report = page.context["report"]
    assert [r["name"] for r in report["runs"]] == ["good", "bm25-baseline"]
    [flagged] = report["unreadable_runs"]
    assert flagged["name"] == "broken" and "broken." in flagged["error"]
    assert "The run broken cannot be scored and is left out of these figures" in _html(page)
    # The Index health page checks the good run and flags the broken one, for a lead and an
    # admin alike.
    for who in ("lead", "admin"):
        health = login(people[who]).get(reverse("health:show-index-health", args=[project.slug]))
        assert health.status_code == 200
        assert "broken cannot be checked and is left out" in _html(health)
        assert set(health.context["runs_health"]["runs"]) == {"good"}


def test_a_stored_permission_replay_run_no_reader_can_hold_is_flagged_on_index_health(
    project, people, gold_set
):
    replay = PermissionReplay.objects.create(gold_set=gold_set, source="upload", k=5)
    for user_name, content in (("alice", GOOD), ("bob", BROKEN["nan-score"])):
        PermissionReplayRun.objects.create(
            replay=replay,
            user_name=user_name,
            file_name=f"{user_name}.jsonl",
            content=content.encode(),
        )
    health = login(people["lead"]).get(reverse("health:show-index-health", args=[project.slug]))
    assert health.status_code == 200
    assert "test user bob cannot be checked and is left out" in _html(health)
    assert set(health.context["runs_health"]["test_users"]) == {"alice"}


@pytest.mark.parametrize("who", ["lead", "admin"])
def test_leads_and_admins_delete_a_run_after_confirming_and_it_is_recorded(
    project, people, gold_set, inline_jobs, django_capture_on_commit_callbacks, who
):
    keep = _stored(gold_set, "keep", GOOD, user=people["admin"])
    broken = _stored(gold_set, "broken", BROKEN["nan-score"], user=people["lead"])
    retriever = Retriever.objects.create(project=project, name="team", kind="run")
    index_evaluations.record_run_evaluation(run=keep, retriever_id=retriever.pk, change="v1")
    IndexEvaluation.objects.create(
        retriever=retriever,
        gold_set=gold_set,
        run=broken,
        built_at=broken.created_at,
        change="v2",
        model="run broken",
        k=5,
        metrics={},
    )
    client = login(people[who])
    builds = reverse("health:show-retriever-builds", args=[project.slug, retriever.pk])
    health = reverse("health:show-index-health", args=[project.slug])
    assert "run broken" in _html(client.get(builds))
    assert "broken cannot be checked" in _html(client.get(health))
    page = _evaluation_page(client, project, gold_set, django_capture_on_commit_callbacks)
    assert page.status_code == 200 and "delete…" in _html(page)
    stale = EvaluationReport.objects.get(gold_set=gold_set)
    assert broken.pk in stale.choice["runs"]
    url = reverse("evaluation:delete-run", args=[project.slug, gold_set.pk, broken.pk])

    # Asked first: the page names the run and changes nothing.
    ask = client.get(url)
    assert ask.status_code == 200
    assert "Delete run broken?" in _html(ask) and 'name="confirm"' in _html(ask)
    # A POST without the confirmation deletes nothing.
    unconfirmed = client.post(url, {})
    assert unconfirmed.status_code == 400 and "Tick the box" in _html(unconfirmed)
    assert EvaluationRun.objects.filter(pk=broken.pk).exists()
    assert not RunDeletion.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"confirm": "yes"})
    assert response.status_code == 302
    assert not EvaluationRun.objects.filter(pk=broken.pk).exists()
    deletion = RunDeletion.objects.get()
    assert (deletion.name, deletion.gold_set, deletion.deleted_by) == (
        "broken",
        gold_set,
        people[who],
    )
    assert deletion.stored_by == people["lead"] and deletion.deleted_at is not None
    assert deletion.sha256 == broken.sha256 and deletion.source == "upload"
    # What used the run stops using it: its stored figures, its point on the retriever's plot.
    assert not EvaluationReport.objects.filter(pk=stale.pk).exists()
    assert list(IndexEvaluation.objects.values_list("run__name", flat=True)) == ["keep"]
    plot = _html(client.get(builds))
    assert "run keep" in plot and "run broken" not in plot
    # The page's default figures were computed again without it, and it says who deleted it.
    page = client.get(response["Location"], follow=True)
    html = _html(page)
    assert "Run broken deleted" in html
    assert [r["name"] for r in page.context["report"]["runs"]] == ["keep", "bm25-baseline"]
    assert page.context["report"]["unreadable_runs"] == []
    assert "Deleted runs" in html and f"by {people[who].username}</li>" in html
    # Index health checks the remaining run only, and no longer flags the deleted one.
    health_page = client.get(health)
    assert set(health_page.context["runs_health"]["runs"]) == {"keep"}
    assert "broken" not in _html(health_page)
    # Deleting it again finds nothing; the other run stays.
    assert client.post(url, {"confirm": "yes"}).status_code == 404
    assert list(EvaluationRun.objects.values_list("name", flat=True)) == ["keep"]
    # The name is free again: the fixed run can be stored under it.
    _stored(gold_set, "broken", GOOD)


def test_labellers_outsiders_and_hidden_documents_cannot_delete_a_run(project, people, gold_set):
    run = _stored(gold_set, "mine", GOOD, user=people["lead"])
    url = reverse("evaluation:delete-run", args=[project.slug, gold_set.pk, run.pk])
    # A labeller of the project: 403, for the question and the deletion.
    labeller = login(people["ann"])
    assert labeller.get(url).status_code == 403
    assert labeller.post(url, {"confirm": "yes"}).status_code == 403
    # A lead the gold set's restricted document is hidden from: refused, count-free.
    olga = login(people["outsider_lead"])
    for response in (olga.get(url), olga.post(url, {"confirm": "yes"})):
        assert response.status_code == 403
        assert "hides from you" in _html(response) and "mine" not in _html(response)
    # Another project's admin, and an admin holding this run's id under their own project.
    other = ProjectFactory()
    stranger = UserFactory(username="stan")
    MembershipFactory(project=other, user=stranger, role="admin")
    stranger_client = login(stranger)
    assert stranger_client.post(url, {"confirm": "yes"}).status_code == 404
    other_gold = reverse("evaluation:delete-run", args=[other.slug, gold_set.pk, run.pk])
    assert stranger_client.post(other_gold, {"confirm": "yes"}).status_code == 404
    # Anonymous: to the login page.
    anonymous = Client().post(url, {"confirm": "yes"})
    assert anonymous.status_code == 302 and "/login" in anonymous["Location"]
    assert EvaluationRun.objects.filter(pk=run.pk).exists()
    assert not RunDeletion.objects.exists()
