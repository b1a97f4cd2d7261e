"""Heap overflows: reported, and, where the run asks for it, carried out as glibc's heap would.

A pointer computed from one heap object's base that lands outside it (``name[k]`` with ``k`` past
the name's 24 bytes) is an overflow. angr-ram reports it as an ``out-of-bounds`` error path with
its input in either mode of the ``heap_overflows`` option:

- ``"stop"`` (the CLI and ``explore()``, KLEE's way): the error path is the path's end. An access
  based on one object that lands inside another (past the red zone) is reported too; before,
  only the red zone between them was.
- ``"continue"`` (a script's technique): the error path is reported *beside* the path, which goes
  on with the access carried out where the native heap puts those bytes. Heap objects are laid out
  as glibc's allocator lays out a fresh heap's chunks (:mod:`~angr_ram.memory.chunk_layout`: the
  slack of each chunk, then the next chunk's size field, then the next object), the bytes between
  objects are plain memory, and the neighbour's bytes are the neighbour's. A script that steps
  until the handler in the next chunk is symbolic finds it, as with stock angr, and its input
  overflows the same way natively. One report per (instruction, object): a loop that runs past an
  object forks once.

Not modelled (a native run may differ): glibc's stdio buffers allocated between a program's own
allocations, reuse of freed chunks (tcache), the chunk headers' contents (reads of them give
memory's default content) and glibc's integrity checks on corrupted headers. Symbolic offsets that
may leave an object still end in an error path in both modes, and objects merged into a segment
(dsmm) are laid out as the segment's.
"""

from __future__ import annotations

import claripy
from angr.storage.memory_mixins.memory_mixin import MemoryMixin

from angr_ram.core.errors import AngrRamError, ForkRequest, InfeasibleAccess, Target
from angr_ram.memory.address_space import AddressSpace
from angr_ram.memory.chunk_layout import HEAP_REACH
from angr_ram.memory.memory_object import MemoryObject
from angr_ram.memory.strategies.fork import forking_enabled
from angr_ram.memory.strategies.resolution import Hit
from angr_ram.solver.substitution import BASE_PREFIX

HEAP_OVERFLOWS = ("auto", "stop", "continue")


def check_heap_overflows(mode: str) -> str:
    """``mode`` if it is one of :data:`HEAP_OVERFLOWS`, else a clear error."""
    if mode not in HEAP_OVERFLOWS:
        raise AngrRamError(f"unknown heap_overflows {mode!r}; use one of {', '.join(HEAP_OVERFLOWS)}")
    return mode


def overflow_source(space: AddressSpace, addr, hit: MemoryObject | None) -> MemoryObject | None:
    """The heap object that ``addr`` (the program's address expression) is based on, when the
    access lands outside it (``hit``: the object it lands in, or None for a gap); None when the
    address is that object's, carries no base or several, or the objects are not plain heap
    allocations (segments and split chunks keep their own accounting)."""
    if isinstance(addr, int) or not addr.symbolic:
        return None
    if hit is not None and hit.name is not None and hit.name in addr.variables:
        return None
    names = [v for v in addr.variables if v.startswith(BASE_PREFIX)]
    if len(names) != 1:
        return None
    binding = space.bindings.get(names[0])
    if binding is None or binding[0] is not None:
        return None
    src = space.objects.get(space._ids.get(binding[1], -1))
    if src is None or src.kind != "heap" or src is hit or (hit is not None and hit.kind != "heap"):
        return None
    return src


def overflowed(space: AddressSpace, addr, c: int, h: Hit) -> MemoryObject | None:
    """The heap object an access at concrete ``c`` (classified as ``h``) overflows, or None when
    it is not an overflow of one: inside its own object, or a fault of another kind."""
    if h.kind == "object":
        return overflow_source(space, addr, h.obj)
    if h.kind != "error" or h.error != "out-of-bounds" or h.region is not None or not space.in_heap_range(c):
        return None
    src = overflow_source(space, addr, None)
    if src is None and h.obj is not None and h.obj.kind == "heap":       # starts inside an object, runs past its end
        src = h.obj
    if src is None and h.below is not None and h.below.kind == "heap":   # in the bytes after an object
        src = h.below
    if src is None or abs(c - (src.addr + src.size)) > HEAP_REACH:       # a wild access: the fault stands
        return None
    return src


class HeapOverflowMixin(MemoryMixin):
    """Reports a heap overflow at a concrete address and, under ``heap_overflows="continue"``,
    carries the access out over the objects and the plain memory between them (module
    docstring). Sits above angr's address concretization: the plain memory is the memory below."""

    def _heap_overflow(self, addr, c: int, size: int, h: Hit, what: str, condition) -> bool:
        """Handle an access at ``c`` classified ``h``; True when it is an overflow that goes on
        (the caller then carries it out with :meth:`_overflow_load` or :meth:`_overflow_store`),
        False when it is none (or one the caller's fault handling reports)."""
        space = self.state.ram
        src = overflowed(space, addr, c, h)
        if src is None:
            return False
        end = c + size - 1
        span = f"{c:#x}..{end:#x}" if size > 1 else f"{c:#x}"
        obj = f"heap object #{src.id} (size {src.size}, allocated at {src.site:#x})"
        if c >= src.addr:
            past = end - (src.addr + src.size) + 1
            message = f"{what} of {size} byte{'s' if size != 1 else ''} at {span} runs past {obj} by {past} byte{'s' if past != 1 else ''}"
        else:
            message = f"{what} of {size} byte{'s' if size != 1 else ''} at {span} lands before {obj}"
        if space.heap_overflows != "continue":
            if h.kind == "object":      # based on one object, inside another: the fault is the first's
                self._fault("out-of-bounds", message, c, condition)
            return False
        self._report_beside(message, src, condition)
        return True

    def _report_beside(self, message: str, src: MemoryObject, condition) -> None:
        """The overflow as an error path beside this one, once per (instruction, object) on a path:
        inside a step a fork whose other side re-executes the step knowing it was reported;
        outside one, recorded in ``state.ram.faults_outside_step``."""
        state = self.state
        loc = state.scratch.ins_addr or state.addr or 0
        key = f"ram_overflow_{loc:x}_{src.id}"
        if key in state.globals:
            return
        bad = condition if condition is not None and condition.symbolic else claripy.true()
        if condition is not None and condition.is_false():
            raise InfeasibleAccess
        message += " (reported beside the path, which goes on as natively: heap_overflows='continue')"
        if forking_enabled():
            raise ForkRequest([Target(claripy.true(), "value", hint=(key, True)),
                               Target(bad, "error", "out-of-bounds", message)],
                              "heap overflow", tuple(state.solver.constraints))
        state.globals[key] = True
        self._set_aside_fault("out-of-bounds", message, bad)

    def _pieces(self, c: int, size: int):
        """``[c, c+size)`` cut at objects' edges: ``(start, length, object or None)`` in order."""
        space = self.state.ram
        out, at, end = [], c, c + size
        while at < end:
            found = space.find(at)
            if found is not None:
                obj = found[0]
                n = min(end, obj.addr + max(obj.size, 1)) - at
                out.append((at, n, obj))
            else:
                nxt = space.next_start(at)
                n = (min(end, nxt) if nxt is not None else end) - at
                out.append((at, n, None))
            at += n
        return out

    def _overflow_load(self, c: int, size: int, endness):
        """The ``size`` bytes at ``c`` over objects and the memory between them."""
        parts = []
        for at, n, obj in self._pieces(c, size):
            if obj is None:
                parts.append(super().load(at, n, endness="Iend_BE"))
            else:
                parts.append(obj.store.read(at - obj.addr, n))
        v = parts[0] if len(parts) == 1 else claripy.Concat(*parts)
        return v.reversed if endness == "Iend_LE" and size > 1 else v

    def _overflow_store(self, c: int, value, size: int, condition) -> None:
        """Store ``value`` (``size`` bytes in memory order) at ``c`` over objects and the memory
        between them; ``condition`` guards it."""
        space = self.state.ram
        hi = size * 8 - 1
        for at, n, obj in self._pieces(c, size):
            skip = (at - c) * 8
            part = claripy.Extract(hi - skip, hi - skip - n * 8 + 1, value) if n != size else value
            if obj is None:
                super().store(at, part, n, endness="Iend_BE", condition=condition)
                continue
            obj = space.writable(obj.id)
            off = at - obj.addr
            if condition is not None:
                part = claripy.If(condition, part, obj.store.read(off, n))
            obj.store.write(off, part, n)
