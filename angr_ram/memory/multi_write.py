"""Stores of symbolic length into one heap object as one guarded multi-write."""

from __future__ import annotations

import claripy
from angr.storage.memory_mixins.memory_mixin import MemoryMixin

from angr_ram.core.errors import InfeasibleAccess
from angr_ram.memory.strategies.resolution import classify


class MultiWriteMixin(MemoryMixin):
    """Sits above angr's ``SizeConcretizationMixin``: a store of symbolic length into a heap
    object (``read(fd, buf, len)``, ``memcpy(d, s, len)``) becomes one guarded multi-write in the
    object's store (see :meth:`RelocatableMixin._multi_store`) instead of one conditional store
    per feasible length."""

    def store(self, addr, data, size=None, *, condition=None, endness=None, **kwargs):
        if (self.category == "mem" and isinstance(size, claripy.ast.BV) and size.symbolic
                and self._multi_store(addr, data, size, endness, condition)):
            return None
        return super().store(addr, data, size=size, condition=condition, endness=endness, **kwargs)

    def _multi_store(self, addr, data, length, endness, condition) -> bool:
        """Store the first ``length`` (symbolic) bytes of ``data`` at ``addr`` as one multi-write
        when ``addr`` is a concrete offset into one heap object; False leaves the store to angr.
        Bounds: a length that may run past the object (or its symbolic size) forks the faulting
        lengths off as an error path."""
        addr, a = self._route(addr)
        if a is None or a.symbolic or self._dead():
            return False
        if condition is not None and not condition.symbolic and condition.is_false():
            return True
        c = a.concrete_value
        h = classify(self.state.ram, c, 1)
        if h.kind != "object":
            return False
        obj = h.obj
        off = c - obj.addr
        n = len(data) // 8
        solver = self.state.solver
        try:
            n = min(n, solver.max(length))
        except Exception:  # noqa: BLE001 - an unsat path: nothing is written
            return True
        if n <= 0:
            return True
        wide = length if length.length >= 64 else claripy.ZeroExt(64 - length.length, length)
        msg = f"write of symbolic length runs past object #{obj.id} (size {obj.size}, allocated at {obj.site:#x})"
        try:
            if off + n > obj.size:
                self._split_off(claripy.UGT(wide, obj.size - off), msg, "write", condition)
            if obj.limit is not None and (obj.min_size is None or off + n > obj.min_size):
                self._split_off(claripy.UGT(wide + off, obj.limit), msg, "write", condition)
        except InfeasibleAccess:
            return True
        n = min(n, obj.size - off)
        obj = self.state.ram.writable(obj.id)
        value = self._convert_in(data, endness or self.endness, n)
        guard = condition if condition is not None and condition.symbolic else None
        obj.store.write_multi(off, value, n, wide, guard)
        if self.state.ram.stats is not None:
            self.state.ram.stats.multi_writes += 1
        return True
