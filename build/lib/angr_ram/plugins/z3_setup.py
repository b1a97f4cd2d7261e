"""Cheap z3 solver creation.

claripy's ``BackendZ3.solver`` decides on every new solver whether z3 knows the ``soft_timeout``
parameter by rendering the solver's whole parameter description to a string (``param_descrs``):
about 10 ms each time, a third of a run that creates many solvers (forked paths each build their
own; so does choosing test inputs). The answer is a property of the z3 build, so it is computed
once; everything else about the solver is as claripy makes it. It applies inside angr-ram runs
(a gated patch, :mod:`angr_ram.patches`).
"""

from __future__ import annotations

import threading

import z3
from claripy.backends import backend_z3

from ..patches import declare

_SOFT_TIMEOUT: bool | None = None


@declare(backend_z3.BackendZ3, "solver")
def fast_solver_setup(original, self, timeout=None, max_memory=None):
    """``BackendZ3.solver`` that asks z3 whether it knows ``soft_timeout`` once per process."""
    global _SOFT_TIMEOUT
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
    if timeout is not None:
        if _SOFT_TIMEOUT is None:
            _SOFT_TIMEOUT = "soft_timeout" in str(s.param_descrs())
        if _SOFT_TIMEOUT:
            s.set("soft_timeout", timeout)
            s.set("solver2_timeout", timeout)
        else:
            s.set("timeout", timeout)
    if max_memory is not None:
        s.set("max_memory", max_memory)
    return s
