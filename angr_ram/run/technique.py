"""RelocatableMemory: the exploration technique that switches a simulation manager to angr-ram.

``simgr.use_technique(RelocatableMemory(...))`` hooks the heap functions and ``__libc_start_main``
on the project, gives every state the relocatable memory, address space and substituting solver,
and performs the forks that the memory layer requests: a state whose access may reach n targets
is replaced by n copies of its pre-step state, each constrained to one target, which re-execute
the block. Targets that fault become error paths in the ``memory_errors`` stash with a reason and
a reproducing stdin; exploration of the other targets continues.
"""

from __future__ import annotations

import contextlib
import logging
import time

import angr
from angr.storage.memory_mixins import DefaultMemory

from angr_ram.core.deadline import Deadline
from angr_ram.core.errors import AngrRamError, ForkRequest, MemoryErrorInfo, MemoryFault
from angr_ram.core.guard import (
    RunGuard,
    RunStopped,
    StepAbandoned,
    release_memory,
)
from angr_ram.core.option_docs import parameters_doc
from angr_ram.core.profile import Profile, step_site
from angr_ram.core.scope import RunScope
from angr_ram.core.stats import RunStats
from angr_ram.memory.address_space import AddressSpace
from angr_ram.memory.fixed_regions import BRK_HEAP_MAPPED, fixed_regions
from angr_ram.memory.ram_memory import RamMemory, RamRegisters, check_manageable
from angr_ram.memory.strategies.fork import forking
from angr_ram.memory.strategies.jumps import split_jump
from angr_ram.memory.strategies.models import make_model
from angr_ram.memory.strategies.split import Splitter
from angr_ram.memory.uninitialized import apply_uninitialized
from angr_ram.merging import QuantifiedMerging
from angr_ram.merging.patches import MEMORY_DIFF
from angr_ram.posix.child_processes import resume_parent, resume_parents_of_errors, suspended_parent
from angr_ram.posix.environment import hide_proc
from angr_ram.posix.installation import install_procedures
from angr_ram.procedures.heap import RamHeap
from angr_ram.procedures.libc import FORMAT
from angr_ram.procedures.stubs import record, stub_addresses
from angr_ram.run.concrete_steps import chain_policy, ram_engines
from angr_ram.run.config import RunConfig, run_defaults, run_options
from angr_ram.run.inputs import record_inputs
from angr_ram.run.native_faults import move_privileged_exits, native_fault
from angr_ram.run.outcomes import exit_code_expr
from angr_ram.run.passes import (
    DEFERRED_STASH,
    FROM_DEFERRED,
    FROM_UNKNOWN,
    UNKNOWN_STASH,
    FirstPassSites,
    SecondPassSites,
    resume_batch,
    set_aside,
    step_budget,
    step_memory,
)
from angr_ram.run.search import WAITING_STASH
from angr_ram.run.timing import PROFILE
from angr_ram.run.user_options import say_unhonoured
from angr_ram.solver import patches as solver_patches
from angr_ram.solver.query_cache import QueryCache
from angr_ram.solver.substituting import RamSolver
from angr_ram.solver.z3_check import gave_up
from angr_ram.solver.z3_setup import drop_conversion_caches, quiet_half_built_z3_objects

__all__ = ["DEFERRED_STASH", "ERROR_STASH", "UNKNOWN_STASH", "RelocatableMemory", "gave_up", "stats"]

log = logging.getLogger(__name__)
ERROR_STASH = "memory_errors"

# the patch sets (angr_ram.core.patches) in place while RelocatableMemory works: z3's check (budgets,
# counts), claripy's z3 backend, format arguments, merged pages' differences, profiling (seeding is a
# frontend mixin: angr_ram.solver.frontends; the engine's work is its mixins: run.concrete_steps)
PATCH_SETS = (*solver_patches.NAMES, *(s.name for s in (FORMAT, MEMORY_DIFF, PROFILE)))

def _option(name: str) -> property:
    """A read-only attribute of the technique that is its RunConfig's option ``name``."""
    return property(lambda self: getattr(self.config, name), doc=f"The run's ``{name}`` option (``tech.config.{name}``).")


class RelocatableMemory(angr.ExplorationTechnique):
    """Relocatable addressing model with complete symbolic-pointer resolution.

    Options are :class:`~angr_ram.run.config.RunConfig`'s fields, given as keywords or as one
    ``RunConfig``; the parameters below are written from its fields' metadata when this module is
    imported (the options reference in ``docs/reference/options.md`` prints the same text).

    :meth:`guarded` bounds a whole run: ``with tech.guarded(timeout=60): simgr.run()`` stops the
    run at its deadline or on the first Ctrl-C (no z3 call or step outlives it) and leaves every
    state found in its stash.
    """

    # forks a state on the values a procedure must know itself (QuantifiedMerging defers to it)
    forks_values = True

    # the options as the run reads them: views of its one RunConfig (``tech.config``), never copies
    uninitialized = _option("uninitialized")
    environment = _option("environment")
    string_procedures = _option("string_procedures")
    solver_timeout_ms = _option("solver_timeout_ms")
    step_seconds = _option("step_seconds")
    step_memory_mb = _option("step_memory_mb")
    max_rss_mb = _option("max_rss_mb")
    max_symbolic_size = _option("max_symbolic_size")
    symbolic_bases = _option("symbolic_bases")
    context_k = _option("context_k")
    heap_overflows = _option("heap_overflows")
    defer_ms = property(lambda self: self.config.first_pass_ms,
                        doc="The first-pass budget per z3 call (RunConfig.first_pass_ms): None when there is none.")

    def __init__(self, config: RunConfig | None = None, **options):
        super().__init__()
        if config is not None and options:
            raise AngrRamError(f"give the options in the RunConfig or as keywords, not both ({', '.join(options)})")
        if config is not None and not isinstance(config, RunConfig):
            raise AngrRamError(f"config must be a RunConfig, not {type(config).__name__}"
                               + (" (the model is a keyword: model=...)" if isinstance(config, str) else ""))
        cfg = self.config = config if config is not None else RunConfig.of(**options)
        self._stubs: dict[int, str] = {}     # hooked address -> name of an angr stub (set up with the project)
        self.deadline: Deadline | None = None   # the run's, inside guarded() (angr_ram.core.deadline)
        self.guard = RunGuard(catch_sigint=False)   # step budgets only; :meth:`guarded` replaces it for a run
        self.model_policy = make_model(cfg.model, cfg.reuse_segments, cfg.smm_threshold, cfg.context_resolution)
        self.splitter = Splitter(cfg.split, cfg.split_threshold) if cfg.split is not None else None
        self.stats = RunStats()
        self._engines = ram_engines()       # the project's engine with angr-ram's mixins (run.concrete_steps)
        self.profile = Profile() if cfg.profile else None
        sets = PATCH_SETS if cfg.profile else tuple(n for n in PATCH_SETS if n != PROFILE.name)
        self.scope = RunScope(self.stats, patch_sets=sets, config=cfg, profile=self.profile)
        quiet_half_built_z3_objects()
        self.cache = (QueryCache(cfg.cache, cfg.validate, self.stats, cfg.persist, cfg.cache_limit)
                      if cfg.cache is not None else None)
        self.base_sizes: dict[str, int] = {}
        self._regions = None
        self._sites = SecondPassSites()     # what the second pass learnt per deferral site
        self._first = FirstPassSites()      # ... and the first pass per site

    @property
    def model(self) -> str:
        """The multiple-resolution model's name (``fork``, ``ite``, ``dsmm``, ``smm``, ``flat``): the
        one the run's :attr:`model_policy` object and every state's address space hold."""
        return self.model_policy.name

    def __repr__(self) -> str:
        st = self.stats
        opts = [f"model={self.model}", f"symbolic_bases={self.symbolic_bases}"]
        opts += [f"split={self.splitter.size}"] if self.splitter is not None else []
        opts += [f"cache={self.cache.mode}"] if self.cache is not None else []
        return (f"<RelocatableMemory {' '.join(opts)}: {st.objects} objects, {st.forks} forks, "
                f"{st.resolutions} resolutions, {st.solver_queries} solver queries, {st.z3_checks} z3 checks>")

    @contextlib.contextmanager
    def guarded(self, timeout: Deadline | float | None = None, catch_sigint: bool = True):
        """Bound a run: inside the block, steps stop at ``timeout`` seconds from now (or at the
        run's :class:`~angr_ram.core.deadline.Deadline`, given instead) or at the first Ctrl-C (z3 is
        interrupted, a step still running half a second later is abandoned and its state stays where
        it was); the block's :class:`~angr_ram.core.guard.RunStopped` is swallowed, so ``with
        tech.guarded(60): simgr.run()`` returns with every state in its stash. Yields the
        :class:`~angr_ram.core.guard.RunGuard` (``stop_reason`` says why it stopped)."""
        deadline = Deadline.of(timeout)
        guard = RunGuard(deadline, catch_sigint=catch_sigint)
        saved, self.guard, self.deadline = (self.guard, self.deadline), guard, deadline
        try:
            with guard:
                yield guard
        except RunStopped:
            if guard.stop_reason is None:
                guard.stop_reason = "stopped"
        finally:
            self.guard, self.deadline = saved
            self.scope.deadline = self.scope.budget_ms = None
            self.scope.end()
            drop_conversion_caches()

    def warnings(self) -> list[str]:
        """One line per thing the run went on without: a persistent store that could not be opened
        or failed later, garbled records skipped."""
        out = []
        c = self.cache
        if c is not None and c.store_error is not None:
            out.append(f"{c.store_error}; the run went on without it")
        if c is not None and c.store_failed is not None:
            out.append(f"persistent cache failed during the run ({c.store_failed}); its later answers were not kept")
        if self.stats.cache_disk_garbled:
            out.append(f"persistent cache: {self.stats.cache_disk_garbled} garbled records skipped")
        return out

    def close(self) -> None:
        """Flush and close what the run keeps open (the on-disk cache store)."""
        if self.cache is not None:
            if self.cache.store is not None:
                self.stats.cache_disk_size = len(self.cache.store)
            self.cache.close()

    # ------------------------------------------------------------------ installation
    def setup(self, simgr):
        project = simgr._project
        if project.arch.name != "AMD64":
            raise AngrRamError(f"angr-ram supports x86-64 binaries only, not {project.arch.name}")
        install_procedures(project, self.string_procedures, self.environment)
        self._stubs = stub_addresses(project)
        simgr.stashes.setdefault(ERROR_STASH, [])       # simgr.memory_errors is [] before the first error
        for stash in list(simgr.stashes):
            for state in simgr.stashes[stash]:
                self.prepare_state(state)

    def prepare_state(self, state) -> None:
        """Give ``state`` angr-ram's memory, address space and solver (idempotent)."""
        if isinstance(state.memory, RamMemory):
            return
        check_manageable(state)
        record_inputs(state)
        if self._regions is None:
            self._regions = fixed_regions(state.project, state)
        state.memory.__class__ = RamMemory
        apply_uninitialized(state, self.uninitialized)
        hide_proc(state)
        if type(state.registers) is DefaultMemory:      # (another plugin class is left alone)
            state.registers.__class__ = RamRegisters
        if not state.has_plugin("heap"):
            state.register_plugin("heap", RamHeap(heap_size=BRK_HEAP_MAPPED))
        elif type(state.heap) is angr.SimHeapBrk:      # a user's state: same plugin, angr-ram's objects
            state.heap.__class__ = RamHeap
        state.register_plugin("ram", AddressSpace(self.symbolic_bases, self.context_k, self._regions, self.stats,
                                                  self.model_policy, self.splitter, self.cache, self.base_sizes,
                                                  self.max_symbolic_size))
        state.ram.solver_timeout = self.solver_timeout_ms
        state.ram.heap_overflows = "stop" if self.heap_overflows == "stop" else "continue"
        say_unhonoured(state, self.stats, log)
        state.ram.scope = self.scope
        RamSolver.install(state)

    # ------------------------------------------------------------------ stepping
    def step(self, simgr, stash="active", **kwargs):
        # angr turns a solver time-out inside its solver plugin into an error record: such paths
        # are not errors but undecided, and are set aside to be resumed
        self.scope.begin()      # the patch sets stay in place until the run ends (complete, guarded)
        before = len(simgr.errored)
        try:
            simgr = simgr.step(stash=stash, **kwargs)
        except RunStopped:
            # angr keeps the stash as it was when a state's step raises: the states stepped before it
            # in this call are still there, so their error records of this call go too
            del simgr.errored[before:]
            raise
        if len(simgr.errored) > before:
            new, simgr.errored[before:] = simgr.errored[before:], []
            for rec in new:
                reason = gave_up(rec.error)
                fault = native_fault(rec) if reason is None else None
                if fault is not None:       # bad control flow: the native fault's error path
                    self._mark_error(rec.state, *fault)
                    simgr.stashes.setdefault(ERROR_STASH, []).append(rec.state)
                elif reason is None:
                    simgr.errored.append(rec)
                else:       # a second-pass try that gave up again, or a first-pass deferral here
                    if step_budget(self.config, rec.state.ram.resumed, self.deadline).name == "second":
                        self._sites.record(rec.state.ram.deferred_at, gave_up=True)
                    to = self._set_aside(rec.state, reason, rec.state.addr)
                    simgr.stashes.setdefault(to, []).append(rec.state)
        if stash == "active" and not simgr.active and not simgr.stashes.get(WAITING_STASH):
            self.resume_deferred(simgr)      # (a search's waiting states first; angr's DFS has "deferred")
        return simgr

    def complete(self, simgr):
        """Never ends a run early; when nothing is left to step, the run's patch sets are let go
        (:meth:`angr_ram.core.scope.RunScope.end`)."""
        if not simgr.active and not simgr.stashes.get(DEFERRED_STASH):
            self.scope.end()
        return False

    def resume_deferred(self, simgr) -> int:
        """Move the ``deferred`` states (a second pass: a batch of them) to ``active`` when nothing
        else is, with their pass's z3 budget (:mod:`angr_ram.run.passes`); how many moved."""
        deferred = simgr.stashes.get(DEFERRED_STASH)
        if not deferred:
            return 0
        # a second pass resumes a few at a time: a script's simgr.step() stays within its bound
        batch = resume_batch(self.config, self.deadline)
        if batch:       # and skips the paths of sites where z3 gave up on every one tried (run.passes)
            chosen, skipped = [], []
            for s in deferred:
                if len(chosen) >= batch:
                    break
                (chosen if self._sites.should_try(s.ram.deferred_at) else skipped).append(s)
            for s in skipped:
                s.ram.unknown = self._sites.skip_reason(s.ram.deferred_at, self.config.resume_ms)
            gone = {id(s) for s in skipped}
            simgr.move(DEFERRED_STASH, UNKNOWN_STASH, lambda s: id(s) in gone)
            self.stats.unknown_states += len(skipped)
            self.stats.second_pass_skipped += len(skipped)
        n = self._resume(simgr, DEFERRED_STASH, None, FROM_DEFERRED, chosen if batch else None)
        self.stats.deferred_resumed += n
        return n

    def step_state(self, simgr, state, **kwargs):
        self.prepare_state(state)
        if state.history.jumpkind == "Ijk_Exit" and suspended_parent(state) is not None:
            return {None: [resume_parent(state, exit_code_expr(state))]}
        prof = self.profile
        if prof is not None:
            prof.site, t0 = step_site(state), time.perf_counter()
            prof.enter("engine")
        budget = self._first.budget(state.addr, step_budget(self.config, state.ram.resumed, self.deadline))
        tried_site = state.ram.deferred_at if budget.name == "second" else None
        self.scope.budget_ms = budget.call_ms      # z3 calls of the step (stats.counted_check)
        self.scope.deadline = self.deadline
        errs = kwargs.get("error_list")
        errs = errs if errs is not None else simgr.errored
        errored_before = len(errs)
        try:
            with self.guard.step(seconds=budget.step_seconds or 0,
                                 memory_mb=step_memory(self.step_memory_mb, state.ram.memory_scale, self.max_rss_mb),
                                 z3_memory_mb=(self.step_memory_mb or 0) * state.ram.memory_scale):
                out = self._step(simgr, state, **kwargs)
        except StepAbandoned as e:          # over its time or memory budget: set aside, the run goes on
            del errs[errored_before:]             # angr's record of the interrupted z3 call, if any
            self.stats.steps_abandoned += 1
            release_memory()
            out = {"interrupted": [state]}
            state.ram.unknown = e.reason
        except RunStopped:
            del errs[errored_before:]             # the state stays where it is: nothing of this step is kept
            raise
        except Exception as e:  # noqa: BLE001 - z3 giving up in forking or fault checks, also wrapped by angr
            reason = gave_up(e)    # (SimSolverModeError "Claripy threw an error" from state.satisfiable)
            if reason is None:
                raise
            out = {"interrupted": [state]}
            state.ram.unknown = reason
        finally:
            self.scope.budget_ms = self.scope.deadline = None
            if prof is not None:
                prof.leave(time.perf_counter() - t0)
                prof.site = "outside steps"
        undecided = list(out.pop("interrupted", ()))     # angr's stash for solver time-outs outside its plugin
        if out.get(None):                                # successors kept undecided (angr_ram.memory.undecided)
            undecided += [s for s in out[None] if s.ram.unknown is not None]
            out[None] = [s for s in out[None] if s.ram.unknown is None]
        for s in undecided:
            out.setdefault(self._set_aside(s, s.ram.unknown or "solver gave up", state.addr, budget), []).append(s)
        if budget.name == "first":      # (angr's error records of z3 giving up are set aside in step())
            gave = any(gave_up(r.error) is not None for r in errs[errored_before:])
            self._first.record(state.addr, deferred=gave or bool(out.get(DEFERRED_STASH)))
        if tried_site is not None and len(errs) == errored_before:   # (angr's error records: step())
            self._sites.record(tried_site, gave_up=bool(out.get(UNKNOWN_STASH)))
            for stash, states in out.items():       # the try is counted once, not by each successor
                for s in states if stash != DEFERRED_STASH else ():
                    s.ram.deferred_at = None
        resume_parents_of_errors(out, ERROR_STASH)
        stub = self._stubs.get(state.addr) if self._stubs else None
        if stub is not None:
            for states in out.values():
                for s in states:
                    record(s, stub)
        return out

    def _set_aside(self, state, reason: str, site: int | None, budget=None) -> str:
        """Mark ``state`` undecided for ``reason`` at ``site`` (the block whose step set it aside,
        with ``budget``, else its pass's); the stash it goes to (:func:`set_aside`). A deferred state
        remembers its site."""
        budget = budget or step_budget(self.config, state.ram.resumed, self.deadline)
        stash = set_aside(state, reason, budget, self.stats, self.step_memory_mb, self.max_rss_mb)
        state.ram.deferred_at = site if stash == DEFERRED_STASH else None
        return stash

    @staticmethod
    def _resume(simgr, stash: str, solver_timeout_ms: int | None, resumed: str = FROM_UNKNOWN, some=None) -> int:
        """Move ``stash`` (or ``some`` of it) back to ``active``, the states' z3 budget set to
        ``solver_timeout_ms`` (None: kept) and their first pass over (``resumed``: the pass they go on in)."""
        states = list(simgr.stashes.get(stash, []) if some is None else some)
        for s in states:
            s.ram.unknown, s.ram.resumed = None, resumed
            if solver_timeout_ms is not None:
                s.ram.solver_timeout = solver_timeout_ms
                if s.solver._stored_solver is not None:
                    s.solver._stored_solver.set_timeout(solver_timeout_ms)
        chosen = {id(s) for s in states}
        simgr.move(stash, "active", lambda s: id(s) in chosen)
        return len(states)

    def resume_unknown(self, simgr, solver_timeout_ms: int | None = None) -> int:
        """Move the ``unknown`` states to ``active`` with a z3 timeout (None: 300 s) and no step bound
        (:mod:`angr_ram.run.passes`); how many moved."""
        return self._resume(simgr, UNKNOWN_STASH, solver_timeout_ms)

    def _step(self, simgr, state, **kwargs) -> dict:
        # the fork's and the fault's feasibility checks are the step's: its budget and run caches
        with self.scope.active():
            try:
                with forking(), chain_policy(simgr, self):
                    out = simgr.step_state(state, **self._engines.step_args(simgr, kwargs))
                    if out.get("unconstrained"):
                        self._split_jumps(out)
                    move_privileged_exits(out, self._mark_error, ERROR_STASH)
                    return out
            except ForkRequest as fr:
                return self._fork(state, fr)
            except MemoryFault as mf:
                err = state.copy()
                if mf.constraints:
                    err.add_constraints(*mf.constraints)
                if not err.satisfiable():   # the faulting access cannot execute on this path
                    self.stats.infeasible_errors += 1
                    return {"unsat": [err]}
                self._mark_error(err, mf.kind, mf.message)
                return {ERROR_STASH: [err]}

    def _split_jumps(self, out: dict) -> None:
        """Unconstrained successors whose target is a selection over a table: one successor per
        feasible target, the unbounded arms one ``invalid-jump-target`` error path
        (:mod:`angr_ram.memory.strategies.jumps`)."""
        keep = []
        for s in out["unconstrained"]:
            split = split_jump(s)
            if split is None:
                keep.append(s)
                continue
            succs, err = split
            self.stats.forks += 1
            self.stats.fork_states += len(succs)
            out.setdefault(None, []).extend(succs)
            if err is not None:
                self._mark_error(err, "invalid-jump-target",
                                 "jump target selected from a table may be an unbounded value")
                out.setdefault(ERROR_STASH, []).append(err)
        out["unconstrained"] = keep

    def _fork(self, state, fr: ForkRequest) -> dict:
        self.stats.forks += 1
        cont, errors, undecided = [], [], []
        for t in fr.targets:
            s = t.fork(state)
            if t.kind == "error":
                # an error fork is a finished path: it gets the guards the block had taken before
                # the access, and is reported only if that exact path is feasible
                if fr.constraints:
                    s.add_constraints(*fr.constraints)
                try:
                    feasible = s.satisfiable()
                except Exception as e:  # noqa: BLE001 - z3 gave up: the error path alone is set aside
                    reason = gave_up(e)
                    if reason is None:
                        raise
                    # resumed, it steps the access again under the fault's constraint and reports it
                    # there (or finds it infeasible); its siblings go on meanwhile
                    s.ram.unknown = reason
                    self.stats.undecided_successors += 1
                    undecided.append(s)
                    continue
                if not feasible:
                    self.stats.infeasible_errors += 1
                    continue
                self._mark_error(s, t.error, t.message)
                errors.append(s)
            else:
                cont.append(s)
        self.stats.fork_states += len(cont)
        out = {None: cont + undecided}
        if errors:
            out[ERROR_STASH] = errors
        return out

    @staticmethod
    def _mark_error(state, kind: str, message: str) -> None:
        state.ram.error = MemoryErrorInfo.of(state, kind, message)


RelocatableMemory.__doc__ += "\n" + parameters_doc(run_options(), run_defaults())


def stats(simgr, profile: bool = False) -> dict:
    """Statistics of a run: paths, errors, forks, objects, solver queries and seconds, resolutions.
    ``profile=True`` adds ``profile``: the time breakdown of a technique made with ``profile=True``
    (:meth:`angr_ram.core.profile.Profile.as_dict`; None when it was not profiled)."""
    tech = next((t for t in simgr._techniques if isinstance(t, RelocatableMemory)), None)
    d = tech.stats.as_dict() if tech is not None else RunStats().as_dict()
    if profile:
        d["profile"] = tech.profile.as_dict() if tech is not None and tech.profile is not None else None
    qm = next((t for t in simgr._techniques if isinstance(t, QuantifiedMerging)), None)
    if qm is not None:
        d.update({f"merge_{k}": v for k, v in qm.stats.as_dict().items()})
        d["merge_clauses"] = len(qm.table)
    d["paths"] = len(simgr.stashes.get("deadended", []))
    d["errors"] = len(simgr.stashes.get(ERROR_STASH, [])) + len(simgr.errored)
    d["unknown"] = len(simgr.stashes.get(UNKNOWN_STASH, [])) + len(simgr.stashes.get(DEFERRED_STASH, []))
    return d
