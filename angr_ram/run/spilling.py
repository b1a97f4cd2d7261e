"""A frontier that fits the machine: states beyond a bound wait on disk, not in memory.

A program that forks on every input byte keeps thousands of states alive; with them in memory a
run grows until the machine swaps or the run is stopped (``--max-states``). :class:`Spilling`, an
angr exploration technique, keeps the live states (``active`` and a search's ``waiting`` stash) at
most ``max_states``, and the process's RSS under ``max_rss_mb``: above either, the states the run's
search would choose last (its :meth:`~angr_ram.run.search.Search.later`: the oldest for depth-first,
the newest for breadth-first, the deepest for random-path) are pickled to files
(:class:`~angr_ram.run.shipping.StatePacker`: the run's project and caches stay behind) and leave
the simulation manager, down to half the bound. When fewer than a quarter of the bound are alive,
the spilled states the search would choose first come back to wait (to ``active`` when no search keeps a waiting stash),
so a run that ends with nothing alive has run every spilled state. Nothing is lost: the spilled
states' paths are the run's paths, later; a run stopped early counts those still on disk
(:attr:`Spilling.on_disk`) among its unfinished paths. ``describe(state)``, given, is kept in memory
for each state while it is on disk (``explore()`` keeps its test, made when it is spilled from the
models its solver cached, with no z3 call), so a run that ends before it comes back still writes it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time

from angr.exploration_techniques import ExplorationTechnique

from angr_ram.core.errors import AngrRamError
from angr_ram.core.guard import release_memory, rss_mb
from angr_ram.merging import QuantifiedMerging
from angr_ram.run.search import ARRIVAL_KEY, WAITING_STASH, Search
from angr_ram.run.shipping import StatePacker

ROUND_SECONDS = 1.0     # spilling work per step; the rest of a round waits for the next steps
MAX_FAILURES = 8        # states in a row that cannot be pickled before spilling gives up for the run


class Spilling(ExplorationTechnique):
    """Keep at most ``max_states`` live states (and RSS under ``max_rss_mb``, if given) by moving
    the states its search would choose last to files in ``directory`` (a temporary one by default, removed by
    :meth:`close`) and back when the run has room. Counts ``spilled`` and ``restored``; a state
    that cannot be written (not picklable, a full disk) stays live, counted in ``kept`` (the run
    goes on: ``kept_why`` says why); after :data:`MAX_FAILURES` in a row that pickle cannot write
    (a script's callback in ``state.globals`` is inherited by every successor), spilling stops
    for the run (``given_up``): trying each new state cost a script 6 minutes.
    It looks at no state's address, so a step still follows several blocks beside it
    (:func:`~.step_policy.chain_policy`; without this, one block a step: join at 60 s finished 61
    paths against 208)."""

    address_blind = True

    def __init__(self, max_states: int | None = 2000, max_rss_mb: float | None = None, directory=None,
                 describe=None):
        super().__init__()
        if max_states is None and max_rss_mb is None:
            raise AngrRamError("Spilling needs max_states or max_rss_mb")
        if max_states is not None and max_states < 4:
            raise AngrRamError(f"max_states must be at least 4, not {max_states}")
        if max_rss_mb is not None and max_rss_mb <= 0:
            raise AngrRamError(f"max_rss_mb must be positive, not {max_rss_mb}")
        self.max_states, self.max_rss_mb = max_states, max_rss_mb
        self._own_dir = directory is None
        self.directory = directory
        self.packer: StatePacker | None = None
        self._files: list[tuple[int, str]] = []      # (arrival, file), oldest first
        self.spilled = self.restored = self.unloaded = 0
        self.bytes_written = 0
        self._serial = 0
        self._live_at_rss_spill: int | None = None
        self.spilled_last = 1            # how many come back at once under an RSS bound alone
        self.describe = describe         # state -> what to keep in memory of it while it is on disk (its test)
        self._described: dict[str, object] = {}
        self._unloaded_files: list[str] = []
        self.round_seconds = ROUND_SECONDS
        self._pending = 0                # states still to spill in a round cut short by its time
        self._failures = 0               # states in a row pickle could not write
        self.given_up = False            # after MAX_FAILURES of them: no more spilling this run
        self._rss_round = False
        self._kept: set[int] = set()     # ids of states that could not be spilled (they stay live)
        self.kept = 0
        self.kept_why: str | None = None     # why the first of them could not be

    def setup(self, simgr):
        if any(isinstance(t, QuantifiedMerging) for t in simgr._techniques):     # refused now, not at the first spill
            raise AngrRamError("Spilling cannot be combined with QuantifiedMerging: merged states carry "
                               "clauses of the run-wide table")
        if self.directory is None:
            self.directory = tempfile.mkdtemp(prefix="angr-ram-spill-")
        os.makedirs(self.directory, exist_ok=True)

    @property
    def on_disk(self) -> int:
        """States still spilled."""
        return len(self._files)

    def step(self, simgr, stash="active", **kwargs):
        simgr = simgr.step(stash=stash, **kwargs)
        if stash != "active":
            return simgr
        live = self._live(simgr)
        if self._pending and not self.given_up:       # a round cut short by its time: the rest of it first
            self._pending = self._spill(simgr, self._pending)
            if not self._pending and self._rss_round:
                self._live_at_rss_spill = self._live(simgr)
                self.spilled_last = max(1, self._live_at_rss_spill)
        elif self.max_states is not None and live > self.max_states and not self.given_up:
            self._rss_round = False
            self._pending = self._spill(simgr, live - self.max_states // 2)
        elif not self.given_up and self.max_rss_mb is not None and rss_mb() > self.max_rss_mb and live > 1 and (
                self._live_at_rss_spill is None or live > self._live_at_rss_spill):
            self._rss_round = True
            self._pending = self._spill(simgr, live // 2)
            if not self._pending:
                self._live_at_rss_spill = self._live(simgr)
                self.spilled_last = max(1, self._live_at_rss_spill)
        elif self._files and (live == 0 or (self.max_states is not None and live <= self.max_states // 4)):
            self._restore(simgr)
        return simgr

    def complete(self, simgr):
        return False

    @staticmethod
    def _later_of(simgr):
        """The run's search's :meth:`~angr_ram.run.search.Search.later` (with no search, the
        depth-first one: the oldest states wait longest)."""
        search = next((t for t in simgr._techniques if isinstance(t, Search)), None)
        if search is not None:
            return search.later
        return lambda s: -s.globals.get(ARRIVAL_KEY, 0)

    @staticmethod
    def _live(simgr) -> int:
        return len(simgr.active) + len(simgr.stashes.get(WAITING_STASH, ()))

    def _spill(self, simgr, n: int) -> int:
        """Spill ``n`` of the states the search would take last, for at most ``round_seconds``;
        how many are still to be spilled (at the next step: a round of thousands of states must
        not hold a run past its deadline; expr's took 13 s)."""
        if self.packer is None:
            self.packer = StatePacker(simgr)
        waiting = simgr.stashes.get(WAITING_STASH)
        pool = waiting if waiting else simgr.active
        keep = 1 if pool is simgr.active else 0          # a step needs a state to step
        later = self._later_of(simgr)
        keys = [later(s) for s in pool]
        order = sorted((i for i in range(len(pool)) if id(pool[i]) not in self._kept), key=lambda i: keys[i], reverse=True)
        chosen = order[:max(0, min(n, len(pool) - keep))]      # those the search would take last
        if not chosen:
            return 0
        out = set()
        end = time.perf_counter() + self.round_seconds
        for i in chosen:
            if out and time.perf_counter() > end:
                break
            s = pool[i]
            try:
                data = self.packer.dumps(s)        # its ancestry's histories stay behind
            except Exception as e:  # noqa: BLE001 - a state that cannot be written stays in memory, and the run goes on
                self._keep(s, f"not picklable: {type(e).__name__}: {str(e)[:120]}")
                self._failures += 1
                if self._failures >= MAX_FAILURES:      # its successors inherit what pickle cannot write
                    self.given_up = True
                    break
                continue
            self._failures = 0
            self._serial += 1
            path = os.path.join(self.directory, f"state{self._serial:08d}.pkl")
            try:
                with open(path, "wb") as f:
                    f.write(data)
            except OSError as e:        # a full disk: this state and the rest of this round stay in memory
                self._keep(s, f"not written: {e.strerror or e}")
                with contextlib.suppress(OSError):
                    os.remove(path)
                break
            if self.describe is not None:
                try:
                    self._described[path] = self.describe(s)
                except Exception:  # noqa: BLE001 - a description is a convenience: the file is the state
                    self._described[path] = None
            self._files.append((keys[i], path))
            self.bytes_written += len(data)
            out.add(i)
        pool[:] = [s for i, s in enumerate(pool) if i not in out]
        self.spilled += len(out)
        release_memory()
        return len(chosen) - len(out) if len(out) < len(chosen) and time.perf_counter() > end else 0

    def _keep(self, state, why: str) -> None:
        """``state`` could not be spilled: it stays live (and is not tried again); counted in ``kept``."""
        self._kept.add(id(state))
        self.kept += 1
        self.kept_why = self.kept_why or why

    def _restore(self, simgr) -> None:
        if self.packer is None:
            self.packer = StatePacker(simgr)
        room = self.max_states // 2 - self._live(simgr) if self.max_states is not None else self.spilled_last
        back = []
        self._files.sort(key=lambda f: f[0], reverse=True)     # those the search would take first, last
        while self._files and len(back) < max(1, room):
            _, path = self._files.pop()
            with open(path, "rb") as f:
                back.append(self.packer.loads(f.read()))
            os.remove(path)
            self._described.pop(path, None)
        self.restored += len(back)
        searches = [t for t in simgr._techniques if isinstance(t, Search)]
        simgr.stashes[WAITING_STASH if searches else "active"].extend(back)
        for t in searches:          # the search picks the next state among them
            t.select(simgr)

    def left_states(self, stop=None):
        """The states still on disk, loaded one at a time (the files stay until :meth:`close`): a
        run that stopped writes their tests as it does for its live unfinished states. Once
        ``stop()`` is true no more are loaded; ``unloaded`` counts those left, and
        :meth:`left_described` gives what ``describe`` kept of them."""
        self.unloaded = 0
        self._unloaded_files = []
        if self.packer is None:
            return
        files = sorted(self._files, key=lambda f: f[0])
        for i, (_, path) in enumerate(files):
            if stop is not None and stop():
                self.unloaded = len(files) - i
                self._unloaded_files = [p for _, p in files[i:]]
                return
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:     # removed under the run: its path is counted, not loaded
                continue
            yield self.packer.loads(data)

    def left_described(self) -> list:
        """What ``describe`` made of each state :meth:`left_states` did not load, when it was
        spilled (None where it made nothing)."""
        return [self._described.get(p) for p in self._unloaded_files]

    def close(self) -> None:
        """Remove the spill files (and the directory, if this technique made it)."""
        self._described.clear()
        for _, path in self._files:
            try:
                os.remove(path)
            except OSError:
                pass
        if self._own_dir and self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
