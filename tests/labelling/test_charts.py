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


def test_ticks_are_round_minutes_hours_or_days_and_label_the_day_once():
    minutes = time_chart([("s", [(T0, 0.0)])], start=T0, end=T0 + timedelta(minutes=50))
    # At least an hour across: every ten minutes, the first labelled with its date.
    labels = [label for _, label in minutes.x_ticks]
    assert labels[0] == "Mar 02 09:10" and labels[1:3] == ["09:20", "09:30"]
    days = time_chart([("s", [(T0, 0.0)])], start=T0, end=T0 + timedelta(days=9))
    assert [label for _, label in days.x_ticks][:2] == ["Mar 03", "Mar 05"]
    across = time_chart([("s", [(T0, 0.0)])], start=T0, end=T0 + timedelta(hours=20))
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
