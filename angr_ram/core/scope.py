"""Run scope: what one exploration accumulates, owned by its technique, never by the process.

A :class:`RunScope` holds a run's counters and its bounded memos (evaluations under solver models,
lookup tables recognised in expressions). The technique that owns it makes it *active* while it
works (a step, a merge, a query of one of its states); code that needs a memo asks for the active
scope with :func:`current` and works without memos when there is none. Two simulation managers in
one process therefore never share or overwrite each other's counters or memos. An active scope
holds the patch sets its technique names (:mod:`angr_ram.core.patches`): the process-wide hooks are in
place only while some scope is active or *running*, and act only while their gates hold.

A technique marks its scope running from its first step to the end of the run
(:meth:`RunScope.begin`, :meth:`RunScope.end`): the sets then stay in place between steps instead
of being put in place and taken away around every step (each of which resets Python's method caches
of the patched classes). A running scope that is dropped without :meth:`RunScope.end` lets go of its
sets when it is garbage-collected (with the run's states: angr's engine keeps the last state it
stepped, so that is when the project goes too); until then its sets are in place but inert, since
their gates hold only while a scope is active.
"""

from __future__ import annotations

import contextlib
import contextvars
import weakref
from collections import OrderedDict
from collections.abc import Iterable

from angr_ram.core import patches

_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("angr_ram_scope", default=None)


class LRU(OrderedDict):
    """A dict bounded to ``limit`` entries that drops the least recently used one first."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def lookup(self, key, default=None):
        """The value under ``key`` (marked as recently used), or ``default``."""
        try:
            self.move_to_end(key)
        except KeyError:
            return default
        return self[key]

    def put(self, key, value) -> list:
        """Store ``value`` under ``key``; evict the oldest entries beyond the limit and return their
        values."""
        self[key] = value
        self.move_to_end(key)
        evicted = []
        while len(self) > self.limit:
            evicted.append(self.popitem(last=False)[1])
        return evicted


class RunScope:
    """Counters and memos of one run (see the module docstring).

    :param stats: the run's counters (a :class:`~angr_ram.core.stats.RunStats`, or None for a technique
        that keeps its own); z3 calls made while the scope is active are counted into it.
    :param memo_models: how many solver models keep an evaluation memo.
    :param memo_entries: evaluations a model's memo keeps before it is cleared.
    :param tables: how many recognised lookup tables are remembered.
    :param patch_sets: the names of the patch sets held while the scope is active (None: every
        declared set; a technique names its own).
    :param config: the run's :class:`~angr_ram.run.config.RunConfig` (None: a scope of no
        RelocatableMemory run; the layers then use their defaults and do not seed models).
    :param profile: the run's :class:`~angr_ram.core.profile.Profile` when it is profiled.
    """

    def __init__(self, stats=None, memo_models: int = 128, memo_entries: int = 20_000, tables: int = 4096,
                 patch_sets: Iterable[str] | None = None, config=None, profile=None):
        self.stats = stats
        self.config = config
        self.profile = profile
        self.patch_sets = None if patch_sets is None else tuple(patch_sets)
        self._sets: list | None = None       # the PatchSet objects, resolved at the first activation
        self._running = None                 # weakref.finalize that lets go of the sets (see begin)
        self.deadline = None                 # while a step runs: the run's Deadline (core.deadline): z3 calls get what is left
        self.budget_ms: int | None = None    # while a first-pass step runs: ms per z3 call (deferral)
        self.memo_entries = memo_entries
        self.model_memos: LRU = LRU(memo_models)
        self.tables: LRU = LRU(tables)
        self._memos: dict = {}

    def __repr__(self) -> str:
        return f"<RunScope {len(self.model_memos)} model memos, {len(self.tables)} tables>"

    def memo(self, name: str, factory):
        """The run's memo called ``name``, made by ``factory()`` the first time it is asked for."""
        m = self._memos.get(name)
        if m is None:
            m = self._memos[name] = factory()
        return m

    def sets(self) -> list:
        """The patch sets this scope holds (an unknown name is an error)."""
        if self._sets is None:
            self._sets = patches.patch_sets(self.patch_sets)
        return self._sets

    @property
    def running(self) -> bool:
        """True between :meth:`begin` and :meth:`end`."""
        return self._running is not None and self._running.alive

    def begin(self) -> None:
        """Mark the run as running: its patch sets stay in place until :meth:`end` (idempotent)."""
        if self.running:
            return
        self._running = weakref.finalize(self, _release, _acquire(self.sets()))

    def end(self) -> None:
        """The run has ended: let go of its patch sets (idempotent; :meth:`active` holds them
        again for its block if the scope is used after)."""
        if self._running is not None:
            self._running()
            self._running = None

    @contextlib.contextmanager
    def active(self):
        """Make this scope the active one inside the block (nested scopes are restored after it),
        with its patch sets in place (held for the block unless the run is running)."""
        if self.running:
            token = _ACTIVE.set(self)
            try:
                yield self
            finally:
                _ACTIVE.reset(token)
            return
        held = _acquire(self.sets())
        try:
            token = _ACTIVE.set(self)
            try:
                yield self
            finally:
                _ACTIVE.reset(token)
        finally:
            _release(held)


def _acquire(sets: list) -> list:
    """Hold every set of ``sets`` (none if one fails); returns them, for :func:`_release`."""
    held = []
    try:
        for s in sets:
            s.acquire()
            held.append(s)
    except BaseException:
        _release(held)
        raise
    return held


def _release(held: list) -> None:
    for s in reversed(held):
        s.release()


def in_run() -> bool:
    """True while some run scope is active (the gate of most patch sets)."""
    return _ACTIVE.get() is not None


def current() -> RunScope | None:
    """The active run scope, or None outside every angr-ram run."""
    return _ACTIVE.get()


def memo(name: str, factory):
    """The active run's memo called ``name``, or a fresh ``factory()`` outside a run (used once)."""
    scope = _ACTIVE.get()
    return factory() if scope is None else scope.memo(name, factory)
