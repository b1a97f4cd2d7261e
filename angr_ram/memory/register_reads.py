"""Plain register reads straight to the register file's pages.

angr reads a register through the whole memory-mixin stack (name resolution, data normalization,
inspect, actions, under-constrained, size and address concretization, conditions) before the
paged layer, about 25 µs per read; angr's own step reads the instruction pointer some eight times
(hook lookup, history, successors, call stack). For a read by offset or plain register name with
an int size, no condition or fallback, and nothing that those layers act on (a SimInspect
breakpoint when ``inspect`` is on, ``AUTO_REFS``/``AST_DEPS`` when actions are on,
``UNDER_CONSTRAINED_SYMEXEC``), every one of them passes the read through unchanged: this layer
sends it straight to ``PagedMemoryMixin.load`` with the arguments the stack would have given it.
Names angr resolves specially (``flags``, x87 ``st0``-``st7``/``tag0``-``tag7``) and every other
read take angr's path.
"""

from __future__ import annotations

from angr import sim_options as o
from angr.storage.memory_mixins.memory_mixin import MemoryMixin
from angr.storage.memory_mixins.name_resolution_mixin import stn_map, tag_map
from angr.storage.memory_mixins.paged_memory.paged_memory_mixin import PagedMemoryMixin

_PLAIN = frozenset({"inspect", "disable_actions", "events", "endness"})
_SPECIAL_NAMES = frozenset({"flags", "eflags", "rflags", *stn_map, *tag_map})


def breakpoints(state) -> bool:
    """Whether ``state`` has any SimInspect breakpoint."""
    return state.supports_inspect and any(state.inspect._breakpoints.values())


def _passed_through(state, kwargs) -> bool:
    """Whether angr's layers above the pages would pass a read with ``kwargs`` through unchanged."""
    if not _PLAIN.issuperset(kwargs):
        return False
    options = state.options
    if o.UNDER_CONSTRAINED_SYMEXEC in options:
        return False
    if not kwargs.get("disable_actions", False) and (o.AUTO_REFS in options or o.AST_DEPS in options):
        return False
    return not (kwargs.get("inspect", True) and breakpoints(state))


class PlainRegisterReadMixin(MemoryMixin):
    """Sends plain register reads to the paged layer (module docstring)."""

    def load(self, addr, size=None, **kwargs):
        if self.category == "reg" and _passed_through(self.state, kwargs):
            if type(addr) is str and addr not in _SPECIAL_NAMES:
                loc = self.state.arch.registers.get(addr)
                if loc is not None:
                    addr, size = loc[0], loc[1] if size is None else size
            if type(addr) is int and type(size) is int:
                kwargs.pop("disable_actions", None)
                return PagedMemoryMixin.load(self, addr, size, condition=None, action=None, **kwargs)
        return super().load(addr, size, **kwargs)
