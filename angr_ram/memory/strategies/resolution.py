"""Complete resolution of a symbolic address: every feasible object, region and faulting range.

The address is asked for one model at a time; the interval the model falls in (an object's
in-bounds start range, a fixed region, or a faulting gap) is recorded and excluded, until no model
remains. A pointer into one object costs two queries; n targets cost n + 1. Nothing is skipped, so
no feasible path is lost.

The queries are asked in the program's terms: an object's interval is excluded relative to its
symbolic start (``base + lo <= p <= base + hi``), so the same resolution in two paths that placed
the objects differently asks the same queries up to a renaming of bases, which the address-aware
cache recognises. An unmapped gap between heap objects has no such form; once one is excluded, the
remaining queries of that resolution are marked :func:`address_specific`.

A value in a fixed region (stack, globals) is excluded by itself, so a pointer with k < REGION_ENUMERATION values there
costs k + 1 queries and its access reads exactly those addresses; a path whose constraints extend
those of an earlier resolution of the same address reuses that resolution without a query.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import claripy
from angr.errors import SimUnsatError

from angr_ram.memory.address_space import HEAP_BASE, SEGMENT_LIMIT, AddressSpace, gap_around
from angr_ram.memory.memory_object import MemoryObject
from angr_ram.memory.strategies.fork import forking_enabled
from angr_ram.memory.strategies.value_sets import possible_values
from angr_ram.solver import seeding
from angr_ram.solver.evaluator import LET_PREFIX
from angr_ram.solver.query_cache import address_specific
from angr_ram.solver.z3_check import gave_up

NULL_PAGE = 0x1000
# resolution lists up to this many values of an address in one fixed region exactly (Hit.values)
REGION_ENUMERATION = 8
RESOLVED_KEYS = 4096           # enumerations kept per run (all forgotten when full)
RESOLVED_PER_KEY = 4           # ... per address, the most recent first


@dataclass
class Hit:
    """An interval ``[lo, hi]`` of start addresses for an access, and what it reaches."""

    kind: str                     # object | region | error
    lo: int
    hi: int
    obj: MemoryObject | None = None
    region: tuple | None = None
    error: str | None = None
    values: list[int] | None = None   # all feasible start addresses in it, when resolution enumerated them
    below: MemoryObject | None = None  # an unmapped range's: the heap object that ends just before it

    def describe(self) -> str:
        """A one-line description for error messages."""
        if self.obj is not None:
            return f"object #{self.obj.id} ({_object_words(self.obj)})"
        if self.region is not None:
            return f"region {self.region[2]}"
        past = f" past the end of heap object #{self.below.id} ({_object_words(self.below)})" if self.below else ""
        return f"unmapped range [{self.lo:#x}, {self.hi:#x}]{past}"


def _object_words(obj: MemoryObject) -> str:
    return f"size {obj.size}, allocated at {obj.site:#x}"


def classify(space: AddressSpace, v: int, size: int) -> Hit:
    """What an access of ``size`` bytes starting at concrete address ``v`` reaches."""
    hit = space.find(v)
    if hit is not None:
        obj = hit[0]
        end = obj.addr + max(obj.size, 1) - 1
        if obj.freed:
            return Hit("error", obj.addr, end, obj, error="use-after-free")
        last = obj.addr + obj.size - size
        if v <= last:
            return Hit("object", obj.addr, last, obj)
        return Hit("error", max(obj.addr, last + 1), end, obj, error="out-of-bounds")
    r = space.region_of(v)
    if r is not None:
        last = r[1] - size
        if v <= last:
            return Hit("region", r[0], last, region=r)
        return Hit("error", max(r[0], last + 1), r[1] - 1, region=r, error="out-of-bounds")
    lo, hi = gap_around(space, v)
    if v < NULL_PAGE:
        return Hit("error", lo, min(hi, NULL_PAGE - 1), error="null-dereference")
    below = space.find(lo - 1) if lo > 0 else None
    return Hit("error", max(lo, NULL_PAGE) if lo < NULL_PAGE else lo, hi, error="out-of-bounds",
               below=below[0] if below is not None else None)


def in_interval(a, lo: int, hi: int):
    """Constraint ``lo <= a <= hi`` (unsigned)."""
    if lo == hi:
        return a == lo
    return claripy.And(claripy.UGE(a, lo), claripy.ULE(a, hi))


def cancel_base(addr, base):
    """``addr - base`` without ``base`` when ``base`` is ``addr`` or one of its summands, else None."""
    if addr is base:
        return claripy.BVV(0, addr.length)
    if addr.op == "__add__":
        args = list(addr.args)
        for i, x in enumerate(args):
            if x is base:
                del args[i]
                out = args[0]
                for r in args[1:]:
                    out = out + r
                return out
    return None


def exclusion(addr, h: Hit):
    """``(constraint that addr is outside h's interval, whether that constraint is address-agnostic)``.

    ``addr`` is the program-level address: intervals inside an object are stated relative to the
    object's symbolic start; fixed regions and gaps are concrete, and only gaps that touch the heap
    range depend on the placement of objects.
    """
    obj = h.obj
    if obj is not None and obj.placed and obj.start.symbolic:
        start = obj.start
        off = cancel_base(addr, start)
        if off is not None:    # the base cancels: the interval lies inside the object (no wrap-around)
            return claripy.Not(in_interval(off, h.lo - obj.addr, h.hi - obj.addr)), True
        lo, hi = start + (h.lo - obj.addr), start + (h.hi - obj.addr)
        inside = addr == lo if h.lo == h.hi else claripy.And(claripy.UGE(addr, lo), claripy.ULE(addr, hi))
        return claripy.Not(inside), True
    agnostic = h.kind == "region" or h.hi < HEAP_BASE or h.lo >= SEGMENT_LIMIT
    return claripy.Not(in_interval(addr, h.lo, h.hi)), agnostic


def resolve(state, addr_sub, size: int, addr=None) -> list[Hit]:
    """All targets a symbolic address may reach, one solver model per target.

    ``addr_sub`` is the substituted address; ``addr``, when given, the same address in program
    terms, which the queries then use (see the module docstring). A value in a fixed region
    (stack, globals) is excluded by itself rather than with its region, until the region has
    :data:`REGION_ENUMERATION` values: the hit then lists the address's exact values there
    (``Hit.values``), at no extra query, for the access to read only those.
    """
    space = state.ram
    ask = addr_sub if addr is None else addr
    key = (ask.hash(), addr_sub.hash(), size)
    constraints = state.solver.constraints
    reused = _reuse(space, key, constraints)
    if reused is not None:
        return reused
    structural, tried = None, False
    if any(n.startswith(LET_PREFIX) for n in addr_sub.variables):
        # a pointer selected from a table: when its expression allows one target only, no query
        structural, tried = structural_hits(state, addr_sub, size, faults=forking_enabled()), True
        if structural is not None and len(structural) == 1:
            _count_structural(space)
            return structural
    try:
        with seeding.site(("resolve", state.scratch.ins_addr or state.addr)):
            hits = _resolve(state, space, addr_sub, ask, size, addr is not None)
    except Exception as e:
        if gave_up(e) is None:
            raise
        hits = structural if tried else structural_hits(state, addr_sub, size, faults=forking_enabled())
        if hits is None:
            raise
        _count_structural(space)
        return hits
    if hits and all(h.values is not None for h in hits):
        _remember(space, key, constraints, hits)
    return hits


def _count_structural(space: AddressSpace) -> None:
    if space.stats is not None:
        space.stats.resolutions += 1
        space.stats.structural_resolutions += 1


def structural_hits(state, addr_sub, size: int, faults: bool = False) -> list[Hit] | None:
    """The targets of ``addr_sub`` read from its expression: one hit per object or region among
    the values it can take (:func:`~angr_ram.memory.strategies.value_sets.possible_values`, a superset of
    the feasible ones; the access guards each target by its interval, so a value the path cannot
    take changes nothing). None when there is no such set. A value that would fault gives an error
    hit with ``faults`` (inside a step, where the access forks it off as its own path and the
    technique asks the solver whether that path is feasible, setting it aside alone if the solver
    cannot tell), else None: outside a step a fault's feasibility is the caller's question."""
    vals = possible_values(state, addr_sub)
    if not vals:
        return None
    space = state.ram
    hits: list[Hit] = []
    for v in vals:
        h = classify(space, v, size)
        if h.kind == "error" and not faults:
            return None
        same = next((x for x in hits if x.kind == h.kind and x.lo == h.lo and x.hi == h.hi), None)
        if h.kind == "region":
            if same is None:
                h.values = [v]
                hits.append(h)
            else:
                same.values.append(v)
        elif same is None:
            hits.append(h)
    return hits


def _prefix_key(constraints, n: int) -> int:
    return hash(tuple(c.hash() for c in constraints[:n]))


def _reuse(space: AddressSpace, key, constraints) -> list[Hit] | None:
    """The hits of an earlier enumeration of the same address (and access size) into fixed regions
    found under constraints that ``constraints`` extend: the address's values now are among those
    values (constraints only narrow them; fixed regions do not move), so reading those addresses,
    each guarded by ``addr == value``, is exact. None if there is no such enumeration."""
    for n, prefix, hits in space.resolved.get(key, ()):
        if len(constraints) >= n and _prefix_key(constraints, n) == prefix:
            if space.stats is not None:
                space.stats.resolutions += 1
                space.stats.resolutions_reused += 1
            return [replace(h, values=list(h.values)) for h in hits]
    return None


def _remember(space: AddressSpace, key, constraints, hits: list[Hit]) -> None:
    if len(space.resolved) >= RESOLVED_KEYS:
        space.resolved.clear()
    entries = space.resolved.setdefault(key, [])
    entries.insert(0, (len(constraints), _prefix_key(constraints, len(constraints)),
                       [replace(h, values=list(h.values)) for h in hits]))
    del entries[RESOLVED_PER_KEY:]


def _resolve(state, space: AddressSpace, addr_sub, ask, size: int, program_terms: bool) -> list[Hit]:
    hits: list[Hit] = []
    excl: list[list] = []              # per hit: the constraints that exclude what it covers
    agnostic = True
    while True:
        extra = [c for cs in excl for c in cs]
        try:
            if agnostic:
                vals = state.solver.eval_upto(ask, 1, extra_constraints=extra)
            else:
                with address_specific():
                    vals = state.solver.eval_upto(ask, 1, extra_constraints=extra)
        except SimUnsatError:
            break
        if not vals:
            break
        if space.stats is not None:
            space.stats.resolution_queries += 1
        v = vals[0]
        i = next((i for i, h in enumerate(hits) if h.values is not None and h.lo <= v <= h.hi), None)
        if i is not None:              # another value in an enumerated region
            h = hits[i]
            h.values.append(v)
            if len(h.values) < REGION_ENUMERATION:
                excl[i].append(ask != v)
            else:                      # too many: exclude the whole region instead
                h.values = None
                excl[i] = [claripy.Not(in_interval(ask, h.lo, h.hi))]
            continue
        h = classify(space, v, size)
        hits.append(h)
        if h.kind == "region":         # a fixed address: excluding it is address-agnostic
            h.values = [v]
            excl.append([ask != v])
            continue
        c, ok = exclusion(ask, h) if program_terms else (claripy.Not(in_interval(ask, h.lo, h.hi)), False)
        agnostic = agnostic and ok
        excl.append([c])
    if space.stats is not None:
        space.stats.resolutions += 1
        if sum(h.kind != "error" for h in hits) > 1:
            space.stats.multiple_resolutions += 1
    return hits


def describe(state, ptr) -> list[str]:
    """What the pointer expression ``ptr`` can point into in ``state``, one line per target: object
    (with its offsets), fixed region, or faulting range. Asks the solver, changes nothing."""
    space = state.ram
    if isinstance(ptr, int):
        ptr = claripy.BVV(ptr, 64)
    sub = space.substitute(ptr)
    if not sub.symbolic:      # the solver's concrete shortcut would ignore exclusions
        hits = [classify(space, sub.concrete_value, 1)]
    else:
        stats, space.stats = space.stats, None    # a look, not part of the run's counts
        try:
            hits = resolve(state, sub, 1, ptr)
        finally:
            space.stats = stats
    lines = []
    for h in hits:
        if sub.symbolic:   # the offsets this pointer really takes inside the hit's interval
            inside = [in_interval(sub, h.lo, h.hi)]
            lo = state.solver.min(sub, extra_constraints=inside)
            hi = state.solver.max(sub, extra_constraints=inside)
        else:
            lo = hi = sub.concrete_value
        if h.obj is not None:
            start = h.obj.addr
            what = f"{h.obj!r} " + (f"+{lo - start:#x}" if lo == hi else f"+{lo - start:#x}..+{hi - start:#x}")
        elif h.region is not None:
            what = f"region {h.region[2]} " + (f"{lo:#x}" if lo == hi else f"{lo:#x}..{hi:#x}")
        else:
            what = h.describe() if lo != hi else f"unmapped address {lo:#x}"
        lines.append(f"{h.error}: {what}" if h.error else what)
    return lines
