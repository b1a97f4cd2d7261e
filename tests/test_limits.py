"""A run's limits bound everything in it (issue: runs end on time and keep what they found).

The run guard (:mod:`angr_ram.core.guard`) stops a z3 check and a Python-bound step at the deadline or on
Ctrl-C; steps over their time or memory budget are set aside; choosing tests' inputs is bounded,
linear and never raises; every path that did not finish gets an ``unfinished`` test; damaged
cache stores and unwritable output locations are one-line reports."""

import gc
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import angr
import claripy
import pytest
import z3
from claripy.backends import backend_z3

import angr_ram
from angr_ram.core import guard as G
from angr_ram.core import z3_interrupts as ZI
from angr_ram.core.deadline import Deadline
from angr_ram.run import technique as T
from angr_ram.run.cli import main
from angr_ram.run.input_budget import NoAnswer
from angr_ram.run.outcomes import listed_outcomes, path_outcomes
from angr_ram.run.passes import bounded_run
from angr_ram.run.runner import RESILIENCE, TEST_SECONDS, explore, load_project, make_state
from angr_ram.run.testcases import InputBudget, choose_inputs, read_tests
from angr_ram.solver import z3_check

from .conftest import BUILD
from .test_samples import native


def _hard_check():
    """A z3 check that runs for minutes: an FNV-1a preimage over 64 bits."""
    s = z3.Solver()
    x = z3.BitVec("x", 64)
    h = z3.BitVecVal(14695981039346656037, 64)
    for i in range(8):
        h = (h ^ z3.ZeroExt(56, z3.Extract(8 * i + 7, 8 * i, x))) * 1099511628211
    s.add(h == 0x1234567890ABCDEF)
    ZI.quiet_ctrl_c(s)
    return s


def test_the_deadline_stops_a_z3_check_and_a_python_loop_inside_a_step():
    with G.RunGuard(Deadline(0.5), catch_sigint=False) as g:
        t0 = time.perf_counter()
        with pytest.raises(G.RunDeadline):
            with g.step():
                _hard_check().check()    # claripy would raise on "interrupted"; z3 answers unknown here
                while True:              # then Python work that never looks at the clock
                    pass
        assert time.perf_counter() - t0 < 2.5
        assert g.stop_reason == "timeout" and g.stopped
        with pytest.raises(G.RunDeadline):   # a stopped run refuses new steps
            with g.step():
                pass
        with g.step(stoppable=False, seconds=0):   # work after the stop (collecting tests) may still run
            pass


def test_a_step_over_its_time_budget_is_abandoned_and_the_next_one_runs():
    g = G.RunGuard(catch_sigint=False)
    t0 = time.perf_counter()
    with pytest.raises(G.StepTimeBudget):
        with g.step(seconds=0.3):
            while True:
                pass
    assert 0.3 <= time.perf_counter() - t0 < 2.0 and g.abandoned == 1
    with g.step(seconds=0.3):      # nothing left pending for the next step
        time.sleep(0.5 * 0.3)
    time.sleep(0.2)                # and nothing raised after it


def test_the_first_ctrl_c_interrupts_z3_and_stops_the_run():
    before = signal.getsignal(signal.SIGINT)
    with G.RunGuard(catch_sigint=True) as g:
        threading.Timer(0.4, os.kill, (os.getpid(), signal.SIGINT)).start()
        t0 = time.perf_counter()
        with pytest.raises(G.RunInterrupted):
            with g.step():
                r = _hard_check().check()
                assert r == z3.unknown          # z3 was interrupted by the guard, not by its own handler
                while True:
                    pass
        assert time.perf_counter() - t0 < 2.5
        assert g.stop_reason == "interrupted" and g.interrupts == 1
    assert signal.getsignal(signal.SIGINT) is before          # the user's handler is back


def _solver_that_gives_up(rate: float, seed: int):
    """z3 calls that give up ("timeout", as claripy reports a z3 unknown) at random."""
    original = backend_z3.z3_solver_sat
    rnd = random.Random(seed)

    def flaky(solver, extra_constraints, occasion):
        if rnd.random() < rate:
            raise claripy.ClaripySolverInterruptError("timeout")
        return original(solver, extra_constraints, occasion)
    return original, flaky


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
@pytest.mark.slow
def test_a_solver_that_gives_up_at_random_never_crashes_a_run_or_loses_a_path(monkeypatch, seed):
    """z3 giving up at random points (exploring, forking, fault checks, outcomes, test inputs):
    the run ends normally, every state is a finished path or set aside with a test, and resuming the
    set-aside states with a working solver reaches the native outcome set."""
    b = os.fspath(BUILD / "hashpaths_O0")
    proj = load_project(b)
    simgr = proj.factory.simulation_manager(make_state(proj, 2), resilience=RESILIENCE)
    tech = simgr.use_technique(angr_ram.RelocatableMemory(seeded_models=False, solver_timeout_ms=5000))
    original, flaky = _solver_that_gives_up(0.08, seed)
    monkeypatch.setattr(backend_z3, "z3_solver_sat", flaky)
    simgr.run()
    budget = InputBudget()
    tests = angr_ram.collect_tests(simgr, budget=budget)     # never raises, even with z3 giving up
    assert not simgr.errored
    aside = simgr.stashes.get("unknown", []) + simgr.stashes.get("ram_deferred", [])
    assert aside, "the flaky solver should have set some state aside"
    assert sum(t.kind == "unfinished" for t in tests) + budget.infeasible == len(aside)
    assert sum(t.kind in ("exit", "undecided") for t in tests) >= len(simgr.deadended)
    monkeypatch.setattr(backend_z3, "z3_solver_sat", original)
    tech.resume_unknown(simgr)
    tech.resume_deferred(simgr)
    simgr.run()
    assert not simgr.stashes.get("unknown") and not simgr.errored
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native(b, 2)


def test_unfinished_paths_get_a_test_with_the_input_that_drives_them_there(tmp_path):
    """A run stopped by its limit writes a test for the path still running: for a program that
    loops forever on inputs starting with 'L', that test's input starts with 'L' and loops natively."""
    b = os.fspath(BUILD / "spin_O0")
    res = explore(b, 2, timeout=4, tests=True)
    assert res.stopped == "timeout" and res.unfinished >= 1
    assert {c for c, _ in res.outcomes} == {0, 2}
    unfinished = [t for t in res.tests if t.kind == "unfinished"]
    assert unfinished and all(t.stdin[:1] == b"L" for t in unfinished)
    assert "still running when the run stopped" in unfinished[0].message
    with pytest.raises(subprocess.TimeoutExpired):      # natively, that input makes the program loop
        subprocess.run([b], input=unfinished[0].stdin, capture_output=True, timeout=1)


@pytest.mark.slow
def test_choosing_inputs_is_linear_in_the_input_size():
    """2000 stdin bytes, 20 of them forced to 0xff by the path: the readable model costs a few
    queries per forced byte (group testing), not one per byte, and never raises."""
    proj = angr.Project(os.fspath(BUILD / "spin_O0"), auto_load_libs=False)
    n = 2000
    stdin = claripy.BVS("big", 8 * n)
    st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=stdin, has_end=True))
    forced = set(range(0, n, 100))
    for k in forced:
        st.solver.add(stdin.get_byte(k) == 0xFF)
    st.solver.add(stdin.get_byte(1).zero_extend(8) + stdin.get_byte(2).zero_extend(8) == 0x101)  # one is not readable
    calls = [0]
    sat = st.solver.satisfiable

    def counted(*a, **k):
        calls[0] += 1
        return sat(*a, **k)
    st.solver.satisfiable = counted
    got = choose_inputs(st, budget=InputBudget(query_seconds=30))
    assert got is not None
    data, _, _, how = got
    assert how == "readable" and len(data) == n
    assert all(data[k] == 0xFF for k in forced)
    assert data[1] + data[2] == 0x101 and sum(0x20 <= data[k] < 0x7F or data[k] == 0 for k in (1, 2)) == 1
    others = [data[k] for k in range(n) if k not in forced and k not in (1, 2)]
    assert all(v == 0 or 0x20 <= v < 0x7F for v in others)
    assert calls[0] <= 4 * 22 * 12


def test_choosing_inputs_out_of_time_falls_back_and_never_raises():
    """No time at all: the path still gets an input (a plain model or zeros), said in ``how``."""
    proj = angr.Project(os.fspath(BUILD / "spin_O0"), auto_load_libs=False)
    s = claripy.BVS("s", 64)
    st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=s, has_end=True))
    st.solver.add(s.get_byte(0) == 0x90)
    budget = InputBudget(deadline=time.perf_counter() - 10)
    got = choose_inputs(st, budget=budget)
    assert got is not None and got[3] in ("plain", "unsolved", "readable")
    st.solver.add(s.get_byte(0) == 0x91)        # now infeasible
    assert choose_inputs(st, budget=InputBudget(query_seconds=5)) is None


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "angr_ram.run.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def _valid_dir(d) -> list:
    tests = read_tests(d)
    for t in tests:
        assert (d / f"{t.id}.stdin").is_file()
    ours = {p.name for p in d.iterdir()} - {"tests.jsonl", "run.json", "coverage.csv"}
    assert ours == {f"{t.id}.stdin" for t in tests} | {f"{t.id}.arg{k}" for t in tests for k in range(1, len(t.args) + 1)}
    return tests


@pytest.mark.parametrize("after,sig", [(6.0, signal.SIGINT), (8.0, signal.SIGINT),   # after start-up: exploring
                                       (6.0, signal.SIGTERM)])    # how `timeout` and batch systems stop a run
def test_ctrl_c_at_any_moment_leaves_a_summary_and_a_valid_test_directory(tmp_path, after, sig):
    d = tmp_path / "t"
    p = subprocess.Popen([sys.executable, "-m", "angr_ram.run.cli", "run", os.fspath(BUILD / "collatz_O0"),
                          "--arg", "1", "--emit-tests", os.fspath(d), "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120      # the run's directory is made once the CLI has started (imports:
        while not d.exists() and p.poll() is None and time.monotonic() < deadline:   # 3-4 s, more under load)
            time.sleep(0.1)
        time.sleep(after - 3.0)
        t0 = time.perf_counter()
        p.send_signal(sig)
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:            # a run that did not stop must not outlive the test
            p.kill()
            p.communicate()
    assert time.perf_counter() - t0 < 5.0
    res = json.loads(out[out.index("{"):])
    assert p.returncode == (130 if res["stopped"] == "interrupted" else 0)     # interrupted: 130, summary written
    tests = _valid_dir(d)
    assert len(tests) == res["tests"]
    assert len(tests) >= res["stats"]["paths"] + len(res["errors"]) + res["unfinished"]
    if res["stopped"] == "interrupted":
        assert res["unfinished"] > 0 and any(t.kind == "unfinished" for t in tests)


def test_ctrl_c_while_tests_are_collected_still_writes_every_test(monkeypatch):
    """SIGINT during test collection: the remaining tests get plain inputs, none is lost."""
    import angr_ram.run.testcases as tc

    original = tc.choose_inputs
    sent = []

    def slow(state, extra=(), budget=None, notes=None):
        if not sent:
            sent.append(1)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)
        return original(state, extra, budget, notes)
    monkeypatch.setattr(tc, "choose_inputs", slow)
    res = explore(os.fspath(BUILD / "matrix10_O0"), 2, tests=True)
    assert sent and res.stopped is None
    assert len(res.tests) >= res.stats["paths"]
    assert {(t.exit, t.stdout) for t in res.tests if t.kind == "exit"} == res.outcomes


def test_a_damaged_persistent_store_is_reported_in_one_line_and_the_run_goes_on(tmp_path):
    bad = tmp_path / "bad" / "queries.lmdb"
    bad.mkdir(parents=True)
    (bad / "data.mdb").write_bytes(os.urandom(20000))
    b = os.fspath(BUILD / "matrix10_O0")
    r = _cli("run", b, "--stdin-bytes", "2", "--cache", "aa", "--persist", os.fspath(tmp_path / "bad"), "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout[r.stdout.index("{"):])
    assert {(o["exit"], o["stdout"].encode("latin-1")) for o in res["outcomes"]} == native(b, 2)
    notes = [ln for ln in r.stderr.splitlines() if ln.startswith("angr-ram:")]
    assert len(notes) == 1 and "cannot be used" in notes[0] and "went on without it" in notes[0]


def test_a_garbled_record_is_skipped_and_counted(tmp_path):
    import lmdb

    b = os.fspath(BUILD / "matrix10_O0")
    store = tmp_path / "store"
    first = explore(b, 2, cache="aa", persist=os.fspath(store))
    assert first.stats["cache_disk_size"] > 0
    env = lmdb.open(os.fspath(store / "queries.lmdb"), subdir=True, max_dbs=2)
    db = env.open_db(b"answers")
    with env.begin(write=True, db=db) as txn:
        keys = [k for k, _ in txn.cursor()]
        for i, k in enumerate(keys):
            txn.put(k, [b"\xff\xfe not json", b"42", b'[["x", 1]]', b'"sat"'][i % 4])
    env.close()
    second = explore(b, 2, cache="aa", persist=os.fspath(store))
    assert second.outcomes == native(b, 2) == first.outcomes
    assert second.stats["cache_disk_garbled"] > 0 and second.stats["cache_hits_disk"] == 0
    assert any("garbled records skipped" in w for w in second.warnings)


def test_an_unusable_persist_location_is_refused_before_exploring(tmp_path, capsys, monkeypatch):
    import angr_ram.run.runner

    explored = []
    monkeypatch.setattr(angr_ram.run.runner, "explore", lambda *a, **k: explored.append(1))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", os.fspath(BUILD / "oob_O0"), "--stdin-bytes", "1", "--cache", "aa",
                 "--persist", os.fspath(blocker / "sub")]) == 2
    err = capsys.readouterr().err
    assert "cannot keep the persistent cache there" in err and len(err.strip().splitlines()) == 1
    assert explored == []


def test_a_stopped_run_returns_within_its_limit_and_writes_its_tests(tmp_path):
    """An input that makes the program loop forever: the run returns soon after its 3 s limit with
    a test for every path it found and for the unfinished one. (Eight table hops from a 4-byte
    input, used here before, now finish in 2 s.) (How soon is measured by
    ``angr-ram bench --limits``: within 2 s on an idle machine; here the bound only catches a run
    that does not stop, since the CI machine may be loaded.)"""
    d = tmp_path / "t"
    t0 = time.perf_counter()
    r = _cli("run", os.fspath(BUILD / "spin_O0"), "--stdin-bytes", "2", "--timeout", "3",
             "--emit-tests", os.fspath(d), "--json")
    wall = time.perf_counter() - t0
    res = json.loads(r.stdout[r.stdout.index("{"):])
    assert r.returncode == 0
    assert res["stopped"] == "timeout"
    assert res["seconds"] + res["tests_seconds"] < 3 + 6.0
    assert wall < 3 + 6.0 + 12.0        # the interpreter's and angr's start-up on top
    tests = _valid_dir(d)
    assert res["unfinished"] >= 1
    assert len(tests) >= res["stats"]["paths"] + len(res["errors"]) + res["unfinished"]


def test_an_interrupt_never_leaves_a_wrong_answer_behind():
    """z3 keeps an interrupt sent while no check runs, and the next check of a plain solver then
    answers "sat" with a model that violates its constraints: the guard drains every interrupt it
    sent when the step ends, and checks inside runs go through fresh_answer."""
    g = G.RunGuard(catch_sigint=False)
    with pytest.raises(G.StepTimeBudget):
        with g.step(seconds=0.2):
            while True:
                pass
    x = claripy.BVS("wrong_answer_x", 8)
    s = claripy.Solver()
    s.add(x == 0xFF)
    assert not s.satisfiable(extra_constraints=[x == 3])
    zx = z3.BitVec("wrong_answer_zx", 8)
    zs = z3.Solver()
    zs.add(zx == 255)
    ZI.interrupt_z3(z3.main_ctx())
    assert ZI.fresh_answer(lambda: zs.check(zx == 3), z3.main_ctx()) == z3.unsat


@pytest.mark.slow
def test_a_slow_outcome_query_is_not_lost_when_the_run_has_no_deadline(monkeypatch):
    """A finished path's outcomes are a result, not an improvement: under load the query enumerating
    them (a merged path's exit codes) may take longer than the per-query budget of test inputs; the
    outcomes must still be there (a CI run under load lost 15 of b64class's 17)."""
    import angr_ram.run.runner as rn

    from .test_loop_corpus import native as loop_native

    def slow(state, *a, **kw):
        time.sleep(0.9)                 # longer than the queries' budget below, with the guard's grace
        return listed_outcomes(state, *a, **kw)
    monkeypatch.setattr(rn, "InputBudget", lambda *a, **k: InputBudget(*a, **{**k, "query_seconds": 0.05}))
    monkeypatch.setattr(rn, "listed_outcomes", slow)
    res = explore(os.fspath(BUILD / "b64class4_O2"), 5, merge="pat", merge_points="auto")
    assert res.unknown == 0 and res.outcomes == loop_native("b64class", "O2")


@pytest.mark.parametrize("model", ["default", "fork", "dsmm"])
def test_a_pointer_chase_through_a_signed_remainder_is_answered_without_z3(model):
    """heapchase at -O2: ``off = in % 1792`` compiles to a signed ``idiv``, then six dependent hops
    ``p += *p`` in the heap buffer. Resolution's queries used to go to z3 (claripy's ``SMod`` had
    no evaluation): one check took 28 s and the run found no path in 120 s. Every outcome is found
    (one path's exit code is symbolic), as native runs over all offsets give it, and replays."""
    from .conftest import assert_tests_replay
    from .groundtruth import outcome_set_over

    b = os.fspath(BUILD / "heapchase_O2")
    kw = {} if model == "default" else {"model": model}
    r = explore(b, 2, timeout=120, tests=True, **kw)
    assert r.stopped is None and not r.errors and r.unknown == 0
    assert r.outcomes == outcome_set_over(b, [range(256), range(8)])    # every offset in 0..2047
    assert r.stats["enumerated_queries"] > 0 and r.stats["z3_checks_exploring"] <= 4, r.stats
    assert_tests_replay(b, r)


def test_a_finished_run_leaves_nothing_of_itself_in_the_process():
    """After a user's guarded run (deadline on, steps under a memory budget) the project, the
    technique and the states are freed once the script drops them. The guard's watcher thread kept
    the last guard it checked referenced, and with it the technique, project, engine and the last
    state with all its expressions (60,000 after a uthash run); the declared-objects table, a weak
    dictionary keyed by project, held its project through its value; claripy's conversion cache (never
    emptied) held every z3 term of the run. Every later run in the process was then slower and up to
    ten times larger."""
    import weakref

    from angr_ram.memory.declared import _BY_PROJECT

    proj = load_project(os.fspath(BUILD / "matrix10_O0"))
    simgr = proj.factory.simulation_manager(make_state(proj, 2), resilience=RESILIENCE)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    with tech.guarded(timeout=120):
        simgr.run()
    assert simgr.deadended and proj in _BY_PROJECT         # the run looked up declared arrays
    assert not claripy.backends.z3._object_cache            # claripy's conversions, emptied at the end
    refs = [weakref.ref(x) for x in (proj, tech, simgr.deadended[0])]
    del proj, simgr, tech
    time.sleep(4 * G.TICK)                                  # a round of the watcher thread
    gc.collect()
    assert [r() is None for r in refs] == [True, True, True]


def test_a_step_over_its_memory_budget_is_retried_with_a_larger_one(monkeypatch):
    """A step that grows the process past the step memory budget (z3 on a hash of the input) is
    set aside and, once nothing else is active, retried with four times the budget while the
    machine has the memory: its path is not lost to the budget (before: ``unknown`` for good)."""
    b = os.fspath(BUILD / "matrix3_O0")
    want = explore(b, 2).outcomes
    gc.collect()          # earlier tests' garbage, freed during the hungry step, hid its growth
    stepped = {}
    step = T.RelocatableMemory._step

    def hungry(self, simgr, state, **kw):
        n = stepped[state.addr] = stepped.get(state.addr, 0) + 1
        if n == 3 and not stepped.get("held"):   # one step, once: 384 MiB until the watcher abandons it
            stepped["held"] = True
            block = bytearray(384 << 20)   # more than the garbage a busy worker may free meanwhile
            block[::4096] = b"x" * len(block[::4096])
            try:
                for _ in range(400):     # at most 20 s (the watcher ends it at its next tick): under
                                         # load (CI's two test workers) that tick came after 5 s
                    time.sleep(0.05)
            finally:
                del block
        return step(self, simgr, state, **kw)

    monkeypatch.setattr(T.RelocatableMemory, "_step", hungry)
    r = explore(b, 2, step_memory_mb=16)
    assert r.stats["memory_retries"] >= 1 and r.stats["steps_abandoned"] >= 1
    assert r.unknown == 0 and r.outcomes == want


def test_under_max_rss_mb_a_step_gets_only_the_room_left_below_the_cap(monkeypatch):
    """``max_rss_mb`` (``angr-ram run`` gives 2048): a step's memory budget is what is left below
    the cap (at least the floor), and a step over it is retried with a larger budget only while
    that fits under the cap."""
    from angr_ram.run import passes

    monkeypatch.setattr(passes, "rss_mb", lambda: 1500.0)
    assert passes.step_memory(768, 1, None) == 768 and passes.step_memory(768, 4, None) == 3072
    assert passes.step_memory(768, 1, 2048) == 548 == passes.step_memory(None, 1, 2048)
    assert passes.step_memory(100, 1, 2048) == 100
    monkeypatch.setattr(passes, "rss_mb", lambda: 2100.0)
    assert passes.step_memory(768, 4, 2048) == passes.STEP_MEMORY_FLOOR_MB
    assert passes.retry_memory_scale(100, 1) == 4          # the machine could give 400 MiB ...

    class _Ram:
        memory_scale, solver_timeout, unknown = 1, None, None

    class _State:
        ram = _Ram()
    budget = passes.PassBudget("full", None, None)
    stats = angr_ram.RelocatableMemory().stats
    assert passes.set_aside(_State(), G.StepMemoryBudget.reason, budget, stats, 100, None) == passes.DEFERRED_STASH
    _State.ram.memory_scale = 1
    assert passes.set_aside(_State(), G.StepMemoryBudget.reason, budget, stats, 100, 300) == passes.UNKNOWN_STASH


def test_a_step_cut_to_the_room_below_the_cap_keeps_z3s_last_resort_cap(monkeypatch):
    """z3's own allocator cap follows the step's uncut budget (``z3_memory_mb``): a small cap is
    where z3 4.13 aborts the process instead of raising."""
    caps = []
    monkeypatch.setattr(G, "_z3_memory_cap", lambda mb: caps.append(mb))
    g = G.RunGuard(catch_sigint=False)
    with g.step(memory_mb=128, z3_memory_mb=768):
        pass
    with g.step(memory_mb=128):
        pass
    with g.step(memory_mb=128, z3_memory_mb=0):
        pass
    assert caps == [768 * G.Z3_CAP_FACTOR, 128 * G.Z3_CAP_FACTOR]


def test_a_step_over_the_room_below_max_rss_mb_is_set_aside_not_grown(monkeypatch):
    """A step that would grow the process by 384 MiB in a run capped 160 MiB above its size: the
    step is abandoned and its path set aside instead of the run growing past the cap (not retried
    with a larger memory budget; its next pass did not need the memory, so every outcome is found).
    Without a cap the default step budget (768 MiB) lets the same step grow."""
    b = os.fspath(BUILD / "matrix3_O0")
    want = explore(b, 2).outcomes
    gc.collect()
    stepped = {"ticks": 400}
    step = T.RelocatableMemory._step

    def hungry(self, simgr, state, **kw):
        n = stepped[state.addr] = stepped.get(state.addr, 0) + 1
        if n == 3 and not stepped.get("held"):
            stepped["held"] = True
            block = bytearray(384 << 20)
            block[::4096] = b"x" * len(block[::4096])
            try:
                for _ in range(stepped["ticks"]):     # until the watcher abandons it, or 0.5 s
                    time.sleep(0.05)
            finally:
                del block
        return step(self, simgr, state, **kw)

    monkeypatch.setattr(T.RelocatableMemory, "_step", hungry)
    r = explore(b, 2, max_rss_mb=G.rss_mb() + 160)
    assert r.stats["steps_abandoned"] >= 1 and r.stats["memory_retries"] == 0
    assert r.unknown == 0 and r.outcomes == want
    stepped.clear()
    stepped["ticks"] = 10
    gc.collect()
    r = explore(b, 2)
    assert r.stats["steps_abandoned"] == 0 and r.outcomes == want


def test_a_results_query_without_a_deadline_is_still_bounded():
    """A path's outcomes are asked with no time limit of their own when the run has none; a z3 call
    on floating point that never ends (a user's script, libm stubs) must still end the summary."""
    def endless():
        while time.perf_counter() - t0 < 30:
            pass

    budget = InputBudget(whole_seconds=0.5)
    t0 = time.perf_counter()
    with pytest.raises(NoAnswer):
        budget.ask(endless, whole=True)
    assert time.perf_counter() - t0 < 10
    assert budget.ask(lambda: 7, whole=True) == 7


WITHDRAW = r"""
import cProfile, ctypes, threading, time
from angr_ram.core import guard
pr = cProfile.Profile(); pr.enable()          # a profiler (cProfile, coverage, a debugger) is on
guard._withdraw_pending_raise()               # what a step's end does with an undelivered raise
def f():
    return 1
t = time.time()
for _ in range(3):
    f()
# and the same with the raise really pending: set from another thread while this one runs Python
done = []
def later():
    time.sleep(0.2)
    guard._raise_in(main, RuntimeError)
main = threading.get_ident()
threading.Thread(target=later).start()
try:
    while True:
        time.sleep(0.01)
except RuntimeError:
    done.append("delivered")
guard._withdraw_pending_raise()
f()
pr.disable()
print("returned", done)
"""


def test_withdrawing_an_undelivered_raise_leaves_a_profiled_thread_running():
    """A step that ends with the guard's raise still undelivered withdraws it. Clearing it with
    ``PyThreadState_SetAsyncExc(id, NULL)`` made the next function call loop for ever under a
    profiler (a script run under cProfile with ``guarded(timeout=18)`` hung at 100% CPU, 2 of 7
    timeouts tried): the process now ends."""
    out = subprocess.run([sys.executable, "-c", WITHDRAW], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "returned ['delivered']"


def test_the_run_time_limit_is_one_object_from_the_cli_to_z3_and_test_collection(monkeypatch):
    """``angr-ram run --timeout`` makes one Deadline: the run guard stops by it, every z3 call of a
    step gets at most what it leaves (the scope's deadline, read by the check wrapper), the passes
    ask it whether the run is bounded, and test collection's window follows it."""
    seen = {"scope": set(), "budget": []}
    original_step = T.RelocatableMemory.step_state

    def step_state(self, simgr, state, **kwargs):
        seen["tech"], seen["guard"] = self.deadline, self.guard.deadline
        out = original_step(self, simgr, state, **kwargs)
        return out
    monkeypatch.setattr(T.RelocatableMemory, "step_state", step_state)
    original_checked = z3_check._checked

    def checked(sc, *args):
        seen["scope"].add(id(sc.deadline))
        seen["deadline"] = sc.deadline
        return original_checked(sc, *args)
    monkeypatch.setattr(z3_check, "_checked", checked)
    original_budget = InputBudget.__init__

    def budget(self, *args, **kwargs):
        original_budget(self, *args, **kwargs)
        seen["budget"].append(self)
    monkeypatch.setattr(InputBudget, "__init__", budget)
    assert main(["run", os.fspath(BUILD / "matrix10_O0"), "--stdin-bytes", "2", "--timeout", "60"]) == 0
    d = seen["tech"]
    assert isinstance(d, Deadline) and d.seconds == 60
    assert seen["guard"] is d and seen["scope"] == {id(d)} and seen["deadline"] is d
    collecting = [b for b in seen["budget"] if b.guard.deadline is d]
    assert collecting and all(b.deadline == pytest.approx(d.start + 60 + TEST_SECONDS, abs=1.0) for b in collecting)
    assert bounded_run(d, None) and not bounded_run(Deadline(None), None)
