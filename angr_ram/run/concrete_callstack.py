"""angr's call-stack bookkeeping on concrete stack and instruction pointers.

After every step angr's ``CallStack._manage`` reads the instruction and stack pointers through the
register file several times, and compares the stack pointer with the frames' through the solver
(``solver.is_true(sp > frame.stack_ptr)``): on concrete code about a tenth of a step. While
:func:`~angr_ram.run.concrete_blocks.concrete_enabled`, a state whose instruction and stack
pointers (and, after a call, the return address the call pushed) are constants is handled here on
ints, with angr's own rules: a call pushes a frame (call site, function, stack pointer, return
address); any other jump pops every frame whose stack pointer lies below the current one
(unsigned, as claripy compares). Anything else (symbolic values, SimInspect breakpoints, a
``symbolizer`` plugin, an architecture whose calls do not push the return address) is angr's.
"""

from __future__ import annotations

from angr.state_plugins.callstack import CallStack

from angr_ram.core.patches import PatchSet
from angr_ram.memory.register_reads import breakpoints
from angr_ram.run.concrete_blocks import concrete_enabled, follow_call_stack
from angr_ram.run.integer_ops import value_of

CONCRETE_CALLSTACK = PatchSet("concrete-callstack", concrete_enabled)


@CONCRETE_CALLSTACK.patch(CallStack, "_manage")
def manage_concrete(original, self):
    """angr's ``CallStack._manage``; constant pointers are compared as ints (module docstring)."""
    state = self.state
    arch = state.arch
    if (arch.sp_offset is None or not arch.call_pushes_ret or state.has_plugin("symbolizer")
            or breakpoints(state)):
        return original(self)
    ip = value_of(state.registers.load(arch.ip_offset, arch.bytes))
    sp = value_of(state.registers.load(arch.sp_offset, arch.bytes))
    if type(ip) is not int or type(sp) is not int:
        return original(self)
    jumpkind, ret_addr = state.history.jumpkind, None
    if jumpkind == "Ijk_Call":
        ret_addr = value_of(state.memory.load(sp, arch.bytes, endness=arch.memory_endness))
        if type(ret_addr) is not int:
            return original(self)
    follow_call_stack(self, jumpkind, state.history.recent_bbl_addrs[-1], ip, sp, ret_addr)
    return None
