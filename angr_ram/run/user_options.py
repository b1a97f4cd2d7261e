"""Options and settings of a user's state that angr-ram does not honour, said once in one line each.

angr-ram honours the state options a script adds (``LAZY_SOLVES``, ``UNICORN``, ``ZERO_FILL_*``,
``SYMBOL_FILL_*``, ``TRACK_*``...). Some ask angr for what angr-ram replaces on purpose:

* how a symbolic address is concretized (``AVOID_MULTIVALUED_*``, ``CONSERVATIVE_*_STRATEGY``,
  concretization strategies of the script's own on ``state.memory``): angr-ram steps aside for
  the addresses that cannot reach its heap (their interval, read from the expression, misses the
  heap range, or the path constraints keep them out of it: a table in the program's data, the
  stack), which angr concretizes as the script asked; a pointer that may reach a heap object still resolves to every value it can take
  (angr-ram's relocatable objects have no address angr's strategies could pick);
* which claripy frontend answers (``REPLACEMENT_SOLVER``, ``CACHELESS_SOLVER``,
  ``ABSTRACT_SOLVER``, ``HYBRID_SOLVER``, ``APPROXIMATE_*``): angr-ram's solver chain replaces it.

:func:`unhonoured` names those a state carries beyond the defaults of its mode; the technique
logs each once (logger ``angr_ram``) and lists them in its :meth:`warnings` and in the stats
(``options_not_honoured``), so that a script can tell, and ``bench --scripts`` shows why.
"""

from __future__ import annotations

from angr import sim_options as o
from angr.storage.memory_mixins import AddressConcretizationMixin

_POINTERS = ("angr concretizes the symbolic addresses that cannot reach angr-ram's heap as asked; "
             "one that may still resolves to every value it can take (angr-ram's symbolic pointers)")
_SOLVER = "angr-ram's solver chain answers queries in place of the claripy frontend it selects"

NOT_HONOURED = {
    o.AVOID_MULTIVALUED_READS: _POINTERS,
    o.AVOID_MULTIVALUED_WRITES: _POINTERS,
    o.CONSERVATIVE_READ_STRATEGY: _POINTERS,
    o.CONSERVATIVE_WRITE_STRATEGY: _POINTERS,
    o.APPROXIMATE_MEMORY_INDICES: _POINTERS,
    o.REPLACEMENT_SOLVER: _SOLVER,
    o.CACHELESS_SOLVER: _SOLVER,
    o.ABSTRACT_SOLVER: _SOLVER,
    o.HYBRID_SOLVER: _SOLVER,
    o.APPROXIMATE_FIRST: _SOLVER,
    o.APPROXIMATE_GUARDS: _SOLVER,
    o.APPROXIMATE_SATISFIABILITY: _SOLVER,
}


class _Defaults:
    """Stands in for a memory to ask angr for its default strategies under a state's options."""

    def __init__(self, state):
        self.state = state
        self.read_strategies = self.write_strategies = None


def _signature(strategies) -> tuple:
    return tuple((type(s).__name__, getattr(s, "_limit", None)) for s in strategies or ())


def custom_strategies(state) -> list[str]:
    """``read_strategies``/``write_strategies`` of ``state.memory`` that are not angr's defaults
    for the state's options (a script set its own)."""
    d = _Defaults(state)
    AddressConcretizationMixin._create_default_read_strategies(d)   # pylint: disable=protected-access
    AddressConcretizationMixin._create_default_write_strategies(d)  # pylint: disable=protected-access
    out = []
    for kind in ("read_strategies", "write_strategies"):
        mine = getattr(state.memory, kind, None)
        if mine is not None and _signature(mine) != _signature(getattr(d, kind)):
            out.append(f"state.memory.{kind}")
    return out


def unhonoured(state) -> dict[str, str]:
    """What ``state`` asks of angr that angr-ram does not do: option or setting -> why."""
    defaults = o.modes.get(getattr(state, "mode", "symbolic"), set())
    out = {name: why for name, why in NOT_HONOURED.items() if name in state.options
           and name not in defaults}
    for setting in custom_strategies(state):
        out[setting] = _POINTERS
    return out


def say_unhonoured(state, stats, log) -> None:
    """Log once per run (one line each) what ``state`` asks that angr-ram does not do, record it
    in ``stats.options_not_honoured``, and let angr concretize the addresses outside angr-ram's
    heap where the state asks for angr's concretization (``state.ram.angr_concretizes``)."""
    found = unhonoured(state)
    state.ram.angr_concretizes = any(why is _POINTERS for why in found.values())
    for name, why in found.items():
        if name not in stats.options_not_honoured:
            stats.options_not_honoured[name] = why
            log.warning("angr-ram does not honour %s: %s", name, why)
