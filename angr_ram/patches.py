"""Hooks into z3, claripy and angr that act only inside angr-ram's own work.

Some fixes can only be made by replacing a function of another package (claripy's model
evaluation, angr's format-string arguments and value merging, z3's ``check`` for counting). Each
such replacement is a :class:`Patch`: importing angr-ram only *declares* it; a technique installs
it when it is attached to a simulation manager (:func:`install_all`), and the installed wrapper
calls the replacement only while its gate is open (by default: while an angr-ram run scope is
active, :mod:`angr_ram.scope`), and the original function otherwise. So a stock-angr simulation
manager in the same process behaves exactly as without angr-ram; :func:`uninstall_all` restores
the original functions.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable

from .scope import RunScope, current


def _in_run() -> bool:
    return current() is not None


class Patch:
    """``owner.name`` replaced by ``replacement(original, *args, **kwargs)`` while ``gate()`` holds."""

    def __init__(self, owner, name: str, replacement: Callable, gate: Callable[[], bool] = _in_run):
        self.owner, self.name, self.replacement, self.gate = owner, name, replacement, gate
        self.original = None
        self.installed = False
        patch = self

        def wrapper(*args, **kwargs):
            if patch.gate():
                return patch.replacement(patch.original, *args, **kwargs)
            return patch.original(*args, **kwargs)

        wrapper.__name__ = getattr(replacement, "__name__", name)
        wrapper.__doc__ = replacement.__doc__
        wrapper.__wrapped_patch__ = self
        self.wrapper = wrapper

    def __repr__(self) -> str:
        owner = getattr(self.owner, "__qualname__", None) or getattr(self.owner, "__name__", repr(self.owner))
        return f"<Patch {owner}.{self.name} {'installed' if self.installed else 'declared'}>"

    def install(self) -> None:
        """Put the gated wrapper in place (idempotent: a second call changes nothing)."""
        if self.installed:
            return
        self.original = getattr(self.owner, self.name)
        setattr(self.owner, self.name, self.wrapper)
        self.installed = True

    def uninstall(self) -> None:
        """Restore the original function if the wrapper is still the one in place."""
        if not self.installed:
            return
        if getattr(self.owner, self.name) is self.wrapper:
            setattr(self.owner, self.name, self.original)
            self.installed = False


PATCHES: list[Patch] = []


def declare(owner, name: str, gate: Callable[[], bool] = _in_run) -> Callable[[Callable], Patch]:
    """Decorator: declare ``fn(original, *args, **kwargs)`` as the gated replacement of ``owner.name``."""
    def deco(fn: Callable) -> Patch:
        p = Patch(owner, name, fn, gate)
        PATCHES.append(p)
        return p
    return deco


def install_all() -> None:
    """Install every declared patch (called when a technique is attached)."""
    for p in PATCHES:
        p.install()


def uninstall_all() -> None:
    """Restore every patched function (a later technique setup installs them again)."""
    for p in reversed(PATCHES):
        p.uninstall()


@contextlib.contextmanager
def claripy_fixes():
    """Inside the block every run, stock angr's included, uses angr-ram's claripy fixes (linear
    model evaluation, cheap solver creation): benchmarks compare the models, not claripy's costs."""
    from .plugins import model_cache, model_eval, z3_setup  # noqa: F401 - declare their patches

    install_all()
    with RunScope().active():
        yield


def with_claripy_fixes(fn: Callable) -> Callable:
    """Decorator: run ``fn`` inside :func:`claripy_fixes`."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with claripy_fixes():
            return fn(*args, **kwargs)
    return run
