"""The forking model: a symbolic pointer that may hit several targets forks the state.

Forking is only possible while :class:`angr_ram.RelocatableMemory` steps a state (it catches the
:class:`~angr_ram.core.errors.ForkRequest`); outside a step (a user calling ``state.memory.load`` in
IPython) the memory layer falls back to an if-then-else over the targets, which is equally complete.
"""

from __future__ import annotations

import contextvars

from angr_ram.core.context import setting

_FORKING = contextvars.ContextVar("angr_ram_forking", default=False)


def forking_enabled() -> bool:
    """True while a RelocatableMemory technique is stepping a state."""
    return _FORKING.get()


def forking():
    """Context in which memory operations may raise ForkRequest."""
    return setting(_FORKING, True)


_VALUE_FORKING = contextvars.ContextVar("angr_ram_value_forking", default=False)


def value_forking_enabled() -> bool:
    """True while a state is stepped by a technique that forks on a symbolic value a procedure
    must know (a ``printf`` argument): RelocatableMemory, or QuantifiedMerging on its own."""
    return _FORKING.get() or _VALUE_FORKING.get()


def value_forking():
    """Context in which procedures may raise ForkRequest over the values of an argument (the memory
    layer still does not fork: QuantifiedMerging alone has no address space)."""
    return setting(_VALUE_FORKING, True)
