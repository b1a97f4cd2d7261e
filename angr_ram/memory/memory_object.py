"""A memory object: one heap allocation (or a segment of several, or a chunk of a split one) in
the relocatable address space (:mod:`.address_space`), with its symbolic base, its size, its
placement and its contents (an :class:`~.object_store.ObjectStore`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import claripy

from angr_ram.memory.object_store import ObjectStore


@dataclass(repr=False, eq=False)
class MemoryObject:
    """One allocation: symbolic base, size, contents, allocation site and k-context."""

    id: int
    base: claripy.ast.BV          # what the program sees: a BVS (symbolic bases) or a BVV
    name: str | None              # variable name of the symbolic base, None for concrete bases
    size: int
    site: int                     # address of the allocating call
    context: tuple[int, ...]      # the last k call sites, innermost first
    store: ObjectStore
    addr: int | None              # hidden concrete address while placed; None once embedded
    freed: bool = False
    freed_when: claripy.ast.Bool | None = None  # freed on the inputs where this holds (a free of ITE(c, p, NULL))
    parent: tuple[int, int] | None = None  # (segment object id, offset) once relocated into one
    kind: str = "heap"            # heap | segment (objects merged into one) | chunk (a split piece)
    members: tuple[int, ...] = ()  # objects merged into a segment, or the object a chunk came from
    anchor: claripy.ast.BV | None = None  # chunk: its start as ``original base + offset``
    limit: claripy.ast.BV | None = None   # symbolic size (``size`` is then its largest value)
    min_size: int | None = None           # smallest value of ``limit``: offsets below are always in bounds
    align: int = 16                       # the hidden address is a multiple of this (posix_memalign)

    @property
    def start(self) -> claripy.ast.BV:
        """The object's start address in program terms (stable across a split's re-execution)."""
        return self.anchor if self.anchor is not None else self.base

    @property
    def placed(self) -> bool:
        """True while the object occupies its own address range."""
        return self.addr is not None

    def __eq__(self, other) -> bool:
        """Field by field, expressions by identity (claripy's ``==`` builds a constraint instead of
        answering), stores by identity (copies share a store until one writes)."""
        if self is other:
            return True
        if not isinstance(other, MemoryObject):
            return NotImplemented
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if a is not b and (isinstance(a, (claripy.ast.Base, ObjectStore)) or
                               isinstance(b, (claripy.ast.Base, ObjectStore)) or a != b):
                return False
        return True

    __hash__ = None

    def __repr__(self) -> str:
        what = {"segment": "Segment", "chunk": "Chunk"}.get(self.kind, "MemoryObject")
        size = f"{self.size} B" if self.limit is None else f"symbolic size <= {self.size} B"
        where = f"hidden at {self.addr:#x}" if self.addr is not None else (
            f"in #{self.parent[0]} at +{self.parent[1]}" if self.parent is not None else "unplaced")
        parts = [f"#{self.id}", size, where]
        if self.name is not None:
            parts.append(f"base {self.name}")
        if self.kind == "segment":
            parts.append("members " + ",".join(f"#{m}" for m in self.members))
        elif self.kind == "chunk":
            parts.append(f"of #{self.members[0]}")
        else:
            parts.append(f"site {self.site:#x}")
        if self.freed:
            parts.append("freed")
        elif self.freed_when is not None:
            parts.append("freed on some inputs")
        return f"<{what} {' '.join(parts)}>"
