"""Gold set pages, downloads and the evaluation page: who may see what, and the figures shown."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from corpus.models import AccessGroup, Job
from evaluation.models import EvaluationRun, GoldSet
from evaluation.scoreboard import format_figure
from evaluation.services import gold_sets
from goldeval.formats.gold import load_gold
from goldeval.formats.runs import load_run
from goldeval.scoring.metrics import MetricOptions, evaluate_run
from tests.conftest import wait_for_job
from tests.factories import (
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    labelled_question_set,
    login,
)

# q1's gold span (leave [0, 120), grade 2) is reached at rank 2; q2's spans (vpn [0, 40) grade 2
# and [100, 150) grade 1) at ranks 2 and 1; q3 is unanswerable and refused.
RUN = (
    '{"question_id": "q1", "results": [{"doc_id": "vpn", "start": 0, "end": 50}, '
    '{"doc_id": "leave", "start": 0, "end": 100}]}\n'
    '{"question_id": "q2", "results": [{"doc_id": "vpn", "start": 100, "end": 150}, '
    '{"doc_id": "vpn", "start": 0, "end": 40}]}\n'
    '{"question_id": "q3", "results": [], "refused": true}\n'
)


@pytest.fixture
def people(member):
    return {
        "ann": member("labeller", username="ann"),
        "bob": member("labeller", username="bob"),
        "lead": member("lead", username="lea"),
        "admin": member("admin", username="ada"),
    }


@pytest.fixture
def question_set(project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], restricted=True
    )
    group = AccessGroup.objects.get(project=project, name="hr-confidential")
    group.members.add(people["lead"], people["admin"])
    return question_set


@pytest.fixture
def gold_set(question_set, people):
    return gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])


def _html(response) -> str:
    return response.content.decode()


def test_only_leads_and_admins_see_gold_sets_and_strangers_see_nothing(project, people, gold_set):
    slug = project.slug
    urls = [
        reverse("evaluation:list-gold-sets", args=[slug]),
        reverse("evaluation:show-gold-set", args=[slug, gold_set.pk]),
        reverse("evaluation:download-gold-set", args=[slug, gold_set.pk]),
        reverse("evaluation:show-evaluation", args=[slug]),
    ]
    labeller = login(people["ann"])
    for url in urls:
        assert labeller.get(url).status_code == 403, url
    # A member of another project gets 404: the project, and so the gold set, does not exist.
    other = UserFactory()
    MembershipFactory(project=ProjectFactory(), user=other, role="admin")
    stranger = login(other)
    for url in urls:
        assert stranger.get(url).status_code == 404, url
    # A gold set id from another project is a 404 too.
    MembershipFactory(project=ProjectFactory(slug="elsewhere"), user=people["lead"], role="lead")
    lead = login(people["lead"])
    url = reverse("evaluation:show-gold-set", args=["elsewhere", gold_set.pk])
    assert lead.get(url).status_code == 404
    for url in urls:
        assert lead.get(url).status_code == 200, url


def test_only_admins_finalise(worker, project, people, question_set):
    url = reverse("evaluation:finalise-gold-set", args=[project.slug, question_set.pk])
    assert login(people["lead"]).post(url).status_code == 403
    assert not GoldSet.objects.exists() and not Job.objects.exists()
    admin = login(people["admin"])
    listing = _html(admin.get(reverse("evaluation:list-gold-sets", args=[project.slug])))
    assert "Finalise hr as a new gold set" in listing
    # Finalising is a job: the request only queues it, and the job page follows it.
    response = admin.post(url, {"min_span_f1": "0.5"})
    job = Job.objects.get(kind="finalise_gold_set")
    assert response.status_code == 302
    job = wait_for_job(job)
    assert job.state == "succeeded", job.message
    gold_set = GoldSet.objects.get()
    gold_url = reverse("evaluation:show-gold-set", args=[project.slug, gold_set.pk])
    # To the job page, which follows the worker; straight to the gold set if it is done already.
    assert response["Location"] in (
        reverse("corpus:show-job", args=[project.slug, job.pk]),
        gold_url,
    )
    assert job.created_by == people["admin"] and gold_set.created_by == people["admin"]
    assert (job.done, job.total) == (5, 5)  # four stages, then the evaluation page's figures
    job_url = reverse("corpus:show-job", args=[project.slug, job.pk])
    poll = admin.get(job_url, headers={"HX-Request": "true"})
    assert poll["HX-Redirect"] == gold_url  # the polling page goes on to the gold set
    assert "hr v1 is finalised" in _html(admin.get(job_url))
    page = _html(admin.get(gold_url))
    assert "Gold set hr v1" in page and gold_set.checksum in page
    assert "gold.jsonl" in page and "qrels.trec" in page
    wait_for_job(Job.objects.get(pk=_finalise(admin, url)))
    assert list(GoldSet.objects.order_by("number").values_list("number", flat=True)) == [1, 2]
    listing = _html(admin.get(reverse("evaluation:list-gold-sets", args=[project.slug])))
    assert ">v1<" in listing and ">v2<" in listing


def _finalise(client, url) -> int:
    response = client.post(url)
    assert response.status_code == 302
    return Job.objects.filter(kind="finalise_gold_set").latest("pk").pk


def test_a_blocked_finalise_lists_what_is_unresolved(worker, project, people):
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], resolve=False
    )
    url = reverse("evaluation:finalise-gold-set", args=[project.slug, question_set.pk])
    admin = login(people["admin"])
    job = wait_for_job(Job.objects.get(pk=_finalise(admin, url)))
    assert job.state == "failed"
    page = _html(admin.get(reverse("corpus:show-job", args=[project.slug, job.pk])))
    assert "Cannot finalise: items are still unresolved. Each one is listed below." in page
    assert "q1 (pool p) — vpn [0–50): grades differ (0 vs 1)" in page
    adjudication = reverse("labelling:list-adjudication", args=[project.slug, question_set.pk])
    assert adjudication in page
    assert not GoldSet.objects.exists()
    poll = admin.get(
        reverse("corpus:show-job", args=[project.slug, job.pk]), headers={"HX-Request": "true"}
    )
    assert "HX-Redirect" not in poll


def test_a_restricted_document_in_the_bundle_refuses_the_download(project, people, gold_set):
    outsider = people["lead"]
    AccessGroup.objects.get(name="hr-confidential").members.remove(outsider)
    client = login(outsider)
    response = client.get(reverse("evaluation:download-gold-set", args=[project.slug, gold_set.pk]))
    assert response.status_code == 403
    assert "Content-Disposition" not in response
    page = _html(response)
    assert "names documents that an access group hides from you" in page
    show = _html(client.get(reverse("evaluation:show-gold-set", args=[project.slug, gold_set.pk])))
    assert "access group hides from you" in show and "Download the bundle" not in show
    evaluation = client.get(reverse("evaluation:show-evaluation", args=[project.slug]))
    assert evaluation.status_code == 403 and "access group hides from you" in _html(evaluation)
    assert "Band C" not in _html(evaluation)
    upload = client.post(
        reverse("evaluation:upload-run", args=[project.slug, gold_set.pk]),
        {"file": SimpleUploadedFile("run.jsonl", RUN.encode())},
    )
    assert upload.status_code == 302 and not EvaluationRun.objects.exists()
    # The admin, a member of the group, downloads it.
    admin = login(people["admin"])
    url = reverse("evaluation:download-gold-set", args=[project.slug, gold_set.pk])
    assert admin.get(url).status_code == 200


def _upload(client, project, gold_set, content: str, name: str = "", file_name="run.jsonl"):
    """Upload a run as the page does, and follow what the browser follows: the job page of the
    check (until it is done) or, when refused at once, the evaluation page and its message."""
    response = client.post(
        reverse("evaluation:upload-run", args=[project.slug, gold_set.pk]),
        {"name": name, "file": SimpleUploadedFile(file_name, content.encode())},
    )
    assert response.status_code == 302
    job = Job.objects.filter(kind="evaluation_upload").order_by("pk").last()
    if job is not None and "/jobs/" in response["Location"]:
        wait_for_job(job)
    return client.get(response["Location"], follow=True)


def _figures(client, project, **query):
    """The evaluation page, once the job computing its figures (if any) is done."""
    url = reverse("evaluation:show-evaluation", args=[project.slug])
    page = client.get(url, query)
    if page.context.get("job") is not None:
        wait_for_job(page.context["job"])
        page = client.get(url, query)
    if page.context.get("report") is None and "Compute the figures" in _html(page):
        gold_set = page.context["gold_set"]
        data = {"shown": "1", **{k: v for k, v in query.items() if k != "gold_set"}}
        response = client.post(
            reverse("evaluation:score-runs", args=[project.slug, gold_set.pk]), data
        )
        assert response.status_code == 302
        wait_for_job(Job.objects.filter(kind="evaluation_report").latest("pk"))
        page = client.get(response["Location"])
    return page


def test_an_uploaded_run_skips_questions_the_gold_set_does_not_know(
    worker, project, people, gold_set
):
    client = login(people["lead"])
    extra = '{"question_id": "q99", "results": [{"doc_id": "vpn"}]}\n'
    response = _upload(client, project, gold_set, RUN + extra, name="beir-style")
    assert "Run beir-style stored: 3 questions." in _html(response)
    assert EvaluationRun.objects.get().questions == 3


def test_an_uploaded_run_naming_unknown_documents_is_stored_with_a_warning(
    worker, project, people, gold_set
):
    client = login(people["lead"])
    extra = RUN.replace('"q1", "results": [', '"q1", "results": [{"doc_id": "ghost"}, ', 1)
    html = _html(_upload(client, project, gold_set, extra, name="mixed"))
    assert "Run mixed stored: 3 questions." in html
    assert (
        "run.jsonl: 1 unknown document id of 3 named, kept in the ranking as not relevant "
        "(&#x27;ghost&#x27;)" in html
    )
    assert EvaluationRun.objects.get().name == "mixed"


def test_an_uploaded_run_naming_no_known_document_is_refused(worker, project, people, gold_set):
    client = login(people["lead"])
    only_unknown = '{"question_id": "q1", "results": [{"doc_id": "ghost"}, {"doc_id": "<b>x"}]}\n'
    html = _html(_upload(client, project, gold_set, only_unknown, name="other"))
    assert "Nothing was stored." in html
    assert (
        "the run names no document the corpus has: 2 unknown document ids (&#x27;ghost&#x27;, "
        "&#x27;&lt;b&gt;x&#x27;)" in html
    )
    assert "<b>x" not in html
    assert not EvaluationRun.objects.exists()


def _row(page, name: str) -> list[str]:
    return next(
        row["values"] for row in page.context["report"]["metric_rows"] if row["name"] == name
    )


def test_the_evaluation_page_shows_the_cli_figures(worker, project, people, gold_set, tmp_path):
    client = login(people["lead"])
    response = _upload(client, project, gold_set, RUN, name="mine")
    assert "Run mine stored: 3 questions." in _html(response)
    run = EvaluationRun.objects.get()
    assert (run.name, run.source, run.questions, bytes(run.content)) == (
        "mine",
        "upload",
        3,
        RUN.encode(),
    )
    page = _figures(client, project)
    assert page.status_code == 200
    report = page.context["report"]
    assert [r["name"] for r in report["runs"]] == ["mine", "bm25-baseline"]
    # The convention and each run's order are named, as the CLI's reports name them.
    assert "Convention: goldset: means over the gold set&#x27;s answerable questions" in _html(page)
    assert (
        "Order: mine, JSONL run: list order; bm25-baseline, ranked by its retriever&#x27;s scores."
        in _html(page)
    )
    assert (_row(page, "recall@1")[0], _row(page, "recall@3")[0]) == ("0.2500", "1.0000")
    assert _row(page, "mrr@10")[0] == "0.7500"
    assert _row(page, "refusal accuracy (unanswerable)")[0] == "1.0000"
    # The same numbers as the evaluation module on the exported bundle, with the CLI's options.
    gold_sets.write_bundle(gold_set=gold_set, folder=tmp_path / "bundle")
    (tmp_path / "run.jsonl").write_text(RUN)
    gold = load_gold(tmp_path / "bundle")
    expected = evaluate_run(
        gold=gold, run=load_run(tmp_path / "run.jsonl"), options=MetricOptions()
    )
    shown = {row["name"]: row["values"][0] for row in report["metric_rows"]}
    for name, value in expected.metrics.items():
        if name in shown:
            assert shown[name] == format_figure(value), name
    html = _html(page)
    assert f"<mark>{shown['recall@5']}</mark>" in html
    assert re.search(r'<tr class="k-sent">\s*<th scope="row">recall@5 ', html)
    assert "0.7138" in html  # nDCG@3 by hand: (0.6309 + 0.7967) / 2
    assert "<polyline" in html and "k sent = 5" in html
    # Drill-down: which gold spans each run reached, and where.
    q1 = next(q for q in report["per_question"] if q["question_id"] == "q1")
    assert [(s["doc_id"], s["cells"][0]) for s in q1["spans"]] == [("leave", [2, False])]
    q3 = next(q for q in report["per_question"] if q["question_id"] == "q3")
    assert not q3["relevant"] and q3["spans"] == []
    # CSP: no inline style attribute, no inline script.
    assert " style=" not in html
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)


def test_opening_the_evaluation_page_scores_nothing(worker, project, people, gold_set, monkeypatch):
    """The page renders stored figures; scoring is a job's work, never a request's."""
    client = login(people["lead"])
    _upload(client, project, gold_set, RUN, name="mine")
    from evaluation import scoreboard
    from evaluation.services import evaluation_runs

    def no_scoring_here(*args, **kwargs):
        raise AssertionError("a request scored runs")

    for module, name in (
        (scoreboard, "evaluate_gold_set"),
        (gold_sets, "load_gold_set"),
        (evaluation_runs, "load_gold_set"),
    ):
        monkeypatch.setattr(module, name, no_scoring_here)
    url = reverse("evaluation:show-evaluation", args=[project.slug])
    page = client.get(url)
    assert page.status_code == 200 and page.context["report"] is not None
    assert "mine" in _html(page) and "<polyline" in _html(page)
    # Another choice has no figures yet: the page offers to compute them, and does not.
    other = client.get(url, {"shown": "1", "gold_set": gold_set.pk})
    assert other.context["report"] is None and "Compute the figures" in _html(other)


def test_the_drill_down_shows_missed_spans(worker, project, people, gold_set):
    client = login(people["lead"])
    late = (
        '{"question_id": "q1", "results": ['
        + ", ".join(f'{{"doc_id": "vpn", "start": {i}, "end": {i + 5}}}' for i in range(6))
        + ', {"doc_id": "leave", "start": 100, "end": 110}]}\n'
    )
    _upload(client, project, gold_set, late, name="late")
    page = _figures(
        client, project, shown="1", gold_set=gold_set.pk, run=EvaluationRun.objects.get().pk
    )
    report = page.context["report"]
    assert [r["name"] for r in report["runs"]] == ["late"]  # baseline unticked
    q1 = next(q for q in report["per_question"] if q["question_id"] == "q1")
    assert q1["spans"][0]["cells"] == [[7, True]]  # reached at rank 7, after k = 5: missed
    assert q1["cells"][0] == ["0.0000", "0.0000", 1, False]
    q2 = next(q for q in report["per_question"] if q["question_id"] == "q2")
    assert q2["cells"][0][2:] == [2, True]  # missing from the run: both spans missed
    html = _html(page)
    assert 'missed</span> <span class="muted">(rank 7)</span>' in html
    assert _row(page, "missing from run") == ["2"]


@pytest.mark.parametrize(
    ("content", "file_name", "message"),
    [
        (
            '{"question_id": "q1", "results": []}\n{"question_id": "q2", "results": [\n',
            "run.jsonl",
            "run.jsonl: line 2: not valid JSON",
        ),
        (
            '{"question_id": "q7", "results": []}\n',
            "run.jsonl",
            "run.jsonl holds no question of this gold set (not in it: &#x27;q7&#x27;)",
        ),
        (
            '{"question_id": "q1", "results": [{"doc_id": "vpn", "start": 0, "end": 99999}]}\n',
            "run.jsonl",
            "line 1: passage of &#x27;vpn&#x27; ends at 99999, past the document",
        ),
        (
            "q1 Q0 leave 1 3.2 sys\nq2 Q0 vpn 1 high sys\n",
            "run.trec",
            "run.trec: line 2: score &#x27;high&#x27; is not a number",
        ),
        ("", "empty.jsonl", "The submitted file is empty"),
        ("\n\n", "blank.jsonl", "blank.jsonl holds no results"),
        # Values no reader can hold (issue 32): each is its line's error, nothing stored.
        (
            '{"question_id": "q1", "results": [{"doc_id": "vpn", "score": NaN}]}\n',
            "run.jsonl",
            "run.jsonl: line 1: result 1 (vpn) has a score of nan: give a finite number",
        ),
        (
            '{"question_id": "q1", "results": [{"doc_id": "vpn", "score": 1e39}]}\n',
            "run.jsonl",
            "line 1: result 1 (vpn) has a score larger than 3.4e+38 in size",
        ),
        ("q1 Q0 leave 1 3.2 sys\nq2 Q0 vpn 1 -inf sys\n", "run.trec", "line 2: score"),
        ("q1 Q0 leave 1 3.2 sys\nq2 Q0 vpn 1 1e39 sys\n", "run.trec", "larger than 3.4e+38"),
        (
            '{"question_id": "q1", "results": [{"doc_id": "vpn\\u0000"}]}\n',
            "run.jsonl",
            "line 1: result 1 has a doc_id that contains a NUL character",
        ),
    ],
)
def test_a_bad_run_file_is_refused_with_its_line_and_nothing_is_stored(
    worker, project, people, gold_set, content, file_name, message
):
    response = _upload(login(people["lead"]), project, gold_set, content, file_name=file_name)
    html = _html(response)
    assert "Nothing was stored." in html and message in html, html[:3000]
    assert not EvaluationRun.objects.exists()


def test_run_names_must_be_free(worker, project, people, gold_set):
    client = login(people["lead"])
    _upload(client, project, gold_set, RUN, name="mine")
    assert "already has a run named" in _html(_upload(client, project, gold_set, RUN, name="mine"))
    assert "belongs to the built-in keyword baseline" in _html(
        _upload(client, project, gold_set, RUN, name="bm25-baseline")
    )
    assert "A run name is up to 100 letters" in _html(
        _upload(client, project, gold_set, RUN, name='my "run"')
    )
    assert EvaluationRun.objects.count() == 1
    run = EvaluationRun.objects.get()
    url = reverse("evaluation:download-run", args=[project.slug, gold_set.pk, run.pk])
    response = client.get(url)
    assert response["Content-Disposition"] == 'attachment; filename="mine.run"'
    assert response.content == RUN.encode()
    AccessGroup.objects.get(name="hr-confidential").members.remove(people["lead"])
    assert client.get(url).status_code == 403


def test_k_sent_to_model_is_set_by_admins_and_highlighted(worker, project, people, gold_set):
    url = reverse("evaluation:edit-k-sent-to-model", args=[project.slug])
    assert login(people["lead"]).post(url, {"k_sent_to_model": "8"}).status_code == 403
    admin = login(people["admin"])
    response = admin.post(url, {"k_sent_to_model": "0", "gold_set": gold_set.pk}, follow=True)
    assert "k sent to the model is a whole number from 1 to 100" in _html(response)
    project.refresh_from_db()
    assert project.k_sent_to_model == 5
    response = admin.post(url, {"k_sent_to_model": "8", "gold_set": gold_set.pk})
    project.refresh_from_db()
    assert project.k_sent_to_model == 8
    # Saving k queued the figures that highlight it; the page follows that job.
    assert Job.objects.filter(kind="evaluation_report", params__k=8).exists()
    page = _figures(admin, project, gold_set=gold_set.pk)
    highlighted = [
        row["name"] for row in page.context["report"]["metric_rows"] if row["highlighted"]
    ]
    assert highlighted == ["recall@8", "precision@8", "ndcg@8", "judged@8"]
    assert "k sent = 8" in _html(page)
    assert response.status_code == 302
