"""z3 giving up never prunes a state: it is set aside (``unknown`` stash) and can be resumed; merges
of states whose heap objects cannot be compared are refused, not crashed."""

import os

import claripy
import pytest
import z3
from angr.errors import SimMergeError
from claripy.backends import backend_z3

import angr_ram
from angr_ram.merging import quantified
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.runner import RESILIENCE, load_project, make_state

from .conftest import BUILD
from .test_samples import native


def test_unknown_answers_set_states_aside_and_resume_finds_every_outcome(monkeypatch):
    """A stub makes z3 give up (what claripy raises for an unknown "timeout" answer) on a window of
    calls: the states stepping then go to ``unknown`` with a reason, none is pruned, and resuming
    them with a working solver reaches the native outcome set."""
    b = os.fspath(BUILD / "matrix10_O0")
    original = backend_z3.z3_solver_sat
    calls = [0]

    def gives_up(solver, extra_constraints, occasion):
        calls[0] += 1
        if 40 <= calls[0] < 400:
            raise claripy.ClaripySolverInterruptError("timeout")
        return original(solver, extra_constraints, occasion)

    proj = load_project(b)
    simgr = proj.factory.simulation_manager(make_state(proj, 2), resilience=RESILIENCE)
    # seeded models would answer most queries of the window without z3: this test is about z3 giving up
    tech = simgr.use_technique(angr_ram.RelocatableMemory(solver_timeout_ms=2000, seeded_models=False))
    monkeypatch.setattr(backend_z3, "z3_solver_sat", gives_up)
    simgr.run()
    unknown = simgr.stashes.get("unknown", [])
    assert unknown and tech.stats.unknown_states >= len(unknown)
    assert all(s.ram.unknown.startswith("solver gave up") for s in unknown)
    assert angr_ram.stats(simgr)["unknown"] == len(unknown)
    monkeypatch.setattr(backend_z3, "z3_solver_sat", original)
    tests = angr_ram.collect_tests(simgr)
    assert sum(t.kind == "unfinished" for t in tests) == len(unknown)
    n = len(unknown)
    assert tech.resume_unknown(simgr, 60_000) == n > 0
    assert all(s.solver._solver.timeout == 60_000 for s in simgr.active)
    simgr.run()
    assert not simgr.stashes.get("unknown") and not simgr.errored
    found = set().union(*(path_outcomes(s) for s in simgr.deadended))
    assert found == native(b, 2)


def test_solver_timeout_reaches_claripy_and_is_validated():
    proj = load_project(os.fspath(BUILD / "matrix3_O0"))
    simgr = proj.factory.simulation_manager(make_state(proj, 2))
    simgr.use_technique(angr_ram.RelocatableMemory(solver_timeout_ms=1234, defer_ms=None))
    s = simgr.active[0]
    fe = s.solver._solver
    assert fe.timeout == 1234 and s.copy().solver._solver.timeout == 1234
    s.solver.add(s.posix.stdin.load(0, 1) == 7)
    assert all(c.timeout == 1234 for c in fe._sync()._solver_list)
    with pytest.raises(angr_ram.AngrRamError, match="solver_timeout_ms"):
        angr_ram.RelocatableMemory(solver_timeout_ms=0)
    # the first-pass budget is the run's, applied per z3 call while a step runs (tests/test_deferral.py)
    simgr = proj.factory.simulation_manager(make_state(proj, 2))
    simgr.use_technique(angr_ram.RelocatableMemory(solver_timeout_ms=1234))
    assert simgr.active[0].solver._solver.timeout == 1234


def test_quantified_procedure_never_takes_unknown_for_unsat(monkeypatch):
    """The solving procedure asks the real ForAll query when the stripped one is unknown, and an
    unknown there is reported (ClaripySolverInterruptError), never a pruned state (None/UnsatError)."""
    monkeypatch.setattr(z3.Solver, "check", lambda self, *a: z3.unknown)
    monkeypatch.setattr(z3.Solver, "reason_unknown", lambda self: "canceled")
    x = claripy.BVS("qm_test_x", 8)
    table = quantified.ClauseTable()
    with pytest.raises(claripy.ClaripySolverInterruptError, match="unknown"):
        quantified._solve(table, [claripy.UGT(x, 3)])
    assert quantified.extremum(quantified.ClauseTable(), [claripy.UGT(x, 3)], [], x, want_max=True) is None
    assert table.stats.unknown == 1 and table.stats.fallback == 1


def test_objects_that_cannot_be_compared_refuse_the_merge(ram_state):
    from angr_ram.procedures.heap import allocate

    a = allocate(ram_state, 8, zero=True)
    other = ram_state.copy()
    b = allocate(other, 8, zero=True)
    twin = allocate(ram_state, 8, zero=True)
    assert (ram_state.ram.objects[twin.id] == other.ram.objects[b.id]) is False   # no claripy Bool
    assert ram_state.ram.objects[a.id] == other.ram.objects[a.id]                 # shared until written
    with pytest.raises(SimMergeError):
        ram_state.ram.merge([other.ram], [claripy.true(), claripy.true()])


def test_a_fault_met_outside_a_step_is_recorded_with_an_input_not_dropped(ram_state):
    """``state.memory.load`` from IPython cannot fork: the state keeps the in-bounds inputs, and the
    out-of-bounds ones are recorded (kind, message, reproducing stdin) in faults_outside_step."""
    from angr_ram.procedures.heap import allocate

    o = allocate(ram_state, 8, zero=True)
    x = ram_state.posix.stdin.load(0, 1)
    ram_state.memory.load(o.base + x.zero_extend(56), 1)
    faults = ram_state.ram.faults_outside_step
    assert faults and all(f.kind == "out-of-bounds" and "outside a step" in f.message for f in faults)
    assert all(f.stdin is not None and f.stdin[0] >= 8 for f in faults)
    assert ram_state.solver.max(x) == 7 and ram_state.solver.min(x) == 0
    assert ram_state.copy().ram.faults_outside_step == faults
