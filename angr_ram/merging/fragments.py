"""Merge points and the execution tree of one fragment run.

A merge point is a function (symbol name or entry address) or a loop (its header address, or
``"auto"``: every natural loop that angr's CFGFast and LoopFinder find in the program's own
functions). A state that reaches the entry (the function's first block, the loop header from
outside) opens a *fragment*, remembering a copy of itself (the tree's root); its descendants carry
the fragment's id in ``state.globals``. A descendant that leaves the fragment is a *leaf*: for a
function, when it returns to the caller; for a loop, when it reaches a block outside the loop
body in the same frame (or returns). Leaves wait until no state of the fragment is left running,
then they are merged.

A loop whose trip count is concrete leaves through one path per run, so ``"auto"`` costs such
loops only the bookkeeping: nothing is merged there.

A leaf's tree path condition is the list of constraints it added since the root, in order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from angr_ram.core.errors import AngrRamError

log = logging.getLogger(__name__)

FRAGMENT_KEY = "angr_ram_fragment"
WAIT_STASH = "merge_wait"           # leaves waiting for their fragment run to close
# stashes whose states run no more (the waiting leaves are counted by their fragments)
TERMINAL_STASHES = frozenset(("deadended", "errored", "unsat", "pruned", "unconstrained", "memory_errors", "unknown",
                              "interrupted", WAIT_STASH))


RUNTIME_FUNCTIONS = frozenset(("_start", "_init", "_fini", "deregister_tm_clones", "register_tm_clones",
                               "frame_dummy", "__do_global_dtors_aux", "__libc_csu_init", "__libc_csu_fini"))


@dataclass(frozen=True)
class MergePoint:
    """A function (entered at its first block) or a loop (entered at its header)."""

    name: str
    kind: str = "function"                            # "function" | "loop"
    body: tuple[tuple[int, int], ...] = ()            # loop: [start, end) of each body block

    def inside(self, addr: int) -> bool:
        """True if ``addr`` lies in a block of the loop body."""
        return any(lo <= addr < hi for lo, hi in self.body)


def find_loops(project) -> dict[int, MergePoint]:
    """Header address -> loop merge point for every natural loop in the main binary's own
    functions (not PLT stubs, SimProcedures or the C runtime's start-up code)."""
    cfg = project.analyses.CFGFast(normalize=True)
    out: dict[int, MergePoint] = {}
    for loop in project.analyses.LoopFinder(kb=cfg.kb).loops:
        head = loop.entry.addr
        fn = cfg.kb.functions.floor_func(head)
        if fn is None or fn.is_plt or fn.is_simprocedure or project.is_hooked(fn.addr) or fn.name in RUNTIME_FUNCTIONS:
            continue
        body = tuple(sorted((n.addr, n.addr + max(n.size or 1, 1)) for n in loop.body_nodes))
        out[head] = MergePoint(f"{fn.name}:loop@{head:#x}", "loop", body)
    return out


def resolve_merge_points(project, merge_points) -> dict[int, MergePoint]:
    """Entry address -> merge point: function names, function entry or loop header addresses, or
    ``"auto"`` (every loop of the program's own functions)."""
    if isinstance(merge_points, (str, int)):
        merge_points = [merge_points]
    out: dict[int, MergePoint] = {}
    loops = None
    auto = False
    for mp in merge_points:
        if mp == "auto":
            loops = find_loops(project) if loops is None else loops
            if not loops:       # a program without loops: nothing to merge, the run goes on as without merging
                log.warning("merge_points='auto': no loops in %s, nothing will be merged", project.filename)
                auto = True
            out.update(loops)
            continue
        if isinstance(mp, int):
            sym = project.loader.find_symbol(mp)
            if sym is not None and sym.is_function and sym.rebased_addr == mp:
                out[mp] = MergePoint(sym.name)
                continue
            loops = find_loops(project) if loops is None else loops
            if mp not in loops:
                raise AngrRamError(f"merge point {mp:#x}: neither a function entry nor a loop header")
            out[mp] = loops[mp]
            continue
        if not isinstance(mp, str):
            raise AngrRamError(f"a merge point is a function name, an address or 'auto', not {mp!r}")
        sym = project.loader.find_symbol(mp)
        if sym is None or not sym.is_function:
            raise AngrRamError(f"merge point {mp!r}: no function of that name in {project.filename}")
        out[sym.rebased_addr] = MergePoint(mp)
    if not out and not auto:
        raise AngrRamError("QuantifiedMerging needs at least one merge point (function name, address or 'auto')")
    return out


@dataclass
class Fragment:
    """One run of a merge point: its root state, exit and waiting leaves."""

    id: int
    point: MergePoint
    root: object                      # a copy of the state at the entry
    ret_addr: int
    depth: int                        # call-stack depth inside the function
    leaves: list = field(default_factory=list)
    tree: object = None               # incremental merging's execution tree (None: off)
    parent: int | None = None         # the enclosing fragment (a loop or function around this one)
    parent_node: int | None = None    # the enclosing fragment's tree node this one was entered from
    steps: int = 0                    # state steps taken in it and in the fragments nested in it

    @property
    def name(self) -> str:
        """The merge point's name."""
        return self.point.name

    def is_leaf(self, state) -> bool:
        """True once ``state`` has left the fragment (returned, or left the loop body)."""
        depth = len(state.callstack)
        if self.point.kind == "loop":
            return depth < self.depth or (depth == self.depth and not self.point.inside(state.addr))
        return state.addr == self.ret_addr and depth < self.depth

    def tail(self, state) -> list:
        """The constraints ``state`` added since the root (its tree path condition), in order."""
        seen = {c.hash() for c in self.root.solver.constraints}
        return [c for c in state.solver.constraints if c.hash() not in seen]
