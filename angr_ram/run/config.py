"""A run's configuration as one validated value.

:class:`RunConfig` holds every option of :class:`~angr_ram.run.technique.RelocatableMemory` (the
technique's keyword arguments, the CLI's ``run`` options and :func:`~angr_ram.run.runner.explore`'s
memory options are its fields). It is checked once, when it is made: a bad value is a one-line
:class:`~angr_ram.core.errors.AngrRamError` naming the option, before any state is touched. The
technique, its run scope (:attr:`angr_ram.core.scope.RunScope.config`) and the layers below read their
settings from it instead of from module-level switches.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from angr_ram.core.errors import AngrRamError
from angr_ram.memory.strategies.models import MODELS
from angr_ram.memory.uninitialized import check_uninitialized
from angr_ram.procedures.environment import ENVIRONMENTS

CACHES = (None, "syntactic", "aa")
Z3_DEFAULT_MS = 300_000      # claripy's own time-out per z3 call


@dataclass(frozen=True)
class RunConfig:
    """The options of one angr-ram run (see :class:`~angr_ram.run.technique.RelocatableMemory`, whose
    docstring describes each)."""

    model: str = "fork"
    symbolic_bases: bool = True
    context_k: int = 4
    reuse_segments: bool = False
    split: int | None = None
    split_threshold: int = 300
    smm_threshold: int = 10 * 1024
    cache: str | None = None
    validate: bool = False
    persist: bool | str | None = None
    context_resolution: bool = True
    max_symbolic_size: int = 64 * 1024
    solver_timeout_ms: int | None = None
    cache_limit: int = 100_000
    profile: bool = False
    seeded_models: bool = True
    defer_ms: int | None = 1000
    resume_ms: int | None = 5_000
    environment: str = "symbolic"
    string_procedures: bool = True
    step_seconds: float | None = 10.0
    step_memory_mb: float | None = 768
    uninitialized: str = "auto"

    def __post_init__(self):
        for check in _CHECKS:
            problem = check(self)
            if problem:
                raise AngrRamError(problem)

    @classmethod
    def of(cls, **options) -> RunConfig:
        """A config from keyword options; an unknown option is a clear error (with the known ones)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise AngrRamError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                               f"known: {', '.join(sorted(names))}")
        return cls(**options)

    def replace(self, **changes) -> RunConfig:
        """This config with ``changes`` (checked as a new one)."""
        return dataclasses.replace(self, **changes)

    @property
    def full_ms(self) -> int:
        """Milliseconds z3 may spend on one call outside a first pass."""
        return self.solver_timeout_ms if self.solver_timeout_ms is not None else Z3_DEFAULT_MS

    @property
    def first_pass_ms(self) -> int | None:
        """The first-pass budget per z3 call, or None when there is none (no ``defer_ms``, or one
        no shorter than the full budget)."""
        return self.defer_ms if self.defer_ms is not None and self.defer_ms < self.full_ms else None


def _positive_number(name: str, v) -> str | None:
    if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v <= 0):
        return f"{name} must be a positive number or None, not {v!r}"
    return None


_CHECKS = (
    lambda c: check_uninitialized(c.uninitialized) and None,      # raises its own error
    lambda c: None if c.model in MODELS else f"unknown model {c.model!r}; supported: {', '.join(MODELS)}",
    lambda c: None if isinstance(c.context_k, int) and c.context_k >= 0 else
    f"context_k must be a non-negative integer, not {c.context_k!r}",
    lambda c: None if c.split is None or (isinstance(c.split, int) and c.split > 0 and not c.split % 8) else
    f"split must be a positive multiple of 8 (bytes per chunk), not {c.split!r}",
    lambda c: None if c.symbolic_bases or c.model not in ("dsmm", "smm", "flat") else
    f"model {c.model!r} relocates objects and needs symbolic_bases=True",
    lambda c: None if c.symbolic_bases or c.split is None else
    "splitting relocates objects and needs symbolic_bases=True",
    lambda c: None if c.cache in CACHES else f"unknown cache {c.cache!r}; use None, 'syntactic' or 'aa'",
    lambda c: None if not c.persist or c.cache is not None else
    "persist needs a query cache: pass cache='aa' or cache='syntactic'",
    lambda c: None if isinstance(c.max_symbolic_size, int) and c.max_symbolic_size >= 0 else
    f"max_symbolic_size must be a non-negative integer, not {c.max_symbolic_size!r}",
    lambda c: None if c.solver_timeout_ms is None or (isinstance(c.solver_timeout_ms, int) and c.solver_timeout_ms > 0)
    else f"solver_timeout_ms must be a positive integer, not {c.solver_timeout_ms!r}",
    lambda c: None if c.defer_ms is None or (isinstance(c.defer_ms, int) and c.defer_ms > 0) else
    f"defer_ms must be a positive integer or None, not {c.defer_ms!r}",
    lambda c: None if c.resume_ms is None or (isinstance(c.resume_ms, int) and not isinstance(c.resume_ms, bool)
                                              and c.resume_ms > 0) else
    f"resume_ms must be a positive integer or None, not {c.resume_ms!r}",
    lambda c: _positive_number("step_seconds", c.step_seconds),
    lambda c: _positive_number("step_memory_mb", c.step_memory_mb),
    lambda c: None if c.environment in ENVIRONMENTS else
    f"unknown environment {c.environment!r}; use one of {', '.join(ENVIRONMENTS)}",
)
