"""Nothing found through an angr stub is silently wrong: the paths that called a function angr has
no model of (``ReturnUnconstrained``: any return value) are counted per stub, their tests name the
stubs, and a replay mismatch says so. And claripy's model cache does not drop their outcomes."""

import os

import claripy
import pytest

from angr_ram.core.scope import RunScope
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore
from angr_ram.solver import model_cache  # noqa: F401 - declares the patches

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
    is how the exit-0 test above was lost). Inside a run z3 is asked; ``min``/``max`` under extra
    constraints are z3's too, not the cached models' bounds."""
    a, r = claripy.BVS("a", 8), claripy.BVS("r", 64)
    with RunScope().active():
        s = claripy.Solver()
        s.add(a == 120)
        assert s.eval(a, 2) == (120,)
        assert s.eval(a, 1, extra_constraints=[r != 0]) == (120,)
        assert set(s.batch_eval([a], 1, extra_constraints=[r != 0])) == {(120,)}
        t = claripy.Solver()
        t.add(claripy.Or(a == 1, a == 5, a == 9))
        assert sorted(t.eval(a, 4)) == [1, 5, 9]
        assert t.min(a, extra_constraints=[r != 0]) == 1 and t.max(a, extra_constraints=[r != 0]) == 9
        assert t.min(a, extra_constraints=[claripy.Or(a == 5, a == 9)]) == 5
        with pytest.raises(claripy.errors.UnsatError):
            t.eval(a, 1, extra_constraints=[a == 2])
