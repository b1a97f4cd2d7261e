"""The one wrapper of ``z3.Solver.check``: budgets, counting and profiling of every z3 call.

Inside a run (an active :class:`~angr_ram.core.scope.RunScope`) a check is counted into the run's stats,
timed as the ``z3`` section of the run's profile, and given the run's current budget: the
first-pass budget while a first-pass step runs, no more than the time left before the run's
deadline (its ``timeout``), else the solver's own time-out. Outside runs, :func:`angr_ram.solver.patches.counting` counts
checks for benchmarks (stock angr's included) through the same wrapper, so no other code replaces
``z3.Solver.check``. :func:`gave_up` tells an answer z3 could not give (a time-out, a resource
limit, ``unknown``) from any other error.
"""

from __future__ import annotations

import contextlib
import time

import claripy
import z3
from claripy.errors import ClaripyZ3Error

from angr_ram.core.scope import current
from angr_ram.core.z3_interrupts import fresh_answer, quiet_ctrl_c


class Counter:
    """How many z3 checks ran while it was counting (:func:`counter`)."""

    def __init__(self):
        self.count = 0

    def __repr__(self) -> str:
        return f"<z3 Counter {self.count} checks>"


_COUNTERS: list[Counter] = []


def gate() -> bool:
    """Whether checks are counted or budgeted now: in a run, or while a counter counts."""
    return bool(_COUNTERS) or current() is not None


@contextlib.contextmanager
def counter():
    """A :class:`Counter` that counts while the block runs (with the check in place:
    :func:`angr_ram.solver.patches.counting`)."""
    c = Counter()
    _COUNTERS.append(c)
    try:
        yield c
    finally:
        _COUNTERS.remove(c)


def check(original, solver, *args):
    """``z3.Solver.check`` counted, timed and given the run's budget (the module docstring)."""
    for c in _COUNTERS:
        c.count += 1
    sc = current()
    if sc is None:
        return original(solver, *args)
    prof = sc.profile
    if prof is None:
        return _budgeted(sc, original, solver, args)
    prof.enter("z3")
    t0 = time.perf_counter()
    try:
        return _budgeted(sc, original, solver, args)
    finally:
        prof.leave(time.perf_counter() - t0)


def _budgeted(sc, original, solver, args):
    quiet_ctrl_c(solver)            # Ctrl-C reaches the run's guard, not z3 alone (angr_ram.core.guard)
    stats = sc.stats
    if stats is None:
        return _checked(sc, original, solver, args)
    stats.z3_checks += 1
    t0 = time.perf_counter()
    try:
        return _checked(sc, original, solver, args)
    finally:
        stats.z3_seconds += time.perf_counter() - t0


def _checked(sc, original, solver, args):
    own = (getattr(solver, "ram_limits", None) or (None,))[0] or 300_000
    budget = own if sc.budget_ms is None else min(own, sc.budget_ms)
    left = None if sc.deadline is None else sc.deadline.left()
    if left is not None:
        budget = min(budget, max(1, int(left * 1000)))
    if budget == own:
        return fresh_answer(lambda: original(solver, *args), solver.ctx)
    limits = getattr(solver, "ram_limits", None)
    solver.set("timeout", budget)
    # angr-ram's bit-blasting solver checks on a clone given its ``ram_limits``, not its parameters
    solver.ram_limits = (budget, limits[1] if limits else None)
    try:
        return fresh_answer(lambda: original(solver, *args), solver.ctx)
    finally:      # the solver outlives the step: used outside it (outcomes, tests), it has its own budget
        solver.set("timeout", own)
        if limits is None:
            del solver.ram_limits
        else:
            solver.ram_limits = limits


# what z3 says when a resource limit or an interrupt stopped it
_Z3_LIMITS = ("out of memory", "max. memory exceeded", "canceled", "interrupted", "timeout",
              "max. resource limit exceeded")


def gave_up(exc: BaseException) -> str | None:
    """Why z3 could not answer, if ``exc`` (or an error it was converted from) says it gave up:
    a time-out or resource limit, or an ``unknown`` answer; None for any other error."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, claripy.ClaripySolverInterruptError):
            return f"solver gave up: {exc}"
        if isinstance(exc, ClaripyZ3Error) and "solver unknown" in str(exc):
            return f"solver gave up: {exc}"
        if isinstance(exc, z3.Z3Exception | ClaripyZ3Error) and any(w in str(exc) for w in _Z3_LIMITS):
            return f"solver gave up: {exc}"     # a limit hit outside a check (translation, a tactic)
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None
