"""Coverage of a program's own code: which instructions and blocks any path executed.

:class:`Coverage` is an exploration technique: every successor of every step adds the blocks its
history records (angr's ``recent_bbl_addrs``; angr-ram's concrete chains record every block they
followed) to the covered set, as the instructions of those blocks, for the tracked objects: the
main binary, and libraries named in ``libraries``. A hooked address (a SimProcedure, a user hook)
covers nothing. The measure is KLEE's, at binary level: the instructions (and CFG blocks) of the
main object's functions reachable from ``main`` in angr's call graph (``CFGFast`` of the tracked
objects, built on first use: about two seconds for a coreutils binary), of which how many some
path executed. Executed instructions outside those functions (start-up code, functions the CFG did
not find) are counted in ``executed`` but not in the percentage.

``distance(state)`` is the number of instructions from the state's code to the nearest instruction
no path executed, along the CFG's edges (calls and returns included), for the coverage-guided
search (:class:`~.search.CoverageNew`); a state in a library is placed at the nearest return address
of its call stack that is in tracked code. ``series`` is the run's coverage over time, one sample a
second: (seconds, covered instructions, finished paths); with ``series_path`` each sample is also
appended to that CSV file as it is taken.
"""

from __future__ import annotations

import bisect
import heapq
import logging
import time

import networkx as nx
from angr.exploration_techniques import ExplorationTechnique

NEW_CODE_KEY = "angr_ram_new_instructions"   # state.globals: instructions first executed on this path
SAMPLE_SECONDS = 1.0            # one series sample a second at most
DISTANCE_REFRESH_SECONDS = 0.5  # distances are recomputed at most this often (when coverage grew)
MAX_BLOCK_CACHE = 1 << 16


class Coverage(ExplorationTechnique):
    """Instructions and blocks of the tracked objects executed by any path (see the module)."""

    address_blind = True

    def __init__(self, libraries=(), series_path=None):
        super().__init__()
        self.libraries = tuple(libraries)
        self.series_path = series_path
        self.covered: set[int] = set()          # instruction addresses executed, tracked objects
        self.blocks: set[int] = set()           # VEX block addresses executed, tracked objects
        self.series: list[tuple[float, int, int]] = []
        self.t0 = time.perf_counter()
        self._ranges: list[tuple[int, int]] = []
        self._instrs: dict[int, tuple] = {}
        self._cfg = None
        self._total: set[int] | None = None
        self._cfg_blocks: dict[int, tuple] = {}
        self._starts: list[int] = []
        self._dist: dict[int, int] = {}
        self._dist_covered = -1
        self._dist_time = 0.0
        self._last_sample = -SAMPLE_SECONDS
        self.project = None

    # ------------------------------------------------------------------ technique hooks
    def setup(self, simgr):
        self.project = simgr._project
        loader = self.project.loader
        objs = [loader.main_object]
        for name in self.libraries:
            obj = loader.find_object(name)
            if obj is None:
                raise ValueError(f"no loaded object named {name!r} to measure coverage of")
            objs.append(obj)
        self.objects = objs
        self._ranges = sorted((o.min_addr, o.max_addr) for o in objs)
        self.t0 = time.perf_counter()
        if self.series_path is not None:
            with open(self.series_path, "w") as f:
                f.write("seconds,instructions,paths\n")
        for states in simgr.stashes.values():
            for s in states:
                self.record(s)

    def step_state(self, simgr, state, **kwargs):
        out = simgr.step_state(state, **kwargs)
        for states in out.values():
            for s in states:
                self.record(s)
        return out

    def step(self, simgr, stash="active", **kwargs):
        simgr = simgr.step(stash=stash, **kwargs)
        self.sample(len(simgr.deadended))
        return simgr

    # ------------------------------------------------------------------ recording
    def tracked(self, addr: int) -> bool:
        return any(lo <= addr <= hi for lo, hi in self._ranges)

    def _block_instructions(self, addr: int) -> tuple:
        ins = self._instrs.get(addr)
        if ins is None:
            try:
                ins = tuple(self.project.factory.block(addr).instruction_addrs)
            except Exception:  # noqa: BLE001 - bytes angr cannot lift cover nothing
                ins = ()
            if len(self._instrs) >= MAX_BLOCK_CACHE:
                self._instrs.clear()
            self._instrs[addr] = ins
        return ins

    def record(self, state) -> int:
        """Add the blocks of ``state``'s last step; returns how many instructions were new."""
        new = 0
        proj = self.project
        for addr in state.history.recent_bbl_addrs:
            if addr is None or not self.tracked(addr) or proj.is_hooked(addr):
                continue
            self.blocks.add(addr)
            for a in self._block_instructions(addr):
                if a not in self.covered:
                    self.covered.add(a)
                    new += 1
        if new:
            state.globals[NEW_CODE_KEY] = state.globals.get(NEW_CODE_KEY, 0) + new
        return new

    def sample(self, paths: int, force: bool = False) -> None:
        """Add a series sample (at most one a second unless ``force``)."""
        t = time.perf_counter() - self.t0
        if not force and t - self._last_sample < SAMPLE_SECONDS:
            return
        self._last_sample = t
        row = (round(t, 2), len(self.covered), paths)
        self.series.append(row)
        if self.series_path is not None:
            try:
                with open(self.series_path, "a") as f:
                    f.write(",".join(str(v) for v in row) + "\n")
            except OSError:         # a full disk or a removed directory: the series stays in memory
                self.series_path = None

    # ------------------------------------------------------------------ the CFG's measure
    def prepare_distances(self) -> None:
        """Build angr's CFG now (the coverage-guided search needs it from the first step)."""
        self._build()

    def _build(self) -> None:
        if self._cfg is not None:
            return
        logging.getLogger("angr.analyses").setLevel(logging.CRITICAL)
        cfg = self.project.analyses.CFGFast(objects=self.objects, normalize=True, data_references=False)
        self._cfg = cfg
        for n in cfg.graph.nodes:
            if n.size and self.tracked(n.addr) and n.block is not None:
                self._cfg_blocks[n.addr] = (n.size, tuple(n.instruction_addrs))
        self._starts = sorted(self._cfg_blocks)
        funcs = cfg.kb.functions
        main = funcs.function(name="main")
        if main is None:
            roots = [f.addr for f in funcs.values() if self.tracked(f.addr)]
        else:
            roots = [main.addr]
        reach = set(roots)
        for r in roots:
            if r in funcs.callgraph:
                reach |= nx.descendants(funcs.callgraph, r)
        total: set[int] = set()
        self._reachable_blocks: set[int] = set()
        for a in reach:
            f = funcs.function(addr=a)
            if f is None or f.is_plt or f.is_simprocedure or not self.tracked(a):
                continue
            for b in f.block_addrs:
                entry = self._cfg_blocks.get(b)
                if entry is not None:
                    total.update(entry[1])
                    self._reachable_blocks.add(b)
        self._total = total

    def measured(self) -> set[int]:
        """The instructions the percentage is of: those of main and the functions it calls."""
        self._build()
        return set(self._total or ())

    def report(self) -> dict:
        """Instructions and CFG blocks of the functions reachable from main: total and covered."""
        self._build()
        total = self._total or set()
        blocks = self._reachable_blocks
        covered_blocks = sum(1 for b in blocks if self._cfg_blocks[b][1] and self._cfg_blocks[b][1][0] in self.covered)
        covered = len(total & self.covered)
        return {"instructions": len(total), "instructions_covered": covered,
                "blocks": len(blocks), "blocks_covered": covered_blocks,
                "percent": round(100.0 * covered / len(total), 1) if total else 0.0,
                "executed": len(self.covered), "series": list(self.series)}

    # ------------------------------------------------------------------ distances
    def _node_of(self, addr: int) -> int | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        start = self._starts[i]
        return start if addr < start + self._cfg_blocks[start][0] else None

    def _refresh(self) -> None:
        now = time.perf_counter()
        if self._dist_covered == len(self.covered) or (self._dist and now - self._dist_time < DISTANCE_REFRESH_SECONDS):
            return
        self._dist_covered, self._dist_time = len(self.covered), now
        g = self._cfg.graph
        dist: dict[int, int] = {}
        heap = []
        for a, (_, ins) in self._cfg_blocks.items():
            if ins and ins[0] not in self.covered:
                dist[a] = 0
                heap.append((0, a))
        heapq.heapify(heap)
        model = self._cfg.model
        while heap:
            d, a = heapq.heappop(heap)
            if d > dist.get(a, 1 << 60):
                continue
            node = model.get_any_node(a)
            if node is None:
                continue
            for pred in g.predecessors(node):
                entry = self._cfg_blocks.get(pred.addr)
                if entry is None:
                    continue
                nd = d + len(entry[1])
                if nd < dist.get(pred.addr, 1 << 60):
                    dist[pred.addr] = nd
                    heapq.heappush(heap, (nd, pred.addr))
        self._dist = dist

    def distance(self, state) -> int | None:
        """Instructions from ``state``'s code to the nearest unexecuted instruction (None: none
        reachable, or the state is nowhere in tracked code)."""
        self._build()
        self._refresh()
        addrs = [state.addr] if state.regs.ip.concrete else []
        try:
            addrs += [f.ret_addr for f in state.callstack if f.ret_addr]
        except Exception:  # noqa: BLE001 - a call stack angr could not keep
            pass
        for a in addrs:
            n = self._node_of(a)
            if n is not None:
                return self._dist.get(n)
        return None
