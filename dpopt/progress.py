"""Progress of long runs on stderr (docs/design.md, "Progress").

A run is a sequence of stages. On a terminal each stage is a tqdm bar (``[2/4] re-solve``)
refreshed every second even when no item ends, with an estimate of the time left when the
stage counts its items (a sub-run's bars, :meth:`Progress.within`, are cleared as they end).
When stderr is not a terminal (a log, a pipe) each stage writes one plain line as it ends
(``[2/4] re-solve: 51/51 states, 12.3 s``) and a counted stage also a line per finished item
at most every :data:`LINE_SECONDS`. Times are wall-clock seconds of this process (waiting for
workers included); the estimate assumes the items left take as long as the ones done, which is
all it knows. ``Progress(False)`` reports nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import Any, TextIO

from dpopt.validation import boolean, integer, nonnegative_number

__all__ = ["LINE_SECONDS", "Progress", "Stage", "format_seconds", "progress_of"]

LINE_SECONDS = 5.0
"""Seconds between two item lines of one stage when stderr is not a terminal."""

_REFRESH_SECONDS = 1.0
"""How often an open bar redraws its elapsed time and estimate."""


def format_seconds(seconds: float) -> str:
    """``12.3 s`` below a minute, ``4 min 05 s`` below an hour, else ``2 h 03 min``."""
    seconds = nonnegative_number("seconds", seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


class Progress:
    """Where a long run reports its stages (module docstring).

    ``enabled``: False reports nothing. ``stages``: how many stages the run has, when known
    (labels then read ``[i/n]``). ``stream``: default ``sys.stderr`` (as it is now).
    ``bar``: tqdm bars (default: whether ``stream`` is a terminal) or plain lines.
    ``prefix``: put before every label (:meth:`within`)."""

    def __init__(
        self,
        enabled: bool = True,
        *,
        stages: int | None = None,
        stream: TextIO | None = None,
        bar: bool | None = None,
        prefix: str = "",
    ):
        self.enabled = boolean("enabled", enabled)
        self.stages = None if stages is None else integer("stages", stages, minimum=1)
        self.stream = stream if stream is not None else sys.stderr
        self.bar = _isatty(self.stream) if bar is None else boolean("bar", bar)
        self.prefix = prefix
        self.started = 0

    def __repr__(self) -> str:
        mode = "off" if not self.enabled else "bars" if self.bar else "lines"
        return f"Progress({mode}, stage {self.started}/{self.stages or '?'})"

    def within(self, name: str) -> Progress:
        """The next stage, run as stages of its own: a Progress on the same stream whose
        labels start with this stage's (``[2/2] re-solve: bottom-up``)."""
        self.started += 1
        return Progress(
            self.enabled, stream=self.stream, bar=self.bar, prefix=f"{self._label(name)}: "
        )

    def stage(self, name: str, total: int | None = None, *, unit: str = "item") -> Stage:
        """The next stage, a context manager: ``with progress.stage("states", 51) as s:``
        then ``s.advance()`` per item (``total`` None: not counted, no estimate)."""
        self.started += 1
        total = None if total is None else integer("total", total, minimum=0)
        return Stage(self, self._label(name), total, unit)

    def _label(self, name: str) -> str:
        """The label of the stage just started."""
        count = f"[{self.started}/{self.stages}] " if self.stages else ""
        return f"{self.prefix}{count}{name}"

    def note(self, message: str) -> None:
        """One line on the stream (between bars on a terminal)."""
        if not self.enabled:
            return
        if self.bar:
            from tqdm import tqdm

            tqdm.write(f"{self.prefix}{message}", file=self.stream)
        else:
            print(f"{self.prefix}{message}", file=self.stream, flush=True)


class Stage:
    """One stage of a :class:`Progress`: a bar or the lines of the module docstring."""

    def __init__(self, progress: Progress, label: str, total: int | None, unit: str):
        self.progress, self.label, self.total, self.unit = progress, label, total, unit
        self.done = 0
        self.start = self.last_line = time.perf_counter()
        self._bar: Any = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> Stage:
        if self.progress.enabled and self.progress.bar:
            from tqdm import tqdm

            uncounted = {"bar_format": "{desc}: {elapsed}"} if self.total is None else {}
            self._bar = tqdm(
                total=self.total,
                desc=self.label,
                unit=self.unit,
                file=self.progress.stream,
                leave=not self.progress.prefix,  # a sub-run's bars go when it ends
                **uncounted,
            )
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(_REFRESH_SECONDS):
            self._bar.refresh()

    def describe(self, item: str) -> None:
        """Show ``item`` (what runs now) beside the bar; lines show items as they end."""
        if self._bar is not None:
            self._bar.set_postfix_str(item, refresh=False)

    def advance(self, count: int = 1, *, item: str = "") -> None:
        """``count`` more items done (``item``: what just ended, shown in a line)."""
        self.done += count
        if not self.progress.enabled:
            return
        if self._bar is not None:
            self._bar.update(count)
            return
        now = time.perf_counter()
        if now - self.last_line >= LINE_SECONDS and (self.total is None or self.done < self.total):
            self.last_line = now
            self._line(now, item)

    def _line(self, now: float, item: str = "", stopped: str = "") -> None:
        elapsed, parts = now - self.start, []
        if self.total is not None or self.done:
            counted = f"{self.done}/{self.total}" if self.total is not None else f"{self.done}"
            parts.append(f"{counted} {self.unit}s" + (f" ({item})" if item else ""))
        parts.append(format_seconds(elapsed))
        if self.total and 0 < self.done < self.total:
            parts.append(
                f"about {format_seconds(elapsed / self.done * (self.total - self.done))} left"
            )
        if stopped:
            parts.append(f"stopped by {stopped}")
        print(f"{self.label}: {', '.join(parts)}", file=self.progress.stream, flush=True)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._stop.set()
            if self._ticker is not None:
                self._ticker.join()
            self._bar.close()
        elif self.progress.enabled:
            self._line(time.perf_counter(), stopped="" if kind is None else kind.__name__)


def progress_of(progress: bool | Progress, *, stages: int | None = None) -> Progress:
    """``progress`` as a :class:`Progress`: True reports ``stages`` stages on stderr, False
    nothing; a Progress is used as it is (a caller's run, of its own stages)."""
    if isinstance(progress, Progress):
        return progress
    return Progress(boolean("progress", progress), stages=stages)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
