"""The relocatable address space: memory objects with symbolic bases and their address constraints.

A state plugin (``state.ram``). Each heap allocation creates a :class:`~.memory_object.MemoryObject` whose base the
program sees as a fresh symbol ``ram_base_*``; the hidden concrete address lives only in the
*address constraints* (``bindings``), which are substituted into expressions before solver queries
and address resolution and never stored in the path constraints. Relocating an object therefore
changes one binding and no constraint.

Objects are copy-on-write between forked states: a copy shares every object until one is written.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import replace

import claripy
from angr.errors import SimMergeError
from angr.state_plugins.plugin import SimStatePlugin

from angr_ram.memory.chunk_layout import chunk_span
from angr_ram.memory.memory_object import MemoryObject
from angr_ram.memory.object_store import ObjectStore
from angr_ram.memory.strategies.plans import ForkModel
from angr_ram.solver.seed_constants import store_constants
from angr_ram.solver.substitution import BASE_PREFIX, Substitution

HEAP_BASE = 0x1000_0000_0000
HEAP_LIMIT = 0x1400_0000_0000      # per-state allocations
SEGMENT_BASE = HEAP_LIMIT          # run-wide range for reused segments (same key, same address)
SEGMENT_LIMIT = 0x1800_0000_0000
ALIGN = 16
RED_ZONE = 32


class AddressSpace(SimStatePlugin):
    """Heap objects, their address constraints, and the relocation primitive."""

    def __init__(self, symbolic_bases: bool = True, context_k: int = 4, regions=(), stats=None,
                 model=None, splitter=None, cache=None, base_sizes=None, max_symbolic_size: int = 64 * 1024):
        super().__init__()
        self.max_symbolic_size = max_symbolic_size   # cap on the largest value of a symbolic allocation size
        self.cache = cache                 # run-wide QueryCache or None
        self.base_sizes = base_sizes if base_sizes is not None else {}  # run-wide: base name -> size
        # run-wide: resolutions of addresses to fixed regions, valid in every path whose constraints
        # extend the ones they were found under (see strategies/resolution.py)
        self.resolved: dict = {}
        self.model = model if model is not None else ForkModel()  # multiple-resolution model, shared by the run
        self.splitter = splitter           # split policy or None, shared by the run
        self.symbolic_bases = symbolic_bases
        self.context_k = context_k
        self.regions = tuple(regions)      # fixed (non-heap) ranges: (lo, hi, name)
        self.stats = stats
        self.objects: dict[int, MemoryObject] = {}
        self._starts: list[int] = []       # sorted hidden addresses of placed objects
        self._ids: dict[int, int] = {}     # hidden address -> object id
        self.bindings: dict[str, tuple[int | None, int]] = {}  # name -> (segment id|None, offset|address)
        self.next_addr = HEAP_BASE
        self.next_id = 1
        self._owned: set[int] = set()
        self._shared = False               # _starts, _ids and bindings are shared with a copy
        self._memo: dict = {}              # substitution memo shared until a relocation
        self._subst: Substitution | None = None
        self._embedded: frozenset | None = frozenset()  # base names embedded in segments
        self.error = None                  # MemoryErrorInfo once this state is an error path
        self.in_step = False               # set by the technique while it steps this state
        self.lets = 0                      # let-bound reads on this path (names them deterministically)
        self.solver_timeout: int | None = None   # ms per z3 call for this state's solver (None: claripy's)
        self.unknown: str | None = None    # why this state's feasibility is unknown (``unknown`` stash)
        self.resumed = False               # set aside once and resumed: no first-pass budget any more
        self.deferred_at: int | None = None  # the block whose first-pass step deferred it (run.passes)
        self.memory_scale = 1              # times the step memory budget its steps get (raised on a retry)
        self.scope = None                  # the run's RunScope (memos, counters), shared by reference
        self.faults_outside_step: tuple = ()   # MemoryErrorInfo of faults met where no fork was possible
        self.angr_concretizes = False      # the script's options ask angr to concretize symbolic addresses
                                           # (run/user_options.py): those that cannot reach the heap go to angr
        self.heap_overflows = "stop"       # or "continue": glibc's layout, overflows go on (memory/heap_overflows.py)

    # ------------------------------------------------------------------ plugin protocol
    @SimStatePlugin.memo
    def copy(self, memo):  # pylint: disable=unused-argument
        o = AddressSpace.__new__(AddressSpace)
        SimStatePlugin.__init__(o)
        o.symbolic_bases, o.context_k, o.regions, o.stats = (
            self.symbolic_bases, self.context_k, self.regions, self.stats)
        o.model, o.splitter, o.cache, o.base_sizes = self.model, self.splitter, self.cache, self.base_sizes
        o.resolved = self.resolved
        o.max_symbolic_size = self.max_symbolic_size
        o.objects = dict(self.objects)
        o._starts = self._starts           # shared until either side changes them
        o._ids = self._ids
        o.bindings = self.bindings
        o._shared = self._shared = True
        o.next_addr, o.next_id = self.next_addr, self.next_id
        o._owned = set()
        self._owned = set()                # both sides must copy before writing
        o._memo, o._subst, o._embedded = self._memo, self._subst, self._embedded
        o.error = self.error
        o.in_step = False
        o.lets = self.lets
        o.solver_timeout, o.unknown, o.resumed = self.solver_timeout, self.unknown, self.resumed
        o.memory_scale, o.deferred_at = self.memory_scale, self.deferred_at
        o.scope = self.scope
        o.faults_outside_step = self.faults_outside_step
        o.angr_concretizes = self.angr_concretizes
        o.heap_overflows = self.heap_overflows
        return o

    def merge(self, others, merge_conditions, common_ancestor=None):  # pylint: disable=unused-argument
        try:
            if all(o.objects == self.objects and o.bindings == self.bindings for o in others):
                return False
        except Exception as e:  # noqa: BLE001 - a comparison that cannot answer refuses the merge
            raise SimMergeError(f"angr-ram: heap objects cannot be compared ({e})") from e
        raise SimMergeError("angr-ram: states with different heap objects cannot be merged by angr's merge")

    def widen(self, others):  # pylint: disable=unused-argument
        return False

    def __repr__(self) -> str:
        objs = self.objects.values()
        heap = sum(o.kind == "heap" for o in objs)
        counts = [f"{heap} heap objects", f"{sum(o.freed and o.kind == 'heap' for o in objs)} freed",
                  f"{sum(o.kind == 'segment' for o in objs)} segments", f"{len(self._starts)} placed"]
        if any(o.kind == "chunk" for o in objs):
            counts.append(f"{sum(o.kind == 'chunk' for o in objs)} chunks")
        bases = "symbolic bases" if self.symbolic_bases else "concrete bases"
        err = f", error {self.error.kind}" if self.error is not None else ""
        return f"<AddressSpace {', '.join(counts)}; {bases}, model {self.model.name}{err}>"

    def describe(self, ptr) -> list[str]:
        """What the pointer expression ``ptr`` can point into, one line per target: object (with
        its offsets), fixed region, or faulting range; like angr's ``describe_addr`` but for
        symbolic pointers and relocatable objects. Asks the solver (through the memory layer's
        resolution, :func:`angr_ram.memory.strategies.resolution.describe`), changes nothing."""
        return self.state.memory.describe_pointer(ptr)

    # ------------------------------------------------------------------ substitution
    def substitution(self) -> Substitution:
        """The current address constraints as a memoized substitution."""
        s = self._subst
        if s is None:
            s = Substitution({n: self.concrete_of(n) for n in self.bindings})
            s.memo = self._memo
            self._subst = s
        return s

    def embedded_names(self) -> frozenset:
        """Base names currently embedded in a segment (their objects are contiguous there)."""
        if self._embedded is None:
            self._embedded = frozenset(n for n, (seg, _) in self.bindings.items() if seg is not None)
        return self._embedded

    def substitute(self, e):
        """``e`` with all address constraints substituted (for queries and resolution)."""
        if not self.bindings or isinstance(e, (int, bool)):
            return e
        return self.substitution()(e)

    def concrete_of(self, name: str) -> int:
        """Hidden concrete address bound to the base variable ``name`` (follows segment chains)."""
        seg, off = self.bindings[name]
        while seg is not None:
            o = self.objects[seg]
            if o.name is None:
                return o.addr + off
            seg, off2 = self.bindings[o.name]
            off += off2
        return off

    def _unshare(self) -> None:
        if self._shared:
            self._starts, self._ids, self.bindings = list(self._starts), dict(self._ids), dict(self.bindings)
            self._shared = False

    def _rebind(self, changes: dict[str, tuple[int | None, int]], relocation: bool) -> None:
        self._unshare()
        self.bindings.update(changes)
        if relocation or any(seg is not None for seg, _ in changes.values()):
            self._embedded = None
        if relocation:
            self._subst = None
            self._memo = {}
        elif self._subst is not None:
            for name in changes:
                self._subst.add(name, self.concrete_of(name))

    # ------------------------------------------------------------------ objects
    def writable(self, obj_id: int) -> MemoryObject:
        """The object ``obj_id`` owned by this state (copied on first write after a fork)."""
        o = self.objects[obj_id]
        if obj_id not in self._owned:
            o = replace(o, store=o.store.copy())
            self.objects[obj_id] = o
            self._owned.add(obj_id)
        return o

    def _place(self, obj: MemoryObject, addr: int) -> None:
        self._unshare()
        insort(self._starts, addr)
        self._ids[addr] = obj.id
        obj.addr = addr

    def _unplace(self, obj: MemoryObject) -> None:
        self._unshare()
        self._starts.remove(obj.addr)
        del self._ids[obj.addr]
        obj.addr = None

    def _reserve(self, size: int, align: int = ALIGN, native: bool = False) -> int:
        """A free hidden address for ``size`` bytes; ``native``: the next one is glibc's next chunk."""
        addr = -(-self.next_addr // align) * align
        span = max(size, 1)
        self.next_addr = addr + (chunk_span(size) if native else ((span + RED_ZONE + ALIGN - 1) // ALIGN) * ALIGN)
        if self.next_addr > HEAP_LIMIT:
            raise MemoryError("angr-ram: hidden heap address range exhausted")
        return addr

    def allocate(self, size: int, site: int = 0, context: tuple[int, ...] = (), uninit=None,
                 at: int | None = None, kind: str = "heap", limit=None, min_size: int | None = None,
                 align: int = ALIGN) -> MemoryObject:
        """Create an object of ``size`` bytes; ``uninit`` is its default-contents symbol (None: zeros).

        ``at`` places it at a given hidden address (the caller guarantees the range is free).
        ``limit`` is a symbolic size whose largest value is ``size`` and smallest ``min_size``.
        ``align`` (a power of two, at least 16) is kept by every move of the object.
        """
        if align < ALIGN or align & (align - 1):
            raise ValueError(f"alignment must be a power of two of at least {ALIGN}, not {align}")
        oid = self.next_id
        self.next_id += 1
        native = kind == "heap" and align == ALIGN and self.heap_overflows == "continue"
        addr = self._reserve(size, align, native) if at is None else at
        if self.symbolic_bases:
            base = claripy.BVS(f"{BASE_PREFIX}{oid}", 64)
            name = next(iter(base.variables))
        else:
            base, name = claripy.BVV(addr, 64), None
        obj = MemoryObject(oid, base, name, size, site, tuple(context[: self.context_k]),
                           ObjectStore(size, uninit), None, kind=kind, limit=limit, min_size=min_size, align=align)
        self._place(obj, addr)
        self.objects[oid] = obj
        self._owned.add(oid)
        if name is not None:
            self._rebind({name: (None, addr)}, relocation=False)
            self.base_sizes[name] = size
        if self.stats is not None and kind == "heap":
            self.stats.objects += 1
        return obj

    # ------------------------------------------------------------------ partitioning
    def segment_layout(self, obj_ids) -> tuple[list[MemoryObject], list[int], int]:
        """Objects sorted by hidden address, their offsets in a segment (each a multiple of the
        object's alignment, so an over-aligned object stays aligned in a segment aligned like its
        most aligned member), and its size."""
        objs = sorted((self.objects[i] for i in obj_ids), key=lambda o: o.addr)
        offsets, total = [], 0
        for o in objs:
            total = -(-total // o.align) * o.align
            offsets.append(total)
            total += ((max(o.size, 1) + ALIGN - 1) // ALIGN) * ALIGN
        return objs, offsets, total

    def make_segment(self, obj_ids, at: int | None = None, site: int = 0) -> MemoryObject:
        """Merge placed objects into one new segment object (dynamically segmented memory).

        Each object is relocated into the segment (its base becomes ``segment base + offset``) and
        its contents copied; the segment replaces them in the address space. ``at`` gives the
        segment a fixed hidden address (segment reuse).
        """
        objs, offsets, total = self.segment_layout(obj_ids)
        if any(o.name is None or o.addr is None or o.kind == "chunk" for o in objs):
            raise ValueError("only placed objects with symbolic bases can be merged into a segment")
        seg = self.allocate(total, site=site, at=at, kind="segment", align=max(o.align for o in objs))
        for o, off in zip(objs, offsets, strict=True):
            self.relocate_into(o.id, seg.id, off)
        seg.members = tuple(o.id for o in objs)
        if self.stats is not None:
            self.stats.segments += 1
            self.stats.max_segment_size = max(self.stats.max_segment_size, total)
        return seg

    def split(self, obj_id: int, chunk: int) -> list[MemoryObject]:
        """Replace a placed object by adjacent chunks of ``chunk`` bytes (the last may be shorter).

        The chunks get their own symbolic bases and the object's base is re-bound to the first one,
        so every pointer into the object now reaches the chunk that holds the byte.
        """
        obj = self.writable(obj_id)
        if obj.name is None or obj.addr is None:
            raise ValueError("only placed objects with symbolic bases can be split")
        if chunk <= 0 or chunk % 8:
            raise ValueError(f"chunk size must be a positive multiple of 8, not {chunk}")
        start = self._reserve(obj.size, obj.align)
        pieces = []
        for lo in range(0, obj.size, chunk):
            hi = min(lo + chunk, obj.size)
            p = self.allocate(hi - lo, site=obj.site, context=obj.context, at=start + lo, kind="chunk")
            p.store = obj.store.slice(lo, hi)
            p.members = (obj.id,)
            p.anchor = obj.base + lo if lo else obj.base
            pieces.append(p)
        self._unplace(obj)
        obj.parent = (pieces[0].id, 0)
        self._rebind({obj.name: (pieces[0].id, 0)}, relocation=True)
        if self.stats is not None:
            self.stats.splits += 1
            self.stats.max_split_object_size = max(self.stats.max_split_object_size, obj.size)
        return pieces

    def free(self, obj_id: int) -> None:
        """Mark an object freed; its range stays reserved so later accesses are caught."""
        self.writable(obj_id).freed = True

    def free_when(self, obj_id: int, cond) -> None:
        """Mark an allocation (and every chunk of it) freed on the inputs where ``cond`` holds, as
        well as where it was before."""
        for i in [obj_id, *(c.id for c in self.objects.values() if c.kind == "chunk" and c.members == (obj_id,))]:
            obj = self.writable(i)
            obj.freed_when = cond if obj.freed_when is None else claripy.Or(obj.freed_when, cond)

    def find(self, addr: int) -> tuple[MemoryObject, int] | None:
        """The placed object whose range ``[addr, addr+size)`` contains ``addr``, and the offset."""
        i = bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        start = self._starts[i]
        o = self.objects[self._ids[start]]
        if addr < start + max(o.size, 1):
            return o, addr - start
        return None

    def next_start(self, addr: int) -> int | None:
        """The hidden address of the first placed object above ``addr``, or None."""
        i = bisect_right(self._starts, addr)
        return self._starts[i] if i < len(self._starts) else None

    def object_at_base(self, v: int) -> MemoryObject | None:
        """The allocation (heap object, possibly merged into a segment or split) whose base is ``v``."""
        hit = self.find(v)
        if hit is None:
            return None
        o, off = hit
        while o.kind == "segment":
            inner = [self.objects[m] for m in o.members]
            nxt = None
            for m in inner:
                if m.parent is not None and m.parent[1] <= off < m.parent[1] + max(m.size, 1):
                    nxt, off = m, off - m.parent[1]
                    break
            if nxt is None:
                return None
            o = nxt
        if off != 0:
            return None
        if o.kind == "chunk":
            return self.objects[o.members[0]]
        return o

    def contents(self, obj: MemoryObject):
        """The store holding ``obj``'s bytes now, and the offset of ``obj`` in it."""
        if obj.placed and obj.kind != "segment":
            return obj.store, 0
        if obj.parent is not None:
            parent = self.objects[obj.parent[0]]
            if parent.kind == "chunk":  # split: reassemble from the chunks
                whole = ObjectStore(obj.size)
                for c in self.objects.values():
                    if c.kind == "chunk" and c.members == (obj.id,) and c.placed:
                        whole.embed(c.store, c.addr - parent.addr)
                return whole, 0
            store, off = self.contents(parent)
            return store, off + obj.parent[1]
        return obj.store, 0

    def free_allocation(self, obj_id: int) -> None:
        """Free an allocation and, if it was split, every chunk of it."""
        self.free(obj_id)
        for c in list(self.objects.values()):
            if c.kind == "chunk" and c.members == (obj_id,):
                self.free(c.id)

    def placed_objects(self) -> list[MemoryObject]:
        """Objects that currently occupy their own address range, by hidden address."""
        return [self.objects[self._ids[a]] for a in self._starts]

    def stored_constants(self) -> frozenset:
        """Concrete values (``(value, bytes)``) that the placed objects hold at concrete offsets:
        the candidates :mod:`.seeding` places over the input bytes."""
        out: set = set()
        for o in self.placed_objects():
            if o.store is not None:
                out |= store_constants(o.store)
        return frozenset(out)

    def in_heap_range(self, addr: int) -> bool:
        """True if ``addr`` lies in the hidden heap range (so it is an object, a red zone or a gap)."""
        return HEAP_BASE <= addr < SEGMENT_LIMIT

    def object_of_base(self, ptr) -> MemoryObject | None:
        """The object whose base address ``ptr`` (an expression) is, or None."""
        c = self.substitute(ptr)
        if c.symbolic:
            return None
        hit = self.find(c.concrete_value)
        return hit[0] if hit is not None and hit[1] == 0 else None

    # ------------------------------------------------------------------ relocation
    def relocate(self, obj_id: int, new_addr: int | None = None) -> int:
        """Move a placed object to a fresh hidden address (or ``new_addr``), keeping its contents.

        The object's base symbol is re-bound; no path constraint is rewritten. Returns the new
        hidden address. Raises ValueError if ``new_addr`` overlaps another object.
        """
        obj = self.writable(obj_id)
        if obj.addr is None:
            raise ValueError(f"object {obj_id} is embedded in a segment and cannot be moved on its own")
        if obj.name is None:
            raise ValueError("objects with concrete bases (symbolic_bases=False) cannot be relocated")
        if new_addr is None:
            new_addr = self._reserve(obj.size, obj.align)
        else:
            if new_addr % obj.align:
                raise ValueError(f"{new_addr:#x} breaks object {obj_id}'s alignment of {obj.align}")
            self._check_free_range(new_addr, obj.size, ignore=obj_id)
        self._unplace(obj)
        self._place(obj, new_addr)
        self._rebind({obj.name: (None, new_addr)}, relocation=True)
        if self.stats is not None:
            self.stats.relocations += 1
        return new_addr

    def relocate_into(self, obj_id: int, segment_id: int, offset: int) -> None:
        """Relocate an object into another object (a segment) at ``offset``, copying its contents.

        Afterwards the object's base is bound to ``segment base + offset`` and every access through
        it reaches the segment's store.
        """
        obj = self.writable(obj_id)
        seg = self.writable(segment_id)
        if obj.name is None or seg.name is None:
            raise ValueError("only objects with symbolic bases can be relocated into a segment")
        if not 0 <= offset or offset + obj.size > seg.size:
            raise ValueError(f"object of size {obj.size} does not fit segment of size {seg.size} at {offset}")
        if obj.addr is None:
            raise ValueError(f"object {obj_id} is already embedded")
        seg.store.embed(obj.store, offset)
        self._unplace(obj)
        obj.parent = (segment_id, offset)
        self._rebind({obj.name: (segment_id, offset)}, relocation=True)
        if self.stats is not None:
            self.stats.relocations += 1

    def _check_free_range(self, addr: int, size: int, ignore: int | None = None) -> None:
        for o in self.placed_objects():
            if o.id == ignore:
                continue
            if addr < o.addr + o.size + RED_ZONE and o.addr < addr + size + RED_ZONE:
                raise ValueError(f"range {addr:#x}+{size} overlaps object {o.id} at {o.addr:#x}")
        if addr + size + RED_ZONE > self.next_addr:
            self.next_addr = ((addr + size + RED_ZONE + ALIGN - 1) // ALIGN) * ALIGN

    def region_of(self, addr: int):
        """The fixed (non-heap) region containing ``addr``, or None."""
        for r in self.regions:
            if r[0] <= addr < r[1]:
                return r
        return None


AddressSpace.register_default("ram")


def gap_around(space: AddressSpace, v: int) -> tuple[int, int]:
    """The maximal range around ``v`` that holds no placed object and no fixed region."""
    lo, hi = 0, (1 << 64) - 1
    i = bisect_right(space._starts, v) - 1
    if i >= 0:
        o = space.objects[space._ids[space._starts[i]]]
        lo = max(lo, o.addr + max(o.size, 1))
    if i + 1 < len(space._starts):
        hi = min(hi, space._starts[i + 1] - 1)
    for r_lo, r_hi, _ in space.regions:
        if r_hi <= v:
            lo = max(lo, r_hi)
        elif r_lo > v:
            hi = min(hi, r_lo - 1)
    return lo, hi
