"""``QuantifiedMerging``: an exploration technique that merges the states leaving a fragment.

``mode="ite"`` is standard state merging (Definition 2.1 of the state-merging-with-quantifiers
paper): the leaves of one fragment run that reach the same exit are merged into one state whose
path constraint is ``pc_root /\\ (tpc_1 \\/ ... \\/ tpc_n)`` and whose registers and memory are
if-then-else chains over the tree path conditions.
"""

from __future__ import annotations

import itertools

from angr import ExplorationTechnique

from ..errors import AngrRamError
from .fragments import FRAGMENT_KEY, Fragment, resolve_merge_points

MODES = ("ite",)
WAIT_STASH = "merge_wait"
_TERMINAL = frozenset(("deadended", "errored", "unsat", "pruned", "unconstrained", "memory_errors", WAIT_STASH))


class _Guard:
    """A merge condition in the form ``SimState.merge`` expects (it calls ``to_claripy``)."""

    def __init__(self, ast):
        self.ast = ast

    def to_claripy(self):
        """The condition as a claripy AST."""
        return self.ast


class MergeStats:
    """Counters of the merging technique."""

    def __init__(self):
        self.fragments = 0
        self.leaves = 0
        self.merges_ite = 0
        self.merged_states = 0

    def as_dict(self) -> dict:
        """The counters as a plain dict."""
        return dict(vars(self))


class QuantifiedMerging(ExplorationTechnique):
    """Merge the states that leave a merge point (a function) at the same exit.

    :param mode: ``"ite"`` (standard merging: disjunction and if-then-else).
    :param merge_points: function names or entry addresses.
    """

    def __init__(self, mode: str = "ite", merge_points=()):
        super().__init__()
        if mode not in MODES:
            raise AngrRamError(f"unknown merging mode {mode!r}; supported: {', '.join(MODES)}")
        self.mode = mode
        self._spec = merge_points
        self.entries: dict[int, str] = {}
        self._fragments: dict[int, Fragment] = {}
        self._ids = itertools.count(1)
        self.stats = MergeStats()

    def setup(self, simgr):
        self.entries = resolve_merge_points(simgr._project, self._spec)
        simgr.stashes.setdefault(WAIT_STASH, [])

    def step(self, simgr, stash="active", **kwargs):
        simgr = simgr.step(stash=stash, **kwargs)
        if stash != "active":
            return simgr
        running = []
        for s in simgr.active:
            fid = s.globals[FRAGMENT_KEY] if FRAGMENT_KEY in s.globals else None
            if fid is None:
                if s.addr in self.entries:
                    self._open(s)
                running.append(s)
                continue
            fr = self._fragments.get(fid)
            if fr is not None and fr.is_leaf(s):
                fr.leaves.append(s)
                simgr.stashes[WAIT_STASH].append(s)
            else:
                running.append(s)
        simgr.stashes["active"] = running
        live = {s.globals[FRAGMENT_KEY] for name, states in simgr.stashes.items() if name not in _TERMINAL
                for s in states if FRAGMENT_KEY in s.globals}
        for fid in [f for f in self._fragments if f not in live]:
            fr = self._fragments.pop(fid)
            waiting = {id(s) for s in fr.leaves}
            simgr.stashes[WAIT_STASH] = [s for s in simgr.stashes[WAIT_STASH] if id(s) not in waiting]
            simgr.stashes["active"].extend(self._close(fr))
        return simgr

    def complete(self, simgr):
        return False

    # ------------------------------------------------------------------ fragments
    def _open(self, state) -> None:
        fid = next(self._ids)
        state.globals[FRAGMENT_KEY] = fid
        root = state.copy()
        self._fragments[fid] = Fragment(fid, self.entries[state.addr], root, state.callstack.ret_addr,
                                        len(state.callstack))
        self.stats.fragments += 1

    def _close(self, fr: Fragment) -> list:
        """Merge the leaves of a finished fragment run, one merged state per exit."""
        groups: dict[tuple, list] = {}
        for s in fr.leaves:
            groups.setdefault((s.addr, tuple(f.func_addr for f in s.callstack)), []).append(s)
        out = []
        for leaves in groups.values():
            self.stats.leaves += len(leaves)
            for s in leaves:
                del s.globals._backer[FRAGMENT_KEY]
            if len(leaves) == 1:
                out.append(leaves[0])
                continue
            out.append(self._merge_ite(fr, leaves))
        return out

    def _merge_ite(self, fr: Fragment, leaves: list):
        """Standard merging: ``pc_root /\\ Or(tpc_j)``, values as ITE over the tpc_j."""
        import claripy

        conds = [[_Guard(claripy.And(*fr.tail(s)) if fr.tail(s) else claripy.true())] for s in leaves]
        merged, _, _ = leaves[0].merge(*leaves[1:], merge_conditions=conds, common_ancestor=fr.root)
        self.stats.merges_ite += 1
        self.stats.merged_states += len(leaves)
        return merged
