"""Instructions that user mode may not execute: natively the process dies with ``SIGSEGV``
(a general-protection fault), where angr runs them on: ``in`` returns an unconstrained value,
``out`` does nothing (VEX dirty helpers), ``cli``/``sti`` end their block with the jump kind
``Ijk_Privileged`` that angr follows like a plain jump. The helpers' calls fault here (through the
dirty-call seam of :mod:`angr_ram.memory.extended_precision`); the jump kind is turned into the
error path by :func:`angr_ram.run.native_faults.move_privileged_exits`.
"""

from __future__ import annotations

from angr_ram.core.errors import MemoryFault

# VEX dirty helper -> the instruction it stands for
PRIVILEGED_HELPERS = {"amd64g_dirtyhelper_IN": "in", "amd64g_dirtyhelper_OUT": "out",
                      "x86g_dirtyhelper_IN": "in", "x86g_dirtyhelper_OUT": "out"}


def privileged_fault(state, helper: str) -> MemoryFault:
    """The fault of executing ``helper``'s instruction at the state's current instruction."""
    ins = state.scratch.ins_addr
    at = f" at {ins:#x}" if isinstance(ins, int) else ""
    return MemoryFault("segfault", f"{PRIVILEGED_HELPERS[helper]}{at}: an I/O port instruction in user mode",
                       None, tuple(state.solver.constraints))
