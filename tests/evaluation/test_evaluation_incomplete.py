"""The Evaluation page's measures for incomplete judgements (issue 34): the CLI's
``--incomplete`` figures, and the unjudged warning beside the run it concerns."""

from evaluation.models import EvaluationReport
from evaluation.scoreboard import format_figure
from evaluation.services import gold_sets
from goldeval.formats.gold import load_gold
from goldeval.formats.runs import load_run
from goldeval.scoring.incomplete import with_incomplete_measures
from goldeval.scoring.metrics import MetricOptions, evaluate_run
from tests.evaluation.test_evaluation_views import (  # noqa: F401
    RUN,
    _figures,
    _html,
    _upload,
    gold_set,
    people,
    question_set,
)
from tests.factories import login

# Passages nobody judged lead both answerable questions: leave [300, 340) and [400, 440) for q1
# (its judged candidates: leave [0, 180), vpn [0, 50)), vpn [200, 240) for q2 (judged: vpn
# [0, 60), [100, 150)). unjudged@10: q1 2/10, q2 1/10, mean 0.15, above the 10 % bar.
WANDERING = (
    '{"question_id": "q1", "results": [{"doc_id": "leave", "start": 300, "end": 340}, '
    '{"doc_id": "leave", "start": 400, "end": 440}, '
    '{"doc_id": "leave", "start": 0, "end": 100}]}\n'
    '{"question_id": "q2", "results": [{"doc_id": "vpn", "start": 200, "end": 240}, '
    '{"doc_id": "vpn", "start": 0, "end": 40}]}\n'
    '{"question_id": "q3", "results": [], "refused": true}\n'
)
NAME = "wandering"


def _incomplete_row(report, name: str) -> list[str]:
    return next(row["values"] for row in report["incomplete_rows"] if row["name"] == name)


def test_the_page_shows_the_measures_and_warns_beside_the_wandering_run(
    worker,
    project,
    people,  # noqa: F811
    gold_set,  # noqa: F811
    tmp_path,
):
    client = login(people["lead"])
    _upload(client, project, gold_set, RUN, name="judged")
    _upload(client, project, gold_set, WANDERING, name=NAME)
    page = _figures(client, project, baseline="")
    assert page.status_code == 200
    report = page.context["report"]
    runs = {r["name"]: r for r in report["runs"]}
    assert runs["judged"]["unjudged_warning"] is None
    assert runs[NAME]["unjudged_warning"].startswith(
        "15.0% of its top 10 passages were never judged"
    )
    html = _html(page)
    # Beside the run it concerns: in a note above the table and a badge on its column.
    assert "<strong>wandering</strong>: 15.0% of its top 10 passages" in html
    assert 'wandering <span class="badge warn"' in html and 'judged <span class="badge' not in html
    assert html.count('class="warn unjudged-warning"') == 1
    assert 'id="unjudged"' in html and "python -m goldeval evaluate --incomplete" in html

    column = [r["name"] for r in report["runs"]].index(NAME)
    assert _incomplete_row(report, "unjudged@10")[column] == "0.1500"
    # Plain MRR counts the unjudged passages as misses; condensed MRR takes them out.
    plain = next(row for row in report["metric_rows"] if row["name"] == "mrr@10")["values"]
    assert plain[column] == format_figure((1 / 3 + 1 / 2) / 2)
    assert _incomplete_row(report, "condensed_mrr@10")[column] == "1.0000"

    # The same figures as the CLI's --incomplete on the exported bundle.
    gold_sets.write_bundle(gold_set=gold_set, folder=tmp_path / "bundle")
    (tmp_path / "run.jsonl").write_text(WANDERING)
    gold = load_gold(tmp_path / "bundle")
    run = load_run(tmp_path / "run.jsonl")
    options = MetricOptions(ks=(1, 3, 5, 10))
    expected = with_incomplete_measures(
        evaluate_run(gold=gold, run=run, options=options), gold=gold, run=run, options=options
    )
    for row in report["incomplete_rows"]:
        assert row["values"][column] == format_figure(expected.metrics[row["name"]]), row["name"]
    assert EvaluationReport.objects.filter(gold_set=gold_set).exists()
