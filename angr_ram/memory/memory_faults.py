"""Fault reporting of the relocatable memory layer: where an access may fault, the faulting inputs
become an error path (forked off inside a step) and the others go on; nothing is reported on a path
that cannot execute the access, and nothing is dropped outside a step.

Every report goes through :meth:`FaultMixin._fault`: it raises ``InfeasibleAccess`` when the state
(with the access's guard) is unsatisfiable, forks the guard off when the access may also not
execute, and otherwise raises :class:`~angr_ram.core.errors.MemoryFault` with the in-step path
constraints. A partly faulting access (an offset that may run past an object, a symbolic length,
a symbolic allocation size) is split: inside a step by a fork, outside a step (a user calling
``state.memory.load``) by keeping the good inputs and recording the fault with a reproducing input
in ``state.ram.faults_outside_step``.
"""

from __future__ import annotations

import logging

import claripy
from angr.storage.memory_mixins.memory_mixin import MemoryMixin

from angr_ram.core.errors import ForkRequest, InfeasibleAccess, MemoryErrorInfo, MemoryFault, Target
from angr_ram.memory.block_guard import dead_continuation, live_guard
from angr_ram.memory.memory_object import MemoryObject
from angr_ram.memory.read_only import describe, read_only_at, read_only_ranges
from angr_ram.memory.strategies.fork import forking_enabled
from angr_ram.memory.strategies.resolution import Hit, in_interval

log = logging.getLogger(__name__)


class FaultMixin(MemoryMixin):
    """Reports faults of the relocatable layer only where they can happen (module docstring)."""

    def _fault_if_error(self, h: Hit, c: int, size: int, what: str, condition=None) -> None:
        if h.kind == "object":
            return
        if h.kind == "region":  # a concrete heap-range address never lands in a region
            return
        self._fault(h.error, f"{what} of {size} byte{'s' if size != 1 else ''} at {c:#x} hits {h.describe()}", c, condition)

    def _fault(self, kind: str, message: str, address: int | None = None, condition=None):
        """Report a fault only where it can happen: raises InfeasibleAccess when the state (with the
        access's guard ``condition``) is unsatisfiable, forks the guard when the access may also not
        execute, and otherwise raises MemoryFault with the in-step path constraints."""
        solver = self.state.solver
        extra = [condition] if condition is not None and condition.symbolic else []
        if (condition is not None and condition.is_false()) or not solver.satisfiable(extra_constraints=extra):
            raise InfeasibleAccess
        cons = tuple(solver.constraints)
        if extra and solver.satisfiable(extra_constraints=[claripy.Not(condition)]):
            if forking_enabled():
                raise ForkRequest([Target(claripy.Not(condition), "value"),
                                   Target(condition, "error", kind, message)], "guarded access", cons)
        raise MemoryFault(kind, message, address, cons + tuple(extra))

    def _check_read_only(self, addr, size: int, condition=None, lo: int = 0, hi: int = 1 << 64) -> None:
        """A store of the program's own instructions (inside a step, no procedure running) at
        ``addr`` (an int, or an expression whose targets lie in ``[lo, hi)``) that may write into
        a read-only page (:mod:`angr_ram.memory.read_only`) forks the inputs that do off as a
        ``segfault`` error path; an access that always does faults."""
        state = self.state
        if state.project is None:
            return
        ranges = read_only_ranges(state.project)
        if not ranges or (isinstance(addr, int) and read_only_at(ranges, addr, size) is None):
            return          # (every concrete store passes here: the range test comes first)
        if not forking_enabled() or state.scratch.sim_procedure is not None:
            return
        if dead_continuation(state):     # (angr_ram.memory.block_guard)
            return
        g = live_guard(state)
        if g is not None:
            condition = g if condition is None else claripy.And(condition, g)
        if isinstance(addr, int):
            r = read_only_at(ranges, addr, size)
            self._fault("segfault", describe(state.project, addr, size, r[2], addr), addr, condition)
            return
        parts = [(max(lo, rlo - size + 1), min(hi, rhi) - 1, name) for rlo, rhi, name in ranges
                 if rlo - size + 1 < hi and rhi > lo]
        if not parts:
            return
        bad = claripy.Or(*(in_interval(addr, a, b) for a, b, _ in parts))
        if condition is not None:
            bad = claripy.And(condition, bad)
        if not state.solver.satisfiable(extra_constraints=[bad]):
            return
        at = state.solver.eval(addr, extra_constraints=[bad])
        name = next((n for a, b, n in parts if a <= at <= b), parts[0][2])
        self._fault("segfault", describe(state.project, None, size, name, at + size - 1), None, bad)

    def _check_limit(self, off, obj: MemoryObject, size: int, what: str, condition=None, guard=None,
                     length=None) -> None:
        """Bounds check against a symbolic allocation size: an access that may end beyond
        ``obj.limit`` forks the faulting inputs off as an error path and keeps the in-bounds part;
        one that always does faults. ``guard`` restricts the check to one target of several;
        ``length`` (symbolic, at most ``size``) is how many of the ``size`` bytes the program reads."""
        if isinstance(off, int) and obj.min_size is not None and off + size <= obj.min_size:
            return
        end = claripy.BVV(off + size, 64) if isinstance(off, int) else off + size
        if length is not None:
            end = (length.zero_extend(64 - length.size()) if length.size() < 64 else length) + off
        bad = claripy.UGT(end, obj.limit)
        if guard is not None:
            bad = claripy.And(guard, bad)
        self._split_off(bad, f"{what} of {size} byte{'s' if size != 1 else ''} beyond the symbolic size of object #{obj.id} "
                             f"(at most {obj.size} bytes, allocated at {obj.site:#x})", what, condition)

    def _check_freed(self, obj: MemoryObject, size: int, what: str, condition=None, guard=None) -> None:
        """An access to an object freed on some inputs (``obj.freed_when``): those inputs are
        forked off as a ``use-after-free`` error path, the others go on; ``guard`` restricts the
        check to one target of several."""
        if obj.freed_when is None:
            return
        bad = obj.freed_when if guard is None else claripy.And(guard, obj.freed_when)
        self._split_off(bad, f"{what} of {size} byte{'s' if size != 1 else ''} of object #{obj.id} (allocated at {obj.site:#x}), "
                             "which is freed on these inputs", what, condition, "use-after-free")

    def _split_off(self, bad, msg: str, what: str, condition, kind: str = "out-of-bounds") -> None:
        """Fork the inputs for which ``bad`` (a fault condition of ``kind``) holds off as an error
        path and keep the others; fault when it always holds; nothing when it never does. Outside
        a step the state is constrained to the inputs that do not fault."""
        if condition is not None and condition.symbolic:
            bad = claripy.And(condition, bad)
        elif condition is not None and condition.is_false():
            return
        solver = self.state.solver
        if not solver.satisfiable(extra_constraints=[bad]):
            return
        ok = claripy.Not(bad)
        if solver.satisfiable(extra_constraints=[ok]):
            if forking_enabled():
                raise self._fork_request([Target(ok, "value"), Target(bad, "error", kind, msg)], what)
            self._set_aside_fault(kind, msg, bad)
            self.state.add_constraints(ok)
            return
        self._fault(kind, msg)

    def _set_aside_fault(self, kind: str, message: str, bad) -> None:
        """Outside a step nothing can fork: the state keeps the inputs that do not fault, and the
        fault, with an input that produces it, is recorded in ``state.ram.faults_outside_step`` and
        logged, never dropped."""
        err = self.state.copy()
        err.add_constraints(bad)
        info = MemoryErrorInfo.of(err, kind, f"{message} (outside a step: the state keeps the other inputs)")
        space = self.state.ram
        space.faults_outside_step = (*space.faults_outside_step, info)
        log.warning("angr-ram: %s", info)

    def _fork_request(self, targets: list[Target], what: str):
        """A ForkRequest carrying the in-step path constraints (for the error targets)."""
        return ForkRequest(targets, what, tuple(self.state.solver.constraints))
