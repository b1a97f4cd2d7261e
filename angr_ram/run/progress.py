"""Progress of a run while it explores: a live line on a terminal, a line every N seconds otherwise.

On a terminal, rich (a dependency of angr) redraws one line four times a second: elapsed time,
finished paths and their rate, active states, error paths. A step of a few hundred states can take
many seconds; the line still ticks, because it is drawn from the last counts by rich's own thread.
With ``--progress S`` (for a log or a pipe) a plain line is written every S seconds, by a thread,
so a long step shows as the same counts at a later time instead of silence. Counts are taken
after each step of the simulation manager (:meth:`Progress.update`) or, for the distributed
runner, from its progress records (:meth:`Progress.update_distributed`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

MIN_INTERVAL = 0.5          # seconds between plain progress lines at the most


@dataclass
class Counts:
    """What the progress line shows besides the time."""

    paths: int = 0
    active: int = 0
    errors: int = 0
    extra: str = ""         # the distributed runner's workers and tasks


def line(c: Counts, elapsed: float) -> str:
    """The progress line: elapsed, finished paths and rate, active states, error paths."""
    rate = c.paths / elapsed if elapsed > 0 else 0.0
    extra = f"  {c.extra}" if c.extra else ""
    return (f"{elapsed:7.1f}s  paths {c.paths:6d} ({rate:.1f}/s)  active {c.active:5d}  "
            f"errors {c.errors:4d}{extra}")


class Progress:
    """A context manager that shows a run's progress on ``stream``: live with rich when ``live``
    (a terminal), every ``every`` seconds as plain lines otherwise (None: not at all); the time is
    counted from ``started`` (a ``time.perf_counter()`` value; default: entering the context)."""

    def __init__(self, stream, live: bool, every: float | None = None, started: float | None = None):
        self.stream = stream
        self.live = live
        self.every = every
        self.counts = Counts()
        self.started = started
        self.t0 = time.perf_counter() if started is None else started
        self._live = None
        self._stop = threading.Event()
        self._thread = None

    @property
    def enabled(self) -> bool:
        return self.live or self.every is not None

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def __rich__(self):
        from rich.text import Text
        return Text(line(self.counts, self.elapsed()))

    def __enter__(self) -> Progress:
        self.t0 = time.perf_counter() if self.started is None else self.started
        if self.live:
            from rich.console import Console
            from rich.live import Live
            self._live = Live(self, console=Console(file=self.stream), refresh_per_second=4, transient=False)
            self._live.start()
        elif self.every is not None:
            self._thread = threading.Thread(target=self._tick, name="angr-ram progress", daemon=True)
            self._thread.start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(max(self.every, MIN_INTERVAL)):
            self._write()

    def _write(self) -> None:
        try:
            self.stream.write(line(self.counts, self.elapsed()) + "\n")
            self.stream.flush()
        except (OSError, ValueError):     # a closed pipe: nothing more can be shown
            self._stop.set()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._write()           # the last counts, at the end

    def update(self, simgr) -> None:
        """Take the counts of ``simgr`` (after a step)."""
        c = self.counts
        c.paths = len(simgr.deadended)
        c.active = len(simgr.active) + len(simgr.stashes.get("waiting", ()))     # a search's waiting states too
        c.errors = len(simgr.stashes.get("memory_errors", [])) + len(simgr.errored)

    def update_distributed(self, p) -> None:
        """Take the counts of the distributed runner's progress record."""
        c = self.counts
        c.paths, c.active, c.errors = p.paths, p.frontier, p.errors
        c.extra = f"busy {min(p.busy, p.workers)}/{p.workers} workers  tasks {p.tasks}"
