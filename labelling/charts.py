"""Geometry of the lead's plots, free of Django: a line chart over time (labelling progress) and
a horizontal bar chart (each labeller's speed).

A line over time needs three moments at least: with one or two, a chart is a dot or a segment
lost on an axis, so `time_chart` gives the values in a sentence instead (`TimeChart.few`), which
every template that plots over time writes in the chart's place.

Templates draw them as inline SVG with presentation attributes only, so the strict CSP (no
inline styles, no scripts) holds and nothing is fetched from elsewhere. Every value the plot
shows is also in a `<title>` (a tooltip, and what a screen reader reads) and in a table nearby.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

PALETTE = ["#1f4e9c", "#b54708", "#067647", "#8a6d1e", "#7a2e98", "#c01048", "#0e7090", "#667085"]
# Most points a line keeps: a set of thousands of assignments still draws as a small SVG.
MAX_POINTS = 240
# Fewest moments (to the minute) a chart over time is drawn for; fewer are written out.
MIN_MOMENTS = 3

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
TICK_STEPS = [
    *(n * MINUTE for n in (1, 2, 5, 10, 15, 30)),
    *(n * HOUR for n in (1, 2, 3, 6, 12)),
    *(n * DAY for n in (1, 2, 7, 14)),
]


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Line:
    name: str
    colour: str
    points: str  # the polyline's "x,y x,y …"
    last: Dot  # where the line ends, with its value


@dataclass(frozen=True)
class TimeChart:
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    lines: list[Line]
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]
    # With fewer than MIN_MOMENTS moments: each line's values and times, written instead of
    # drawn ("recall@10 41% on 2026-12-06 10:02, then 46% on 2026-12-06 10:40").
    few: str = ""

    @property
    def x_label_y(self) -> int:
        return self.bottom + 16


def downsample(points: Sequence[tuple[datetime, float]], limit: int = MAX_POINTS) -> list:
    """At most ``limit`` points, evenly chosen, always keeping the first and the last."""
    if len(points) <= limit:
        return list(points)
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def _tick_step(span: timedelta) -> timedelta:
    for step in TICK_STEPS:
        if span / step <= 7:
            return step
    return timedelta(days=max(28, round(span / DAY / 7)))


def _first_tick(start: datetime, step: timedelta) -> datetime:
    """The first round moment (a whole day, hour or minute step) at or after ``start``."""
    if step >= DAY:  # the first midnight, then every step from it
        first = start.replace(hour=0, minute=0, second=0, microsecond=0)
        return first if first >= start else first + DAY
    if step >= HOUR:
        first = start.replace(minute=0, second=0, microsecond=0)
        first = first.replace(hour=first.hour - first.hour % int(step / HOUR))
    else:
        first = start.replace(second=0, microsecond=0)
        first = first.replace(minute=first.minute - first.minute % int(step / MINUTE))
    while first < start:
        first += step
    return first


def time_chart(
    series: Sequence[tuple[str, Sequence[tuple[datetime, float]]]],
    *,
    start: datetime,
    end: datetime,
    y_label=lambda value: f"{value:.0%}",
    width: int = 560,
    height: int = 240,
) -> TimeChart:
    """Lines of (time, value in 0..1) between ``start`` and ``end``, with time ticks a reader
    can use (hours within a day or two, dates beyond). With fewer than three moments, no
    geometry: the values in a sentence (``few``)."""
    left, right, top, bottom = 44, width - 16, 16, height - 28
    moments = {_minute(moment) for _, points in series for moment, _ in points}
    if len(moments) < MIN_MOMENTS:
        return TimeChart(
            width=width,
            height=height,
            left=left,
            right=right,
            top=top,
            bottom=bottom,
            lines=[],
            x_ticks=[],
            y_ticks=[],
            few=_written(series, y_label),
        )
    # The axis spans the data (three moments are two minutes apart at least), no empty future.
    end = max(end, start + MINUTE)
    span = end - start

    def x(moment: datetime) -> float:
        return round(left + (moment - start) / span * (right - left), 1)

    def y(value: float) -> float:
        return round(bottom - min(max(value, 0.0), 1.0) * (bottom - top), 1)

    lines = []
    for (name, points), colour in zip(series, PALETTE * 4, strict=False):
        kept = downsample(sorted(points))
        if not kept:
            continue
        moment, value = kept[-1]
        lines.append(
            Line(
                name=name,
                colour=colour,
                points=" ".join(f"{x(t)},{y(v)}" for t, v in kept),
                last=Dot(
                    x(moment), y(value), f"{name}: {y_label(value)} at {moment:%Y-%m-%d %H:%M}"
                ),
            )
        )
    step = _tick_step(span)
    ticks, moment = [], _first_tick(start, step)
    day = None
    while moment <= end:
        label = f"{moment:%b %d}" if step >= DAY else f"{moment:%H:%M}"
        if step < DAY and moment.date() != day:  # a time's date, where the day changes
            label = f"{moment:%b %d} {label}"
        day = moment.date()
        ticks.append((x(moment), label))
        moment += step
    return TimeChart(
        width=width,
        height=height,
        left=left,
        right=right,
        top=top,
        bottom=bottom,
        lines=lines,
        x_ticks=ticks,
        y_ticks=[(y(v), y_label(v)) for v in (0.0, 0.25, 0.5, 0.75, 1.0)],
    )


def _minute(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def _written(series, y_label) -> str:
    """Each line's values with their times, for a chart too sparse to draw: per minute, the
    value it ended with (so one or two per line)."""
    lines = []
    for name, points in series:
        by_minute = {_minute(moment): value for moment, value in sorted(points)}
        if by_minute:
            said = ", then ".join(
                f"{y_label(value)} on {moment:%Y-%m-%d %H:%M}"
                for moment, value in by_minute.items()
            )
            lines.append(f"{name} {said}")
    return "; ".join(lines) or "no value yet"


@dataclass(frozen=True)
class Bar:
    label: str
    y: float  # top of the bar
    width: float
    text: str  # the value, written after the bar
    title: str


@dataclass(frozen=True)
class BarChart:
    width: int
    height: int
    left: int
    bar_height: int
    bars: list[Bar]
    label_x: int

    def text_x(self, bar: Bar) -> float:
        return self.left + bar.width + 6


def bar_chart(
    rows: Sequence[tuple[str, float | None, str]], *, width: int = 560, bar_height: int = 18
) -> BarChart:
    """One horizontal bar per (label, value or None, text); a None value draws no bar but keeps
    its row and its text (e.g. "no timed judgements")."""
    left, gap = 120, 8
    longest = max((value for _, value, _ in rows if value), default=0.0) or 1.0
    room = width - left - 290  # the value is written after the bar
    bars = [
        Bar(
            label=label if len(label) <= 16 else label[:15] + "…",
            y=gap + i * (bar_height + gap),
            width=round((value or 0.0) / longest * room, 1),
            text=text,
            title=f"{label}: {text}",
        )
        for i, (label, value, text) in enumerate(rows)
    ]
    height = gap + len(rows) * (bar_height + gap)
    return BarChart(
        width=width,
        height=max(height, 2 * gap),
        left=left,
        bar_height=bar_height,
        bars=bars,
        label_x=left - 8,
    )
