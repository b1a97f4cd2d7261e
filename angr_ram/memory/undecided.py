"""Paths whose feasibility z3 could not decide in time: recognised, and kept apart one by one.

A branch that forks a path checks each successor's feasibility with z3 (angr's
``SimSuccessors._categorize_successor``). When one of those checks times out, angr lets the error
end the whole step, so the successors that *were* decidable are lost with it: a hash-table lookup
of a symbolic key, asked "hash equal and keys differ" (unsat only if the hash is injective, which
z3 cannot show in any budget), would also drop "hash equal and keys equal", the path that finds
the key. Inside angr-ram steps an undecided successor is instead kept with
``state.ram.unknown`` set to the reason, and the technique sets it aside (stash ``deferred`` or
``unknown``) while its siblings go on. An engine mixin (:mod:`angr_ram.core.engines`) gives each
step's successors the class :class:`UndecidedSuccessors`, angr's own with this one method more.
"""

from __future__ import annotations

import claripy
from angr.engines.successors import SimSuccessors, SuccessorsEngine

from angr_ram.memory.strategies.fork import forking_enabled
from angr_ram.solver.z3_check import gave_up


class UndecidedSuccessors(SimSuccessors):
    """angr's successors of a step; inside angr-ram steps a successor with a concrete target (not a
    syscall) whose feasibility check gives up is kept, marked undecided, instead of ending the step."""

    def _categorize_successor(self, state):
        try:
            return super()._categorize_successor(state)
        except Exception as e:
            reason = gave_up(e)
            target = state.scratch.target
            if (reason is None or not forking_enabled() or not state.has_plugin("ram") or state.history.jumpkind.startswith("Ijk_Sys")
                    or (isinstance(target, claripy.ast.Base) and target.symbolic)):
                raise
            state.ram.unknown = reason        # angr appended it to all_successors before checking
            if state.ram.stats is not None:
                state.ram.stats.undecided_successors += 1
            self.successors.append(state)
            self.flat_successors.append(state)
            return state


class UndecidedSuccessorsMixin(SuccessorsEngine):
    """Engine mixin (first in the line): the step's successors are :class:`UndecidedSuccessors`."""

    def process_successors(self, successors, **kwargs):
        if type(successors) is SimSuccessors:
            successors.__class__ = UndecidedSuccessors
        return super().process_successors(successors, **kwargs)
