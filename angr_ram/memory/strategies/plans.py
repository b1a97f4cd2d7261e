"""What a multiple-resolution model decides for an access, and the two models that keep no state.

:class:`Plan` is the decision. ``fork`` (one state per target) is also the model of an address
space made without one; ``ite`` keeps one state with an if-then-else over the targets. The segment
models build on these in :mod:`angr_ram.memory.strategies.models`. ``space`` is the state's
:class:`~angr_ram.memory.address_space.AddressSpace`, which imports this module for its default."""

from __future__ import annotations

from dataclasses import dataclass

import claripy

from angr_ram.core.errors import Target
from angr_ram.memory.memory_object import MemoryObject


@dataclass(frozen=True)
class Plan:
    """A model's decision for an access with several good targets: exactly one field is set."""

    access: list | None = None          # access these hits here (an if-then-else over them)
    fork: list | None = None            # fork one state per target (a list of Target)
    segment: MemoryObject | None = None  # the objects now form this segment: resolve again


class ForkModel:
    """One state per target."""

    name = "fork"
    context_resolution = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def plan(self, space, hits: list, targets: list[Target], loc: int, forking: bool) -> Plan:
        """What to do with an access at ``loc`` whose good ``hits`` (and their ``targets``) are
        several: fork inside a step, else an if-then-else over them (equally complete)."""
        return Plan(fork=targets) if forking else Plan(access=hits)

    def with_error_paths(self, good: list[Target], errors: list[Target]) -> list[Target]:
        """The fork's targets when the ``errors`` targets fault and the ``good`` ones do not: one
        state per target."""
        return [*good, *errors]

    def record(self, space, objs: list[MemoryObject], loc: int) -> None:
        """Remember that the access at ``loc`` resolved to ``objs`` (context-based resolution)."""

    def merge(self, space, objs: list[MemoryObject], loc: int) -> MemoryObject | None:
        """Merge ``objs`` into a segment and return it, or None to use the fallback."""
        return None


class IteModel(ForkModel):
    """One state with an if-then-else over the targets."""

    name = "ite"

    def plan(self, space, hits, targets, loc, forking):
        return Plan(access=hits)

    def with_error_paths(self, good, errors):
        """One state for every good target (the access is then an if-then-else), error paths apart."""
        return [Target(claripy.Or(*[t.constraint for t in good]), "object"), *errors]
