"""Merge points and the execution tree of one fragment run.

A merge point is a function, given by symbol name or entry address: a state that reaches the
entry opens a *fragment*, remembering a copy of itself (the tree's root); its descendants carry
the fragment's id in ``state.globals``. A descendant that returns to the caller (the root's return
address, at a shallower call depth) is a *leaf*; it waits until no state of the fragment is left
running, then the leaves are merged.

A leaf's tree path condition is the list of constraints it added since the root, in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import AngrRamError

FRAGMENT_KEY = "angr_ram_fragment"


def resolve_merge_points(project, merge_points) -> dict[int, str]:
    """Entry address -> name for each merge point (symbol names or addresses)."""
    if isinstance(merge_points, (str, int)):
        merge_points = [merge_points]
    out: dict[int, str] = {}
    for mp in merge_points:
        if isinstance(mp, int):
            out[mp] = hex(mp)
            continue
        if not isinstance(mp, str):
            raise AngrRamError(f"a merge point is a function name or entry address, not {mp!r}")
        sym = project.loader.find_symbol(mp)
        if sym is None or not sym.is_function:
            raise AngrRamError(f"merge point {mp!r}: no function of that name in {project.filename}")
        out[sym.rebased_addr] = mp
    if not out:
        raise AngrRamError("QuantifiedMerging needs at least one merge point (function name or address)")
    return out


@dataclass
class Fragment:
    """One run of a merge point: its root state, exit and waiting leaves."""

    id: int
    name: str
    root: object                      # a copy of the state at the entry
    ret_addr: int
    depth: int                        # call-stack depth inside the function
    leaves: list = field(default_factory=list)
    tree: object = None               # incremental merging's execution tree (None: off)

    def is_leaf(self, state) -> bool:
        """True once ``state`` has returned from the fragment's function."""
        return state.addr == self.ret_addr and len(state.callstack) < self.depth

    def tail(self, state) -> list:
        """The constraints ``state`` added since the root (its tree path condition), in order."""
        seen = {c.hash() for c in self.root.solver.constraints}
        return [c for c in state.solver.constraints if c.hash() not in seen]
