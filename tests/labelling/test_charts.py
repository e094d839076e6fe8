"""labelling/charts.py, the plots' geometry, free of Django: time ticks a reader can use,
values kept inside the frame, bars scaled to the longest, nothing drawn for no value."""

from datetime import datetime, timedelta

from labelling.charts import MAX_POINTS, bar_chart, downsample, time_chart

T0 = datetime(2026, 3, 2, 9, 7)


def test_downsampling_keeps_the_ends_and_at_most_the_limit():
    points = [(T0 + timedelta(minutes=i), i / 999) for i in range(1000)]
    kept = downsample(points)
    assert len(kept) == MAX_POINTS
    assert kept[0] == points[0] and kept[-1] == points[-1]
    assert downsample(points[:5]) == points[:5]


def three(end: timedelta) -> list:
    """A line of three moments from T0 to T0 + ``end``: the fewest a chart is drawn for."""
    return [("s", [(T0, 0.0), (T0 + end / 2, 0.5), (T0 + end, 1.0)])]


def test_ticks_are_round_minutes_hours_or_days_and_label_the_day_once():
    minutes = time_chart(three(timedelta(minutes=50)), start=T0, end=T0 + timedelta(minutes=50))
    # Every ten minutes, the first labelled with its date; the axis ends with the data.
    labels = [label for _, label in minutes.x_ticks]
    assert labels == ["Mar 02 09:10", "09:20", "09:30", "09:40", "09:50"]
    days = time_chart(three(timedelta(days=9)), start=T0, end=T0 + timedelta(days=9))
    assert [label for _, label in days.x_ticks][:2] == ["Mar 03", "Mar 05"]
    across = time_chart(three(timedelta(hours=20)), start=T0, end=T0 + timedelta(hours=20))
    labels = [label for _, label in across.x_ticks]
    assert labels[0].startswith("Mar 02") and any(label.startswith("Mar 03") for label in labels)
    for chart in (minutes, days, across):
        xs = [x for x, _ in chart.x_ticks]
        assert xs == sorted(xs) and chart.left <= xs[0] and xs[-1] <= chart.right


def test_lines_run_from_start_to_their_last_point_inside_the_frame():
    chart = time_chart(
        [
            ("a", [(T0, 0.0), (T0 + timedelta(hours=2), 0.5), (T0 + timedelta(hours=4), 1.0)]),
            ("b", []),
        ],
        start=T0,
        end=T0 + timedelta(hours=4),
    )
    assert [line.name for line in chart.lines] == ["a"]  # nothing to draw for b
    line = chart.lines[0]
    assert line.points.split()[0] == f"{chart.left:.1f},{chart.bottom:.1f}"
    assert (line.last.x, line.last.y) == (chart.right, chart.top)
    assert line.last.title == "a: 100% at 2026-03-02 13:07"
    assert [label for _, label in chart.y_ticks] == ["0%", "25%", "50%", "75%", "100%"]


def test_bars_scale_to_the_longest_and_a_missing_value_draws_none():
    chart = bar_chart([("ana", 120.0, "120 per hour"), ("ben", 60.0, "60"), ("cem", None, "—")])
    ana, ben, cem = chart.bars
    assert ben.width * 2 == ana.width and cem.width == 0
    assert cem.text == "—" and ana.y < ben.y < cem.y
    long = bar_chart([("a very long labeller name", 1.0, "1")])
    assert long.bars[0].label == "a very long lab…"


def test_one_or_two_moments_are_written_not_drawn():
    """A chart of one or two moments (to the minute) would be a dot or a segment on an empty
    axis: its values come in a sentence instead, each line's with its times."""
    one = time_chart([("recall@5", [(T0, 0.41)])], start=T0, end=T0)
    assert one.lines == [] and one.x_ticks == []
    assert one.few == "recall@5 41% on 2026-03-02 09:07"
    later = T0 + timedelta(minutes=40)
    two = time_chart(
        [("recall@5", [(later, 0.46), (T0, 0.41)]), ("nDCG@10", [(T0, 0.3), (later, 0.35)])],
        start=T0,
        end=later,
        y_label=lambda value: f"{value:.2f}",
    )
    assert two.lines == []
    assert two.few == (
        "recall@5 0.41 on 2026-03-02 09:07, then 0.46 on 2026-03-02 09:47; "
        "nDCG@10 0.30 on 2026-03-02 09:07, then 0.35 on 2026-03-02 09:47"
    )
    # Seconds apart are one moment: many points in two minutes are written as the value each
    # minute ended with.
    burst = [(T0 + timedelta(seconds=s), s / 100) for s in range(0, 100, 10)]
    written = time_chart([("done", burst)], start=T0, end=burst[-1][0])
    assert written.lines == []
    assert written.few == "done 50% on 2026-03-02 09:07, then 90% on 2026-03-02 09:08"
    # Three moments draw, the axis from the first to the last (no empty hour after them).
    drawn = time_chart(three(timedelta(minutes=2)), start=T0, end=T0 + timedelta(minutes=2))
    assert drawn.few == "" and drawn.lines[0].last.x == drawn.right
