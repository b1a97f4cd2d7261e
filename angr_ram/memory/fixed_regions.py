"""Fixed regions: the address ranges that are not heap objects (loaded objects, the stack, angr's
own heap; :func:`fixed_regions`), and symbolic addresses into them: every feasible
address of the region, found from the address's interval and alignment, up to
:data:`REGION_LIMIT` candidates (a whole table of up to :data:`TABLE_LIMIT` bytes for a read); an
address with too many is judged arm by arm, and what is still too large ends as an error path
``symbolic-range-too-large`` instead of being silently concretized.

:class:`FixedRegionMixin` is a base of :class:`~angr_ram.memory.relocatable.RelocatableMixin`; it
defines no ``load``/``store`` of its own, so ``super()`` in its methods is the memory below.
"""

from __future__ import annotations

import angr
import claripy
from angr.storage.memory_mixins.memory_mixin import MemoryMixin

from angr_ram.core.errors import ForkRequest, Target
from angr_ram.memory.declared import declared_objects
from angr_ram.memory.object_store import known_alignment, select
from angr_ram.memory.strategies.arms import value_arms
from angr_ram.memory.strategies.fork import forking_enabled
from angr_ram.memory.strategies.intervals import unsigned_range
from angr_ram.memory.strategies.resolution import Hit, in_interval
from angr_ram.memory.strategies.value_sets import possible_values

REGION_LIMIT = 4096
EDGE_PROBES = 3            # brackets of 1, 2 and 4 values tried next to a bound of an address's interval
# a read whose candidates lie inside one table (a declared array, one section of a loaded object)
# may have this many: 64 KiB tables are read completely, not ended as symbolic-range-too-large
TABLE_LIMIT = 1 << 16
SPAN_MIN = 8        # a store through a symbolic address with more candidates than this is one store of their span
SPAN_LIMIT = 4096   # ... when they span at most this many bytes
ARMS_LIMIT = 64     # arms of a too-large region address judged one by one (each: at most 3 solver calls)


# angr's brk heap (SimHeapBrk) maps its whole default region (8 MiB, 2048 pages) the first time a
# procedure touches it, and every state copy then walks those pages (reference counts on copy and
# on release): a third of the run time on small programs. Heap objects live in angr-ram's address
# space, so angr's own heap only holds what its procedures allocate internally (ctype tables);
# angr-ram maps this much of it up front and leaves the rest of the range to be mapped on use.
BRK_HEAP_MAPPED = 64 * 1024


def fixed_regions(project, state) -> list[tuple[int, int, str]]:
    """Address ranges that are not heap objects: loaded objects, the stack, angr's own heap."""
    regions = []
    for obj in project.loader.all_objects:
        if obj.max_addr > obj.min_addr:
            regions.append((obj.min_addr, obj.max_addr + 1, obj.binary_basename or repr(obj)))
    mem = state.memory
    stack_end = getattr(mem, "_stack_end", None) or state.arch.initial_sp
    stack_size = getattr(mem, "_stack_size", None) or 8 * 1024 * 1024
    regions.append((stack_end - max(stack_size, 0x800000) * 4, stack_end + 0x10000, "stack"))
    heap_base = angr.state_plugins.heap.heap_base.DEFAULT_HEAP_LOCATION
    regions.append((heap_base, heap_base + angr.state_plugins.heap.heap_base.DEFAULT_HEAP_SIZE, "angr-heap"))
    regions.sort()
    merged: list[list] = []
    for lo, hi, name in regions:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
            merged[-1][2] += "+" + name
        else:
            merged.append([lo, hi, name])
    return [tuple(r) for r in merged]


def cover_loaded(state, addr: int) -> None:
    """Make the loaded object holding ``addr`` a fixed region of ``state``'s address space if it is
    not one yet: cle maps a new extern object when the first is full, after the regions were
    taken (a procedure's constant strings, :func:`angr_ram.posix.startup.static_string`), and
    a symbolic pointer into it was an out-of-bounds error."""
    space = state.plugins.get("ram")
    if space is None or space.region_of(addr) is not None:
        return
    obj = state.project.loader.find_object_containing(addr, membership_check=False)
    if obj is not None:
        space.regions = (*space.regions, (obj.min_addr, obj.max_addr + 1, obj.binary_basename or repr(obj)))


class FixedRegionMixin(MemoryMixin):
    """Loads and stores at a symbolic address inside one fixed region (see the module docstring)."""

    def _region_candidates(self, a, size, h: Hit, table_ok: bool = False) -> list[int]:
        """The start addresses ``a`` may take in the fixed region of ``h``: the values resolution
        enumerated when they are few, or the values ``a``'s structure allows (in the region), else
        every address from the minimum to the maximum in the region at ``a``'s known alignment."""
        if h.values is not None:
            return sorted(h.values)
        if a.symbolic and a.depth > 1:     # an if-then-else over constants (a string search's index):
            vals = possible_values(self.state, a)    # its leaves, no solver call; a superset
            if vals is not None:
                return [v for v in vals if h.lo <= v <= h.hi]
        lo, hi = self._extremes(a, h)
        stride = min(known_alignment(a, 8), 8)
        count = (hi - lo) // stride + 1
        if count > REGION_LIMIT and not (table_ok and count <= TABLE_LIMIT and self._one_table(lo, hi + size)):
            return self._arm_candidates(a, h, in_interval(a, h.lo, h.hi), count)
        return list(range(lo, hi + 1, stride))

    def _extremes(self, a, h: Hit) -> tuple[int, int]:
        """The least and greatest values of ``a`` in the region of ``h``. The interval ``a``'s
        structure puts it in (:func:`~angr_ram.memory.strategies.intervals.unsigned_range`: a base plus
        a byte index) is searched from its ends first: the few values next to a bound (a string's
        NUL excluded by the loop condition) are probed in :data:`EDGE_PROBES` brackets of 1, 2, 4
        values, and the extremum is then sought inside the first bracket that has a value, not
        across the whole region (about 2 log2 of the region's size checks)."""
        solver = self.state.solver
        s_lo, s_hi = unsigned_range(a)
        r_lo, r_hi = max(h.lo, s_lo), min(h.hi, s_hi)
        informative = r_lo <= r_hi and (s_lo >= h.lo or s_hi <= h.hi)
        if not informative:
            within = [in_interval(a, h.lo, h.hi)]
            return solver.min(a, extra_constraints=within), solver.max(a, extra_constraints=within)
        lo = self._edge(a, r_lo, r_hi, up=True) if s_lo >= h.lo else None
        if lo is None:
            lo = solver.min(a, extra_constraints=[in_interval(a, r_lo, r_hi)])
        hi = self._edge(a, lo, r_hi, up=False) if s_hi <= h.hi else None
        if hi is None:
            hi = solver.max(a, extra_constraints=[in_interval(a, lo, r_hi)])
        return lo, hi

    def _edge(self, a, lo: int, hi: int, up: bool) -> int | None:
        """The least (``up``) or greatest value of ``a`` in ``[lo, hi]`` when it lies within a few
        values of that end (brackets of 1, 2, 4, ... values from it), else None."""
        solver = self.state.solver
        width = 1
        for _ in range(EDGE_PROBES):
            if lo > hi:
                return None
            b_lo, b_hi = (lo, min(lo + width - 1, hi)) if up else (max(hi - width + 1, lo), hi)
            bracket = [in_interval(a, b_lo, b_hi)]
            if solver.satisfiable(extra_constraints=bracket):
                if b_lo == b_hi:
                    return b_lo
                return solver.min(a, extra_constraints=bracket) if up else solver.max(a, extra_constraints=bracket)
            lo, hi = (b_hi + 1, hi) if up else (lo, b_lo - 1)
            width *= 2
        return None

    def _one_table(self, lo: int, end: int) -> bool:
        """Whether ``[lo, end)`` lies inside one table: a declared stack or global array
        (:mod:`~angr_ram.memory.declared`) or one section of a loaded object (``.rodata``,
        ``.data``, ``.bss``)."""
        state = self.state
        if declared_objects(state.project).containing(state, lo, end):
            return True
        obj = state.project.loader.find_object_containing(lo)
        find = getattr(obj, "find_section_containing", None)
        sec = find(lo) if find is not None else None
        return sec is not None and sec.min_addr <= lo and end - 1 <= sec.max_addr

    def _arm_candidates(self, a, h: Hit, within, count: int) -> list[int]:
        """The candidates of an address whose range in the region of ``h`` is too large, arm by arm
        (:func:`~angr_ram.memory.strategies.arms.value_arms`): a table entry selected at a symbolic index
        is one narrow arm, an uninitialized word read past the table a wide one. The narrow arms'
        addresses are the candidates; the wide arms' inputs are forked off as one error path
        ``symbolic-range-too-large`` (an analysis limit, with its input), so they never hide the
        narrow arms' paths. A single wide arm (or too many arms) ends the access as before."""
        too_large = f"symbolic address spans {count} candidates in {h.describe()} (limit {REGION_LIMIT})"
        arms = value_arms(a, ARMS_LIMIT)
        if arms is None or len(arms) < 2:
            self._fault("symbolic-range-too-large", too_large)
        solver = self.state.solver
        cands: set[int] = set()
        wide = []
        for guard, v in arms:
            cond = [within] if guard is None else [within, guard]
            if not v.symbolic:
                if h.lo <= v.concrete_value <= h.hi:
                    cands.add(v.concrete_value)
                continue
            if not solver.satisfiable(extra_constraints=cond):
                continue
            lo, hi = solver.min(v, extra_constraints=cond), solver.max(v, extra_constraints=cond)
            stride = min(known_alignment(v, 8), 8)
            if (hi - lo) // stride + 1 <= REGION_LIMIT:
                cands.update(range(lo, hi + 1, stride))
            else:
                wide.append(claripy.And(*cond))
        if len(cands) > REGION_LIMIT or (wide and not cands):
            self._fault("symbolic-range-too-large", too_large)
        if wide:
            if not forking_enabled():
                self._fault("symbolic-range-too-large", too_large)
            spans = claripy.Or(*wide) if len(wide) > 1 else wide[0]
            raise ForkRequest([Target(claripy.Not(spans), "value"),
                               Target(spans, "error", "symbolic-range-too-large",
                                      f"{too_large}: an arm of the address's selection is unbounded")],
                              "region access", tuple(solver.constraints))
        return sorted(cands)

    def _region_load(self, addr, a, size, h, endness, kwargs):
        cands = self._region_candidates(a, size, h, table_ok=True)
        sup = super()
        if len(cands) > REGION_LIMIT:         # a big table: one load of its span, sliced per candidate
            lo = cands[0]
            span = sup.load(lo, cands[-1] - lo + size, endness="Iend_BE", **kwargs)
            order = "little" if endness == "Iend_LE" else "big"
            if not span.symbolic:
                raw = span.concrete_value.to_bytes(span.length // 8, "big")
                return select(addr, cands, lambda c: claripy.BVV(
                    int.from_bytes(raw[c - lo:c - lo + size], order), size * 8), None)
            top = span.length - 1

            def piece(c):
                v = claripy.Extract(top - (c - lo) * 8, top - (c - lo + size) * 8 + 1, span)
                return v.reversed if order == "little" and size > 1 else v
            return select(addr, cands, piece, None)
        return select(addr, cands, lambda c: sup.load(c, size, endness=endness, **kwargs), None)

    def _region_store(self, addr, a, data, size, h, endness, guard, kwargs):
        cands = self._region_candidates(a, size, h)
        sup = super()
        if len(cands) > SPAN_MIN and max(cands) + size - min(cands) <= SPAN_LIMIT:
            self._span_store(sup, addr, cands, data, size, endness, guard, kwargs)
            return
        for c in cands:
            cond = addr == c if len(cands) > 1 else None
            if guard is not None:
                cond = guard if cond is None else claripy.And(cond, guard)
            sup.store(c, data, size, endness=endness, condition=cond, **kwargs)

    @staticmethod
    def _span_store(sup, addr, cands, data, size, endness, guard, kwargs):
        """The store at each candidate as one store of the bytes they span: byte ``p`` becomes
        ``If(addr == c, data's byte p - c, old)`` over the candidates ``c`` that cover it (a
        ``buf[strcspn(buf, "\\n")] = 0`` over a 99-byte line: one load and one store instead of
        99 conditional stores, 0.25 s). The conditions exclude one another, as the candidates'
        stores did."""
        lo, hi = min(cands), max(cands) + size
        old = sup.load(lo, hi - lo, endness="Iend_BE")
        d = data.reversed if endness == "Iend_LE" and size > 1 else data
        top = hi - lo
        out = [claripy.Extract(8 * (top - p) - 1, 8 * (top - p) - 8, old) for p in range(top)]
        for c in cands:
            cond = addr == c
            if guard is not None:
                cond = claripy.And(cond, guard)
            for j in range(size):
                p = c - lo + j
                out[p] = claripy.If(cond, claripy.Extract(8 * (size - j) - 1, 8 * (size - j) - 8, d), out[p])
        sup.store(lo, claripy.Concat(*out), top, endness="Iend_BE", **kwargs)
