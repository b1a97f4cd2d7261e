"""angr-ram's engine for the states RelocatableMemory steps (:mod:`angr_ram.core.engines`): the
project's engine with successors z3 gave up on kept apart (:mod:`angr_ram.memory.undecided`), the
call stack on ints (:mod:`.concrete_callstack`), blocks on ints (:mod:`.concrete_blocks`), exits whose
guard is a constant (:mod:`.concrete_exits`) and x87 extended loads and stores
(:mod:`angr_ram.memory.extended_precision`). :func:`angr_blocks` turns blocks and the call stack
on ints off; :func:`chain_policy` says whether a step may run several blocks."""

from __future__ import annotations

from angr_ram.core.engines import EngineCache
from angr_ram.memory.extended_precision import ExtendedPrecisionMixin
from angr_ram.memory.undecided import UndecidedSuccessorsMixin
from angr_ram.run.concrete_blocks import ConcreteBlocksMixin
from angr_ram.run.concrete_callstack import IntCallStackMixin
from angr_ram.run.concrete_exits import ConstantExitsMixin
from angr_ram.run.step_policy import angr_blocks, chain_policy, own_driver, steps_observed

TOP_MIXINS = (UndecidedSuccessorsMixin, IntCallStackMixin)
VEX_MIXINS = (ConcreteBlocksMixin, ConstantExitsMixin, ExtendedPrecisionMixin)


def ram_engines() -> EngineCache:
    """The engines RelocatableMemory steps its states with (one cache per technique)."""
    return EngineCache(TOP_MIXINS, VEX_MIXINS)


__all__ = ["TOP_MIXINS", "VEX_MIXINS", "angr_blocks", "chain_policy", "own_driver", "ram_engines", "steps_observed"]
