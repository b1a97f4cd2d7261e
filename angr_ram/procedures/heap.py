"""malloc / calloc / realloc / free (and the aligned allocators) SimProcedures that allocate
relocatable memory objects.

Each allocation creates a :class:`~angr_ram.memory.memory_object.MemoryObject` and returns its
base as the program-visible pointer. A symbolic size becomes the object's ``limit`` (its capacity
is the largest feasible value up to ``max_symbolic_size``; larger values are forked off as an
error path); a concrete size above ``MAX_ALLOCATION`` ends the path as an error path. ``free`` and ``realloc`` resolve their pointer
completely (every object whose base it may equal, NULL, and "not a heap object").
"""

from __future__ import annotations

import angr
import claripy

from angr_ram.core.errors import ForkRequest, MemoryFault, Target
from angr_ram.memory.strategies.fork import forking_enabled, value_forking_enabled
from angr_ram.procedures.libc import single_value

MAX_ALLOCATION = 1 << 30


def _context(state, k: int) -> tuple[int, ...]:
    """Call sites of the innermost ``k`` frames (the allocating call first)."""
    out = []
    for frame in state.callstack:
        if len(out) >= k:
            break
        out.append(frame.call_site_addr or 0)
    return tuple(out)


def allocation_size(state, size, what: str) -> tuple[int, object, int]:
    """``(capacity, limit, smallest size)`` of an allocation of ``size`` bytes.

    A concrete size is its own capacity (``limit`` None). A symbolic size keeps its expression as
    the object's ``limit`` (segment-offset-plane section 3: bounds checks compare offsets with
    it); the capacity is its largest feasible value. Values above the address space's
    ``max_symbolic_size`` are forked off as an error path, so a size that can exceed the cap
    reports an input that does; a size that always exceeds it is an error path.
    """
    space = state.ram
    s = space.substitute(size)
    if not s.symbolic:
        v = s.concrete_value
        if v > MAX_ALLOCATION:
            raise MemoryFault("allocation-too-large", f"{what} of {v} bytes exceeds the limit of {MAX_ALLOCATION}")
        return v, None, v
    cap = space.max_symbolic_size
    solver = state.solver
    lo = solver.min(size)
    hi = solver.max(size)
    if lo == hi:
        return allocation_size(state, claripy.BVV(lo, size.length), what)
    if lo > cap:
        raise MemoryFault("symbolic-allocation-size",
                          f"{what} with a symbolic size of at least {lo} bytes (max_symbolic_size is {cap})")
    if hi > cap:
        within = claripy.ULE(size, cap)
        if forking_enabled():
            raise ForkRequest([Target(within, "value"),
                               Target(claripy.Not(within), "error", "symbolic-allocation-size",
                                      f"{what} with a symbolic size above max_symbolic_size ({cap} bytes)")],
                              f"{what} size", tuple(solver.constraints))
        state.add_constraints(within)
        hi = solver.max(size)
    return hi, size, lo


def resolve_heap_pointer(state, ptr, what: str, known: tuple | None = None):
    """The object whose base ``ptr`` equals on this path; None for NULL. Forks or faults otherwise.
    ``known``: what :func:`heap_targets` already gave for ``ptr``."""
    targets, found = known if known is not None else heap_targets(state, ptr, what)
    if len(targets) == 1:       # one value on this path (a fork's re-execution lands here): no fork
        (v, obj), t = found[0], targets[0]
        if t.kind == "error":
            raise MemoryFault(t.error, t.message, v)
        return obj
    if forking_enabled():
        raise ForkRequest(targets, what)
    raise MemoryFault("ambiguous-free", f"{what} of a pointer that may be one of {len(targets)} objects")


def _freed_targets(state, obj, cond, what: str) -> list[Target]:
    """The targets of ``ptr`` being ``obj`` (``cond``): an error where ``obj`` is already freed."""
    if obj.freed:
        return [Target(cond, "error", "double-free" if what == "free" else "use-after-free",
                       f"{what} of object #{obj.id} (allocated at {obj.site:#x}) which was already freed")]
    if obj.freed_when is None or not state.solver.satisfiable(extra_constraints=(cond, obj.freed_when)):
        return [Target(cond, "object", obj_id=obj.id)]
    error = Target(claripy.And(cond, obj.freed_when), "error", "double-free" if what == "free" else "use-after-free",
                   f"{what} of object #{obj.id} (allocated at {obj.site:#x}), which is freed on these inputs")
    if not state.solver.satisfiable(extra_constraints=(cond, claripy.Not(obj.freed_when))):
        return [error]
    return [Target(claripy.And(cond, claripy.Not(obj.freed_when)), "object", obj_id=obj.id), error]


def heap_targets(state, ptr, what: str) -> tuple[list[Target], list]:
    """What ``ptr`` (given to ``free``, ``realloc``, ...) may be on this path: the targets (NULL,
    a live object, an error) and, per target, its value and object. Raises MemoryFault when it
    is one invalid value."""
    space = state.ram
    p = space.substitute(ptr)
    if not p.symbolic:
        v = p.concrete_value
        if v == 0:
            return [Target(claripy.true(), "value")], [(0, None)]
        obj = space.object_at_base(v)
        if obj is None:
            raise MemoryFault("invalid-free", f"{what} of {v:#x}, which is not the start of a heap object", v)
        targets = _freed_targets(state, obj, claripy.true(), what)
        return targets, [(v, obj)] * len(targets)
    targets: list[Target] = []
    found = []          # (value, object or None) per target
    excl = []
    while True:
        try:
            vals = state.solver.eval_upto(p, 1, extra_constraints=excl)
        except angr.errors.SimUnsatError:      # every value excluded (angr raises, claripy's may return [])
            vals = []
        if not vals:
            break
        v = vals[0]
        obj = space.object_at_base(v) if v else None
        if v == 0:
            targets.append(Target(ptr == 0, "value"))
            found.append((v, obj))
        elif obj is not None:
            these = _freed_targets(state, obj, p == v if obj.freed else ptr == obj.base, what)
            targets += these
            found += [(v, obj)] * len(these)
        else:
            targets.append(Target(p == v, "error", "invalid-free", f"{what} of {v:#x}, not a heap object start"))
            found.append((v, obj))
        excl.append(p != v)
        if len(targets) > 4096:
            raise MemoryFault("invalid-free", f"{what} of a pointer with too many possible values")
    if not targets:
        raise angr.errors.SimUnsatError("no feasible pointer value")
    return targets, found


def malloc_object(state, sim_size):
    """``malloc(size)``: a fresh object with uninitialized (unconstrained) contents; its address."""
    n, limit, low = allocation_size(state, sim_size, "malloc")
    return allocate(state, n, zero=False, limit=limit, min_size=low).base


def calloc_object(state, sim_nmemb, sim_size):
    """``calloc(nmemb, size)``: a fresh zero-filled object; its address."""
    # multiply in 128 bits: an overflowing nmemb * size is "too large", not a small wrap-around
    total = sim_nmemb.zero_extend(128 - sim_nmemb.length) * sim_size.zero_extend(128 - sim_size.length)
    n, limit, low = allocation_size(state, total, "calloc")
    if limit is not None:
        limit = claripy.Extract(63, 0, limit)      # at most max_symbolic_size: fits
    return allocate(state, n, zero=True, limit=limit, min_size=low).base


def free_object(state, ptr) -> None:
    """``free(ptr)``: marks the object freed; invalid and double frees become error paths. A pointer
    that may be one of several objects or NULL, none of them already freed (``free(table[h])``
    with ``h`` from the input), frees each object on the inputs where it is the one: nothing forks
    here, and an access to such an object later forks off the inputs that freed it as a
    use-after-free path (a loop that frees every entry of a hash table forked once per entry)."""
    targets, found = heap_targets(state, ptr, "free")
    if len(targets) > 1 and all(t.kind != "error" for t in targets):
        for t, (_, obj) in zip(targets, found, strict=True):
            if t.kind == "object":
                state.ram.free_when(obj.id, t.constraint)
        return
    obj = resolve_heap_pointer(state, ptr, "free", (targets, found))
    if obj is not None:
        state.ram.free_allocation(obj.id)


class RamMalloc(angr.SimProcedure):
    """malloc(size): a fresh object with uninitialized (unconstrained) contents."""

    def run(self, sim_size):  # pylint: disable=arguments-differ
        return malloc_object(self.state, sim_size)


class RamCalloc(angr.SimProcedure):
    """calloc(nmemb, size): a fresh zero-filled object."""

    def run(self, sim_nmemb, sim_size):  # pylint: disable=arguments-differ
        return calloc_object(self.state, sim_nmemb, sim_size)


class RamFree(angr.SimProcedure):
    """free(ptr): marks the object freed; invalid and double frees become error paths."""

    def run(self, ptr):  # pylint: disable=arguments-differ
        free_object(self.state, ptr)


def holds_for_sure(state, cond, what: str) -> bool:
    """Whether ``cond`` holds on every model of the path. Where it may or may not, the state forks on
    it (inside a step that forks on values: RelocatableMemory's, or QuantifiedMerging's alone; ``what`` names the fork), or, outside one, takes the case where it does not."""
    if cond.is_true() or cond.is_false():
        return cond.is_true()
    can = state.solver.satisfiable(extra_constraints=(cond,))
    can_not = state.solver.satisfiable(extra_constraints=(claripy.Not(cond),))
    if can and can_not:
        if value_forking_enabled():
            raise ForkRequest([Target(cond, "value"), Target(claripy.Not(cond), "value")], what)
        state.add_constraints(claripy.Not(cond))
        return False
    return can


def realloc_object(state, ptr, sim_size):
    """``realloc(ptr, size)`` as :class:`RamRealloc` describes it; the new object's address (or NULL)."""
    old = resolve_heap_pointer(state, ptr, "realloc")
    if old is not None:
        size = state.ram.substitute(sim_size)
        if size.symbolic and holds_for_sure(state, size == 0, "realloc size"):
            size = claripy.BVV(0, size.length)
        if not size.symbolic and size.concrete_value == 0:
            state.ram.free_allocation(old.id)
            return claripy.BVV(0, state.arch.bits)
    n, limit, low = allocation_size(state, sim_size, "realloc")
    if old is None:
        return allocate(state, n, zero=False, limit=limit, min_size=low).base
    space = state.ram
    new = allocate(state, n, zero=False, limit=limit, min_size=low)
    new = space.writable(new.id)
    store, off = space.contents(old)
    if off or store.size != old.size:
        store = store.slice(off, off + old.size)
    new.store = store.resized(n, new.store.fills[0].symbol if new.store.fills else None)
    space.free_allocation(old.id)
    return new.base


class RamRealloc(angr.SimProcedure):
    """realloc(ptr, size): a new object holding the old contents; the old one is freed.

    glibc's semantics: ``realloc(NULL, n)`` is ``malloc(n)`` (a fresh object, also for n = 0),
    ``realloc(p, 0)`` frees ``p`` and returns NULL. A pointer that may designate several objects
    forks once per object (and once per invalid designation, an error path); a size that may be 0
    or not forks on that too."""

    def run(self, ptr, sim_size):  # pylint: disable=arguments-differ
        return realloc_object(self.state, ptr, sim_size)


class RamReallocarray(RamRealloc):
    """reallocarray(ptr, nmemb, size): ``realloc(ptr, nmemb * size)``, or NULL (``ptr`` untouched)
    when the product overflows 64 bits (a product that may or may not overflow forks on it)."""

    def run(self, ptr, nmemb, size):  # pylint: disable=arguments-differ
        state = self.state
        wide = nmemb.zero_extend(64) * size.zero_extend(64)
        over = wide[127:64] != 0
        if over.symbolic or state.ram.substitute(wide).symbolic:
            if holds_for_sure(state, over, "reallocarray overflow"):
                return claripy.BVV(0, state.arch.bits)
        elif over.is_true():
            return claripy.BVV(0, state.arch.bits)
        return super().run(ptr, wide[63:0])


def usable_size(n):
    """glibc's usable size of a chunk for a request of ``n`` bytes (an int or a BV): the chunk is
    ``n + 8`` rounded up to 16, at least 32 bytes, less its 8-byte header."""
    if isinstance(n, int):
        return max(32, (n + 8 + 15) & ~15) - 8
    chunk = (n + 23) & ~15
    return claripy.If(claripy.ULT(chunk, 32), claripy.BVV(32, n.length), chunk) - 8


class RamMallocUsableSize(angr.SimProcedure):
    """malloc_usable_size(ptr): glibc's usable size of the object ``ptr`` designates (0 for NULL);
    a pointer that may designate several objects forks once per object, like free."""

    def run(self, ptr):  # pylint: disable=arguments-differ
        obj = resolve_heap_pointer(self.state, ptr, "malloc_usable_size")
        if obj is None:
            return claripy.BVV(0, self.state.arch.bits)
        n = obj.limit if obj.limit is not None else obj.size
        v = usable_size(n)
        if not isinstance(v, int):
            return v.zero_extend(self.state.arch.bits - v.length) if v.length < self.state.arch.bits else v
        return claripy.BVV(v, self.state.arch.bits)


MAX_ALIGNMENT = 1 << 20
EINVAL = 22


def _alignment(state, alignment, what: str) -> int:
    """The single value of ``alignment`` (a symbolic alignment or one above ``MAX_ALIGNMENT`` is
    an error path)."""
    a = single_value(state, alignment)
    if a is None:
        raise MemoryFault("symbolic-alignment", f"{what} with a symbolic alignment")
    if a > MAX_ALIGNMENT:
        raise MemoryFault("allocation-too-large", f"{what} with an alignment of {a} (above {MAX_ALIGNMENT})")
    return a


def _aligned(state, alignment: int, sim_size, what: str):
    """A fresh object whose hidden address is a multiple of ``alignment`` (at least 16)."""
    n, limit, low = allocation_size(state, sim_size, what)
    align = 1 << max(alignment - 1, 15).bit_length()      # the next power of two, at least 16
    return allocate(state, n, zero=False, limit=limit, min_size=low, align=align)


class RamPosixMemalign(angr.SimProcedure):
    """posix_memalign(memptr, alignment, size): an aligned object written to ``*memptr``; EINVAL
    when the alignment is not a power of two multiple of ``sizeof(void *)`` (nothing allocated)."""

    def run(self, memptr, alignment, sim_size):  # pylint: disable=arguments-differ
        a = _alignment(self.state, alignment, "posix_memalign")
        if a < 8 or a & (a - 1):
            return claripy.BVV(EINVAL, 32)
        obj = _aligned(self.state, a, sim_size, "posix_memalign")
        self.state.memory.store(memptr, obj.base, endness=self.state.arch.memory_endness)
        return claripy.BVV(0, 32)


class RamMemalign(angr.SimProcedure):
    """memalign(alignment, size) and aligned_alloc(alignment, size): an aligned object (an
    alignment that is not a power of two is rounded up, as glibc does)."""

    def run(self, alignment, sim_size):  # pylint: disable=arguments-differ
        a = _alignment(self.state, alignment, "memalign")
        return _aligned(self.state, a, sim_size, "memalign").base


class RamValloc(angr.SimProcedure):
    """valloc(size): a page-aligned object."""

    def run(self, sim_size):  # pylint: disable=arguments-differ
        return _aligned(self.state, 4096, sim_size, "valloc").base


def allocate(state, n: int, zero: bool, limit=None, min_size: int | None = None, align: int = 16):
    """Create an object of ``n`` bytes (at most, when ``limit`` is a symbolic size) for the current
    call site, at a hidden address that is a multiple of ``align``."""
    space = state.ram
    uninit = None
    if not zero and angr.options.ZERO_FILL_UNCONSTRAINED_MEMORY not in state.options:
        uninit = claripy.BVS(f"ram_uninit_{space.next_id}", max(n, 1) * 8)
    ctx = _context(state, space.context_k)
    site = ctx[0] if ctx else state.addr
    return space.allocate(n, site=site, context=ctx, uninit=uninit, limit=limit, min_size=min_size, align=align)


HEAP_PROCEDURES = {
    "malloc": RamMalloc,
    "calloc": RamCalloc,
    "free": RamFree,
    "realloc": RamRealloc,
    "reallocarray": RamReallocarray,
    "posix_memalign": RamPosixMemalign,
    "memalign": RamMemalign,
    "aligned_alloc": RamMemalign,
    "valloc": RamValloc,
    "malloc_usable_size": RamMallocUsableSize,
}


# angr's procedures that allocate what libc itself keeps (start-up tables, FILE objects): those stay
# at angr's fixed brk addresses; the program never frees them
LIBC_OWNED = tuple(angr.SIM_PROCEDURES[lib][name] for lib, name in
                   (("glibc", "__libc_start_main"), ("libc", "fopen"), ("posix", "fdopen")))


class RamHeap(angr.SimHeapBrk):
    """``state.heap`` for angr-ram's states: what angr's own procedures allocate for the program
    (``strdup``, ``strndup``, ``getline``'s buffer, ``realloc`` called by them) are angr-ram heap
    objects, as ``malloc`` gives, so that the program may free or grow them: with angr's brk heap,
    GNU make's ``free`` of a ``strdup`` copy was a false invalid-free error on its one path. What
    libc keeps for itself (:data:`LIBC_OWNED`) stays in angr's brk heap."""

    def _ours(self) -> bool:
        proc = self.state.scratch.sim_procedure
        return self.state.has_plugin("ram") and not isinstance(proc, LIBC_OWNED)

    def _malloc(self, sim_size):
        return malloc_object(self.state, sim_size) if self._ours() else super()._malloc(sim_size)

    def _calloc(self, sim_nmemb, sim_size):
        return calloc_object(self.state, sim_nmemb, sim_size) if self._ours() else super()._calloc(sim_nmemb, sim_size)

    def _realloc(self, ptr, size):
        return realloc_object(self.state, ptr, size) if self._ours() else super()._realloc(ptr, size)

    def _free(self, ptr):
        if self._ours():
            free_object(self.state, ptr)
            return claripy.BVV(0, self.state.arch.bits)
        return super()._free(ptr)
