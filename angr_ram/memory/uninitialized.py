"""Uninitialized memory as one variable per byte for the life of a run: ``uninit_<memory>_<addr>``.

angr fills a byte that no one wrote with a fresh symbol on the first read (``mem_<addr>_<n>``, a
new counter each time). angr-ram re-executes a block after a fork (one state per target of a
symbolic access, each constrained to its target): the re-executed read made another fresh symbol,
so the fork's constraints named a variable the new state no longer read, and the access forked
again, forever (two stack arrays read at ``b[a[x]]`` with ``x`` out of bounds: 112 error paths, no
finished path). Merging met the same variables as differences between states that never wrote the
byte.

An unwritten byte holds the content memory had when the program started, one value per address
for the whole run: :class:`StableUninitMixin` reads it as the variable ``uninit_<memory>_<addr>``
(the names :mod:`angr_ram.merging.patches` gives the unwritten side of a merge). angr's own
model of unwritten memory (any initial content) is unchanged, so no path is lost; the same read
re-executed, in a fork or in a sibling, names the same variables. ``ZERO_FILL_UNCONSTRAINED_MEMORY``
still reads zeros.
"""

from __future__ import annotations

import claripy
from angr import sim_options as o
from angr.storage.memory_mixins.memory_mixin import MemoryMixin

from angr_ram.core.errors import AngrRamError

# What a technique's ``uninitialized`` option does to the states it manages
UNINITIALIZED = ("auto", "zero", "symbolic")
ZERO_FILL = (o.ZERO_FILL_UNCONSTRAINED_MEMORY, o.ZERO_FILL_UNCONSTRAINED_REGISTERS)
# names of the variables that stand for unwritten content: this module's stable ``uninit_*``, heap
# objects' ``ram_uninit_*`` (plugins.heap, plugins.object_store), angr's own ``mem_*``/``reg_*``
UNWRITTEN_PREFIXES = ("uninit_", "ram_uninit", "mem_", "reg_")


def check_uninitialized(mode: str) -> str:
    """``mode`` if it is one of :data:`UNINITIALIZED`, else a clear error."""
    if mode not in UNINITIALIZED:
        raise AngrRamError(f"unknown uninitialized {mode!r}; use one of {', '.join(UNINITIALIZED)}")
    return mode


def zero_filled(state) -> bool:
    """Whether unwritten memory and registers of ``state`` read as zeros (both options on)."""
    return all(opt in state.options for opt in ZERO_FILL)


def at_process_start(state) -> bool:
    """Whether ``state`` is at the main object's entry point, where a process starts."""
    project = state.project
    addr = state.addr if state.regs.ip.concrete else None
    return project is not None and addr is not None and addr == project.entry


def apply_uninitialized(state, mode: str) -> None:
    """Memory and registers no one wrote read as zeros (``"zero"``: angr's ``ZERO_FILL_*`` options
    on; the first-use content of fresh heap and stack pages and of the registers at a process's
    start on Linux, so a path's test replays natively; KLEE fills them with a constant too) or as
    any value (``"symbolic"``: the options off; one stable ``uninit_`` variable per byte).
    ``"auto"`` (the default) is ``"zero"`` for a state at a process's start (the program's entry
    point: ``entry_state``, ``full_init_state``, the CLI), where a native process reads zeros, and
    leaves the options a script gave any other state as they are (``blank_state``, ``call_state``,
    ``entry_state(addr=...)``: a stack slot the script never set is what angr makes of it, not a
    NULL that ends the path)."""
    if mode == "auto":
        mode = "zero" if at_process_start(state) else None
    if mode == "zero":
        state.options.update(ZERO_FILL)
    elif mode == "symbolic":
        for opt in ZERO_FILL:
            state.options.discard(opt)


def uninit_value(memory_id: str, addr: int, size: int, byte_width: int = 8) -> claripy.ast.BV:
    """The initial content of ``size`` bytes at ``addr`` of memory ``memory_id``: one variable per
    byte, the lowest address most significant (the byte order of angr's pages)."""
    parts = [claripy.BVS(f"uninit_{memory_id}_{addr + i:x}", byte_width, explicit_name=True) for i in range(size)]
    return parts[0] if size == 1 else claripy.Concat(*parts)


class StableUninitMixin(MemoryMixin):
    """Unwritten bytes of memory at a concrete address, and unwritten register bytes, read as their
    ``uninit_`` variables (``uninit_reg_<offset>`` for registers: the register file's content at
    the program's entry is one value per run too; a fresh symbol per read made two forks that read
    ``xmm0`` at different times differ there, and merging refused them: wordcount driven by a
    script with angr's default options merged 650 states where the CLI's set-up merged 279)."""

    def _default_value(self, addr, size, *, name=None, fill_missing: bool = True, **kwargs):
        state = self.state
        if (type(addr) is int and fill_missing
                and not (state.project is not None and state.project.concrete_target)):
            if (self.category == "mem" and name is None
                    and o.ZERO_FILL_UNCONSTRAINED_MEMORY not in state.options):
                return uninit_value(self.id, addr, size, state.arch.byte_width)
            if (self.category == "reg" and o.ZERO_FILL_UNCONSTRAINED_REGISTERS not in state.options
                    and addr != state.arch.ip_offset):
                return uninit_value(self.id, addr, size, state.arch.byte_width)
        return super()._default_value(addr, size, name=name, fill_missing=fill_missing, **kwargs)
