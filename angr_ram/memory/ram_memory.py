"""``RamMemory``: angr's ``DefaultMemory`` composition with angr-ram's layers inserted.

The class is built from ``DefaultMemory``'s own list of mixins, so the layers angr adds or changes
in an upgrade carry over; angr-ram inserts four:

* :class:`~.memory.RelocatableMixin` (with :class:`~.memory_faults.FaultMixin` and
  :class:`~.heap_overflows.HeapOverflowMixin`) directly above
  ``AddressConcretizationMixin``: sizes are ints, names resolved, inspect/actions recorded with
  the symbolic address, and the address is not concretized yet;
* :class:`~.multi_write.MultiWriteMixin` above ``SizeConcretizationMixin``: a store of symbolic
  length becomes one guarded multi-write;
* :class:`SpeculativeFindMixin` above ``SmartFindMixin``: angr's chunked searches are speculative;
* :class:`~.uninitialized.StableUninitMixin` above ``DefaultFillerMixin``: an unwritten byte reads
  as one variable per address for the whole run, not a fresh symbol per read.
"""

from __future__ import annotations

import claripy
from angr.storage.memory_mixins import (
    AddressConcretizationMixin,
    DefaultFillerMixin,
    DefaultMemory,
    SizeConcretizationMixin,
    SmartFindMixin,
)
from angr.storage.memory_mixins.memory_mixin import MemoryMixin

from angr_ram.core.errors import AngrRamError
from angr_ram.memory.heap_overflows import HeapOverflowMixin
from angr_ram.memory.memory_faults import FaultMixin
from angr_ram.memory.multi_write import MultiWriteMixin
from angr_ram.memory.pointers import pointer_cases
from angr_ram.memory.register_reads import PlainRegisterReadMixin
from angr_ram.memory.relocatable import RelocatableMixin
from angr_ram.memory.uninitialized import StableUninitMixin


class SpeculativeFindMixin(MemoryMixin):
    """Marks the loads of angr's ``find`` (strlen, strchr, memchr... search in chunks of 129
    bytes) as speculative: a chunk that may leave its object is not a program error; angr then
    retries the search byte by byte, where a real over-read is still reported.

    A start address that selects among a few strings (``buf + strspn(buf, " ")``: symbolic after
    the address constraints are substituted) is searched once per value, each search from a
    concrete address (whose chunks are clipped at the object's end), and the results are joined
    as an if-then-else on the pointer's value; chunks from the symbolic address itself would run
    past the object for some values and end the path in a false error."""

    _speculative = False

    def find(self, addr, data, max_search, **kwargs):
        prev = self._speculative
        self._speculative = True
        try:
            split = self._find_by_cases(addr, data, max_search, kwargs)
            if split is not None:
                return split
            return super().find(addr, data, max_search, **kwargs)
        finally:
            self._speculative = prev

    def _find_by_cases(self, addr, data, max_search, kwargs):
        """``find`` from each value of a selected start address, joined; None when ``addr`` is
        concrete after substitution or has no few readable values."""
        state = self.state
        if isinstance(addr, int) or not addr.symbolic or not state.has_plugin("ram"):
            return None
        if not state.ram.substitute(addr).symbolic:
            return None
        cases = pointer_cases(state, addr)
        if not cases:
            return None
        found = [(cond, super(SpeculativeFindMixin, self).find(p, data, max_search, **kwargs))
                 for cond, p, _ in cases]
        r = found[-1][1][0]
        for cond, (rk, _, _) in reversed(found[:-1]):
            r = claripy.If(cond, rk, r)
        constraints = []
        if any(ck for _, (_, ck, _) in found):
            constraints.append(claripy.Or(*(claripy.And(cond, *ck) if ck else cond for cond, (_, ck, _) in found)))
        indices = sorted(set().union(*(ik for _, (_, _, ik) in found)))
        return r, constraints, indices


def compose(default=DefaultMemory) -> tuple[type, ...]:
    """The mixins of ``default`` with angr-ram's layers inserted above the ones they wrap."""
    bases = list(default.__bases__)
    for anchor, layers in ((AddressConcretizationMixin, (RelocatableMixin, FaultMixin, HeapOverflowMixin)),
                           (SizeConcretizationMixin, (MultiWriteMixin,)),
                           (SmartFindMixin, (SpeculativeFindMixin,)),
                           (DefaultFillerMixin, (StableUninitMixin,))):
        if anchor not in bases:
            raise AngrRamError(f"angr's DefaultMemory has no {anchor.__name__}: this angr version is not supported")
        i = bases.index(anchor)
        bases[i:i] = layers
    return tuple(bases)


def compose_registers(default=DefaultMemory) -> tuple[type, ...]:
    """The mixins of ``default`` for the register file: :class:`PlainRegisterReadMixin` on top and
    :class:`StableUninitMixin` inserted."""
    bases = list(default.__bases__)
    if DefaultFillerMixin not in bases:
        raise AngrRamError("angr's DefaultMemory has no DefaultFillerMixin: this angr version is not supported")
    i = bases.index(DefaultFillerMixin)
    bases[i:i] = [StableUninitMixin]
    return (PlainRegisterReadMixin, *bases)


RamRegisters = type("RamRegisters", compose_registers(), {
    "__doc__": "angr's DefaultMemory for the register file: plain reads go straight to the pages, unwritten "
               "bytes have stable names.",
    "__module__": __name__,
})

RamMemory = type("RamMemory", compose(), {
    "__doc__": "angr's DefaultMemory with angr-ram's relocatable, multi-write, speculative-find and stable-uninitialized layers.",
    "__module__": __name__,
})


def check_manageable(state) -> None:
    """A clear error unless ``state``'s memory is angr's default paged memory, whose class
    angr-ram's memory extends (a ``blank_state(mode="static")`` of angr's analyses has an abstract
    memory: changing its class would fail later, in ``copy()``)."""
    if type(state.memory) is not DefaultMemory:
        raise AngrRamError(f"angr-ram manages states with angr's default memory; this state's memory is "
                           f"{type(state.memory).__name__} (a blank_state(mode=...) of angr's analyses?): "
                           "step it without RelocatableMemory")
