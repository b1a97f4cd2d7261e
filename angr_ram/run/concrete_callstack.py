"""angr's call-stack bookkeeping on concrete stack and instruction pointers.

After every step angr's ``CallStack._manage`` reads the instruction and stack pointers through the
register file several times, and compares the stack pointer with the frames' through the solver
(``solver.is_true(sp > frame.stack_ptr)``): on concrete code about a tenth of a step. While
:func:`~angr_ram.run.step_policy.concrete_enabled`, a state whose instruction and stack
pointers (and, after a call, the return address the call pushed) are constants is handled here on
ints, with angr's own rules: a call pushes a frame (call site, function, stack pointer, return
address); any other jump pops every frame whose stack pointer lies below the current one
(unsigned, as claripy compares). Anything else (symbolic values, SimInspect breakpoints, a
``symbolizer`` plugin, an architecture whose calls do not push the return address) is angr's.

:class:`IntCallStack` is angr's ``CallStack`` with that ``_manage``; the engine's
:class:`IntCallStackMixin` gives a stepped state's top frame that class (frames it pushes keep it),
and outside angr-ram steps it is angr's own.
"""

from __future__ import annotations

from angr.engines.successors import SuccessorsEngine
from angr.state_plugins.callstack import CallStack

from angr_ram.memory.register_reads import breakpoints
from angr_ram.run.concrete_blocks import follow_call_stack
from angr_ram.run.integer_ops import value_of
from angr_ram.run.step_policy import concrete_enabled


class IntCallStack(CallStack):
    """angr's call stack; its bookkeeping after a step on ints (module docstring)."""

    def _manage(self):
        if not concrete_enabled():
            return super()._manage()
        state = self.state
        arch = state.arch
        if (arch.sp_offset is None or not arch.call_pushes_ret or state.has_plugin("symbolizer")
                or breakpoints(state)):
            return super()._manage()
        ip = value_of(state.registers.load(arch.ip_offset, arch.bytes))
        sp = value_of(state.registers.load(arch.sp_offset, arch.bytes))
        if type(ip) is not int or type(sp) is not int:
            return super()._manage()
        jumpkind, ret_addr = state.history.jumpkind, None
        if jumpkind == "Ijk_Call":
            ret_addr = value_of(state.memory.load(sp, arch.bytes, endness=arch.memory_endness))
            if type(ret_addr) is not int:
                return super()._manage()
        follow_call_stack(self, jumpkind, state.history.recent_bbl_addrs[-1], ip, sp, ret_addr)
        return None


class IntCallStackMixin(SuccessorsEngine):
    """Engine mixin: inside angr-ram steps, the stepped state's top call frame (its own copy) is an
    :class:`IntCallStack`."""

    def process_successors(self, successors, **kwargs):
        state = self.state
        if concrete_enabled() and state.has_plugin("callstack") and type(state.callstack) is CallStack:
            state.callstack.__class__ = IntCallStack
        return super().process_successors(successors, **kwargs)
