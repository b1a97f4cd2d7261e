"""The patch sets that take concrete work off angr's claripy path while RelocatableMemory steps:
blocks on ints (:mod:`.concrete_blocks`), the call stack on ints (:mod:`.concrete_callstack`) and
exits whose guard is a constant (:mod:`.concrete_exits`). :func:`angr_blocks` turns the first two off;
:func:`chain_policy` says whether a step may run several blocks."""

from __future__ import annotations

from angr_ram.run.concrete_blocks import (
    CONCRETE_BLOCKS,
    angr_blocks,
    chain_policy,
    own_driver,
    steps_observed,
)
from angr_ram.run.concrete_callstack import CONCRETE_CALLSTACK
from angr_ram.run.concrete_exits import CONCRETE_EXITS

CONCRETE_STEPS = (CONCRETE_BLOCKS, CONCRETE_CALLSTACK, CONCRETE_EXITS)

__all__ = ["CONCRETE_STEPS", "angr_blocks", "chain_policy", "own_driver", "steps_observed"]
