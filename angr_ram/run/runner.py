"""Run a binary with symbolic stdin, argv and files under stock angr or angr-ram and collect what every path did."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

import angr
import claripy

from angr_ram.core.deadline import Deadline
from angr_ram.core.errors import AngrRamError, UnsupportedBinary
from angr_ram.core.guard import RunGuard, RunStopped
from angr_ram.core.scope import RunScope
from angr_ram.merging import QuantifiedMerging
from angr_ram.posix.environment import environment_kinds, install_environment
from angr_ram.procedures.libc import RamLibcStartMain, install_error_fix
from angr_ram.procedures.stubs import stubs_of
from angr_ram.run.concrete_steps import own_driver
from angr_ram.run.config import RunConfig
from angr_ram.run.coverage import Coverage
from angr_ram.run.input_budget import InputBudget, NoAnswer, NoModel, cached_window, errored_reason
from angr_ram.run.inputs import STATE_OPTIONS, arg_lists, make_state  # noqa: F401 - re-exported for scripts and tests
from angr_ram.run.libraries import own_libraries, unloaded_library_notes
from angr_ram.run.outcomes import Outcome, ending, listed_outcomes
from angr_ram.run.path_models import LISTING_GAVE_UP, LISTING_SECONDS, model_value, record_models
from angr_ram.run.search import COVERAGE_SEARCHES, SEARCHES, WAITING_STASH, make_search
from angr_ram.run.spilling import Spilling
from angr_ram.run.targets import resolve_targets, unreached_notes  # noqa: F401 - resolve_targets re-exported
from angr_ram.run.technique import DEFERRED_STASH, ERROR_STASH, UNKNOWN_STASH, RelocatableMemory, stats
from angr_ram.run.testcases import (
    BEYOND_MAX_PATHS_STASH,
    choose_inputs,
    collect_tests,
    spilled_case,
    unfinished_states,
)
from angr_ram.solver.z3_setup import drop_conversion_caches

# seconds past a run's time limit that choosing its tests' inputs may take (after them, a plain model
# or zero bytes: see testcases.InputBudget); after a Ctrl-C the user waits, so less: the improving
# queries get INTERRUPT_TEST_SECONDS and the plain models INTERRUPT_LAST_SECONDS in all
TEST_SECONDS = 0.75
INTERRUPT_TEST_SECONDS = 0.4
INTERRUPT_LAST_SECONDS = 0.3
INTERRUPT_CACHED_SECONDS = 1.0      # inputs from cached models after Ctrl-C (input_budget.cached_window otherwise)

# exceptions raised while stepping one path that end that path in the ``errored`` stash (with a
# reason and an input) instead of ending the whole run; angr-ram's own control-flow signals
# (ForkRequest, MemoryFault) are plain Exceptions outside this set and reach the technique
RESILIENCE = (angr.errors.AngrError, angr.errors.SimError, claripy.ClaripyError, KeyError, IndexError,
              TypeError, ValueError, ArithmeticError, AttributeError, AssertionError, NotImplementedError,
              RecursionError, MemoryError)


@dataclass
class RunResult:
    """Outcomes of one exploration: (exit code, stdout) pairs, error paths and statistics."""

    outcomes: set = field(default_factory=set)
    errors: list = field(default_factory=list)       # (kind, message, stdin)
    stats: dict = field(default_factory=dict)
    seconds: float = 0.0
    timed_out: bool = False
    stopped: str | None = None    # why exploration stopped early: timeout, max-states, max-paths, found, interrupted
    endings: dict = field(default_factory=dict)     # how the finished paths ended ("exit 3", "no exit (...)") -> count
    found: int = 0                # paths that reached a find target
    unknown: int = 0              # states set aside because z3 gave up (unknown / deferred / interrupted stash)
    tests: list | None = None     # TestCase per path and outcome (with tests=True)
    tests_seconds: float = 0.0    # time spent choosing the tests' inputs
    tests_plain: int = 0          # tests whose inputs were not all made readable (out of time)
    tests_unsolved: int = 0       # tests with zero inputs: no model within the budget
    tests_infeasible: int = 0     # set-aside paths without a test: their branch has no model
    tests_unwritten: int = 0      # states left in spill files without a test: out of time for them
    unfinished: int = 0           # paths that did not finish: active when stopped, set aside, waiting to merge
    #                               (with tests: less those whose branch turned out to have no model)
    warnings: list = field(default_factory=list)    # one-line notes of what the run went on without (a damaged cache store)
    profile: dict | None = None   # with profile=True: the time breakdown (angr_ram.core.profile)
    stubs: dict = field(default_factory=dict)       # angr stub -> ended paths that called it (results may be wrong)
    environment: dict = field(default_factory=dict)  # "clock"/"random bytes" -> ended paths whose constraints mention it
    outcomes_partial: int = 0     # paths with more outcomes than listed (stdout echoing the input; outcomes.LISTED_PER_PATH)
    outcomes_from_model: int = 0  # of those, paths listed by their model's outcome alone: z3 or the time ran out (path_models)
    found_inputs: list = field(default_factory=list)  # (stdin, argv[1:], files) of the first found paths
    coverage: dict | None = None  # with coverage=True: Coverage.report() (instructions, blocks, percent, series)
    beyond_max_paths: int = 0     # paths that finished in the same step as the max_paths-th: set aside, not reported
    spilled: int = 0              # states written to disk to bound the live ones (spilling.Spilling), and
    spilled_left: int = 0         # of those, still there when the run stopped (counted in unfinished)

MAX_FOUND_INPUTS = 16       # found paths whose input the result carries (all of them have tests)


def count_into(counts: dict, pairs) -> None:
    """Add each (key, number) of ``pairs`` to ``counts`` (the per-path tallies of a RunResult)."""
    for key, n in pairs:
        counts[key] = counts.get(key, 0) + n


def load_project(binary: str) -> angr.Project:
    """Load an x86-64 ELF for analysis with its own libraries (:mod:`.libraries`); raises
    UnsupportedBinary with a clear reason otherwise."""
    if os.path.isdir(binary):
        raise UnsupportedBinary(f"{binary}: is a directory, not a binary")
    if not os.path.isfile(binary):
        raise UnsupportedBinary(f"{binary}: no such file")
    with open(binary, "rb") as f:
        magic = f.read(4)
    if magic != b"\x7fELF":
        raise UnsupportedBinary(f"{binary}: not an ELF file")
    logging.getLogger("angr").setLevel(logging.ERROR)
    logging.getLogger("cle").setLevel(logging.ERROR)
    try:
        proj = angr.Project(binary, auto_load_libs=False, force_load_libs=own_libraries(binary))
    except Exception as e:  # noqa: BLE001 - cle raises many kinds; all mean "cannot load"
        raise UnsupportedBinary(f"{binary}: cannot be loaded ({e})") from e
    if proj.arch.name != "AMD64":
        raise UnsupportedBinary(f"{binary}: angr-ram supports x86-64 binaries, this one is {proj.arch.name}")
    return proj


def explore(binary: str, stdin_bytes: int = 0, engine: str = "ram", model: str = "fork",
            symbolic_bases: bool = True, timeout: float | None = None, progress=None,
            merge: str | None = None, merge_points=(), merge_validate: bool = False,
            merge_incremental: bool | None = None, max_states: int | None = None, args=(), files=(),
            find=(), avoid=(), num_find: int = 1, max_paths: int | None = None, tests: bool = False,
            merge_patterns: str = "smaller", search: str | None = None, coverage: bool = False,
            coverage_series=None, spill_states: int | None = None, spill_rss_mb: float | None = None,
            **options) -> RunResult:
    """Explore ``binary`` completely; ``engine`` is "ram" (angr-ram) or "stock" (plain angr).

    Inputs: ``stdin_bytes`` symbolic stdin bytes, argv ``args`` (an int is a symbolic string of
    that many bytes, a str a concrete argument, a :class:`~angr_ram.run.inputs.SymArgs` a range of
    counts of symbolic arguments, one entry state per count) and symbolic ``files`` ((name, size) pairs).
    ``merge`` (a :class:`~angr_ram.merging.QuantifiedMerging` mode) merges the states leaving the
    functions ``merge_points`` (``merge_incremental``: also inside them, section 4; ``merge_patterns``:
    which pattern merges to keep, see :class:`~angr_ram.merging.QuantifiedMerging`). ``find`` and
    ``avoid`` (addresses or symbols) are angr's ``explore`` targets; the run stops when ``num_find``
    paths reached one. It also stops (``stopped`` says why; the result still holds every path found
    so far) after ``timeout`` seconds, when more than ``max_states`` states are active (or waiting
    for a search to choose them), when
    ``max_paths`` paths have finished, or on Ctrl-C. A path whose step raises goes to the
    ``errored`` stash and the run goes on. ``tests=True`` also collects a test case per path and
    outcome (:mod:`angr_ram.run.testcases`). ``search`` (one of :data:`~angr_ram.run.search.SEARCHES`)
    chooses which states are stepped next (None: all active states together, angr's order);
    ``coverage=True`` measures the main binary's coverage (``res.coverage``; ``coverage_series``: a
    CSV file the series is written to as the run goes). ``spill_states`` / ``spill_rss_mb`` bound the
    live states and the RSS by writing states to disk (:class:`~angr_ram.run.spilling.Spilling`).
    ``options`` go to :class:`RelocatableMemory`,
    or all of them at once as ``config=RunConfig(...)``.
    """
    simgr, tech = prepare(binary, stdin_bytes, engine=engine, model=model, symbolic_bases=symbolic_bases,
                          merge=merge, merge_points=merge_points, merge_validate=merge_validate,
                          merge_incremental=merge_incremental, merge_patterns=merge_patterns, args=args,
                          files=files, find=find, avoid=avoid, num_find=num_find, search=search,
                          coverage=coverage, coverage_series=coverage_series, spill_states=spill_states,
                          spill_rss_mb=spill_rss_mb, **options)
    t0 = time.perf_counter()
    deadline = Deadline(timeout, start=t0)      # the run's one time limit (angr_ram.core.deadline)
    res = RunResult()
    bound = tech.guarded(deadline) if tech is not None else RunGuard(deadline)
    try:
        with bound as guard:
            _explore_loop(simgr, tech, res, progress, find, num_find, max_states, max_paths, guard)
            res = _finish(simgr, tech, guard, res, t0, tests)
            res.warnings += unreached_notes(find, res.found, res.stopped)
    finally:
        end_runs(simgr)
        drop_conversion_caches()
    cov = coverage_of(simgr)
    if cov is not None:             # after the run: angr's CFG is built without the run's patches
        cov.sample(res.stats.get("paths", 0), force=True)
        res.coverage = cov.report()
    return res


def coverage_of(simgr) -> Coverage | None:
    """The Coverage technique of ``simgr``, if it has one."""
    return next((t for t in simgr._techniques if isinstance(t, Coverage)), None)


def end_runs(simgr) -> None:
    """Every technique's run on ``simgr`` has ended: their patch sets are let go
    (:meth:`angr_ram.core.scope.RunScope.end`)."""
    for t in simgr._techniques:
        sc = getattr(t, "scope", None)
        if isinstance(sc, RunScope):
            sc.end()
        if isinstance(t, Spilling):
            t.close()


def _explore_loop(simgr, tech, res, progress, find, num_find, max_states, max_paths, guard) -> None:
    """Step ``simgr`` until it is done or must stop; ``res.stopped`` says why it stopped early."""
    modelled = 0        # finished paths whose model was taken (path_models)
    try:
        while simgr.active:
            if tech is None:      # stock angr: the guard interrupts its step at the deadline too
                before = len(simgr.errored)
                try:
                    with guard.step(seconds=0, memory_mb=0):
                        simgr.step()
                except RunStopped:     # the stash stays as before the step: so do its error records
                    del simgr.errored[before:]
                    raise
            else:
                with own_driver():
                    simgr.step()
            modelled = record_models(simgr, guard, start=modelled)
            if progress is not None:
                progress(simgr)
            if find and len(simgr.stashes.get("found", [])) >= num_find:
                res.stopped = "found"
            elif guard.stopped:
                res.stopped = guard.stop_reason
            elif max_states is not None and len(simgr.active) + len(simgr.stashes.get(WAITING_STASH, ())) > max_states:
                res.stopped = "max-states"   # stopped like a timeout (state explosion)
            elif max_paths is not None and finished(simgr) >= max_paths:
                res.stopped = "max-paths"
                res.beyond_max_paths = keep_first_paths(simgr, max_paths)
            if res.stopped is not None:
                break
    except RunStopped:
        res.stopped = guard.stop_reason or "stopped"
    except KeyboardInterrupt:     # also a z3 check the guard interrupted outside a step (claripy's conversion)
        res.stopped = guard.stop_reason or "interrupted"
    if res.stopped is None and guard.stop_reason is not None and simgr.active:
        res.stopped = guard.stop_reason


def _finish(simgr, tech, guard, res: RunResult, t0: float, tests: bool) -> RunResult:
    res.timed_out = res.stopped in ("timeout", "max-states", "interrupted")
    res.seconds = time.perf_counter() - t0
    now = time.perf_counter()
    if res.stopped == "interrupted":
        budget = InputBudget(deadline=now + INTERRUPT_TEST_SECONDS, last_total=INTERRUPT_LAST_SECONDS, guard=guard,
                             cached_total=INTERRUPT_CACHED_SECONDS)
    else:
        budget = InputBudget(deadline=guard.deadline.window_after(TEST_SECONDS), guard=guard,
                             cached_total=cached_window(guard.deadline.seconds))
    return summarize(simgr, tech, res, tests, budget)


def prepare(binary: str, stdin_bytes: int = 0, engine: str = "ram", model: str = "fork",
            symbolic_bases: bool = True, merge: str | None = None, merge_points=(), merge_validate: bool = False,
            merge_incremental: bool | None = None, args=(), files=(), find=(), avoid=(), num_find: int = 1,
            environment: str | None = None, merge_patterns: str = "smaller", config: RunConfig | None = None,
            search: str | None = None, coverage: bool = False, coverage_series=None,
            spill_states: int | None = None, spill_rss_mb: float | None = None, **options):
    """The simulation manager :func:`explore` steps, and its RelocatableMemory technique (None for
    stock angr), with the same arguments; for scripts that step several runs themselves.
    ``environment`` (:mod:`angr_ram.posix.environment`) applies to stock angr too when given.
    ``config``: the run's options as one :class:`~angr_ram.run.config.RunConfig` (then ``model``,
    ``symbolic_bases`` and ``options`` stay at their defaults)."""
    if search is not None and search not in SEARCHES:
        raise AngrRamError(f"unknown search {search!r}: one of {', '.join(SEARCHES)}")
    if config is None:
        config = RunConfig.of(model=model, symbolic_bases=symbolic_bases, **options) if engine == "ram" else None
    elif not isinstance(config, RunConfig):
        raise AngrRamError(f"config must be a RunConfig, not {type(config).__name__}")
    elif options or model != "fork" or symbolic_bases is not True:
        given = [*options, *(["model"] if model != "fork" else []), *(["symbolic_bases"] if symbolic_bases is not True else [])]
        raise AngrRamError(f"give the options in the RunConfig or as keywords, not both ({', '.join(given)})")
    if config is not None and environment is not None:
        config = config.replace(environment=environment)
    if config is not None and config.heap_overflows == "auto":      # a path ends at its first error
        config = config.replace(heap_overflows="stop")
    proj = load_project(binary)
    # one entry state per argument list (KLEE's --sym-args: one per count of symbolic arguments)
    states = [make_state(proj, stdin_bytes, args=a, files=files) for a in arg_lists(args)]
    simgr = proj.factory.simulation_manager(states, resilience=RESILIENCE)
    tech = None
    if engine == "ram":
        tech = simgr.use_technique(RelocatableMemory(config))
    elif engine == "stock":
        proj.hook_symbol("__libc_start_main", RamLibcStartMain(display_name="__libc_start_main"), replace=True)
        install_error_fix(proj)
        if environment is not None:
            install_environment(proj, environment)
    else:
        raise ValueError(f"unknown engine {engine!r}")
    if merge is not None:
        simgr.use_technique(QuantifiedMerging(merge, merge_points, validate=merge_validate,
                                                 incremental=merge_incremental, patterns=merge_patterns))
    if find or avoid:
        simgr.use_technique(angr.exploration_techniques.Explorer(
            find=resolve_targets(proj, find, "find target") or None,
            avoid=resolve_targets(proj, avoid, "avoid target") or None,
            num_find=num_find))
    cov = None
    if coverage or search in COVERAGE_SEARCHES:
        cov = simgr.use_technique(Coverage(series_path=coverage_series))
    if search is not None:
        simgr.use_technique(make_search(search, cov))
    if spill_states is not None or spill_rss_mb is not None:      # last: around the search's choice
        simgr.use_technique(Spilling(spill_states, spill_rss_mb, describe=spilled_case))
    return simgr, tech


def summarize(simgr, tech, res: RunResult | None = None, tests: bool = False,
              budget: InputBudget | None = None) -> RunResult:
    """Fill ``res`` (a new RunResult if None) with the outcomes, error paths, endings and statistics
    of ``simgr``; ``tests=True`` also collects a test case per path and outcome, within ``budget``
    (:class:`~angr_ram.run.testcases.InputBudget`)."""
    if res is None:
        res = RunResult()
    budget = budget if budget is not None else InputBudget()
    explored = stats(simgr, profile=True)
    res.profile = explored.pop("profile")
    collect_paths(simgr, res, budget)
    res.stats = stats(simgr)          # the exploration's counts, before the tests' queries
    res.stats["z3_checks_exploring"] = explored["z3_checks"]   # without the outcome queries
    res.stats["paths"] = len(simgr.deadended)
    if tests:
        t1 = time.perf_counter()
        res.tests = collect_tests(simgr, budget=budget)
        res.tests_seconds = time.perf_counter() - t1
        res.tests_plain, res.tests_unsolved, res.tests_infeasible = budget.plain, budget.unsolved, budget.infeasible
        res.tests_unwritten = budget.unwritten
        # a set-aside state whose branch has no model is no path: not counted as unfinished
        res.unfinished = max(0, res.unfinished - budget.infeasible_unfinished)
    if tech is not None:
        tech.close()
        res.stats["cache_disk_size"] = tech.stats.cache_disk_size
        res.warnings += tech.warnings()
    return res


def collect_paths(simgr, res: RunResult, budget: InputBudget | None = None) -> RunResult:
    """Add the finished paths of ``simgr`` to ``res``: outcomes and endings of the deadended
    states, error paths with their inputs, paths that reached a find target or were set aside."""
    budget = budget if budget is not None else InputBudget()
    for s in simgr.deadended:
        o = Outcome(s)
        first = model_value(s, o.expr) if o.expr is not None else None
        try:
            try:
                listed, complete = budget.ask(lambda s=s, f=first: listed_outcomes(s, first=f), last=budget.hurry(),
                                              whole=first is None, seconds=LISTING_SECONDS)
            except NoAnswer:
                if first is None:
                    raise
                listed, complete = {o.decode(first)}, False     # the value its model gives
                s.globals[LISTING_GAVE_UP] = True               # its tests do not ask again
                res.outcomes_from_model += 1
            res.outcomes |= listed
            res.outcomes_partial += not complete
            e = ending(s, {c for c, _ in listed if c is not None})   # one outcome per exit code: no new query
        except (NoAnswer, NoModel):     # z3 gave up on the path's outcomes (or out of time): counted, not fatal
            res.unknown += 1
            count_into(res.endings, [("outcome undecided (z3 gave up)", 1)])
            continue
        count_into(res.endings, [(e, 1)])
        ram = s.plugins.get("ram")
        for f in (ram.faults_outside_step if ram is not None else ()):   # met where no fork was possible
            if (f.kind, f.message, f.stdin) not in res.errors:
                res.errors.append((f.kind, f.message, f.stdin))
    for s in simgr.stashes.get(ERROR_STASH, []):
        e = s.ram.error
        res.errors.append((e.kind, e.message, e.stdin))
    for rec in simgr.errored:
        try:
            stdin = budget.ask(lambda rec=rec: rec.state.posix.dumps(0), last=True)
        except (NoAnswer, NoModel):     # the reason is still reported without an input
            stdin = None
        res.errors.append(("angr-error", errored_reason(rec.error), stdin))
    ended = [*simgr.deadended, *simgr.stashes.get(ERROR_STASH, []), *(rec.state for rec in simgr.errored),
             *simgr.stashes.get("found", [])]
    for s in ended:
        count_into(res.stubs, ((name, 1) for name in stubs_of(s)))
        count_into(res.environment, ((kind, 1) for kind in environment_kinds(s)))
    if res.stubs:
        res.warnings.extend(unloaded_library_notes(simgr._project, res.stubs))
    found = simgr.stashes.get("found", [])
    res.found += len(found)
    for s in found[:MAX_FOUND_INPUTS]:
        chosen = choose_inputs(s, budget=budget)
        if chosen is not None:
            res.found_inputs.append(chosen[:3])
    res.unknown += sum(len(simgr.stashes.get(k, [])) for k in (UNKNOWN_STASH, DEFERRED_STASH, "interrupted"))
    res.unfinished += len(unfinished_states(simgr))
    for t in simgr._techniques:
        if isinstance(t, Spilling):
            res.spilled, res.spilled_left = t.spilled, t.on_disk
            res.unfinished += t.on_disk
            if t.kept:
                res.warnings.append(f"{t.kept} states could not be spilled and stayed in memory ({t.kept_why})"
                                    + ("; spilling stopped for the run" if t.given_up else ""))
    return res



def keep_first_paths(simgr, n: int) -> int:
    """Keep ``n`` finished paths: one step can finish many (every state of a breadth-first frontier
    reads its last byte together), and a run asked for ``max_paths`` reports that many. The newest
    of the others go to the ``beyond_max_paths`` stash (neither reported nor given tests), paths
    that ended normally before error paths; returns how many."""
    extra = finished(simgr) - n
    moved = 0
    for name in ("deadended", "errored", ERROR_STASH):
        stash = simgr.errored if name == "errored" else simgr.stashes.get(name, [])
        k = min(extra - moved, len(stash))
        if k <= 0:
            continue
        tail = stash[len(stash) - k:]
        del stash[len(stash) - k:]
        simgr.stashes.setdefault(BEYOND_MAX_PATHS_STASH, []).extend(
            rec.state if name == "errored" else rec for rec in tail)
        moved += k
    return moved


def finished(simgr) -> int:
    """Paths that ended: finished, error paths and paths angr could not step."""
    return len(simgr.deadended) + len(simgr.stashes.get(ERROR_STASH, [])) + len(simgr.errored)
