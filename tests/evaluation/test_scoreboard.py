"""The evaluation page's read model without the page: the recall curve's geometry."""

from evaluation.scoreboard import PALETTE, Scoreboard, ScoredRun, recall_curve_svg, run_colours
from goldeval.formats.gold import Gold, GoldQuestion, GoldSpan, Passage
from goldeval.formats.runs import Ranking, Run
from goldeval.scoring.metrics import MetricOptions, evaluate_run


def test_the_recall_curve_spans_the_plot_and_marks_k_sent_to_the_model():
    spans = (GoldSpan("A", None, None, 2), GoldSpan("B", None, None, 1))
    gold = Gold(questions={"q": GoldQuestion("q", "?", True, spans)})
    options = MetricOptions(ks=(1, 2, 3, 4), mrr_cutoff=4)
    runs = []
    for name, ranked in (("first", ["A", "X", "B"]), ("second", ["X", "X2", "X3", "X4"])):
        run = Run(name=name, rankings={"q": Ranking(passages=[Passage(d) for d in ranked])})
        runs.append(
            ScoredRun(name, "upload", run, evaluate_run(gold=gold, run=run, options=options))
        )
    board = Scoreboard(
        gold_set=None, gold=gold, options=options, table_ks=(1, 3), k_sent_to_model=3, runs=runs
    )
    curve = recall_curve_svg(board)
    first, second = curve.lines
    assert (first.name, first.colour, second.colour) == ("first", PALETTE[0], PALETTE[1])
    # x runs from left (k = 1) to right (the last k); y from bottom (0) to top (1).
    assert first.points == "48.0,139.0 240.0,139.0 432.0,24.0 624.0,24.0"
    assert [(k, value) for _, _, k, value in first.dots] == [
        (1, "0.5000"),
        (2, "0.5000"),
        (3, "1.0000"),
        (4, "1.0000"),
    ]
    assert second.points == "48.0,254.0 240.0,254.0 432.0,254.0 624.0,254.0"
    assert curve.k_sent_x == 432.0
    assert [k for _, k in curve.x_ticks] == [1, 2, 3, 4]
    assert run_colours(board) == [(runs[0], PALETTE[0]), (runs[1], PALETTE[1])]
