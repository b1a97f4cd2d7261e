"""How much one angr-ram step may do: whether blocks run on ints at all (:func:`angr_blocks` turns
that off, for comparisons) and how many blocks one step may run (:func:`chain_policy`: several only
where no one counts or looks at single steps)."""

from __future__ import annotations

import contextvars
import sys

from angr import SimulationManager
from angr.exploration_techniques import DFS, Explorer, LengthLimiter, Suggestions, Timeout

from angr_ram.core.context import setting
from angr_ram.memory.strategies.fork import forking_enabled

MAX_CHAIN = 64      # blocks one step may run
_ANGR_ONLY = contextvars.ContextVar("angr_ram_angr_blocks", default=False)
_CHAIN = contextvars.ContextVar("angr_ram_chain", default=1)
_OWN_DRIVER = contextvars.ContextVar("angr_ram_own_driver", default=False)
_RUN_CODE = SimulationManager.run.__code__
_STEP_CODE = SimulationManager.step.__code__
MAX_FRAMES = 64     # calling frames looked at for angr's run/step (steps_observed)


def concrete_enabled() -> bool:
    """True while RelocatableMemory steps a state, outside :func:`angr_blocks`."""
    return forking_enabled() and not _ANGR_ONLY.get()


def chain_length() -> int:
    """The blocks the current step may run (1 unless :func:`chain_policy` allows more)."""
    return _CHAIN.get()


# exploration techniques that look at a state's address only at their stop points (or not at all)
_ADDRESS_BLIND = (DFS, LengthLimiter, Suggestions, Timeout)


def angr_blocks():
    """Context in which every block goes to angr's engine and angr keeps the call stack (for
    comparisons and tests)."""
    return setting(_ANGR_ONLY, True)


def own_driver():
    """Context in which angr-ram's own loop steps the simulation manager (the CLI, ``explore()``,
    the distributed workers): nothing outside looks at a state between two steps, so a step may
    run several blocks."""
    return setting(_OWN_DRIVER, True)


def steps_observed() -> bool:
    """Whether the code that steps the simulation manager can see where a step lands: a ``step()``
    the script calls itself (it looks at the states after each), ``run(n=...)`` or
    ``run(until=...)`` (they count steps or test each one), ``step(step_func=...)``. Read off the
    calling frames (angr's ``SimulationManager.run`` and ``step``; at most :data:`MAX_FRAMES`);
    False under :func:`own_driver` and under a plain ``run()`` or ``explore()``."""
    if _OWN_DRIVER.get():
        return False
    f = sys._getframe(1)
    for _ in range(MAX_FRAMES):
        if f is None:
            break
        code = f.f_code
        if code is _STEP_CODE:
            local = f.f_locals
            if local.get("step_func") is not None or local.get("n") is not None:
                return True
        elif code is _RUN_CODE:
            local = f.f_locals
            return local.get("n") is not None or local.get("until") is not None
        f = f.f_back
    return True


def chain_policy(simgr, own: object):
    """Context for stepping ``simgr``: blocks are followed (up to :data:`MAX_CHAIN`) when no one
    counts or inspects single steps (:func:`steps_observed`) and every exploration technique on it is
    ``own`` (the RelocatableMemory stepping), one of :data:`_ADDRESS_BLIND` or a technique that says
    it is (``address_blind = True``: angr-ram's searches and coverage), or an Explorer whose
    find and avoid conditions are addresses (they come as stop points); otherwise one block per
    step, as angr steps."""
    known = all(t is own or isinstance(t, _ADDRESS_BLIND) or getattr(t, "address_blind", False) is True
                or (type(t) is Explorer and not t._unknown_stop_points) for t in simgr._techniques)
    return setting(_CHAIN, MAX_CHAIN if known and not steps_observed() else 1)
