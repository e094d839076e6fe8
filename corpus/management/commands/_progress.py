"""The progress bar of Goldset's long management commands, written to stderr.

On a terminal the bar is redrawn in place (`[#######.......]  45%  450/1,000 files  12 s`); on
anything else (a CI log, a file) it writes a plain line at each tenth of the way and at the end,
so a log shows progress without thousands of carriage returns. Ours rather than tqdm's: tqdm
redraws with carriage returns into logs too, and Django's OutputWrapper would break its lines.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30
REDRAW_SECONDS = 0.2


class ProgressBar:
    def __init__(self, *, label: str, unit: str = "", stream: TextIO | None = None):
        self.label, self.unit = label, unit
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self.done = self.total = 0
        self._drawn_at = 0.0
        self._logged_tenth = -1
        self._open = False
        self._width = 0

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        if self.tty:
            now = time.monotonic()
            if now - self._drawn_at >= REDRAW_SECONDS or self._complete:
                self._drawn_at = now
                self._redraw()
                self._open = True
        elif self.total:
            tenth = min(10, int(10 * self.done / self.total))
            if tenth > self._logged_tenth:
                self._logged_tenth = tenth
                self.stream.write(self.line() + "\n")
                self.stream.flush()

    def advance(self, count: int = 1) -> None:
        self.update(self.done + count)

    def close(self) -> None:
        if self._open:
            self._redraw()
            self.stream.write("\n")
            self.stream.flush()
            self._open = False

    def _redraw(self) -> None:
        line = self.line()
        self.stream.write("\r" + line.ljust(self._width))  # wipe a longer previous line
        self.stream.flush()
        self._width = len(line)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def _complete(self) -> bool:
        return bool(self.total) and self.done >= self.total

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        unit = f" {self.unit}" if self.unit else ""
        if not self.total:
            return f"{self.label}: {self.done:,}{unit}  {elapsed:.0f} s"
        share = min(1.0, self.done / self.total)
        filled = round(WIDTH * share)
        bar = "#" * filled + "." * (WIDTH - filled)
        left = ""
        if 0 < share < 1 and elapsed >= 2:
            left = f", about {elapsed * (1 - share) / share:.0f} s left"
        return (
            f"{self.label} [{bar}] {share:4.0%}  {self.done:,}/{self.total:,}{unit}  "
            f"{elapsed:.0f} s{left}"
        )


def progress_stream(command) -> TextIO:
    """The stream under a command's stderr: Django's OutputWrapper ends every write with a
    newline, which would break a bar redrawn in place."""
    return getattr(command.stderr, "_out", command.stderr)
