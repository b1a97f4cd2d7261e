"""Hard queries do not hold up easy paths: a successor whose feasibility z3 cannot decide in the
first-pass budget is deferred alone (its siblings go on), resumed with the full budget when nothing
else is active, and never lost; cloned z3 solvers keep their time-out; a run's ``timeout`` bounds
its z3 calls."""

import os
import subprocess
import sys
import time

import angr
import claripy
import pytest
from claripy.backends import backend_z3

import angr_ram
from angr_ram.core.scope import current
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.passes import (
    FIRST_PASS_LEARNT_MS,
    RETRY_EVERY,
    SKIP_AFTER,
    FirstPassSites,
    PassBudget,
    SecondPassSites,
)
from angr_ram.run.runner import RESILIENCE, explore, load_project, make_state

from .conftest import BUILD
from .test_samples import native

DEFER = 777     # a first-pass budget no other solver in these runs has
RESUME = 4321   # a second-pass budget no other solver in these runs has


def _first_pass_gives_up(monkeypatch, window=(30, 300), second=False):
    """z3 gives up (claripy's time-out error) on the calls of ``window`` made with a first-pass
    budget (``defer_ms`` or the one learnt at a site, FIRST_PASS_LEARNT_MS), and with ``second`` on every call made with the second-pass budget ``RESUME``; other
    calls are answered (counted as "full"). Returns the call counters."""
    original = backend_z3.z3_solver_sat
    calls = {"first": 0, "second": 0, "full": 0}

    def stub(solver, extra_constraints, occasion):
        budget = current().budget_ms
        if budget in (DEFER, FIRST_PASS_LEARNT_MS):     # (a hard query is as hard with the learnt budget)
            calls["first"] += 1
            if window[0] <= calls["first"] < window[1]:
                raise claripy.ClaripySolverInterruptError("timeout")
        elif second and budget == RESUME:
            calls["second"] += 1
            raise claripy.ClaripySolverInterruptError("timeout")
        else:
            calls["full"] += 1
        return original(solver, extra_constraints, occasion)

    monkeypatch.setattr(backend_z3, "z3_solver_sat", stub)
    return calls


def test_deferred_paths_are_resumed_and_every_outcome_is_found(monkeypatch):
    b = os.fspath(BUILD / "matrix10_O0")
    proj = load_project(b)
    simgr = proj.factory.simulation_manager(make_state(proj, 2), resilience=RESILIENCE)
    tech = simgr.use_technique(angr_ram.RelocatableMemory(defer_ms=DEFER, seeded_models=False))
    calls = _first_pass_gives_up(monkeypatch)
    simgr.run()
    st = angr_ram.stats(simgr)
    assert st["deferred_states"] > 0 and st["deferred_resumed"] == st["deferred_states"]
    assert calls["full"] > 0 and st["unknown"] == 0 and not simgr.errored
    assert not simgr.stashes.get("ram_deferred") and not simgr.stashes.get("unknown")
    assert any(s.ram.resumed for s in simgr.deadended) and current() is None
    found = set().union(*(path_outcomes(s) for s in simgr.deadended))
    assert found == native(b, 2)
    assert tech.defer_ms == DEFER


@pytest.mark.slow
def test_an_undecided_successor_leaves_its_sibling_going():
    """uthash's HASH_FIND_INT of a four-byte key: "hash equal and keys differ" is unsat only if no
    other key has the stored key's Jenkins hash, which z3 does not decide; "keys equal" is easy. The
    hard successors are set aside and every outcome (found below/above 12, not found) is reached."""
    b = os.fspath(BUILD / "uthash_key4_O0")
    res = explore(b, 4, timeout=240, defer_ms=300, solver_timeout_ms=600)
    st = res.stats
    seen = {k: st[k] for k in ("undecided_successors", "unknown", "unknown_states", "deferred_states",
                               "deferred_resumed", "steps_abandoned")}
    seen.update(seconds=round(res.seconds, 1), stopped=res.stopped, endings=res.endings, errors=res.errors[:3])
    assert res.outcomes == {(2, b""), (3, b""), (4, b"")}, seen      # (the counters say why if not)
    assert not res.errors and res.stopped is None
    assert st["undecided_successors"] >= 12 and st["unknown"] == st["unknown_states"] > 0, seen
    # every deferred state was resumed; on a busy machine an early step may be deferred whole (its
    # descendants then run resumed, with the full budget, and their hard successors end unknown)
    assert st["deferred_resumed"] == st["deferred_states"] > 0, seen


def test_validation_of_defer_ms():
    with pytest.raises(angr_ram.AngrRamError, match="defer_ms"):
        angr_ram.RelocatableMemory(defer_ms=0)
    assert angr_ram.RelocatableMemory(defer_ms=5000, solver_timeout_ms=4000).defer_ms is None


HARD = r"""
import time, claripy
from angr_ram.solver import z3_setup  # noqa
from angr_ram.core.scope import RunScope
k = claripy.BVS("k", 32)
def mix(a, b, c):
    for sa, sb, sc in ((13, 8, 13), (12, 16, 5), (3, 10, 15)):
        a = (a - b - c) ^ claripy.LShR(c, sa)
        b = (b - c - a) ^ (a << sb)
        c = (c - a - b) ^ claripy.LShR(b, sc)
    return c
h = lambda x: mix(x + 0x9E3779B9, claripy.BVV(0x9E3779B9, 32), claripy.BVV(0xFEEDBEEF + 4, 32))
with RunScope().active():
    s = claripy.Solver(timeout=500)
    s.add(k != 0)
    assert s.satisfiable()
    s2 = s.branch()                  # finalized: the next constraint makes claripy clone the z3 solver
    s2.add(h(k) == h(claripy.BVV(0x1234567, 32)))
    s2.add(k != 0x1234567)
    t = time.time()
    try:
        s2.satisfiable()
        print("answered", round(time.time() - t, 1))
    except claripy.ClaripyError as e:
        print("gave up", round(time.time() - t, 1), type(e).__name__)
"""


def test_a_cloned_z3_solver_keeps_its_timeout():
    """claripy clones a branch's z3 solver with ``Solver.translate``, which drops the parameters:
    the clone used to run a hard query for ever. It now gives up after its 0.5 s budget."""
    t = time.time()
    out = subprocess.run([sys.executable, "-c", HARD], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("gave up"), out.stdout
    assert time.time() - t < 60


@pytest.mark.slow
def test_a_run_timeout_bounds_its_z3_calls():
    """With ``timeout``, no z3 call runs past it: the deferred hard paths of the uthash lookup are
    resumed with claripy's 300 s budget, yet the run stops within seconds of its timeout, the hard
    paths reported, not lost: as unknown (z3 gave up on a finished path's outcome) or as unfinished
    (still running or set aside when the timeout came; which of the two depends on the machine's
    speed)."""
    b = os.fspath(BUILD / "uthash_key4_O0")
    t = time.time()
    res = explore(b, 4, timeout=60, defer_ms=100)
    assert time.time() - t < 60 + 20
    assert res.stopped == "timeout" and not res.errors
    assert res.unknown + res.unfinished > 0
    assert res.outcomes <= {(2, b""), (3, b""), (4, b"")}


@pytest.mark.parametrize("start", [5, 15])
def test_a_path_deferred_inside_a_merged_loop_is_resumed_before_the_run_ends(monkeypatch, start):
    """Merging moves the states that leave a loop to its waiting stash after the other techniques'
    step; a path deferred meanwhile in the loop holds the loop's merge open. When no state is left
    running it must be resumed (and the loop merged), not left behind with the run ending and the
    waiting leaves' outcomes missing."""
    from .groundtruth import outcome_set_over

    calls = _first_pass_gives_up(monkeypatch, window=(start, 10**9))
    b = os.fspath(BUILD / "rle4_O0")
    r = explore(b, 5, merge="ite", merge_points="auto", defer_ms=DEFER)
    assert calls["first"] >= start and r.stats["deferred_states"] > 0
    assert r.unknown == 0 and r.errors == []
    assert r.stats["deferred_resumed"] == r.stats["deferred_states"]
    assert r.outcomes == outcome_set_over(b, [range(0, 6)] + [b"\0\1\2\3", b"a\0"] * 2)


def test_a_give_up_wrapped_by_angr_in_a_fork_sets_the_state_aside(monkeypatch):
    """z3 giving up inside the fork of a multi-object access (angr wraps it as SimSolverModeError
    "Claripy threw an error") sets the state aside instead of ending the run with a traceback."""
    import angr

    from angr_ram.run.technique import RelocatableMemory

    original, calls = RelocatableMemory._fork, []

    def fork(self, state, fr):
        calls.append(1)
        if len(calls) == 1:
            try:
                raise claripy.ClaripySolverInterruptError("timeout")
            except claripy.ClaripySolverInterruptError as e:
                raise angr.errors.SimSolverModeError("Claripy threw an error") from e
        return original(self, state, fr)

    monkeypatch.setattr(RelocatableMemory, "_fork", fork)
    b = os.fspath(BUILD / "matrix3_O0")
    r = explore(b, 2, model="fork")
    assert r.unknown == 0 and len(calls) > 1          # set aside, resumed, and forked the second time
    assert r.outcomes == native(b, 2)


def test_outcomes_z3_gives_up_on_are_counted_not_fatal(monkeypatch):
    """Choosing a finished path's outcomes outside a step may time out: the run still returns its
    summary, and that path lists the outcome of the model taken when it finished (path_models)
    instead of being lost as undecided."""
    import angr_ram.run.runner as runner

    original, calls = runner.listed_outcomes, []

    def outcomes(state, *a, **k):
        calls.append(1)
        if len(calls) == 1:
            raise claripy.ClaripySolverInterruptError("timeout")
        return original(state, *a, **k)

    monkeypatch.setattr(runner, "listed_outcomes", outcomes)
    b = os.fspath(BUILD / "matrix3_O0")
    r = explore(b, 2)
    assert r.unknown == 0 and "outcome undecided (z3 gave up)" not in r.endings
    assert r.outcomes_from_model == 1 and r.outcomes_partial >= 1
    assert r.outcomes <= native(b, 2) and len(r.outcomes) == len(native(b, 2))


def test_a_step_longer_than_its_bound_is_set_aside_and_the_other_states_go_on_without_guarded():
    """A script's own slow procedure (here a ``puts`` hook that spins for 12 s on its first call)
    holds up one state's step: the step is abandoned at ``step_seconds``, the state deferred and
    resumed once nothing else is active, and the run ends with the same outcomes as without the
    spin. The bound is on by default (10 s) for scripts that never call ``guarded()``."""
    assert angr_ram.RelocatableMemory().step_seconds == 10.0

    def run(spin: float):
        proj = angr.Project(os.fspath(BUILD / "branches_O0"), auto_load_libs=False)
        spun = []

        class SlowPuts(angr.SIM_PROCEDURES["libc"]["puts"]):
            def run(self, string):
                if spin and not spun:
                    spun.append(1)
                    t = time.perf_counter()
                    while time.perf_counter() - t < spin:
                        pass
                return super().run(string)
        proj.hook_symbol("puts", SlowPuts())
        stdin = angr.SimFileStream(name="stdin", content=claripy.BVS("stdin", 16), size=2, has_end=True)
        simgr = proj.factory.simulation_manager(proj.factory.entry_state(stdin=stdin))
        tech = simgr.use_technique(angr_ram.RelocatableMemory(step_seconds=2.0))     # (loaded CI: no 0.5)
        t0 = time.perf_counter()
        simgr.run()
        outs = {s.posix.dumps(1) for s in simgr.deadended}
        return simgr, tech.stats, time.perf_counter() - t0, outs

    slow, st, seconds, outs = run(12.0)
    plain, plain_st, _, plain_outs = run(0.0)
    assert st.steps_abandoned == 1 and st.deferred_states == 1 and st.deferred_resumed == 1
    assert plain_st.steps_abandoned == 0 and plain_st.deferred_states == 0
    assert outs == plain_outs and len(slow.deadended) == len(plain.deadended)
    assert seconds < 12.0       # the spin never ran to its end (abandoned at 2 s)


def _script_run(b, **options):
    proj = load_project(b)
    simgr = proj.factory.simulation_manager(make_state(proj, 2), resilience=RESILIENCE)
    tech = simgr.use_technique(angr_ram.RelocatableMemory(defer_ms=DEFER, resume_ms=RESUME, seeded_models=False,
                                                          **options))
    return simgr, tech


def test_a_script_run_resumes_deferred_paths_with_the_second_pass_budget_then_reports_them(monkeypatch, caplog):
    """A script's ``simgr.run()`` (no deadline, no solver_timeout_ms): deferred paths resume with
    ``resume_ms`` per z3 call, not claripy's 300 s; one still undecided there goes to ``unknown``
    with the budget in its reason, and ``resume_unknown`` retries it with the full budget, which
    finds the outcomes it holds."""
    b = os.fspath(BUILD / "matrix10_O0")
    simgr, tech = _script_run(b)
    calls = _first_pass_gives_up(monkeypatch, second=True)
    batches, resume = [], tech.resume_deferred
    tech.resume_deferred = lambda sm: batches.append(resume(sm)) or batches[-1]
    simgr.run()
    st = tech.stats
    # a few at a time (as many 4.3 s budgets as fit in the 10 s step bound): no simgr.step() of the
    # second pass steps them all at once
    assert max(batches) == 2 and sum(batches) == st.deferred_resumed
    # the six paths are deferred at one branch: after z3 gave up on two of them there, the others
    # go to unknown untried but every fourth (run.passes.SecondPassSites)
    assert st.deferred_states == 6 and st.deferred_resumed == 3 and st.second_pass_skipped == 3
    assert calls["second"] == 3 and calls["full"] == 0
    unknown = simgr.stashes["unknown"]
    assert len(unknown) == st.unknown_states == 6 and not simgr.errored
    tried = [s for s in unknown if f"z3 timeout {RESUME} ms" in s.ram.unknown]
    assert len(tried) == 3 and all(s.ram.unknown.startswith("not tried in the second pass: z3 gave up on the")
                                   for s in unknown if s not in tried)
    assert caplog.text.count("tech.resume_unknown(simgr) retries") == 1      # said once, to the script's log
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) <= native(b, 2)
    ended, n = len(simgr.deadended), len(unknown)
    assert tech.resume_unknown(simgr) == n
    simgr.run()
    assert calls["full"] > 0 and not simgr.stashes["unknown"] and not simgr.errored
    assert len(simgr.deadended) >= ended + n        # each resumed path ends
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native(b, 2)


@pytest.mark.parametrize("bound", ["timeout", "solver_timeout_ms"])
def test_a_bounded_run_resumes_deferred_paths_with_the_full_budget(monkeypatch, bound):
    """A run with a bound of its own (``guarded(timeout=)`` or ``solver_timeout_ms``) has no second
    pass: its deferred paths resume with the full budget at once."""
    b = os.fspath(BUILD / "matrix10_O0")
    simgr, tech = _script_run(b, **({"solver_timeout_ms": 100_000} if bound == "solver_timeout_ms" else {}))
    calls = _first_pass_gives_up(monkeypatch, second=True)
    with tech.guarded(timeout=600 if bound == "timeout" else None):
        simgr.run()
    assert tech.stats.deferred_states > 0 and calls["second"] == 0 and calls["full"] > 0
    assert not simgr.stashes["unknown"]
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native(b, 2)


def test_the_second_pass_skips_a_site_only_while_z3_gave_up_on_every_path_tried_there():
    sites = SecondPassSites()
    assert sites.should_try(0x401000) and sites.should_try(None)
    sites.record(0x401000, gave_up=True)
    assert sites.should_try(0x401000)                   # one give-up is not a pattern
    sites.record(0x401000, gave_up=True)
    tries = [sites.should_try(0x401000) for _ in range(2 * RETRY_EVERY)]
    assert tries.count(True) == 2 and tries[RETRY_EVERY - 1] and not tries[0]   # every fourth still tried
    assert sites.should_try(0x402000)                   # another site is its own
    assert "gave up on the 2 paths deferred at 0x401000" in sites.skip_reason(0x401000, RESUME)
    sites.record(0x401000, gave_up=False)               # one decided path ends the skipping there
    assert all(sites.should_try(0x401000) for _ in range(RETRY_EVERY))
    sites.record(None, gave_up=True)                    # a path with no site is not counted
    assert sites.should_try(None)


def test_pass_budgets():
    from angr_ram.core.deadline import Deadline
    from angr_ram.run.config import RunConfig
    from angr_ram.run.passes import FROM_DEFERRED, FROM_UNKNOWN, resume_batch, step_budget

    cfg = RunConfig()
    limit, none, stopped = Deadline(5.0), Deadline(None), Deadline(None)
    stopped.stop()                                                                  # Ctrl-C without a limit
    assert step_budget(cfg, False, None) == ("first", 1000, 10.0) == step_budget(cfg, False, limit)
    assert step_budget(cfg, FROM_DEFERRED, None) == ("second", 5000, 50.0) == step_budget(cfg, FROM_DEFERRED, none)
    assert step_budget(cfg, FROM_DEFERRED, limit) == ("full", None, None)         # a deadline
    assert step_budget(cfg, FROM_DEFERRED, stopped) == ("full", None, None)
    assert step_budget(cfg, FROM_UNKNOWN, None) == ("full", None, None)           # resume_unknown
    assert step_budget(cfg.replace(solver_timeout_ms=3000), FROM_DEFERRED, None) == ("full", None, None)
    assert step_budget(cfg.replace(resume_ms=None), FROM_DEFERRED, None) == ("full", None, None)
    assert step_budget(cfg.replace(step_seconds=None), FROM_DEFERRED, None) == ("second", 5000, None)
    assert step_budget(cfg.replace(defer_ms=None), False, None) == ("full", None, None)
    assert resume_batch(cfg, None) == 2 and resume_batch(cfg.replace(resume_ms=20_000), None) == 1
    assert resume_batch(cfg, limit) is None and resume_batch(cfg.replace(solver_timeout_ms=3000), None) is None
    with pytest.raises(angr_ram.AngrRamError, match="resume_ms"):
        angr_ram.RelocatableMemory(resume_ms=0)


def test_the_first_pass_shortens_its_budget_only_where_every_step_deferred():
    """After SKIP_AFTER first-pass steps in a row at a site deferred a path, steps there get
    FIRST_PASS_LEARNT_MS per call, every RETRY_EVERY-th the whole budget; one step there that
    defers nothing ends it; other passes and other sites are untouched."""
    sites, first = FirstPassSites(), PassBudget("first", DEFER, 10.0)
    for _ in range(SKIP_AFTER):
        assert sites.budget(0x401000, first) == first
        sites.record(0x401000, deferred=True)
    got = [sites.budget(0x401000, first).call_ms for _ in range(2 * RETRY_EVERY)]
    assert got.count(FIRST_PASS_LEARNT_MS) == 2 * RETRY_EVERY - 2 and got[RETRY_EVERY - 1] == DEFER
    assert sites.budget(0x402000, first) == first
    assert sites.budget(0x401000, PassBudget("second", RESUME, 10.0)).call_ms == RESUME
    sites.record(0x401000, deferred=False)
    assert all(sites.budget(0x401000, first) == first for _ in range(RETRY_EVERY))


def test_a_site_whose_first_pass_steps_all_defer_is_tried_with_the_short_budget(monkeypatch):
    """matrix10 driven as a script with z3 giving up on every call made with the whole first-pass
    budget after the start-up's: after two steps in a row at a site deferred, the next ones there are tried with
    FIRST_PASS_LEARNT_MS (z3 answers those here, which ends the shortening there), the deferred
    paths are resumed, and every outcome is the native one."""
    b = os.fspath(BUILD / "matrix10_O0")
    simgr, tech = _script_run(b)
    original = backend_z3.z3_solver_sat
    budgets = []

    def stub(solver, extra_constraints, occasion):
        budget = current().budget_ms
        budgets.append(budget)
        if budget == DEFER and budgets.count(DEFER) >= 30:      # (the start-up's calls answered)
            raise claripy.ClaripySolverInterruptError("timeout")
        return original(solver, extra_constraints, occasion)
    monkeypatch.setattr(backend_z3, "z3_solver_sat", stub)
    simgr.run()
    assert tech.stats.deferred_states >= SKIP_AFTER
    assert tech.stats.deferred_resumed == tech.stats.deferred_states and not simgr.stashes.get("unknown")
    assert FIRST_PASS_LEARNT_MS in budgets
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native(b, 2)
