"""Exits whose guard is a constant, taken without copying the state.

Under angr's default ``COPY_STATES`` option every conditional exit of a VEX block copies the state
(``HeavyVEXMixin._perform_vex_stmt_Exit``), also when the guard is concrete: a guard that is
``False`` gives a copy that angr then drops as unsatisfiable, a guard that is ``True`` lets the
original run the rest of the block under a ``False`` guard. On concrete code (a library's
start-up, SQLite opening a database) that copy was a quarter of a step's time. Inside angr-ram
steps a constant guard is handled as angr itself handles it without ``COPY_STATES``: ``False``
goes on with the block, ``True`` is the block's exit; a symbolic guard keeps angr's behaviour.
What changes for a user: a run with ``save_unsat`` no longer lists those never-taken exits among
the unsatisfiable states. An engine mixin (:mod:`angr_ram.core.engines`).
"""

from __future__ import annotations

import claripy
from angr import sim_options as o
from angr.engines.vex.heavy.heavy import HeavyVEXMixin, VEXEarlyExit

from angr_ram.memory.strategies.fork import forking_enabled


class ConstantExitsMixin(HeavyVEXMixin):
    """angr's exit statement; inside angr-ram steps one whose guard is a constant under
    ``COPY_STATES`` copies nothing (module docstring)."""

    def _perform_vex_stmt_Exit(self, guard, target, jumpkind):
        if guard.op != "BVV" or o.COPY_STATES not in self.state.options or not forking_enabled():
            return super()._perform_vex_stmt_Exit(guard, target, jumpkind)   # symbolic: angr computes it once
        if guard.concrete_value == 0:
            return None
        self.successors.add_successor(self.state, target, claripy.true(), jumpkind, exit_stmt_idx=self.stmt_idx,
                                      exit_ins_addr=self.state.scratch.ins_addr)
        raise VEXEarlyExit
