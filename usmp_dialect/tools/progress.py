"""Progress of long steps (model import, passes, the planner's search) on a terminal.

`usmp-opt` installs a reporter for its run (`reporting_progress`) only when stderr is a
terminal; the steps call `progress()` (the importers per operator, the plan pass through
`PlanOptions.progress`), which does nothing otherwise, so pipes, files and tests see exactly
what they saw before. On a terminal the reporter keeps one status line on stderr, rewritten in
place (carriage return, erase line), shown only once the run has taken a second
(`USMP_PROGRESS_AFTER_S` changes that) and at most ten times a second, and erased at the end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

DEFAULT_AFTER_S = 1.0
MIN_INTERVAL_S = 0.1
ERASE_LINE = "\r\x1b[K"

_reporter: Callable[[str], None] | None = None


class StatusLine:
    """One rewritable status line on a terminal stream."""

    def __init__(self, stream: TextIO, program: str, after_s: float | None = None):
        self.stream = stream
        self.program = program
        if after_s is None:
            try:
                after_s = float(os.environ.get("USMP_PROGRESS_AFTER_S", DEFAULT_AFTER_S))
            except ValueError:
                after_s = DEFAULT_AFTER_S
        self.after_s = after_s
        self.started = time.monotonic()
        self.last_shown: float | None = None
        self.width = 0

    def __call__(self, message: str) -> None:
        now = time.monotonic()
        if now - self.started < self.after_s:
            return
        if self.last_shown is not None and now - self.last_shown < MIN_INTERVAL_S:
            return
        self.last_shown = now
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns or 80
        except (OSError, ValueError):
            columns = 80
        text = f"{self.program}: {message}"[: max(columns - 1, 10)]
        self.stream.write(ERASE_LINE + text)
        self.stream.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.width:
            self.stream.write(ERASE_LINE)
            self.stream.flush()
            self.width = 0


def progress(message: str) -> None:
    """Reports a step of a long operation (nothing unless a driver installed a reporter)."""
    if _reporter is not None:
        _reporter(message)


def clear_progress() -> None:
    """Erases the status line, before a message of its own goes to the same stream."""
    if isinstance(_reporter, StatusLine):
        _reporter.clear()


def current_progress() -> Callable[[str], None] | None:
    """The installed reporter, for code that takes a callback (`PlanOptions.progress`)."""
    return _reporter


@contextmanager
def reporting_progress(stream: TextIO, program: str) -> Iterator[None]:
    """Shows progress on `stream` for the duration, when it is a terminal; erases the status
    line at the end (also when the run fails, before its error is printed)."""
    global _reporter
    if not stream.isatty():
        yield
        return
    line = StatusLine(stream, program)
    previous, _reporter = _reporter, line
    try:
        yield
    finally:
        _reporter = previous
        line.clear()
