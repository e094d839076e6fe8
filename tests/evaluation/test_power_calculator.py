"""What the gold set can detect, on the evaluation page, and its power calculator: figures
equal to ``python -m goldeval power``'s, bad input named, access checked for every role."""

import json

import pytest
from django.urls import reverse

from corpus.models import AccessGroup, Job
from evaluation.models import EvaluationReport
from evaluation.services import gold_sets
from goldeval.cli import main
from goldeval.scoring.power import minimum_detectable_difference, questions_needed
from tests.evaluation.test_evaluation_views import RUN, _figures, _html, _upload
from tests.factories import (
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    labelled_question_set,
    login,
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
def gold_set(project, people):
    """The evaluation page tests' gold set: three questions, one document restricted to a
    group the lead and the admin are in."""
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lead"], restricted=True
    )
    group = AccessGroup.objects.get(project=project, name="hr-confidential")
    group.members.add(people["lead"], people["admin"])
    return gold_sets.finalise_gold_set(question_set=question_set, user=people["admin"])


def _scored(client, project, gold_set):
    """The default choice (the uploaded run and the baseline) scored, and its stored figures."""
    _upload(client, project, gold_set, RUN, name="mine")
    page = _figures(client, project)
    assert page.status_code == 200
    return page, page.context["report"]


def _calculate(client, project, gold_set, **query):
    url = reverse("evaluation:calculate-power", args=[project.slug, gold_set.pk])
    data = {"gold_set": gold_set.pk, "shown": "1", **query}
    return client.get(url, data)


def _default_choice(page):
    """The query of the choice the page shows (runs and baseline), for the calculator."""
    return {
        "run": [str(pk) for pk in page.context["selected_ids"]],
        **({"baseline": "1"} if page.context["baseline"] else {}),
    }


def test_the_page_shows_what_the_gold_set_detects_as_the_cli_does(
    worker, project, people, gold_set, tmp_path, capsys
):
    client = login(people["lead"])
    page, report = _scored(client, project, gold_set)
    figures = {p["metric"]: p for p in report["power"]}
    assert set(figures) == {"recall@5", "ndcg@5", "precision@5", "mrr@10"}
    html = _html(page)
    assert "What this gold set can detect" in html and "Power calculator" in html
    assert 'data-metric="ndcg@5"' in html
    # The CLI on the exported bundle, with the same run (and its baseline), gives the same σ_d.
    bundle = tmp_path / "bundle"
    gold_sets.write_bundle(gold_set=gold_set, folder=bundle)
    (tmp_path / "mine.jsonl").write_text(RUN)
    code = main(
        ["power", "--gold", str(bundle), "--runs", str(tmp_path / "mine.jsonl")]
        + ["--measure", "ndcg@5", "--measure", "recall@5"]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    cli = json.loads(out.out)["measures"]
    for metric in ("ndcg@5", "recall@5"):
        assert figures[metric]["sigma_d"] == cli[metric]["sigma_d"]
        assert (
            figures[metric]["minimum_detectable_difference"]
            == cli[metric]["minimum_detectable_difference"]
        )
        assert figures[metric]["discriminative_power"] == cli[metric]["discriminative_power"]
    # Two answerable questions detect no realistic difference: the deltas say so.
    cells = [c for row in report["deltas"][0]["rows"] for c in row["cells"]]
    assert any(c["detectable"] is False for c in cells)
    assert "not detectable with this gold set" in html


def test_the_calculator_gives_the_reference_question_counts(worker, project, people, gold_set):
    client = login(people["lead"])
    page, _ = _scored(client, project, gold_set)
    choice = _default_choice(page)
    reports, jobs = EvaluationReport.objects.count(), Job.objects.count()
    for delta, needed in (("0.05", 34), ("0.03", 90), ("0.02", 199)):
        response = _calculate(
            client, project, gold_set, measure="ndcg@5", delta=delta, sigma="0.10", **choice
        )
        assert response.status_code == 200
        html = _html(response)
        assert f"needs <strong>{needed}</strong> questions" in html
        assert "σ_d 0.1000, as given" in html
    # A read: nothing stored, nothing queued.
    assert (EvaluationReport.objects.count(), Job.objects.count()) == (reports, jobs)


def test_the_calculator_starts_from_the_runs_sigma(worker, project, people, gold_set):
    client = login(people["lead"])
    page, report = _scored(client, project, gold_set)
    figure = next(p for p in report["power"] if p["metric"] == "mrr@10")
    response = _calculate(
        client, project, gold_set, measure="mrr@10", delta="0.05", **_default_choice(page)
    )
    assert response.status_code == 200
    answer = response.context["answer"]
    assert answer.sigma == figure["sigma_d"] and not answer.sigma_given
    assert answer.questions_needed == questions_needed(delta=0.05, sigma=figure["sigma_d"])
    assert answer.minimum_detectable == minimum_detectable_difference(
        questions=figure["questions"], sigma=figure["sigma_d"]
    )
    assert answer.detectable is False
    assert "from these runs" in _html(response)
    assert "not detectable with this gold set" in _html(response)


def test_an_htmx_request_gets_the_calculator_alone(worker, project, people, gold_set):
    client = login(people["lead"])
    page, _ = _scored(client, project, gold_set)
    url = reverse("evaluation:calculate-power", args=[project.slug, gold_set.pk])
    data = {"shown": "1", "measure": "ndcg@5", "delta": "0.05", "sigma": "0.1"}
    response = client.get(url, {**data, **_default_choice(page)}, HTTP_HX_REQUEST="true")
    html = _html(response)
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="power-calculator"')
    assert "<html" not in html and "needs <strong>34</strong> questions" in html


def test_bad_input_is_named_never_a_500(worker, project, people, gold_set):
    client = login(people["lead"])
    page, _ = _scored(client, project, gold_set)
    choice = _default_choice(page)
    cases = [
        ({"measure": "ndcg@5", "delta": "abc"}, "Difference to detect: Enter a number."),
        ({"measure": "ndcg@5", "delta": "0"}, "Difference to detect: Ensure this value"),
        ({"measure": "ndcg@5", "delta": "-0.1"}, "Difference to detect: Ensure this value"),
        ({"measure": "ndcg@5", "delta": "nan"}, "Difference to detect: Enter a number."),
        ({"measure": "ndcg@5", "delta": "inf"}, "Difference to detect: Enter a number."),
        ({"measure": "ndcg@5", "delta": "5"}, "Difference to detect: Ensure this value"),
        ({"measure": "ndcg@5"}, "Difference to detect: This field is required."),
        ({"measure": "ndcg@5", "delta": "0.05", "sigma": "-1"}, "σ_d (optional): Ensure"),
        ({"measure": "ndcg@5", "delta": "0.05", "sigma": "1e308"}, "σ_d (optional): Ensure"),
        ({"measure": "f1", "delta": "0.05"}, "Figure: Select a valid choice."),
        ({"delta": "0.05"}, "Figure: This field is required."),
    ]
    for query, message in cases:
        response = _calculate(client, project, gold_set, **query, **choice)
        assert response.status_code == 400, query
        assert message in _html(response), (query, _html(response)[-2000:])
        assert response.context["answer"] is None


def test_what_the_calculator_is_given_is_escaped(worker, project, people, gold_set):
    client = login(people["lead"])
    page, _ = _scored(client, project, gold_set)
    hostile = "<script>alert(1)</script>"
    response = _calculate(
        client, project, gold_set, measure=hostile, delta=hostile, **_default_choice(page)
    )
    html = _html(response)
    assert response.status_code == 400
    assert hostile not in html and "&lt;script&gt;" in html


def test_without_two_runs_the_lead_gives_sigma(worker, project, people, gold_set):
    client = login(people["lead"])
    _upload(client, project, gold_set, RUN, name="mine")
    run_id = str(gold_set.runs.get().pk)
    page = _figures(client, project, gold_set=gold_set.pk, shown="1", run=run_id)
    report = page.context["report"]
    assert report["power"] == []
    assert "needs two runs or more" in _html(page)
    response = _calculate(client, project, gold_set, measure="ndcg@5", delta="0.05", run=run_id)
    assert response.status_code == 400
    assert "σ_d (optional): These figures have no σ_d to start from" in _html(response)
    response = _calculate(
        client, project, gold_set, measure="ndcg@5", delta="0.05", sigma="0.1", run=run_id
    )
    assert response.status_code == 200
    assert "needs <strong>34</strong> questions" in _html(response)


def test_the_calculator_checks_role_project_and_document_access(project, people, gold_set):
    url = reverse("evaluation:calculate-power", args=[project.slug, gold_set.pk])
    query = {"measure": "ndcg@5", "delta": "0.05", "sigma": "0.1"}
    assert login(people["ann"]).get(url, query).status_code == 403  # a labeller
    other = UserFactory()
    MembershipFactory(project=ProjectFactory(), user=other, role="admin")
    assert login(other).get(url, query).status_code == 404  # another project's admin
    MembershipFactory(project=ProjectFactory(slug="elsewhere"), user=people["lead"], role="lead")
    elsewhere = reverse("evaluation:calculate-power", args=["elsewhere", gold_set.pk])
    assert login(people["lead"]).get(elsewhere, query).status_code == 404
    # A lead an access group hides one of the gold set's documents from: refused, no figure.
    AccessGroup.objects.get(project=project, name="hr-confidential").members.remove(people["lead"])
    response = login(people["lead"]).get(url, query)
    assert response.status_code == 403
    assert "access group hides from you" in _html(response)
    assert "needs <strong>" not in _html(response)
    # The admin, in the group, is answered (a calculation needs no stored figures with σ_d).
    admin = login(people["admin"])
    assert admin.get(url, query).status_code in (200, 400)
