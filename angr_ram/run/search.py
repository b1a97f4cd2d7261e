"""Search strategies: which states a simulation manager steps next, as angr exploration techniques.

angr steps every active state together (breadth-first): a program that reads its input byte by
byte advances all 5^n paths of a per-byte loop at once and finishes none until the last byte. KLEE
picks one state at a time. These techniques keep ``width`` states in ``active`` and park the others
in the ``waiting`` stash; after every step the next ones are chosen from both. They compose with
the other techniques (RelocatableMemory, Explorer, a user's own) and with ``run(n=)`` and
``step()``: a step steps the chosen states only.

* :class:`DepthFirst`: the newest state first (angr's ``DFS`` keeps one state, in random order).
* :class:`BreadthFirst`: the oldest states first, ``width`` at a time.
* :class:`RandomPath`: KLEE's random-path: a state is chosen with the probability of reaching it by
  walking the execution tree from the root, choosing uniformly among the children at every fork,
  so a state that forked less (closer to the root) is more likely: paths that are about to finish
  are not starved by a loop that keeps forking.
* :class:`CoverageNew`: KLEE's ``nurs:covnew``: states near code no path has executed yet are
  preferred (weight ``1 / (1 + d)^2`` for ``d`` the instructions from the state's code to the
  nearest uncovered instruction along the control-flow graph, :class:`~.coverage.Coverage`).
* :class:`Interleaved`: KLEE's default, random-path and coverage-new in turn.
* :class:`CoverageDives`: random-path and coverage-new in turn pick a state, depth-first goes on
  from it for ``dive`` steps (``covnew-dives``).

Each keeps a seeded random generator: a run's order is reproducible. The fork depth random-path
needs is kept in ``state.globals`` (:data:`DEPTH_KEY`), inherited by copies. A state that starts
waiting gives up its solver's z3 objects (angr's ``state.downsize()``; its constraints and cached
models stay, and its next query builds a z3 solver again): thousands of waiting states each held
one per independent constraint set, about 240 KB a state on Debian's ``join`` (580 MB of 1.6 GB
after 180 s).
"""

from __future__ import annotations

import math
import random

from angr.exploration_techniques import ExplorationTechnique

from angr_ram.run.coverage import Coverage

WAITING_STASH = "waiting"
ARRIVAL_KEY = "angr_ram_arrival"    # state.globals: the order in which the search first saw the state
DEPTH_KEY = "angr_ram_fork_depth"     # state.globals: log2 of 1/(probability of a random walk to it)
SEARCHES = ("bfs", "dfs", "random-path", "covnew", "random-path+covnew", "covnew-dives")
COVERAGE_SEARCHES = ("covnew", "random-path+covnew", "covnew-dives")


class Search(ExplorationTechnique):
    """Keep ``width`` states active and the others waiting; :meth:`choose` picks the next ones."""

    address_blind = True        # it looks at states' addresses only through its own stepping

    def __init__(self, width: int = 1, seed: int = 0):
        super().__init__()
        if width < 1:
            raise ValueError(f"width must be at least 1, not {width}")
        self.width = width
        self.rng = random.Random(seed)
        self.steps = 0
        self._arrival = 0          # order in which states became known (breadth- and depth-first)

    def setup(self, simgr):
        simgr.stashes.setdefault(WAITING_STASH, [])
        self._select(simgr)

    def step(self, simgr, stash="active", **kwargs):
        if stash != "active":
            return simgr.step(stash=stash, **kwargs)
        if not simgr.active:
            self._select(simgr)
        stepped = list(simgr.active)
        simgr = simgr.step(stash=stash, **kwargs)
        self.steps += 1
        self._note_forks(stepped, simgr)
        born = {id(s) for s in simgr.active}
        self._select(simgr)
        for s in simgr.stashes.get(WAITING_STASH, ()):    # new states left waiting: no z3 solver kept
            if id(s) in born:
                s.downsize()
        return simgr

    def complete(self, simgr):
        return False

    # ------------------------------------------------------------------ bookkeeping
    def _note_forks(self, stepped, simgr) -> None:
        """Give each new state its arrival number and its fork depth: a parent's ``k`` live
        successors are ``log2(k)`` deeper than it (as in KLEE's process tree, where a finished
        path's leaf is removed, a path that ended does not count)."""
        parents = {id(s.history): s for s in stepped}
        children: dict[int, list] = {}
        for s in simgr.active:
            p = s.history.parent
            if p is not None and id(p) in parents:
                children.setdefault(id(p), []).append(s)
        for pid, kids in children.items():
            base = parents[pid].globals.get(DEPTH_KEY, 0.0)
            extra = math.log2(len(kids)) if len(kids) > 1 else 0.0
            for s in kids:
                s.globals[DEPTH_KEY] = base + extra
                self._arrival += 1
                s.globals[ARRIVAL_KEY] = self._arrival

    def select(self, simgr) -> None:
        """Choose the active states among the active and waiting ones (after a step, or after a
        technique such as :class:`~angr_ram.run.spilling.Spilling` brought states back)."""
        self._select(simgr)

    def _select(self, simgr) -> None:
        pool = list(simgr.active) + list(simgr.stashes.get(WAITING_STASH, []))
        if len(pool) <= self.width:
            simgr.stashes["active"] = pool
            simgr.stashes[WAITING_STASH] = []
            return
        chosen = self.choose(pool, self.width)
        ids = {id(s) for s in chosen}
        simgr.stashes["active"] = chosen
        simgr.stashes[WAITING_STASH] = [s for s in pool if id(s) not in ids]

    def choose(self, pool: list, k: int) -> list:
        raise NotImplementedError

    @staticmethod
    def arrival(state) -> int:
        return state.globals.get(ARRIVAL_KEY, 0)

    def later(self, state) -> float:
        """How late this search would choose ``state``: the larger, the later (a technique that must
        set states aside, such as :class:`~angr_ram.run.spilling.Spilling`, takes the largest first
        and brings the smallest back first). Here: the oldest last, as depth-first."""
        return -self.arrival(state)

    def _weighted(self, pool: list, weights: list[float], k: int) -> list:
        """``k`` distinct states drawn with probability proportional to ``weights``."""
        chosen, idx = [], list(range(len(pool)))
        w = list(weights)
        for _ in range(min(k, len(pool))):
            total = sum(w[i] for i in idx)
            if total <= 0:
                pick = self.rng.choice(idx)
            else:
                r, acc, pick = self.rng.random() * total, 0.0, idx[-1]
                for i in idx:
                    acc += w[i]
                    if acc >= r:
                        pick = i
                        break
            idx.remove(pick)
            chosen.append(pool[pick])
        return chosen


class DepthFirst(Search):
    """The newest states first. A path stepped ``quantum`` times in a row without forking or
    ending (a loop the input keeps going, or one that never ends) goes behind the others, so one
    endless path does not hold up the rest of the run (``demoted`` counts how often)."""

    def __init__(self, width: int = 1, seed: int = 0, quantum: int = 500):
        super().__init__(width, seed)
        self.quantum = quantum
        self.demoted = 0
        self._last = None
        self._streak = 0
        self._behind = 0

    def choose(self, pool, k):
        ranked = sorted(pool, key=self.arrival, reverse=True)
        top = ranked[0]
        last = self._last
        self._streak = self._streak + 1 if last is not None and top.history.parent is last.history else 0
        if self._streak >= self.quantum and len(pool) > k:
            self._behind -= 1
            top.globals[ARRIVAL_KEY] = self._behind      # behind every state there is
            self.demoted += 1
            self._streak = 0
            ranked = ranked[1:] + [top]
        self._last = ranked[0]
        return ranked[:k]


class BreadthFirst(Search):
    """The oldest states first."""

    def choose(self, pool, k):
        return sorted(pool, key=self.arrival)[:k]

    def later(self, state):
        return self.arrival(state)          # the newest last


class RandomPath(Search):
    """KLEE's random-path: weight ``2^-depth`` (the chance of a uniform walk from the root)."""

    def choose(self, pool, k):
        depths = [s.globals.get(DEPTH_KEY, 0.0) for s in pool]
        least = min(depths)
        return self._weighted(pool, [2.0 ** (least - d) for d in depths], k)

    def later(self, state):
        return state.globals.get(DEPTH_KEY, 0.0)       # the deepest (least likely) last


def _coverage_for(simgr, coverage):
    """``coverage``, or the simulation manager's Coverage technique, or a new one installed on it;
    with angr's CFG built (before the first step)."""
    if coverage is None:
        coverage = next((t for t in simgr._techniques if isinstance(t, Coverage)), None)
        if coverage is None:
            coverage = simgr.use_technique(Coverage())
    elif coverage not in simgr._techniques:
        simgr.use_technique(coverage)
    coverage.prepare_distances()
    return coverage


class CoverageNew(Search):
    """KLEE's ``nurs:covnew``: weight ``1 / (1 + d)^2``, ``d`` the distance to uncovered code.
    ``coverage``: the run's :class:`~.coverage.Coverage` (default: the simulation manager's, or a
    new one installed with this technique)."""

    def __init__(self, coverage=None, width: int = 1, seed: int = 0):
        super().__init__(width, seed)
        self.coverage = coverage

    def setup(self, simgr):
        self.coverage = _coverage_for(simgr, self.coverage)
        super().setup(simgr)

    def choose(self, pool, k):
        dist = [self.coverage.distance(s) for s in pool]
        return self._weighted(pool, [1.0 / (1.0 + d) ** 2 if d is not None else 1e-9 for d in dist], k)

    def later(self, state):
        d = self.coverage.distance(state) if self.coverage is not None else None
        return math.inf if d is None else float(d)      # the farthest from new code last


class Interleaved(Search):
    """KLEE's default searcher: random-path and coverage-new, one after the other."""

    def __init__(self, coverage=None, width: int = 1, seed: int = 0):
        super().__init__(width, seed)
        self._parts = (RandomPath(width, seed), CoverageNew(coverage, width, seed + 1))

    def setup(self, simgr):
        self._parts[1].coverage = _coverage_for(simgr, self._parts[1].coverage)
        super().setup(simgr)

    def choose(self, pool, k):
        return self._parts[self.steps % 2].choose(pool, k)

    def later(self, state):
        return self._parts[0].later(state)     # the fork depth: a distance goes stale while a state waits


class CoverageDives(Search):
    """Dives: KLEE's default searchers (:class:`RandomPath` and :class:`CoverageNew`, in turn) pick a state, then depth-first
    (:class:`DepthFirst`) goes on from it for ``dive`` steps, so the run both reaches code no path
    executed yet (coverage-new alone, like KLEE's default, may finish no path in a minute of a
    per-byte loop) and finishes the paths it dives into (depth-first alone spends the run in the
    subtree it started with)."""

    def __init__(self, coverage=None, width: int = 1, seed: int = 0, dive: int = 100):
        super().__init__(width, seed)
        if dive < 1:
            raise ValueError(f"dive must be at least 1, not {dive}")
        self.dive = dive
        self._parts = (DepthFirst(width, seed), CoverageNew(coverage, width, seed + 1), RandomPath(width, seed + 2))
        self._left = 0
        self.dives = 0

    def setup(self, simgr):
        self._parts[1].coverage = _coverage_for(simgr, self._parts[1].coverage)
        super().setup(simgr)

    def choose(self, pool, k):
        if self._left > 0:
            self._left -= 1
            return self._parts[0].choose(pool, k)
        self._left = self.dive - 1
        self.dives += 1
        chosen = self._parts[1 + self.dives % 2].choose(pool, k)     # KLEE's two in turn
        for st in chosen:       # the dive goes on from here: the newest state for depth-first
            self._arrival += 1
            st.globals[ARRIVAL_KEY] = self._arrival
        return chosen

    def later(self, state):
        return self._parts[0].later(state)


def make_search(name: str, coverage=None, width: int = 1, seed: int = 0) -> Search | None:
    """The technique for ``name`` (one of :data:`SEARCHES`; ``bfs`` with width 0 is angr's own
    order: None); ``coverage``: the run's Coverage for the coverage-guided ones."""
    if name not in SEARCHES:
        raise ValueError(f"unknown search {name!r}: one of {', '.join(SEARCHES)}")
    return {"bfs": lambda: BreadthFirst(width, seed), "dfs": lambda: DepthFirst(width, seed),
            "random-path": lambda: RandomPath(width, seed),
            "covnew": lambda: CoverageNew(coverage, width, seed),
            "random-path+covnew": lambda: Interleaved(coverage, width, seed),
            "covnew-dives": lambda: CoverageDives(coverage, width, seed)}[name]()
