"""How long choosing a test's inputs may take, and what a bounded solver query answers.

:class:`InputBudget` bounds every query made while choosing inputs (per query, and against the
run's deadline, enforced by the run guard's watcher); a bounded query either answers or raises
:class:`NoModel` (no input drives the path) or :class:`NoAnswer` (not decided in time), never
anything else. :func:`add_groups` adds readable-byte preferences by group testing under a budget.
"""

from __future__ import annotations

import math
import time

import angr
import claripy

from angr_ram.core.guard import RunGuard, StepAbandoned
from angr_ram.solver.z3_check import gave_up


class NoModel(Exception):  # noqa: N818 - a result, not an error
    """The path's constraints (with the extra ones) have no model."""


class NoAnswer(Exception):  # noqa: N818
    """The query did not answer within its budget (or failed)."""


WHOLE_SECONDS = 300.0       # a result's query with no deadline: a path's outcomes, not a z3 call that never ends
# past the deadline, how long tests may still take their inputs from the solvers' cached models
# (no z3, about 1 ms each): join at 600 s has about 5,800 unfinished paths, and making all of them
# held its tests 15 s past the run's limit; after this window (CACHED_SECONDS, or CACHED_SHARE of
# the run's own time if that is longer) they are zero bytes
CACHED_SECONDS = 2.0
CACHED_SHARE = 0.01


def cached_window(run_seconds: float | None) -> float:
    """The window past the deadline for inputs from cached models, for a run of ``run_seconds``."""
    return max(CACHED_SECONDS, CACHED_SHARE * (run_seconds or 0.0))


class InputBudget:
    """How long choosing the tests' inputs may take: each solver query at most ``query_seconds``
    (and no longer than the time left to ``deadline``); once the deadline has passed or the user
    pressed Ctrl-C again (``guard``), each remaining test gets a plain model with ``last_seconds``
    at most (for ``last_total`` seconds past the deadline), or all-zero inputs if even that fails;
    inputs from the solvers' cached models (no z3) are taken for ``cached_total`` seconds past the
    deadline (:meth:`cached`), then no more. The limits are enforced by the guard's watcher
    (:mod:`angr_ram.core.guard`), which interrupts z3 and, if need be, the Python work of a query.
    A query whose answer is a result (a path's outcomes, its plain model) is bounded by the deadline
    alone, or by ``whole_seconds`` without one (``ask(whole=True)``): under load it may take longer than ``query_seconds``, and a
    finished path must not lose its outcomes to that. Counts what it could not do: ``unsolved`` tests (zero inputs, not checked to drive their path),
    ``infeasible`` set-aside paths (no test: their branch condition has no model), ``plain``
    tests (a model, not every byte made readable).
    """

    def __init__(self, deadline: float | None = None, query_seconds: float = 2.0, last_seconds: float = 0.25,
                 last_total: float = 0.5, guard: RunGuard | None = None, whole_seconds: float = WHOLE_SECONDS,
                 cached_total: float = CACHED_SECONDS):
        self.deadline = deadline
        self.cached_total = cached_total
        self.whole_seconds = whole_seconds
        self.last_total = last_total
        self.query_seconds = query_seconds
        self.last_seconds = last_seconds
        self.guard = guard if guard is not None else RunGuard(catch_sigint=False)
        self._presses = self.guard.interrupts
        self.unsolved = self.infeasible = self.plain = self.unwritten = 0
        self.infeasible_unfinished = 0      # of ``infeasible``, states counted as unfinished

    def spent(self) -> bool:
        """Past the deadline and its last tests' time, or Ctrl-C pressed since collection began:
        states that would only get zero inputs (those in spill files) are not loaded any more."""
        return ((self.deadline is not None and time.perf_counter() >= self.deadline + self.last_total)
                or self.guard.interrupts > self._presses)

    def hurry(self) -> bool:
        """Past the deadline, or Ctrl-C pressed since collection began: no improving any more."""
        return ((self.deadline is not None and time.perf_counter() >= self.deadline)
                or self.guard.interrupts > self._presses)

    def cached(self, fn):
        """``fn()`` (a model made from cached models: no z3), bounded by the window of
        ``cached_total`` seconds past the deadline; None once that window is over, when Ctrl-C was
        pressed since collection began, or when ``fn`` did not answer in it."""
        if self.guard.interrupts > self._presses:
            return None
        seconds = 0.0       # the guard's 0: no bound
        if self.deadline is not None and self.cached_total != math.inf:
            seconds = self.deadline + self.cached_total - time.perf_counter()
            if seconds <= 0:
                return None
        try:
            with self.guard.step(seconds=seconds, memory_mb=0, stoppable=False):
                return fn()
        except (StepAbandoned, Exception):  # noqa: BLE001 - out of its window, or no model made: no input from it
            return None

    def ask(self, fn, last: bool = False, whole: bool = False, seconds: float | None = None):
        """``fn()`` bounded: its value, or :class:`NoModel` / :class:`NoAnswer` raised; never anything else.
        ``whole``: a query whose answer is a result of the run (a path's outcomes), not an improvement:
        bounded by the deadline (``whole_seconds`` without one), never by ``query_seconds``.
        ``seconds``: the bound of a query that is not ``whole``, instead of ``query_seconds``."""
        if last:
            if self.deadline is not None and time.perf_counter() >= self.deadline + self.last_total:
                raise NoAnswer("out of time")
            seconds = self.last_seconds
        else:
            if self.hurry():
                raise NoAnswer("out of time")
            seconds = self.whole_seconds if whole else seconds or self.query_seconds
            if self.deadline is not None:
                left = max(0.05, self.deadline - time.perf_counter())
                seconds = left if whole else min(seconds, left)
        try:
            with self.guard.step(seconds=seconds, memory_mb=0, stoppable=False):
                return fn()
        except StepAbandoned as e:
            raise NoAnswer(e.reason) from None
        except (angr.errors.SimUnsatError, claripy.errors.UnsatError) as e:
            if gave_up(e) is None:
                raise NoModel(str(e)) from None
            raise NoAnswer(str(e)) from None
        except Exception as e:  # noqa: BLE001 - choosing an input never ends the run
            raise NoAnswer(gave_up(e) or errored_reason(e)) from None


def add_groups(sat, ok: list, group: list, budget: InputBudget) -> bool:
    """Add to ``ok`` the preferences of ``group`` that can hold together with ``ok``: the whole group
    if it can, else each half in turn (group testing: a few conflicting bytes among n cost
    O(few * log n) queries, not n). False if it ran out of budget before deciding every byte."""
    stack = [group]
    while stack:
        if budget.hurry():
            return False
        g = stack.pop()
        try:
            if budget.ask(lambda g=g: sat([*ok, *g])):
                ok.extend(g)
                continue
        except NoAnswer:
            return False
        except NoModel:
            pass
        if len(g) > 1:
            half = len(g) // 2
            stack.append(g[half:])
            stack.append(g[:half])
    return True


def errored_reason(exc: BaseException) -> str:
    """A one-line reason for an exception that stopped a path."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]
