"""The memory plugin: angr's default memory with a relocatable-addressing layer on top.

:class:`RelocatableMixin` sits directly above angr's ``AddressConcretizationMixin`` (sizes are ints,
names resolved, inspect/actions already recorded with the symbolic address). For every access it

1. substitutes the address constraints into the address;
2. concrete result inside the hidden heap range -> the object's store, no solver call;
   concrete elsewhere -> angr's own memory below, with an int address (stack, globals);
3. symbolic result -> complete resolution (:mod:`angr_ram.strategies.resolution`); one in-bounds
   target -> an exact symbolic-offset access (never concretized); several targets or a possible
   fault -> :class:`~angr_ram.errors.ForkRequest` (forking model), or an if-then-else outside a step.

Symbolic addresses into fixed regions (stack, globals) become an if-then-else over every feasible
address of the region (range from the solver, stride from the address's alignment), up to
``region_limit`` candidates; beyond that the path ends as an error path
``symbolic-range-too-large`` instead of being silently concretized.
"""

from __future__ import annotations

import claripy
from angr.storage.memory_mixins import (
    ActionsMixinHigh,
    ActionsMixinLow,
    AddressConcretizationMixin,
    ClemoryBackerMixin,
    ConcreteBackerMixin,
    ConditionalMixin,
    ConvenientMappingsMixin,
    DataNormalizationMixin,
    DefaultFillerMixin,
    DictBackerMixin,
    DirtyAddrsMixin,
    HexDumperMixin,
    InspectMixinHigh,
    NameResolutionMixin,
    PagedMemoryMixin,
    PrivilegedPagingMixin,
    SimplificationMixin,
    SizeConcretizationMixin,
    SizeNormalizationMixin,
    SmartFindMixin,
    StackAllocationMixin,
    SymbolicMergerMixin,
    UltraPagesMixin,
    UnderconstrainedMixin,
    UnwrapperMixin,
)
from angr.storage.memory_mixins.memory_mixin import MemoryMixin

from ..errors import ForkRequest, MemoryFault, Target
from ..strategies.fork import forking_enabled
from ..strategies.resolution import NULL_PAGE, Hit, classify, in_interval, resolve
from .address_space import MemoryObject
from .object_store import known_alignment, select

REGION_LIMIT = 4096


def object_offset(addr, base):
    """``addr - base`` in the program's (unsubstituted) terms, dropping ``base`` when it is a summand."""
    if addr.op == "__add__":
        args = list(addr.args)
        for i, x in enumerate(args):
            if x is base:
                del args[i]
                out = args[0]
                for r in args[1:]:
                    out = out + r
                return out
    return addr - base


def object_constraint(addr, obj: MemoryObject, size: int):
    """Relocation-safe constraint: an access of ``size`` bytes at ``addr`` lies inside ``obj``."""
    start = obj.start
    if obj.size == size:
        return addr == start
    return claripy.And(claripy.UGE(addr, start), claripy.ULE(addr, start + (obj.size - size)))


class RelocatableMixin(MemoryMixin):
    """Memory layer that implements the relocatable addressing model for heap objects."""

    # ------------------------------------------------------------------ entry points
    def _route(self, addr):
        """Where an access goes: ``(int, None)`` for angr's memory below (not heap), or
        ``(program-level address, substituted address)`` for the relocatable layer."""
        if self.category != "mem":
            return addr, None
        space = self.state.ram
        if isinstance(addr, int):
            if addr >= NULL_PAGE and not space.in_heap_range(addr):
                return addr, None
            addr = claripy.BVV(addr, self.state.arch.bits)
        a = space.substitute(addr)
        if not a.symbolic:
            c = a.concrete_value
            if c >= NULL_PAGE and not space.in_heap_range(c):
                return c, None
        return addr, a

    def load(self, addr, size=None, *, endness=None, condition=None, fallback=None, **kwargs):
        addr, a = self._route(addr)
        if a is None:
            return super().load(addr, size, endness=endness, condition=condition, fallback=fallback, **kwargs)
        endness = endness or self.endness
        if not a.symbolic:
            c = a.concrete_value
            h = classify(self.state.ram, c, size)
            self._fault_if_error(h, c, size, "read")
            v = h.obj.store.read(c - h.obj.addr, size, reverse=endness == "Iend_LE")
        else:
            hits = self._resolve(a, size, addr)
            v = self._load_symbolic(addr, a, size, hits, endness, condition, fallback, kwargs)
        if condition is not None and fallback is not None:
            v = claripy.If(condition, v, fallback)
        return v

    def store(self, addr, data, size=None, *, endness=None, condition=None, **kwargs):
        addr, a = self._route(addr)
        if a is None:
            return super().store(addr, data, size, endness=endness, condition=condition, **kwargs)
        endness = endness or self.endness
        if a.symbolic:
            hits = self._resolve(a, size, addr)
            self._store_symbolic(addr, a, data, size, hits, endness, condition, kwargs)
            return None
        c = a.concrete_value
        h = classify(self.state.ram, c, size)
        self._fault_if_error(h, c, size, "write")
        obj = self.state.ram.writable(h.obj.id)
        off = c - obj.addr
        value = self._convert_in(data, endness)
        if condition is not None:
            value = claripy.If(condition, value, obj.store.read(off, size))
        obj.store.write(off, value, size)
        return None

    # ------------------------------------------------------------------ resolution
    def _resolve(self, a, size, addr) -> list[Hit]:
        """Targets of a symbolic access: from the contexts recorded at this location when the
        model keeps them (segment models), else the complete scan."""
        space = self.state.ram
        model = space.model
        if model is not None and model.context_resolution:
            hit = self._resolve_in_context(model, space, addr, size)
            if hit is not None:
                return [hit]
        return resolve(self.state, a, size, addr)

    def _resolve_in_context(self, model, space, addr, size) -> Hit | None:
        """Context-based resolution: merge the objects whose (site, k-context) this location
        resolved to before into one segment, and prove with one query that the access stays in
        it. None (the caller scans everything) when nothing is recorded or the proof fails."""
        loc = self.state.scratch.ins_addr or self.state.addr
        cands = model.context_candidates(space, loc)
        if cands is None:
            return None
        seg = model.merge(space, cands, loc) if len(cands) > 1 else cands[0]
        if seg is None or seg.size < size:
            return None
        stats = space.stats
        if stats is not None:
            stats.resolution_queries += 1
        if self.state.solver.satisfiable(extra_constraints=[claripy.Not(object_constraint(addr, seg, size))]):
            if stats is not None:
                stats.context_misses += 1
            return None
        if stats is not None:
            stats.context_hits += 1
            stats.resolutions += 1
        return Hit("object", seg.addr, seg.addr + seg.size - size, seg)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _convert_in(v, endness):
        return v.reversed if endness == "Iend_LE" and v.length > 8 else v

    def _fault_if_error(self, h: Hit, c: int, size: int, what: str) -> None:
        if h.kind == "object":
            return
        if h.kind == "region":  # a concrete heap-range address never lands in a region
            return
        raise MemoryFault(h.error, f"{what} of {size} bytes at {c:#x} hits {h.describe()}", c)

    def _targets(self, addr, a, size, hits: list[Hit]) -> list[Target]:
        out = []
        for h in hits:
            if h.kind == "object":
                out.append(Target(object_constraint(addr, h.obj, size), "object", obj_id=h.obj.id))
            elif h.kind == "region":
                out.append(Target(in_interval(addr, h.lo, h.hi), "region"))
            else:
                out.append(Target(in_interval(a, h.lo, h.hi), "error", h.error,
                                  f"access of {size} bytes may hit {h.describe()}"))
        return out

    def _serve(self, addr, a, size, hits, what):
        """Apply splitting and the multiple-resolution model; returns the hits to access here and
        the (possibly re-substituted) address. Raises ForkRequest or MemoryFault as needed."""
        space = self.state.ram
        if not hits:
            from angr.errors import SimUnsatError
            raise SimUnsatError("angr-ram: no feasible address for a memory access on an unsat path")
        if space.splitter is not None and len(hits) == 1 and space.splitter.maybe_split(space, hits[0]):
            a = space.substitute(addr)
            hits = resolve(self.state, a, size, addr)
        good = [h for h in hits if h.kind != "error"]
        if len(hits) == 1:
            if good:
                return hits, a
            raise MemoryFault(hits[0].error, f"{what} of {size} bytes hits {hits[0].describe()}")
        model = space.model
        targets = self._targets(addr, a, size, hits)
        if not good:
            if forking_enabled():
                raise ForkRequest(targets, what)
            raise MemoryFault(hits[0].error, f"{what} of {size} bytes hits {hits[0].describe()}")
        if len(good) < len(hits):
            good_targets = [t for h, t in zip(hits, targets, strict=True) if h.kind != "error"]
            if forking_enabled():
                if model.fallback == "fork" and model.name == "fork":
                    raise ForkRequest(targets, what)
                # other models: one state for every in-bounds target, error paths forked off
                union = Target(claripy.Or(*[t.constraint for t in good_targets]), "object")
                raise ForkRequest([union] + [t for t in targets if t.kind == "error"], what)
            self.state.add_constraints(claripy.Or(*[t.constraint for t in good_targets]))
        if len(good) == 1:
            return good, a
        if all(h.kind == "object" for h in good):
            loc = self.state.scratch.ins_addr or self.state.addr
            seg = model.merge(space, [h.obj for h in good], loc)
            if seg is not None:
                a = space.substitute(addr)
                return self._serve(addr, a, size, resolve(self.state, a, size, addr), what)
        if model.fallback == "fork" and forking_enabled():
            raise ForkRequest([t for h, t in zip(hits, targets, strict=True) if h.kind != "error"], what)
        return good, a

    def _load_symbolic(self, addr, a, size, hits, endness, condition, fallback, kwargs):
        served, a = self._serve(addr, a, size, hits, "read")
        values = []
        for h in served:
            if h.kind == "object":
                off = object_offset(addr, h.obj.start)
                align = known_alignment(a - h.obj.addr, 8)
                v = h.obj.store.read(off, size, align, reverse=endness == "Iend_LE")
                cond = object_constraint(addr, h.obj, size)
            else:
                v = self._region_load(addr, a, size, h, endness, kwargs)
                cond = in_interval(addr, h.lo, h.hi)
            values.append((cond, v))
        out = values[-1][1]
        for cond, v in reversed(values[:-1]):
            out = claripy.If(cond, v, out)
        return out

    def _store_symbolic(self, addr, a, data, size, hits, endness, condition, kwargs):
        served, a = self._serve(addr, a, size, hits, "write")
        many = len(served) > 1
        for h in served:
            if h.kind == "object":
                obj = self.state.ram.writable(h.obj.id)
                off = object_offset(addr, obj.start)
                align = known_alignment(a - obj.addr, 8)
                value = self._convert_in(data, endness)
                guard = object_constraint(addr, obj, size) if many else None
                if condition is not None:
                    guard = condition if guard is None else claripy.And(guard, condition)
                if guard is not None:
                    value = claripy.If(guard, value, obj.store.read(off, size, align))
                obj.store.write(off, value, size, align)
            else:
                guard = in_interval(addr, h.lo, h.hi) if many else None
                if condition is not None:
                    guard = condition if guard is None else claripy.And(guard, condition)
                self._region_store(addr, a, data, size, h, endness, guard, kwargs)

    def _region_candidates(self, a, size, h: Hit) -> list[int]:
        solver = self.state.solver
        within = [in_interval(a, h.lo, h.hi)]
        lo = solver.min(a, extra_constraints=within)
        hi = solver.max(a, extra_constraints=within)
        stride = min(known_alignment(a, 8), 8)
        count = (hi - lo) // stride + 1
        if count > REGION_LIMIT:
            raise MemoryFault("symbolic-range-too-large",
                              f"symbolic address spans {count} candidates in {h.describe()} (limit {REGION_LIMIT})")
        return list(range(lo, hi + 1, stride))

    def _region_load(self, addr, a, size, h, endness, kwargs):
        cands = self._region_candidates(a, size, h)
        sup = super()
        return select(addr, cands, lambda c: sup.load(c, size, endness=endness, **kwargs), None)

    def _region_store(self, addr, a, data, size, h, endness, guard, kwargs):
        cands = self._region_candidates(a, size, h)
        sup = super()
        for c in cands:
            cond = addr == c if len(cands) > 1 else None
            if guard is not None:
                cond = guard if cond is None else claripy.And(cond, guard)
            sup.store(c, data, size, endness=endness, condition=cond, **kwargs)


class RamMemory(
    HexDumperMixin,
    SmartFindMixin,
    UnwrapperMixin,
    NameResolutionMixin,
    DataNormalizationMixin,
    SimplificationMixin,
    InspectMixinHigh,
    ActionsMixinHigh,
    UnderconstrainedMixin,
    SizeConcretizationMixin,
    SizeNormalizationMixin,
    RelocatableMixin,
    AddressConcretizationMixin,
    ActionsMixinLow,
    ConditionalMixin,
    ConvenientMappingsMixin,
    DirtyAddrsMixin,
    StackAllocationMixin,
    ConcreteBackerMixin,
    ClemoryBackerMixin,
    DictBackerMixin,
    PrivilegedPagingMixin,
    UltraPagesMixin,
    DefaultFillerMixin,
    SymbolicMergerMixin,
    PagedMemoryMixin,
):
    """angr's DefaultMemory with :class:`RelocatableMixin` above address concretization."""
