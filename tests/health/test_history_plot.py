"""Issue 33, item 14: Index health's history plot writes one or two daily checks in a sentence,
and a check without a stale document has no lag (a "–" in the table, no "0.0 d" in the plot)."""

import datetime

from health.models import IndexHealthCheck
from health.services.checks import plot_of

T0 = datetime.datetime(2026, 12, 1, 6, 0, tzinfo=datetime.UTC)


def checks(*values):
    return [
        IndexHealthCheck(
            checked_at=T0 + datetime.timedelta(days=day), stale_share=share, lag_oldest_days=lag
        )
        for day, (share, lag) in enumerate(values)
    ]


def test_one_or_two_checks_are_written_with_their_lags_only_where_there_is_one():
    one = plot_of(checks((0.5, None)))
    assert one["few"] == "stale share 50% on 2026-12-01 06:00"
    two = plot_of(checks((0.0, None), (0.25, 3.0)))
    assert two["few"] == (
        "stale share 0% on 2026-12-01 06:00, then 25% on 2026-12-02 06:00; "
        "oldest lag 3.0 d on 2026-12-02 06:00"
    )


def test_three_checks_are_drawn_and_a_check_without_lag_draws_no_lag_point():
    plot = plot_of(checks((0.0, None), (0.1, 2.0), (0.2, 4.0)))
    stale, lag = plot["charts"]
    assert plot["few"] == "" and stale.few == "" and len(stale.lines[0].points.split()) == 3
    assert (
        len(lag.lines) == 0
        and lag.few == "oldest lag 2.0 d on 2026-12-02 06:00, then 4.0 d on 2026-12-03 06:00"
    )
    assert len(plot_of(checks((0.0, None), (0.1, None), (0.2, None)))["charts"]) == 1
