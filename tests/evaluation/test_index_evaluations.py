"""Every index build is scored on the newest gold set (a job); the retriever page plots it."""

import datetime
import io

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.urls import reverse

from corpus.models import Job, JobState
from corpus.services import documents, retrieval
from evaluation.models import BuildEvaluationStart, IndexEvaluation
from evaluation.services.gold_sets import finalise_gold_set
from evaluation.services.index_evaluations import start_build_evaluations
from evaluation.tasks import evaluate_index_builds
from tests.factories import labelled_question_set, login


def test_each_build_is_evaluated_and_tagged_with_what_changed(
    project, member, django_capture_on_commit_callbacks, inline_jobs
):
    people = {r: member(r, username=r) for r in ("ann", "bob", "lead", "admin")}
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    gold_set = finalise_gold_set(question_set=question_set, user=people["admin"])
    scheme = documents.add_chunking_scheme(
        project=project, name="w50", strategy="fixed", size=50, overlap=0
    )
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=bm25)
    assert not Job.objects.filter(kind="index_evaluation").exists()  # the corpus calls nobody
    with django_capture_on_commit_callbacks(execute=True):
        assert evaluate_index_builds.apply().get() == 1  # the beat task, as the worker runs it
    (first,) = IndexEvaluation.objects.all()
    job = Job.objects.get(kind="index_evaluation")
    assert BuildEvaluationStart.objects.get(retriever=bm25).job == job
    # The next beat finds nothing new: one job per build.
    assert evaluate_index_builds.apply().get() == 0
    assert Job.objects.filter(kind="index_evaluation").count() == 1
    assert job.state == JobState.SUCCEEDED and job.task == "evaluation.tasks.index_evaluation"
    assert first.gold_set == gold_set and first.change == "first build" and first.questions == 3
    k = project.k_sent_to_model
    assert set(first.metrics) == {f"recall@{k}", "ndcg@10"} and first.metrics[f"recall@{k}"] > 0

    documents.change_chunking_scheme(
        scheme=scheme, strategy="fixed", unit="words", size=20, overlap=5
    )
    documents.chunk_corpus(scheme=scheme)
    retrieval.build_index(retriever=bm25)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("evaluate_index_builds", "--project", project.slug, stdout=io.StringIO())
    second = IndexEvaluation.objects.latest("pk")
    assert second.change == "chunking" and second.scheme != first.scheme

    # Built an hour apart, as a team would (here they ran within the same minute).
    earlier = first.built_at - datetime.timedelta(hours=1)
    IndexEvaluation.objects.filter(pk=first.pk).update(built_at=earlier)
    first.refresh_from_db()
    page = login(people["lead"]).get(
        reverse("health:show-retriever-builds", args=[project.slug, bm25.pk])
    )
    html = page.content.decode()
    # Two builds are too few to draw over time: their figures are written, each with its time.
    assert page.status_code == 200 and html.count("<polyline") == 0
    assert f"Not enough builds yet to draw over time: recall@{k} " in html
    assert f"{first.built_at:%Y-%m-%d %H:%M}, then " in html
    assert html.count("<td>chunking</td>") == 1 and html.count("<td>first build</td>") == 1
    retriever_page = login(people["lead"]).get(
        reverse("corpus:show-retriever", args=[project.slug, bm25.pk])
    )
    assert (
        reverse("health:show-retriever-builds", args=[project.slug, bm25.pk])
        in retriever_page.content.decode()
    )


def test_a_second_start_of_one_build_is_refused_by_the_database(project, member):
    people = {r: member(r, username=r) for r in ("ann", "bob", "lead", "admin")}
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    gold_set = finalise_gold_set(question_set=question_set, user=people["admin"])
    scheme = documents.add_chunking_scheme(project=project, name="doc", strategy="document")
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    index = retrieval.build_index(retriever=bm25)
    # Another beat started this build a moment ago (its row is there): nothing more is started.
    build = {"retriever": bm25, "built_at": index.built_at, "gold_set": gold_set}
    BuildEvaluationStart.objects.create(**build)
    assert start_build_evaluations(project=project) == []
    with pytest.raises(IntegrityError), transaction.atomic():
        BuildEvaluationStart.objects.create(**build)
    assert not Job.objects.filter(kind="index_evaluation").exists()


def test_without_a_gold_set_a_build_queues_nothing(project, django_capture_on_commit_callbacks):
    from tests.factories import add_documents

    add_documents(project, ("a", "Some words about leave and holidays in the summer."))
    scheme = documents.add_chunking_scheme(project=project, name="doc", strategy="document")
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=bm25)
    with django_capture_on_commit_callbacks(execute=True):
        assert evaluate_index_builds.apply().get() == 0
    assert not Job.objects.filter(kind="index_evaluation").exists()


def test_an_uploaded_run_tagged_with_what_changed_joins_its_systems_plot(
    project, member, django_capture_on_commit_callbacks, inline_jobs
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    people = {r: member(r, username=r) for r in ("ann", "bob", "lead", "admin")}
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    gold_set = finalise_gold_set(question_set=question_set, user=people["admin"])
    team = retrieval.add_retriever(project=project, name="team", kind="run")
    lead = login(people["lead"])
    url = reverse("evaluation:upload-run", args=[project.slug, gold_set.pk])
    run = b'{"question_id": "q2", "results": [{"doc_id": "vpn", "start": 0, "end": 40}]}\n'
    refused = lead.post(url, {"file": SimpleUploadedFile("r.jsonl", run), "change": "filters"})
    assert refused.status_code == 302 and not Job.objects.filter(kind="evaluation_upload").exists()
    with django_capture_on_commit_callbacks(execute=True):
        lead.post(
            url,
            {
                "file": SimpleUploadedFile("r.jsonl", run),
                "name": "after-filters",
                "retriever": team.pk,
                "change": "filters",
            },
        )
    (row,) = IndexEvaluation.objects.filter(retriever=team)
    assert row.change == "filters" and row.run.name == "after-filters"
    # q2 reaches one of its two spans, q1 is missing: (0.5 + 0) / 2 answerable questions.
    assert row.metrics[f"recall@{project.k_sent_to_model}"] == 0.25
    html = lead.get(reverse("health:show-retriever-builds", args=[project.slug, team.pk]))
    assert "<td>filters</td>" in html.content.decode()


# Figures per gold set (issue 33 item 7) -----------------------------------------------------


def _people(member):
    roles = {"ann": "labeller", "bob": "labeller", "lead": "lead", "admin": "admin"}
    return {name: member(role, username=name) for name, role in roles.items()}


def _builds_page(client, project, retriever, gold_set=None):
    url = reverse("health:show-retriever-builds", args=[project.slug, retriever.pk])
    return client.get(url, {"gold_set": gold_set.pk} if gold_set is not None else {})


def test_each_gold_set_keeps_its_own_history_and_the_page_chooses_it(
    project, member, django_capture_on_commit_callbacks, inline_jobs
):
    people = _people(member)
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"]
    )
    first_gold = finalise_gold_set(question_set=question_set, user=people["admin"])
    scheme = documents.add_chunking_scheme(project=project, name="doc", strategy="document")
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    first_build = retrieval.build_index(retriever=bm25).built_at
    with django_capture_on_commit_callbacks(execute=True):
        assert start_build_evaluations(project=project) != []
    # A new gold set: the current build is scored on it too, and the first keeps its figures.
    second_gold = finalise_gold_set(question_set=question_set, user=people["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        assert len(start_build_evaluations(project=project)) == 1
        assert start_build_evaluations(project=project) == []  # once per (build, gold set)
    second_build = retrieval.build_index(retriever=bm25).built_at
    with django_capture_on_commit_callbacks(execute=True):
        start_build_evaluations(project=project)
    scored = set(IndexEvaluation.objects.values_list("built_at", "gold_set"))
    assert scored == {
        (first_build, first_gold.pk),
        (first_build, second_gold.pk),
        (second_build, second_gold.pk),
    }
    assert IndexEvaluation.objects.get(built_at=first_build, gold_set=second_gold).change == (
        "first build"
    )

    client = login(people["lead"])
    newest = _builds_page(client, project, bm25).content.decode()  # the newest by default
    assert f'<option value="{second_gold.pk}" selected>{second_gold} (newest)</option>' in newest
    assert "Not enough builds yet to draw over time" in newest and "<polyline" not in newest
    assert "Builds without figures" not in newest
    older = _builds_page(client, project, bm25, first_gold).content.decode()
    assert f'<option value="{first_gold.pk}" selected>{first_gold}</option>' in older
    assert "Not enough builds yet to draw over time" in older and "<polyline" not in older
    assert f"the current build, not scored on {first_gold} yet." in older
    assert f"Score the current build on {first_gold}" in older

    score = reverse("health:score-current-build", args=[project.slug, bm25.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(score, {"gold_set": first_gold.pk})
    assert response.status_code == 302
    assert IndexEvaluation.objects.filter(built_at=second_build, gold_set=first_gold).exists()
    older = _builds_page(client, project, bm25, first_gold).content.decode()
    assert "Not enough builds yet to draw over time" in older
    assert "Builds without figures" not in older
    # A second click starts nothing more.
    response = client.post(score, {"gold_set": first_gold.pk}, follow=True)
    assert "has figures on" in response.content.decode()
    assert IndexEvaluation.objects.filter(gold_set=first_gold).count() == 2


def test_the_chooser_is_for_leads_of_the_project_and_respects_access_groups(
    project, member, django_capture_on_commit_callbacks, inline_jobs
):
    from corpus.models import AccessGroup
    from tests.factories import MembershipFactory, ProjectFactory, UserFactory

    people = _people(member)
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], restricted=True
    )
    AccessGroup.objects.get(name="hr-confidential").members.add(people["admin"])
    gold_set = finalise_gold_set(question_set=question_set, user=people["admin"])
    scheme = documents.add_chunking_scheme(project=project, name="doc", strategy="document")
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=bm25)
    with django_capture_on_commit_callbacks(execute=True):
        start_build_evaluations(project=project)
    score = reverse("health:score-current-build", args=[project.slug, bm25.pk])
    # The lead is outside hr-confidential, which the gold set names: no figures, no scoring.
    lead = login(people["lead"])
    page = _builds_page(lead, project, bm25, gold_set).content.decode()
    assert "access group hides from you" in page and "recall@" not in page
    response = lead.post(score, {"gold_set": gold_set.pk}, follow=True)
    assert "access group hides from you" in response.content.decode()
    assert IndexEvaluation.objects.count() == 1
    admin = login(people["admin"])
    assert "Not enough builds yet to draw over time" in (
        _builds_page(admin, project, bm25, gold_set).content.decode()
    )
    # Labellers get 403; a gold set of another project, or a bad id, is 404.
    labeller = login(people["ann"])
    assert _builds_page(labeller, project, bm25, gold_set).status_code == 403
    assert labeller.post(score, {"gold_set": gold_set.pk}).status_code == 403
    other = ProjectFactory()
    stranger = UserFactory()
    MembershipFactory(project=other, user=stranger, role="admin")
    url = reverse("health:show-retriever-builds", args=[project.slug, bm25.pk])
    for value in ("999999", "abc", "-1"):
        assert admin.get(url, {"gold_set": value}).status_code == 404
        assert admin.post(score, {"gold_set": value}).status_code == 404
    assert login(stranger).get(url, {"gold_set": gold_set.pk}).status_code == 404
