"""The forking model: a symbolic pointer that may hit several targets forks the state.

Forking is only possible while :class:`angr_ram.RelocatableMemory` steps a state (it catches the
:class:`~angr_ram.errors.ForkRequest`); outside a step (a user calling ``state.memory.load`` in
IPython) the memory layer falls back to an if-then-else over the targets, which is equally complete.
"""

from __future__ import annotations

import contextvars

from ..context import setting

_FORKING = contextvars.ContextVar("angr_ram_forking", default=False)


def forking_enabled() -> bool:
    """True while a RelocatableMemory technique is stepping a state."""
    return _FORKING.get()


def forking():
    """Context in which memory operations may raise ForkRequest."""
    return setting(_FORKING, True)
