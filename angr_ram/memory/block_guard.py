"""The guard the rest of a VEX block runs under.

angr (with its default ``COPY_STATES``) goes on executing a block after a conditional exit under
``state.scratch.guard``: the exit's negated condition. After an exit taken for sure claripy folds
it to ``False``: the rest of the block cannot execute, and what it would do (a fault, a store into
a read-only page, a privileged instruction) must not be reported. A syntactic test: it runs on
every heap access; a guard unsatisfiable without being folded is caught by the feasibility check
of whatever would be reported.
"""

from __future__ import annotations


def dead_continuation(state) -> bool:
    """True if ``state`` is running the rest of a block after an exit taken for sure."""
    g = state.scratch.guard
    return g is not None and g.op == "BoolV" and not g.args[0]


def live_guard(state):
    """The block's guard as a condition to add to a report (None: it is ``True``); only for a
    state that is not on a :func:`dead_continuation`."""
    g = state.scratch.guard
    return None if g is None or g.op == "BoolV" else g
