"""Multiple-resolution models: what to do when a symbolic pointer may reach several objects.

* ``fork``  one state per target (forking model).
* ``ite``   one state; the value is an if-then-else over the targets (complete merging model).
* ``dsmm``  dynamically segmented memory: the objects the pointer resolved to are merged into one
            new segment (relocation), the access is re-resolved to that single segment.
* ``flat``  like dsmm, but the segment takes every live heap object.
* ``smm``   static segments: objects are grouped by allocation site (what a context-insensitive
            points-to analysis can tell apart on a binary); a pointer that resolves across groups
            unites them for the whole run, and the segment takes every live object of the united
            groups. Beyond ``threshold`` bytes the model falls back to forking (hybrid), as in the
            segmented memory model paper.

The memory layer asks the model what to do and carries it out: :meth:`ForkModel.plan` answers
for an access with several good targets (access them all, fork them, or a segment that holds them
all), :meth:`ForkModel.with_error_paths` for one whose other targets fault (the fork's targets).
Whatever a segment model cannot merge (fixed regions, split chunks) is forked inside a step and
accessed as an if-then-else outside one. A model object is shared by every state of a run: its
caches (segment reuse, site groups) are run-wide, like the static analysis and segment cache of
the papers.
"""

from __future__ import annotations

from angr_ram.memory.address_space import SEGMENT_BASE, SEGMENT_LIMIT, AddressSpace
from angr_ram.memory.memory_object import MemoryObject
from angr_ram.memory.strategies.plans import ForkModel, IteModel, Plan

__all__ = ["MODELS", "DynamicSegments", "FlatSegments", "ForkModel", "IteModel", "Plan", "StaticSegments",
           "make_model", "mergeable", "signatures"]


def signatures(space: AddressSpace, o: MemoryObject) -> set[tuple]:
    """The (allocation site, k-context) of an object, or of every member of a segment."""
    if o.kind == "segment":
        out: set[tuple] = set()
        for m in o.members:
            out |= signatures(space, space.objects[m])
        return out
    return {(o.site, o.context)}


class DynamicSegments(ForkModel):
    """Merge exactly the resolved objects into a new segment (optionally reusing its address)."""

    name = "dsmm"

    def __init__(self, reuse_segments: bool = False, context_resolution: bool = True):
        self.reuse_segments = reuse_segments
        self.context_resolution = context_resolution
        self._reuse: dict[tuple, int] = {}    # (location, member shapes) -> hidden segment address
        self._next = SEGMENT_BASE
        self._contexts: dict[int, set] = {}   # access location -> (site, k-context) it resolved to

    def record(self, space, objs, loc):
        if self.context_resolution:
            seen = self._contexts.setdefault(loc, set())
            for o in objs:
                seen |= signatures(space, o)

    def context_candidates(self, space: AddressSpace, loc: int) -> list[MemoryObject] | None:
        """The placed objects (or segments) whose allocation contexts the access at ``loc``
        resolved to before; None when nothing is recorded or a candidate cannot be merged."""
        seen = self._contexts.get(loc)
        if not seen:
            return None
        out = [o for o in space.placed_objects() if not o.freed and signatures(space, o) & seen]
        if not out or not all(mergeable(o) for o in out):
            return None
        return out

    def plan(self, space, hits, targets, loc, forking):
        """A segment of the resolved objects when they can be merged, else the fork model's plan."""
        if all(h.kind == "object" for h in hits):
            seg = self.merge(space, [h.obj for h in hits], loc)
            if seg is not None:
                return Plan(segment=seg)
        return super().plan(space, hits, targets, loc, forking)

    def with_error_paths(self, good, errors):
        """One state for every good target (merged into a segment on re-execution), error paths apart."""
        return IteModel.with_error_paths(self, good, errors)

    def members(self, space: AddressSpace, objs: list[MemoryObject]) -> list[MemoryObject] | None:
        """The objects the new segment holds (None: do not merge)."""
        return objs

    def merge(self, space, objs, loc):
        if not all(mergeable(o) for o in objs):
            return None
        self.record(space, objs, loc)
        members = self.members(space, objs)
        if not members or len(members) < 2:
            return None
        at = self._address(space, members, loc) if self.reuse_segments else None
        seg = space.make_segment([o.id for o in members], at=at, site=loc)
        return seg

    def _address(self, space: AddressSpace, members, loc) -> int | None:
        _, _, total = space.segment_layout([o.id for o in members])
        # the shape of the merge: where it happens and what was allocated where, in address order
        key = (loc, tuple((o.site, o.context, o.size, o.kind, o.align) for o in sorted(members, key=lambda o: o.addr)))
        at = self._reuse.get(key)
        if at is not None and space.find(at) is None and space.find(at + total - 1) is None:
            if space.stats is not None:
                space.stats.segments_reused += 1
            return at
        align = max(o.align for o in members)
        at = -(-self._next // align) * align
        self._next = at + ((total + 64 + 15) // 16) * 16
        if self._next > SEGMENT_LIMIT:
            return None
        self._reuse[key] = at
        return at


class FlatSegments(DynamicSegments):
    """Merge every live heap object (and existing segment) into one segment."""

    name = "flat"

    def members(self, space, objs):
        return [o for o in space.placed_objects() if mergeable(o)]


class StaticSegments(DynamicSegments):
    """Segments by allocation-site groups, united on multiple resolution; forks beyond ``threshold``."""

    name = "smm"

    def __init__(self, threshold: int = 10 * 1024, reuse_segments: bool = False, context_resolution: bool = True):
        super().__init__(reuse_segments, context_resolution)
        self.threshold = threshold
        self._parent: dict[int, int] = {}     # union-find over allocation sites, run-wide

    def _find(self, site: int) -> int:
        p = self._parent.setdefault(site, site)
        while p != self._parent.setdefault(p, p):
            self._parent[p] = self._parent[self._parent[p]]
            p = self._parent[p]
        return p

    def _sites(self, space: AddressSpace, o: MemoryObject) -> set[int]:
        if o.kind == "segment":
            out: set[int] = set()
            for m in o.members:
                out |= self._sites(space, space.objects[m])
            return out
        return {o.site}

    def members(self, space, objs):
        sites = set().union(*(self._sites(space, o) for o in objs))
        roots = {self._find(s) for s in sites}
        root = min(roots)
        for r in roots:
            self._parent[r] = root
        group = [o for o in space.placed_objects()
                 if mergeable(o) and any(self._find(s) == root for s in self._sites(space, o))]
        _, _, total = space.segment_layout([o.id for o in group])
        if total > self.threshold:
            return None
        return group


def mergeable(o: MemoryObject) -> bool:
    """Whether a segment may take ``o``: live on every input, not a chunk, with a symbolic base and a concrete size
    (a symbolically sized object keeps its own bounds check, so it is never merged)."""
    return (not o.freed and o.freed_when is None and o.kind != "chunk" and o.name is not None
            and o.limit is None)


def make_model(model: str, reuse_segments: bool = False, smm_threshold: int = 10 * 1024,
               context_resolution: bool = True) -> ForkModel:
    """The model object for a ``RelocatableMemory(model=...)`` name."""
    if model == "fork":
        return ForkModel()
    if model == "ite":
        return IteModel()
    if model == "dsmm":
        return DynamicSegments(reuse_segments, context_resolution)
    if model == "flat":
        return FlatSegments(reuse_segments, context_resolution)
    if model == "smm":
        return StaticSegments(smm_threshold, reuse_segments, context_resolution)
    raise ValueError(model)


MODELS = tuple(m.name for m in (ForkModel, IteModel, DynamicSegments, StaticSegments, FlatSegments))
