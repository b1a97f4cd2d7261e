"""The memory plugin: angr's default memory with a relocatable-addressing layer on top.

:class:`RelocatableMixin` sits directly above angr's ``AddressConcretizationMixin`` (sizes are ints,
names resolved, inspect/actions already recorded with the symbolic address). For every access it

1. substitutes the address constraints into the address;
2. concrete result inside the hidden heap range -> the object's store, no solver call;
   concrete elsewhere -> angr's own memory below, with an int address (stack, globals);
3. symbolic result -> complete resolution (:mod:`angr_ram.memory.strategies.resolution`); one in-bounds
   target -> an exact symbolic-offset access (never concretized); several targets or a possible
   fault -> :class:`~angr_ram.core.errors.ForkRequest` (forking model), or an if-then-else outside a step.

Symbolic addresses into fixed regions (stack, globals) become an if-then-else over every feasible
address of the region (range from the solver, stride from the address's alignment), up to
``region_limit`` candidates; beyond that the path ends as an error path
``symbolic-range-too-large`` instead of being silently concretized.
"""

from __future__ import annotations

import contextlib

import claripy
from angr.errors import SimSegfaultException
from angr.storage.memory_mixins.memory_mixin import MemoryMixin

from angr_ram.core.errors import ForkRequest, InfeasibleAccess, MemoryFault, Target
from angr_ram.memory.address_space import HEAP_BASE, SEGMENT_LIMIT
from angr_ram.memory.block_guard import dead_continuation
from angr_ram.memory.declared import declared_objects
from angr_ram.memory.fixed_regions import FixedRegionMixin
from angr_ram.memory.memory_object import MemoryObject
from angr_ram.memory.object_store import known_alignment
from angr_ram.memory.strategies.fork import forking_enabled
from angr_ram.memory.strategies.intervals import unsigned_range
from angr_ram.memory.strategies.resolution import (
    NULL_PAGE,
    Hit,
    cancel_base,
    classify,
    describe,
    in_interval,
    resolve,
)
from angr_ram.solver.z3_check import gave_up

# A symbolic-offset read whose selection has at least this many arms is bound to a fresh symbol
# (a let-binding kept in the path constraints), so that an address computed from it stays small:
# dependent lookups grow linearly with the number of hops instead of quadratically.
LET_ARMS = 32


def selection_arms(v, limit: int = 1 << 16) -> int:
    """Number of if-then-else nodes on the selection spine of ``v`` (both sides of range splits,
    the else side of equality chains), up to ``limit``."""
    n = 0
    todo = [v]
    while todo and n < limit:
        e = todo.pop()
        if e.op != "If":
            continue
        n += 1
        c = e.args[0]
        if c.op in ("ULT", "ULE", "UGT", "UGE"):
            todo.append(e.args[1])
        todo.append(e.args[2])
    return n


def object_offset(addr, base):
    """``addr - base`` in the program's (unsubstituted) terms, dropping ``base`` when it is a summand."""
    off = cancel_base(addr, base)
    return addr - base if off is None else off


def object_constraint(addr, obj: MemoryObject, size: int):
    """Relocation-safe constraint: an access of ``size`` bytes at ``addr`` lies inside ``obj``.

    When the object's base is a summand of ``addr`` the base cancels: an object never wraps around
    the address space, so ``base <= addr <= base + k`` holds exactly when ``addr - base`` (modulo
    2^64) is at most ``k``, a question in program terms that no base address enters."""
    start = obj.start
    off = cancel_base(addr, start)
    if off is not None:
        return off == 0 if obj.size == size else claripy.ULE(off, obj.size - size)
    if obj.size == size:
        return addr == start
    return claripy.And(claripy.UGE(addr, start), claripy.ULE(addr, start + (obj.size - size)))


MAX_SHOWN = 3      # faulting places named in one error path's message


def _may_reach_heap(state, a) -> bool:
    """Whether the symbolic address ``a`` may lie in the heap range. Its interval, read from the
    expression, answers most addresses (a table indexed by a byte); one the path constraints alone
    bound (a 64-bit index ``i`` under ``i < 16``) takes one satisfiability query. Both
    over-approximate: a pointer that may reach a heap object, or whose query z3 gives up on, stays
    angr-ram's."""
    lo, hi = unsigned_range(a)
    if hi < HEAP_BASE or lo >= SEGMENT_LIMIT:
        return False
    try:
        return state.solver.satisfiable(extra_constraints=[claripy.UGE(a, HEAP_BASE), claripy.ULT(a, SEGMENT_LIMIT)])
    except Exception as e:
        if gave_up(e) is None:
            raise
        return True


def reading_length(state, addr, length):
    """``state.memory.reading(addr, length)`` (:meth:`RelocatableMixin.reading`), or a context that
    does nothing on a memory without it (stock angr's)."""
    reading = getattr(state.memory, "reading", None)
    return reading(addr, length) if reading is not None else contextlib.nullcontext()


class RelocatableMixin(FixedRegionMixin, MemoryMixin):
    """Memory layer that implements the relocatable addressing model for heap objects."""

    _speculative = False
    _extent = None      # (address, symbolic length) of a read of that length in progress (reading())

    @contextlib.contextmanager
    def reading(self, addr, length):
        """While in this context, a load at ``addr`` (of the largest value of ``length``, as angr's
        file writes load it) reads only ``length`` bytes as far as an object of symbolic size is
        concerned: ``puts`` of ``malloc(strlen(arg) + 1)``'s copy loads the largest length, and
        its bytes past a shorter copy's size are not the program's reads (Debian's expr: 32 false
        out-of-bounds paths at 600 s)."""
        prev = self._extent
        _, a = self._route(addr)
        if a is not None and not a.symbolic and isinstance(length, claripy.ast.BV) and length.symbolic:
            self._extent = (a.concrete_value, length)
        try:
            yield
        finally:
            self._extent = prev

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
        elif space.angr_concretizes and not _may_reach_heap(self.state, a):
            return a, None          # the script asked angr's concretization for it (run/user_options.py)
        return addr, a

    def _clipped_read(self, c: int, size: int, endness):
        """A search chunk that starts inside an object and runs past its end: the object's bytes,
        then zeros (the search stops there; an unterminated string is not reported). A chunk that
        starts just past an object's end (the previous chunk ended there with no definite
        terminator: a buffer of symbolic bytes) is zeros for the same reason. An object of symbolic
        size (``malloc(strlen(arg) + 1)``) is read up to its largest size: the chunk's bytes past
        the size a path gives it are not the program's reads, the search stops at the string's
        terminator inside it."""
        h = classify(self.state.ram, c, 1)
        if h.kind != "object" and c > 0:
            before = classify(self.state.ram, c - 1, 1)
            if before.kind == "object" and before.obj.addr + before.obj.size == c:
                return claripy.BVV(0, size * 8)
        if h.kind != "object":
            return None
        inside = h.obj.addr + h.obj.size - c
        if inside >= size:
            return None
        v = claripy.Concat(h.obj.store.read(c - h.obj.addr, inside), claripy.BVV(0, (size - inside) * 8))
        return v.reversed if endness == "Iend_LE" else v

    def _dead(self) -> bool:
        """True on the continuation of a VEX block after an exit taken for sure (:mod:`.block_guard`)."""
        return dead_continuation(self.state)

    def load(self, addr, size=None, *, endness=None, condition=None, fallback=None, **kwargs):
        if size == 0:           # touches no byte (angr's fwrite of a length that can only be 0): as angr
            return claripy.BVV(0, 0)
        addr, a = self._route(addr)
        if a is None:
            return super().load(addr, size, endness=endness, condition=condition, fallback=fallback, **kwargs)
        endness = endness or self.endness
        try:
            return self._load_checked(addr, a, size, endness, condition, fallback, kwargs)
        except (MemoryFault, ForkRequest) as e:
            speculative = self._speculative and size > 1 and (
                isinstance(e, MemoryFault) or any(t.kind == "error" for t in e.targets))
            if speculative:
                where = a.concrete_value if not a.symbolic else 0
                raise SimSegfaultException(where, "speculative chunk of a search leaves its object") from e
            raise

    def _load_checked(self, addr, a, size, endness, condition, fallback, kwargs):
        try:
            if self._dead():
                raise InfeasibleAccess
            if not a.symbolic:
                c = a.concrete_value
                if self._speculative and size > 1:
                    clipped = self._clipped_read(c, size, endness)
                    if clipped is not None:
                        return clipped
                h = classify(self.state.ram, c, size)
                if not self._speculative and self._heap_overflow(addr, c, size, h, "read", condition):
                    v = self._overflow_load(c, size, endness)     # (memory/heap_overflows.py)
                else:
                    self._fault_if_error(h, c, size, "read", condition)
                    if h.obj.limit is not None:
                        extent = self._extent[1] if self._extent is not None and self._extent[0] == c else None
                        self._check_limit(c - h.obj.addr, h.obj, size, "read", condition, length=extent)
                    self._check_freed(h.obj, size, "read", condition)
                    v = h.obj.store.read(c - h.obj.addr, size, reverse=endness == "Iend_LE")
            else:
                self._check_declared(a, size, "read", condition)
                hits = self._resolve(a, size, addr)
                v = self._load_symbolic(addr, a, size, hits, endness, condition, fallback, kwargs)
        except InfeasibleAccess:
            return fallback if fallback is not None else claripy.BVV(0, size * 8)
        if condition is not None and fallback is not None:
            v = claripy.If(condition, v, fallback)
        return v

    def store(self, addr, data, size=None, *, endness=None, condition=None, **kwargs):
        if size == 0:
            return None
        addr, a = self._route(addr)
        if a is None:
            if type(addr) is int and self.category == "mem":
                try:
                    self._check_read_only(addr, size if isinstance(size, int) else len(data) // 8, condition)
                except InfeasibleAccess:
                    return None
            return super().store(addr, data, size, endness=endness, condition=condition, **kwargs)
        endness = endness or self.endness
        try:
            if self._dead():
                raise InfeasibleAccess
            if a.symbolic:
                self._check_declared(a, size, "write", condition)
                hits = self._resolve(a, size, addr)
                self._store_symbolic(addr, a, data, size, hits, endness, condition, kwargs)
                return None
            c = a.concrete_value
            h = classify(self.state.ram, c, size)
            if self._heap_overflow(addr, c, size, h, "write", condition):
                self._overflow_store(c, self._convert_in(data, endness, size), size, condition)
                return None
            self._fault_if_error(h, c, size, "write", condition)
            if h.obj.limit is not None:
                self._check_limit(c - h.obj.addr, h.obj, size, "write", condition)
            self._check_freed(h.obj, size, "write", condition)
        except InfeasibleAccess:
            return None
        obj = self.state.ram.writable(h.obj.id)
        off = c - obj.addr
        value = self._convert_in(data, endness, size)
        if condition is not None:
            value = claripy.If(condition, value, obj.store.read(off, size))
        obj.store.write(off, value, size)
        return None

    # ------------------------------------------------------------------ resolution
    def _check_declared(self, a, size: int, what: str, condition) -> None:
        """Bounds of a declared stack or global array (:mod:`~angr_ram.memory.declared`) that a
        symbolic address is based on (its constant summand is the array's start): when the
        address may also leave the array, the accesses outside it are forked off as one
        ``out-of-bounds`` error path and the access goes on inside it. Only where the address
        may be inside too: a base that is another variable's start by coincidence decides nothing."""
        if a.op != "__add__":
            return
        consts = [x for x in a.args if not x.symbolic]
        if len(consts) != 1:
            return
        found = declared_objects(self.state.project).at(self.state, consts[0].concrete_value)
        if found is None:
            return
        start, var = found
        if var.size < size:
            return
        inside = claripy.And(claripy.UGE(a, start), claripy.ULE(a, start + var.size - size))
        outside = claripy.Not(inside)
        if condition is not None and condition.symbolic:
            outside = claripy.And(outside, condition)
            inside = claripy.Not(outside)
        solver = self.state.solver
        if not solver.satisfiable(extra_constraints=(outside,)) or not solver.satisfiable(extra_constraints=(inside,)):
            return
        message = f"{what} of {size} byte{'s' if size != 1 else ''} may leave the {var.describe()}"
        if forking_enabled():
            raise self._fork_request([Target(inside, "value"), Target(outside, "error", "out-of-bounds", message)],
                                     what)
        self._set_aside_fault("out-of-bounds", message, outside)
        self.state.add_constraints(inside)

    def _resolve(self, a, size, addr) -> list[Hit]:
        """Targets of a symbolic access: from the contexts recorded at this location when the
        model keeps them (segment models), else the complete scan."""
        space = self.state.ram
        model = space.model
        if model.context_resolution:
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

    def describe_pointer(self, ptr) -> list[str]:
        """What ``ptr`` can point into (see :func:`angr_ram.memory.strategies.resolution.describe`)."""
        return describe(self.state, ptr)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _convert_in(v, endness, size: int | None = None):
        """``v`` in memory order, cut to its first ``size`` bytes (angr passes the whole data with a
        smaller size for each concrete value of a symbolic store size)."""
        v = v.reversed if endness == "Iend_LE" and v.length > 8 else v
        if size is not None and v.length > size * 8:
            v = claripy.Extract(v.length - 1, v.length - size * 8, v)
        return v

    def _targets(self, addr, a, size, hits: list[Hit], what: str = "access") -> list[Target]:
        """One target per object or region hit, in order, then one error target per kind of fault:
        an access that may hit several unmapped gaps (a pointer with any value) is one error path,
        not one per gap."""
        out, faults = [], {}
        for h in hits:
            if h.kind == "object":
                out.append(Target(object_constraint(addr, h.obj, size), "object", obj_id=h.obj.id))
            elif h.kind == "region":
                out.append(Target(in_interval(addr, h.lo, h.hi), "region"))
            else:
                faults.setdefault(h.error, []).append(h)
        for kind, hs in faults.items():
            if len(hs) == 1:
                out.append(Target(in_interval(a, hs[0].lo, hs[0].hi), "error", kind,
                                  f"{what} of {size} byte{'s' if size != 1 else ''} may hit {hs[0].describe()}"))
                continue
            shown = ", ".join(h.describe() for h in hs[:MAX_SHOWN])
            more = f" and {len(hs) - MAX_SHOWN} more" if len(hs) > MAX_SHOWN else ""
            out.append(Target(claripy.Or(*(in_interval(a, h.lo, h.hi) for h in hs)), "error", kind,
                              f"{what} of {size} byte{'s' if size != 1 else ''} may hit any of {len(hs)}: {shown}{more}"))
        return out

    def _serve(self, addr, a, size, hits, what, condition=None):
        """Apply splitting and the run's multiple-resolution model; returns the hits to access here
        and the (possibly re-substituted) address. Raises ForkRequest or MemoryFault as needed.
        Faults are this layer's; what to do with several good targets is the model's decision
        (:meth:`~angr_ram.memory.strategies.plans.ForkModel.plan`), which this layer carries out."""
        space = self.state.ram
        if not hits:   # no model: the path is infeasible here
            raise InfeasibleAccess
        if space.splitter is not None and len(hits) == 1 and space.splitter.maybe_split(space, hits[0]):
            a = space.substitute(addr)
            hits = resolve(self.state, a, size, addr)
        good = [h for h in hits if h.kind != "error"]
        if len(hits) == 1:
            if good:
                return hits, a
            self._fault(hits[0].error, f"{what} of {size} byte{'s' if size != 1 else ''} hits {hits[0].describe()}", None, condition)
        model = space.model
        targets = self._targets(addr, a, size, hits, what)
        forking = forking_enabled()
        if not good:
            if forking:
                raise self._fork_request(targets, what)
            self._fault(hits[0].error, f"{what} of {size} byte{'s' if size != 1 else ''} hits {hits[0].describe()}", None, condition)
        good_targets = [t for t in targets if t.kind != "error"]
        if len(good) < len(hits):
            errors = [t for t in targets if t.kind == "error"]
            if forking:
                raise self._fork_request(model.with_error_paths(good_targets, errors), what)
            for t in errors:
                self._set_aside_fault(t.error, f"{what}: {t.message}", t.constraint)
            self.state.add_constraints(claripy.Or(*[t.constraint for t in good_targets]))
        if len(good) == 1:
            return good, a
        loc = self.state.scratch.ins_addr or self.state.addr
        plan = model.plan(space, good, good_targets, loc, forking)
        if plan.segment is not None:      # merged into one segment: resolve again, to it
            a = space.substitute(addr)
            return self._serve(addr, a, size, resolve(self.state, a, size, addr), what, condition)
        if plan.fork is not None:
            raise self._fork_request(plan.fork, what)
        return plan.access, a

    def _load_symbolic(self, addr, a, size, hits, endness, condition, fallback, kwargs):
        served, a = self._serve(addr, a, size, hits, "read", condition)
        values = []
        many = len(served) > 1
        for h in served:
            if h.kind == "object":
                off = object_offset(addr, h.obj.start)
                guard = object_constraint(addr, h.obj, size) if many else None
                if h.obj.limit is not None:
                    self._check_limit(off, h.obj, size, "read", condition, guard)
                self._check_freed(h.obj, size, "read", condition, guard)
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
        return self._let(out)

    def _let(self, v):
        """``v`` itself, or a fresh ``ram_let`` symbol bound to it by a path constraint when ``v`` is
        a large selection (see :data:`LET_ARMS` and :mod:`angr_ram.solver.enumeration`)."""
        if v.op != "If" or selection_arms(v, LET_ARMS) < LET_ARMS:
            return v
        # The name is a function of the path (its let count) and the instruction: a block that is
        # re-executed after a fork re-creates the same symbol, so the fork's target constraints,
        # which may mention it, keep constraining it.
        space = self.state.ram
        space.lets += 1
        loc = self.state.scratch.ins_addr or self.state.addr or 0
        sym = claripy.BVS(f"ram_let_{space.lets}_{loc:x}_{v.length}", v.length, explicit_name=True)
        self.state.add_constraints(sym == v)
        if space.stats is not None:
            space.stats.let_bindings += 1
        return sym

    def _store_symbolic(self, addr, a, data, size, hits, endness, condition, kwargs):
        served, a = self._serve(addr, a, size, hits, "write", condition)
        many = len(served) > 1
        for h in served:
            if h.kind == "object":
                guard = object_constraint(addr, h.obj, size) if many else None
                if h.obj.limit is not None:
                    self._check_limit(object_offset(addr, h.obj.start), h.obj, size, "write", condition, guard)
                self._check_freed(h.obj, size, "write", condition, guard)
                obj = self.state.ram.writable(h.obj.id)
                off = object_offset(addr, obj.start)
                align = known_alignment(a - obj.addr, 8)
                value = self._convert_in(data, endness, size)
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
                self._check_read_only(addr, size, guard, h.lo, h.hi + 1)
                self._region_store(addr, a, data, size, h, endness, guard, kwargs)
