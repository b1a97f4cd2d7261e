"""Cheap z3 solver creation, and time-outs that survive solver cloning.

claripy's ``BackendZ3.solver`` decides on every new solver whether z3 knows the ``soft_timeout``
parameter by rendering the solver's whole parameter description to a string (``param_descrs``):
about 10 ms each time, a third of a run that creates many solvers (forked paths each build their
own; so does choosing test inputs). The answer is a property of the z3 build, so it is computed
once; everything else about the solver is as claripy makes it.

claripy's ``BackendZ3.clone_solver`` (used when a finalized frontend gets new constraints, i.e.
on every branch of a path) copies a solver with ``Solver.translate``, which keeps the assertions
but not the parameters: the clone has no time-out, so a hard query on a forked path ran for
ever whatever ``solver_timeout_ms`` said. The clone gets its original's time-out and memory
bound back. Both apply inside angr-ram runs (gated patches, :mod:`angr_ram.patches`).
"""

from __future__ import annotations

import threading

import z3
from claripy.backends import backend_z3

from ..patches import declare

_SOFT_TIMEOUT: bool | None = None


def _limit(s: z3.Solver, timeout: int | None, max_memory: int | None) -> None:
    global _SOFT_TIMEOUT
    if timeout is not None:
        if _SOFT_TIMEOUT is None:
            _SOFT_TIMEOUT = "soft_timeout" in str(s.param_descrs())
        if _SOFT_TIMEOUT:
            s.set("soft_timeout", timeout)
            s.set("solver2_timeout", timeout)
        s.set("timeout", timeout)
    if max_memory is not None:
        s.set("max_memory", max_memory)
    s.ram_limits = (timeout, max_memory)     # z3 cannot report a solver's parameters back


@declare(backend_z3.BackendZ3, "solver")
def fast_solver_setup(original, self, timeout=None, max_memory=None):
    """``BackendZ3.solver`` that asks z3 whether it knows ``soft_timeout`` once per process."""
    if not self.reuse_z3_solver or getattr(self._tls, "solver", None) is None:
        s = z3.Solver(ctx=self._context)
        if threading.current_thread() != threading.main_thread():
            s.set(ctrl_c=False)
        backend_z3._add_memory_pressure(1024 * 1024 * 10)
        if self.reuse_z3_solver:
            self._tls.solver = s
    else:
        s = self._tls.solver
        s.reset()
    _limit(s, timeout, max_memory)
    return s


@declare(backend_z3.BackendZ3, "clone_solver")
def clone_with_limits(original, self, s):
    """``BackendZ3.clone_solver`` whose clone keeps the time-out and memory bound of ``s``."""
    c = original(self, s)
    limits = getattr(s, "ram_limits", None)
    if limits is not None:
        _limit(c, *limits)
    return c
