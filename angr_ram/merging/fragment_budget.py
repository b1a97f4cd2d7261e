"""A bound on one fragment run of :class:`~.technique.QuantifiedMerging` (a mixin of it).

A fragment's leaves wait until no state of the fragment run is left running. A loop whose every
iteration forks on input (a per-byte scanner over the whole input: ``wc``, ``fold``, ``od``) has
exponentially many leaves, all held back until the last exists; the merge would come after the
run's time is gone and no path finishes before it. A fragment run (with the fragments nested in
it) that holds more than ``max_fragment_states`` states, or has taken more than
``STEPS_PER_STATE`` times as many state steps (under a search that steps one state at a time the
leaves pile up slowly, but the run still waits for all of them), is given up: its states go on unmerged in
the enclosing fragment run (or outside any), its waiting leaves at once, and its merge point opens
no more fragments. Where merging cannot help, it so stays out of the way.
"""

from __future__ import annotations

from angr_ram.merging.fragments import FRAGMENT_KEY, TERMINAL_STASHES, WAIT_STASH, Fragment
from angr_ram.merging.incremental import NODE_KEY

MAX_FRAGMENT_STATES = 1024  # states of one fragment run (running and waiting leaves) before it is given up
STEPS_PER_STATE = 8         # ... or state steps in it: a run stepping one state at a time holds few at once


class FragmentBudget:
    """Needs ``max_fragment_states``, ``_fragments`` (id -> Fragment), ``_given_up`` (a set of merge
    points), ``entries``, ``stats`` and ``_place`` of the merging technique."""

    def _opens(self, addr) -> bool:
        """Whether a state at ``addr`` outside any fragment opens one there."""
        point = self.entries.get(addr)
        return point is not None and point not in self._given_up

    def _give_up_big(self, simgr) -> None:
        """Give up the outermost fragment runs that hold more than ``max_fragment_states`` states
        (their own and their nested fragments', running or waiting as leaves)."""
        if not self._fragments:
            return
        count: dict[int, int] = {}
        for name, states in simgr.stashes.items():
            for s in states if name not in TERMINAL_STASHES or name == WAIT_STASH else ():
                fid = s.globals[FRAGMENT_KEY] if FRAGMENT_KEY in s.globals else None
                stepped = name == "active"          # the states the step just stepped
                while fid is not None:
                    count[fid] = count.get(fid, 0) + 1
                    fr = self._fragments.get(fid)
                    if fr is not None and stepped:
                        fr.steps += 1
                    fid = fr.parent if fr is not None else None
        big = {f for f, n in count.items() if f in self._fragments and (
            n > self.max_fragment_states or self._fragments[f].steps > self.max_fragment_states * STEPS_PER_STATE)}
        for fid in big:
            fr = self._fragments.get(fid)
            if fr is not None and not (big & self._ancestors(fr)):
                self._give_up(simgr, fr, count[fid])

    def _ancestors(self, fr: Fragment) -> set[int]:
        out, fid = set(), fr.parent
        while fid is not None and fid in self._fragments:
            out.add(fid)
            fid = self._fragments[fid].parent
        return out

    def _give_up(self, simgr, fr: Fragment, n: int) -> None:
        """``fr`` and the fragments nested in it end unmerged: their states go on in ``fr``'s
        enclosing fragment (or outside any), their leaves run again."""
        gone = {f for f, g in self._fragments.items() if f == fr.id or fr.id in self._ancestors(g)}
        for f in gone:
            self._given_up.add(self._fragments.pop(f).point)
        self.stats.given_up += 1
        self.stats.given_up_states += n
        outer = self._fragments.get(fr.parent) if fr.parent is not None else None
        leaves = [s for s in simgr.stashes[WAIT_STASH] if s.globals.get(FRAGMENT_KEY) in gone]
        simgr.stashes[WAIT_STASH] = [s for s in simgr.stashes[WAIT_STASH] if s.globals.get(FRAGMENT_KEY) not in gone]
        for name, states in list(simgr.stashes.items()):
            if name in TERMINAL_STASHES:
                continue
            kept = []
            for s in states:
                if s.globals.get(FRAGMENT_KEY) not in gone:
                    kept.append(s)
                elif self._relabel(s, fr, outer):
                    kept.append(s)
            simgr.stashes[name] = kept
        for s in leaves:
            if self._relabel(s, fr, outer):
                if outer is not None:
                    self._place(simgr, s, fr, outer)
                else:
                    simgr.stashes["active"].append(s)

    def _relabel(self, state, fr: Fragment, outer: Fragment | None) -> bool:
        """Move ``state`` from the given-up ``fr`` into ``outer`` (or out of any fragment); False
        if it descends from a node of ``outer`` that a merge replaced."""
        state.globals._backer.pop(FRAGMENT_KEY, None)
        state.globals._backer.pop(NODE_KEY, None)
        if outer is None:
            return True
        state.globals[FRAGMENT_KEY] = outer.id
        if outer.tree is not None:
            state.globals[NODE_KEY] = fr.parent_node
            return outer.tree.alive(state)
        return True
