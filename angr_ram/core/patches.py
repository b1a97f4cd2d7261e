"""Hooks into z3, claripy and angr that exist only while angr-ram works.

Some fixes can only be made by replacing a function of another package (claripy's model
evaluation, angr's format-string arguments and value merging, z3's ``check`` for budgets and
counting). Each replacement is a :class:`Patch`, and each patch belongs to one named
:class:`PatchSet` whose *gate* says when its replacements act (inside a run, while a state is
being forked, while a run is profiled, ...). Importing a module only *declares* its set.

A set is put in place only while something holds it: a run scope that is active
(:meth:`angr_ram.core.scope.RunScope.active`, which holds the sets its technique names) or an explicit
:meth:`PatchSet.hold`. When the last holder lets go, the original functions are restored: after a
run every patched function is claripy's, angr's and z3's own again, and a stock-angr simulation
manager in the same process behaves exactly as in a fresh one. Inside a held set the wrapper
still calls the original whenever the set's gate is closed.

A set declared with ``lifetime="process"`` stays in place from its first hold to the end of the
process (for replacements that objects made during a run still need after it).
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Callable, Iterable

from angr_ram.core.errors import AngrRamError


class Patch:
    """``owner.name`` replaced by ``replacement(original, *args, **kwargs)`` while its set's gate holds."""

    def __init__(self, owner, name: str, replacement: Callable, patch_set: PatchSet):
        self.owner, self.name, self.replacement, self.set = owner, name, replacement, patch_set
        self.original = None
        self.installed = False
        self._restored = None           # what uninstall put back: unchanged since, ``original`` is kept
        patch = self
        gate = patch_set.gate

        def wrapper(*args, **kwargs):
            if gate():
                return patch.replacement(patch.original, *args, **kwargs)
            return patch.original(*args, **kwargs)

        wrapper.__name__ = getattr(replacement, "__name__", name)
        wrapper.__doc__ = replacement.__doc__
        wrapper.__wrapped_patch__ = self
        self.wrapper = wrapper

    def __repr__(self) -> str:
        owner = getattr(self.owner, "__qualname__", None) or getattr(self.owner, "__name__", repr(self.owner))
        return f"<Patch {self.set.name}: {owner}.{self.name} {'installed' if self.installed else 'declared'}>"

    def install(self) -> None:
        """Put the gated wrapper in place (idempotent: a second call changes nothing)."""
        if self.installed:
            return
        current = getattr(self.owner, self.name)
        if current is not self._restored or self.original is None:
            self.original = current
            try:        # the original's parameters (angr counts a SimProcedure's arguments from run's)
                self.wrapper.__signature__ = inspect.signature(current)
            except (TypeError, ValueError):
                pass
        setattr(self.owner, self.name, self.wrapper)
        self.installed = True

    def uninstall(self) -> None:
        """Restore the original function if the wrapper is still the one in place (a function
        someone put over it stays, and the patch stays installed under it)."""
        if not self.installed:
            return
        if getattr(self.owner, self.name) is self.wrapper:
            setattr(self.owner, self.name, self.original)
            self._restored = self.original
            self.installed = False


class PatchSet:
    """Patches with one gate, in place while held (see the module docstring).

    :param name: the set's name, unique in the process (:data:`SETS`).
    :param gate: a function of no arguments: while it returns True the replacements act.
    :param lifetime: ``"held"`` (removed when the last holder lets go) or ``"process"`` (stays
        from its first hold on).
    """

    def __init__(self, name: str, gate: Callable[[], bool], lifetime: str = "held"):
        if lifetime not in ("held", "process"):
            raise AngrRamError(f"unknown patch-set lifetime {lifetime!r}; use 'held' or 'process'")
        if name in SETS:
            raise AngrRamError(f"patch set {name!r} is declared twice")
        self.name, self.gate, self.lifetime = name, gate, lifetime
        self.patches: list[Patch] = []
        self.holders = 0
        SETS[name] = self

    def __repr__(self) -> str:
        return f"<PatchSet {self.name}: {len(self.patches)} patches, {self.holders} holders>"

    @property
    def installed(self) -> bool:
        """True when every patch of the set is in place."""
        return bool(self.patches) and all(p.installed for p in self.patches)

    def patch(self, owner, name: str) -> Callable[[Callable], Patch]:
        """Decorator: declare ``fn(original, *args, **kwargs)`` as the replacement of ``owner.name``."""
        def deco(fn: Callable) -> Patch:
            p = Patch(owner, name, fn, self)
            self.patches.append(p)
            if self.holders:
                p.install()
            return p
        return deco

    def acquire(self) -> None:
        """Hold the set: the first holder puts its patches in place."""
        with _LOCK:
            self.holders += 1
            if self.holders == 1:
                for p in self.patches:
                    p.install()

    def release(self) -> None:
        """Let go of the set: the last holder restores the original functions (unless the set
        lives as long as the process)."""
        with _LOCK:
            self.holders = max(0, self.holders - 1)
            if self.holders == 0 and self.lifetime == "held":
                for p in reversed(self.patches):
                    p.uninstall()

    @contextlib.contextmanager
    def hold(self):
        """The set in place inside the block."""
        self.acquire()
        try:
            yield self
        finally:
            self.release()


SETS: dict[str, PatchSet] = {}
_LOCK = threading.RLock()


def patch_sets(names: Iterable[str] | None = None) -> list[PatchSet]:
    """The declared sets called ``names`` (None: every declared set); an unknown name is an error."""
    if names is None:
        return list(SETS.values())
    out = []
    for n in names:
        if n not in SETS:
            raise AngrRamError(f"no patch set {n!r} is declared; declared: {', '.join(SETS)}")
        out.append(SETS[n])
    return out


def all_patches() -> list[Patch]:
    """Every declared patch, set by set."""
    return [p for s in SETS.values() for p in s.patches]


@contextlib.contextmanager
def holding(names: Iterable[str] | None = None):
    """The sets called ``names`` (None: every declared set) in place inside the block."""
    sets = patch_sets(names)
    held = []
    try:
        for s in sets:
            s.acquire()
            held.append(s)
        yield sets
    finally:
        for s in reversed(held):
            s.release()


def install_all() -> None:
    """Hold every declared set until :func:`uninstall_all` (interactive use: outside any run the
    gates keep the replacements inert)."""
    for s in SETS.values():
        if s not in _HELD:
            s.acquire()
            _HELD.append(s)


def uninstall_all() -> None:
    """Let go of the sets :func:`install_all` holds."""
    while _HELD:
        _HELD.pop().release()


_HELD: list[PatchSet] = []
