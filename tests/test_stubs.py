"""Nothing found through an angr stub is silently wrong: the paths that called a function angr has
no model of (``ReturnUnconstrained``: any return value) are counted per stub, their tests name the
stubs, and a replay mismatch says so. And claripy's model cache does not drop their outcomes."""

import contextlib
import os

import claripy
import pytest
from claripy.frontend.mixin.model_cache_mixin import ModelCacheMixin

from angr_ram.core.scope import RunScope
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore
from angr_ram.solver.frontends import RamChildSolver, SeededSolver, adopt

from .conftest import BUILD


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_paths_through_a_stub_are_named_in_the_summary_the_tests_and_the_replay(opt):
    """stubcall: ``c == 'x'`` calls ttyname (stubbed) and exits 0 if it returned non-NULL, else 1;
    other bytes exit 3. Both predicted outcomes of the stub's path get a test naming ttyname (at
    -O2 the exit code is one symbolic expression: claripy's model cache used to drop its exit-0
    test); natively stdin is a pipe and ttyname(0) is NULL, so the exit-0 test mismatches, and says
    why."""
    b = os.fspath(BUILD / f"stubcall_{opt}")
    r = explore(b, 1, tests=True)
    assert r.outcomes == {(0, b""), (1, b""), (3, b"")}
    assert r.stubs == {"ttyname": 1}
    by_exit = {t.exit: t for t in r.tests if t.kind == "exit"}
    assert set(by_exit) == {0, 1, 3} and r.tests_infeasible == 0
    assert by_exit[0].stubs == by_exit[1].stubs == ["ttyname"] and by_exit[3].stubs == []
    status = {run.test.exit: run for run in replay(r.tests, b)}
    assert status[1].status == status[3].status == "ok"
    assert status[0].status == "mismatch" and "angr stubs: ttyname" in status[0].detail


def test_an_exhausted_expression_is_still_solved_under_extra_constraints():
    """claripy marks ``a`` exhausted once its only value is enumerated; with an extra constraint on
    a variable its cached models do not name (taken as 0), stock claripy answered "no value" (this
    was how the exit-0 test above was lost). angr-ram's frontends ask z3 (in a run or not), and
    ``min``/``max`` under extra constraints are z3's too, not the cached models' bounds; claripy's
    own classes are unchanged."""
    a, r = claripy.BVS("a", 8), claripy.BVS("r", 64)
    assert ModelCacheMixin.batch_eval.__module__ == "claripy.frontend.mixin.model_cache_mixin"    # claripy: unchanged
    for scope in (RunScope().active(), contextlib.nullcontext()):
        with scope:
            s = SeededSolver()
            s.add(a == 120)
            assert s.eval(a, 2) == (120,)
            assert s.eval(a, 1, extra_constraints=[r != 0]) == (120,)
            assert set(s.batch_eval([a], 1, extra_constraints=[r != 0])) == {(120,)}
            t = SeededSolver()
            t.add(claripy.Or(a == 1, a == 5, a == 9))
            assert sorted(t.eval(a, 4)) == [1, 5, 9]
            assert t.min(a, extra_constraints=[r != 0]) == 1 and t.max(a, extra_constraints=[r != 0]) == 9
            assert t.min(a, extra_constraints=[claripy.Or(a == 5, a == 9)]) == 5
            with pytest.raises(claripy.errors.UnsatError):
                t.eval(a, 1, extra_constraints=[a == 2])
    c = claripy.SolverComposite(template_solver=RamChildSolver())
    c.add(a == 7)
    assert c.eval(a, 2) == (7,) and c.eval(a, 1, extra_constraints=[r != 0]) == (7,)


def test_a_merging_only_run_gives_its_states_angr_rams_frontends():
    """QuantifiedMerging over stock angr (no RelocatableMemory) replaces the claripy frontends
    angr made for its states by angr-ram's (same constraints, the exact model cache); a state
    whose frontend is not claripy's plain one keeps it."""
    import angr

    from angr_ram.merging import QuantifiedMerging

    proj = angr.Project(os.fspath(BUILD / "memspn4_O0"), auto_load_libs=False)
    st = proj.factory.entry_state()
    x = claripy.BVS("x", 8)
    st.solver.add(x > 3)
    assert type(st.solver._solver) in (claripy.Solver, claripy.SolverComposite)
    sm = proj.factory.simulation_manager(st)
    sm.use_technique(QuantifiedMerging("ite", ["memspn"]))
    fe = sm.active[0].solver._solver
    assert isinstance(getattr(fe, "_template_frontend", fe), RamChildSolver | SeededSolver)
    assert sm.active[0].solver.min(x) == 4 and x.variables <= fe.variables
    kept = claripy.SolverVSA()
    other = proj.factory.blank_state()
    other.solver._stored_solver = kept
    assert not adopt(other) and other.solver._solver is kept
