"""Bad control flow ended as the hardware ends it: a path whose next instruction cannot run natively
is an error path of the fault's kind, with its input, not an ``errored`` record (issue 83, item 1).

A computed jump that lands inside an instruction (``goto *(&&label + offset)``) or on data makes
the processor decode bytes that were never meant as code. VEX answers as the hardware would, but
angr does not carry it through: an undecodable instruction raises ``SimIRSBNoDecodeError`` (the
hardware raises #UD: SIGILL), and a block ending in a signal jump (``Ijk_SigTRAP`` of ``int3``,
``Ijk_SigSEGV`` of a misaligned ``movaps``, ``Ijk_SigILL`` of ``ud2``) raises ``AngrExitError``.
VEX ends a ``hlt`` with ``Ijk_SigTRAP`` too, but in user mode ``hlt`` is privileged: #GP, SIGSEGV.
Each kind names the signal a native run dies of (:data:`FAULT_SIGNALS`); replay confirms a test of
one only when the native run is killed by that signal. (``in``/``out`` and other privileged
instructions are faults too: :mod:`angr_ram.memory.privileged`.)
"""

from __future__ import annotations

import angr

from angr_ram.memory.strategies.jumps import invalid_target

# error kind -> the signal that kills the native process
FAULT_SIGNALS = {"illegal-instruction": 4, "trap": 5, "bus-error": 7, "arithmetic-fault": 8, "segfault": 11}
_JUMP_KINDS = {"Ijk_SigILL": "illegal-instruction", "Ijk_SigTRAP": "trap", "Ijk_SigBUS": "bus-error",
               "Ijk_SigSEGV": "segfault", "Ijk_SigFPE": "arithmetic-fault",
               "Ijk_SigFPE_IntDiv": "arithmetic-fault", "Ijk_SigFPE_IntOvf": "arithmetic-fault"}
HLT, INT3 = 0xF4, 0xCC


def native_fault(rec) -> tuple[str, str] | None:
    """``(kind, message)`` of the native fault an ``errored`` record stands for, or None when the
    error is angr's own (a limit of the analysis, not of the program). A jump to an address that
    holds no code is an ``invalid-jump-target`` (:func:`.jumps.invalid_target`)."""
    state, err = rec.state, rec.error
    if invalid_target(state):
        return "invalid-jump-target", f"jump to {state.addr:#x}, which holds no code"
    if isinstance(err, angr.errors.SimIRSBNoDecodeError):
        return "illegal-instruction", f"undecodable instruction at {_addr(state)}"
    if not isinstance(err, angr.errors.AngrExitError):
        return None
    jumpkind = state.history.jumpkind
    kind = _JUMP_KINDS.get(jumpkind)
    if kind is None:
        return None
    if jumpkind == "Ijk_SigTRAP":
        last = _byte_before(state)
        if last == HLT:
            return "segfault", f"hlt before {_addr(state)}: privileged in user mode"
        if last == INT3:
            return "trap", f"int3 before {_addr(state)}"
        return "trap", f"trap before {_addr(state)}"
    return kind, f"{jumpkind[4:]} at {_addr(state)}"


def move_privileged_exits(out: dict, mark, stash: str) -> None:
    """Successors in ``out[None]`` that left their block by ``Ijk_Privileged`` (``cli``, ``sti``:
    angr follows the jump) become ``segfault`` error paths in ``stash``, marked by ``mark(state,
    kind, message)``: natively the instruction kills the process (see
    :mod:`angr_ram.memory.privileged`)."""
    succ = out.get(None)
    if not succ or all(s.history.jumpkind != "Ijk_Privileged" for s in succ):
        return
    out[None] = [s for s in succ if s.history.jumpkind != "Ijk_Privileged"]
    for s in succ:
        if s.history.jumpkind == "Ijk_Privileged":
            mark(s, "segfault", f"privileged instruction before {_addr(s)} in user mode")
            out.setdefault(stash, []).append(s)


def _addr(state) -> str:
    ip = state.regs.ip
    return "a symbolic address" if ip.symbolic else f"{ip.concrete_value:#x}"


def _byte_before(state) -> int | None:
    ip = state.regs.ip
    if ip.symbolic:
        return None
    try:
        return state.project.loader.memory.load(ip.concrete_value - 1, 1)[0]
    except KeyError:
        return None
