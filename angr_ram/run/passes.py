"""The passes a path's steps run in, and the budgets of each.

- **First pass**: every path starts here, ``defer_ms`` per z3 call and ``step_seconds`` per step. A
  path whose step needs more is *deferred*; its decidable siblings go on.
- **Second pass**: once nothing else is active, the deferred paths are resumed. In a run with no
  bound of its own (a script's ``simgr.run()``: no ``guarded(timeout=...)``, no ``solver_timeout_ms``)
  they get ``resume_ms`` per z3 call and a step bound in the first pass's ratio: a branch that only
  an inverted hash could decide (z3 gives up on it after any budget) must not hold the script for
  claripy's 300 s per call, once per such branch. A path still undecided goes to ``unknown`` with its
  reason (never pruned), and :meth:`~angr_ram.RelocatableMemory.resume_unknown` retries it with the
  full budget. A bounded run skips this pass: its deferred paths resume with the full budget, which
  its deadline or ``solver_timeout_ms`` bounds.
- **Full pass**: z3's whole budget (``solver_timeout_ms``, else claripy's 300 s), no step bound.

``state.ram.resumed`` says which pass a path is in: False (first), :data:`FROM_DEFERRED` or
:data:`FROM_UNKNOWN`.

The second pass learns per deferral site (the block whose step deferred the path,
``state.ram.deferred_at``), :class:`SecondPassSites`: once z3 has given up on
:data:`SKIP_AFTER` paths deferred at a site and decided none, the site's further paths go to
``unknown`` without a try (their reason says so), except every :data:`RETRY_EVERY`-th, which is
tried as before; one decided path ends the skipping there. A hash-collision branch ("hash equal,
keys differ") defers one path per bucket entry, and each would cost the full second-pass budget.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from angr_ram.core.deadline import Deadline
from angr_ram.core.guard import StepMemoryBudget, retry_memory_scale, rss_mb

log = logging.getLogger(__name__)

UNKNOWN_STASH = "unknown"      # states whose feasibility z3 could not decide in time (resumable)
DEFERRED_STASH = "ram_deferred"    # ... within the first-pass budget: resumed once nothing else is active
FROM_DEFERRED = "deferred"      # state.ram.resumed of a path resumed from the deferred stash
FROM_UNKNOWN = "unknown"        # ... from the unknown stash (resume_unknown): the full budget
CLARIPY_MS = 300_000            # claripy's own z3 timeout
SKIP_AFTER = 2                  # second-pass give-ups at one deferral site (none decided) before skipping
RETRY_EVERY = 4                 # ... after which every 4th path deferred there is still tried


class PassBudget(NamedTuple):
    """What one step of a path may spend."""

    name: str                       # "first", "second" or "full"
    call_ms: int | None             # per z3 call (None: the state's own solver timeout)
    step_seconds: float | None      # the step's bound (None: none)

    @property
    def deferring(self) -> bool:
        """A path over this budget is deferred (resumed later), not reported unknown."""
        return self.name == "first"

    def described_ms(self, solver_timeout_ms: int | None) -> int:
        """The per-call budget to name in an undecided path's reason."""
        if self.call_ms is not None:
            return self.call_ms
        return solver_timeout_ms or CLARIPY_MS


def bounded_run(deadline: Deadline | None, solver_timeout_ms: int | None) -> bool:
    """Whether the run bounds its z3 calls itself (a time limit, a stop, or an explicit solver timeout)."""
    return (deadline is not None and deadline.bounded) or solver_timeout_ms is not None


def step_budget(config, resumed, deadline: Deadline | None) -> PassBudget:
    """The budget of a step of a path whose ``state.ram.resumed`` is ``resumed``, in a run with
    ``config`` (a :class:`~angr_ram.run.config.RunConfig`) and ``deadline``."""
    first_ms = config.first_pass_ms
    if not resumed and first_ms is not None:
        return PassBudget("first", first_ms, config.step_seconds)
    second_ms = config.resume_ms
    if (resumed == FROM_DEFERRED and second_ms is not None and second_ms < config.full_ms
            and not bounded_run(deadline, config.solver_timeout_ms)):
        step = None
        if config.step_seconds is not None and first_ms:
            step = config.step_seconds * max(1.0, second_ms / first_ms)
        return PassBudget("second", second_ms, step)
    return PassBudget("full", None, None)


def resume_batch(config, deadline: Deadline | None) -> int | None:
    """How many deferred paths one resumption moves back (None: all): in a second pass, as many as
    fit their z3 budgets in one first-pass step bound, at least one."""
    if (config.resume_ms is None or config.step_seconds is None or config.first_pass_ms is None
            or bounded_run(deadline, config.solver_timeout_ms)):
        return None
    return max(1, int(config.step_seconds * 1000 // config.resume_ms))


STEP_MEMORY_FLOOR_MB = 128     # a step's memory budget under a run's ``max_rss_mb`` is never below this


def step_memory(step_memory_mb: float | None, scale: int, max_rss_mb: float | None) -> float:
    """The growth (MiB) a step may cause, for a state whose budget scale is ``scale`` (0: no limit):
    ``step_memory_mb * scale``, and in a run kept under ``max_rss_mb`` at most what is left below
    it (at least :data:`STEP_MEMORY_FLOOR_MB`, so the run goes on: its peak stays within the cap
    plus that floor)."""
    budget = (step_memory_mb or 0) * scale
    if max_rss_mb is None:
        return budget
    room = max(STEP_MEMORY_FLOOR_MB, max_rss_mb - rss_mb())
    return min(budget, room) if budget else room


def set_aside(state, reason: str, budget: PassBudget, stats, step_memory_mb: float | None,
              max_rss_mb: float | None = None) -> str:
    """Mark ``state`` undecided for ``reason`` (its step ran with ``budget``); the stash it goes to:
    ``deferred`` if it was in its first pass (it will be resumed) or over its memory budget with a
    larger one left to try (within the run's ``max_rss_mb``, if it has one), else ``unknown``."""
    ms = budget.described_ms(state.ram.solver_timeout)
    state.ram.unknown = reason if reason.startswith("step ") else f"{reason} (z3 timeout {ms} ms)"
    first = budget.deferring
    if reason == StepMemoryBudget.reason:
        scale = retry_memory_scale(step_memory_mb, state.ram.memory_scale)
        if scale is not None and max_rss_mb is not None and step_memory_mb * scale > max_rss_mb:
            scale = None           # a budget larger than the whole cap is never granted
        if scale is not None:      # retried with a larger budget once nothing else is active
            state.ram.memory_scale, first = scale, True
            stats.memory_retries += 1
    if first:
        stats.deferred_states += 1
        return DEFERRED_STASH
    stats.unknown_states += 1
    if budget.name == "second" and stats.unknown_states == 1:
        log.warning("a path z3 could not decide in %d ms per call is set aside in the 'unknown' stash "
                    "(tech.resume_unknown(simgr) retries such paths with z3's full budget)", ms)
    return UNKNOWN_STASH


FIRST_PASS_LEARNT_MS = 100     # first-pass budget per z3 call at a site where every first-pass step deferred


class FirstPassSites:
    """What the first pass learnt per site (the block a step starts at): how many of its latest
    steps in a row deferred a path. After :data:`SKIP_AFTER` such steps, a step there gets
    :data:`FIRST_PASS_LEARNT_MS` per z3 call instead of ``defer_ms``, except every
    :data:`RETRY_EVERY`-th, which gets the whole first-pass budget; a step there that defers nothing
    ends the run of them. A branch only an inverted hash decides, one per bucket entry a lookup walks
    (uthash, 24 entries), cost the first pass ``defer_ms`` each; a path deferred sooner still gets its
    second pass, so nothing is decided otherwise, only set aside sooner."""

    def __init__(self):
        self._sites: dict[int, list[int]] = {}     # site -> [steps in a row that deferred, learnt steps]

    def budget(self, site: int, budget: PassBudget) -> PassBudget:
        """``budget`` for a step at ``site``, with the learnt per-call budget where it applies."""
        rec = self._sites.get(site)
        if (budget.name != "first" or rec is None or rec[0] < SKIP_AFTER
                or budget.call_ms is None or budget.call_ms <= FIRST_PASS_LEARNT_MS):
            return budget
        rec[1] += 1
        return budget if rec[1] % RETRY_EVERY == 0 else budget._replace(call_ms=FIRST_PASS_LEARNT_MS)

    def record(self, site: int, deferred: bool) -> None:
        """A first-pass step at ``site`` deferred a path, or deferred none."""
        rec = self._sites.setdefault(site, [0, 0])
        rec[0] = rec[0] + 1 if deferred else 0


class SecondPassSites:
    """What the second pass learnt per deferral site: how many paths deferred there z3 gave up on
    and how many it decided, and which of the site's next paths to try (module docstring)."""

    def __init__(self):
        self._sites: dict[int, list[int]] = {}     # site -> [gave up, decided, skipped]

    def should_try(self, site: int | None) -> bool:
        """Whether to try a path deferred at ``site`` in the second pass (False: set it aside as
        unknown at once); counts the skips."""
        rec = self._sites.get(site)
        if site is None or rec is None or rec[1] or rec[0] < SKIP_AFTER:
            return True
        rec[2] += 1
        return rec[2] % RETRY_EVERY == 0

    def record(self, site: int | None, gave_up: bool) -> None:
        """A path deferred at ``site`` was tried: z3 gave up on it again, or its step was decided."""
        if site is not None:
            self._sites.setdefault(site, [0, 0, 0])[0 if gave_up else 1] += 1

    def skip_reason(self, site: int, ms: int) -> str:
        """An unknown state's reason when its site's paths are skipped."""
        return (f"not tried in the second pass: z3 gave up on the {self._sites[site][0]} paths deferred at "
                f"{site:#x} that were tried ({ms} ms per call) and decided none")
