"""Cheap, fast z3 solvers, time-outs that survive solver cloning, and simplification that gives
up on deep expressions.

claripy's ``BackendZ3.solver`` makes a general ``z3.Solver()``. Every query of a path then
pays for it twice:

* *fixed cost*: a new or cloned general solver sets up z3's combined solver (3 ms to clone with
  ``Solver.translate``, 8 ms for a first check) before it looks at the formula; a path adds a
  constraint at each branch, so each branch clones. That was 38% of a word-counting loop's run;
* *incremental mode*: claripy passes extra constraints as assumptions, so the general solver
  answers with its incremental SMT core instead of bit-blasting to SAT. A Jenkins hash preimage
  over four bytes takes 10 s a query that way and 0.02 s bit-blasted (``angr-ram bench
  --solver``).

Inside angr-ram runs claripy's solvers are :class:`BitBlastingSolver`: z3's ``qfbv`` tactic as a
solver, which simplifies and bit-blasts every check (with or without assumptions) and clones in
0.07 ms. A formula outside bit-vectors (floats, strings) is declined by the tactic and checked by
a general ``z3.Solver``, so answers stay exact. The tactic knows ``timeout`` and ``max_memory``
but not the combined solver's ``soft_timeout``, so only those two are set.

claripy's ``BackendZ3.solver`` also decides on every new solver whether z3 knows
``soft_timeout`` by rendering the whole parameter description to a string (10 ms); that answer
is computed once. claripy's ``BackendZ3.clone_solver`` keeps the assertions but not the
parameters: the clone gets its original's time-out and memory bound back.

angr simplifies register and memory writes with z3's simplifier, which converts the result back
to claripy recursively: a merged state's expression can be deeper than Python's recursion limit.
Such an expression is kept unsimplified instead of ending the run.

All of this applies inside angr-ram runs only (gated patches, :mod:`angr_ram.patches`).
"""

from __future__ import annotations

import ctypes
import threading

import z3
from angr.state_plugins.solver import SimSolver
from claripy.backends import backend_z3

from ..patches import declare

_SOFT_TIMEOUT: bool | None = None


def _limit(s: z3.Solver, timeout: int | None, max_memory: int | None) -> None:
    global _SOFT_TIMEOUT
    if timeout is not None and not getattr(s, "ram_tactic", False):
        if _SOFT_TIMEOUT is None:
            _SOFT_TIMEOUT = "soft_timeout" in str(s.param_descrs())
        if _SOFT_TIMEOUT:
            s.set("soft_timeout", timeout)
            s.set("solver2_timeout", timeout)
    if timeout is not None:
        s.set("timeout", timeout)
    if max_memory is not None:
        s.set("max_memory", max_memory)
    s.ram_limits = (timeout, max_memory)     # z3 cannot report a solver's parameters back


_FAILED = "fail tactic"       # z3's reason when the tactic below declines a formula
_TACTICS: dict = {}           # z3 context -> the guarded qfbv tactic (built once per context)


def _bitblasting_tactic(ctx: z3.Context) -> z3.Tactic:
    t = _TACTICS.get(ctx)
    if t is None:
        t = _TACTICS[ctx] = z3.Cond(z3.Probe("is-qfbv", ctx), z3.Tactic("qfbv", ctx), z3.Tactic("fail", ctx), ctx)
    return t


class BitBlastingSolver(z3.Solver):
    """A z3 solver that simplifies and bit-blasts each check (the ``qfbv`` tactic). A formula
    outside bit-vectors and booleans (floats, strings) is declined by the tactic and checked by a
    general ``z3.Solver`` with the same assertions and limits, which then answers ``model()``,
    ``reason_unknown()`` and ``unsat_core()`` until the next check."""

    def __init__(self, solver=None, ctx=None):
        ctx = z3.get_ctx(ctx)
        if solver is None:
            solver = z3.Z3_mk_solver_from_tactic(ctx.ref(), _bitblasting_tactic(ctx).tactic)
        super().__init__(solver, ctx)
        self.ram_tactic = True
        self.general: z3.Solver | None = None

    def check(self, *assumptions):
        self.general = None
        r = super().check(*assumptions)
        if r == z3.unknown and super().reason_unknown() == _FAILED:
            g = z3.Solver(ctx=self.ctx)
            limits = getattr(self, "ram_limits", None)
            if limits is not None:
                _limit(g, *limits)
            g.add(self.assertions())
            self.general = g
            r = g.check(*assumptions)
        return r

    def model(self):
        return self.general.model() if self.general is not None else super().model()

    def reason_unknown(self):
        return self.general.reason_unknown() if self.general is not None else super().reason_unknown()

    def unsat_core(self):
        return self.general.unsat_core() if self.general is not None else super().unsat_core()

    def translate(self, target):
        return BitBlastingSolver(z3.Z3_solver_translate(self.ctx.ref(), self.solver, target.ref()), target)


@declare(backend_z3.BackendZ3, "solver")
def fast_solver_setup(original, self, timeout=None, max_memory=None):
    """``BackendZ3.solver`` that makes a bit-blasting ``qfbv`` tactic solver (see the module)."""
    if not self.reuse_z3_solver or getattr(self._tls, "solver", None) is None:
        s = BitBlastingSolver(ctx=self._context)
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


@declare(SimSolver, "simplify")
def simplify_or_keep(original, self, e=None):
    """``SimSolver.simplify`` that keeps an expression too deep for claripy's conversion back from
    z3 (a ``RecursionError``) as it is."""
    try:
        return original(self, e)
    except (RecursionError, ctypes.ArgumentError) as exc:
        if not isinstance(exc, RecursionError) and "RecursionError" not in str(exc):
            raise           # a ctypes argument error of another kind: not ours to hide
        if e is None:
            return self.constraints
        return e
