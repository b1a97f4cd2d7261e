"""A run's time limit, one object from where the run begins to everything that reads it.

The CLI's ``--timeout``, ``explore(timeout=)``, ``tech.guarded(timeout)`` and the distributed
runner each make one :class:`Deadline` when the run starts (or take the one they are given); the
run guard stops the run by it (:mod:`angr_ram.core.guard`), each z3 call of a step gets at most
the time left to it (:mod:`angr_ram.solver.z3_check`, the scope's ``deadline``), the passes ask
whether the run is bounded (:mod:`angr_ram.run.passes`) and test collection gets a window after
it (:mod:`angr_ram.run.input_budget`). When the run must stop early (Ctrl-C), :meth:`Deadline.stop`
makes it pass at once for every reader.
"""

from __future__ import annotations

import time


class Deadline:
    """``seconds`` from ``start`` (``time.perf_counter()``; now if None); None: no limit, until
    :meth:`stop`."""

    def __init__(self, seconds: float | None = None, start: float | None = None):
        self.start = time.perf_counter() if start is None else start
        self.seconds = seconds
        self.stopped_at: float | None = None     # perf_counter() when :meth:`stop` was called

    def __repr__(self) -> str:
        state = "stopped" if self.stopped_at is not None else (
            "no limit" if self.seconds is None else f"{self.left():.1f} s left")
        return f"<Deadline {state}>"

    @classmethod
    def of(cls, value: Deadline | float | None) -> Deadline:
        """``value`` if a Deadline, else a new one of ``value`` seconds from now."""
        return value if isinstance(value, Deadline) else cls(value)

    @property
    def at(self) -> float | None:
        """The ``perf_counter()`` by which the run ends (0.0 once stopped; None: no limit)."""
        if self.stopped_at is not None:
            return 0.0
        return None if self.seconds is None else self.start + self.seconds

    @property
    def bounded(self) -> bool:
        """Whether the run has a limit (a time, or a stop)."""
        return self.seconds is not None or self.stopped_at is not None

    def left(self) -> float | None:
        """Seconds to the deadline (0 once passed; None: no limit)."""
        at = self.at
        return None if at is None else max(0.0, at - time.perf_counter())

    def passed(self) -> bool:
        """Whether the deadline has passed (or the run was stopped)."""
        at = self.at
        return at is not None and time.perf_counter() > at

    def stop(self) -> None:
        """The run must stop now: the deadline passes for every reader."""
        if self.stopped_at is None:
            self.stopped_at = time.perf_counter()

    def window_after(self, seconds: float) -> float | None:
        """The ``perf_counter()`` ``seconds`` after the deadline (or after now, if it has passed or the
        run stopped); None without a limit. Test collection's window after the run."""
        if not self.bounded:
            return None
        end = self.start + self.seconds if self.seconds is not None else time.perf_counter()
        return max(end, time.perf_counter()) + seconds
