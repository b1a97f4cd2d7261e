"""claripy's z3 solvers are created without re-reading z3's parameter descriptions each time."""

import claripy
import z3

from angr_ram.patches import install_all
from angr_ram.plugins import z3_setup  # noqa: F401 - declares the patch
from angr_ram.scope import RunScope


def test_parameter_descriptions_are_read_at_most_once_and_timeouts_still_apply(monkeypatch):
    install_all()
    calls = []
    original = z3.Solver.param_descrs
    monkeypatch.setattr(z3.Solver, "param_descrs", lambda self: calls.append(1) or original(self))
    backend = claripy.backends.z3
    with RunScope().active():
        for _ in range(20):
            backend.solver(timeout=1234)
    assert len(calls) <= 1
    x = claripy.BVS("x", 8)
    with RunScope().active():
        s = claripy.Solver(timeout=1234)
        s.add(x * x == 49)
        assert sorted(s.eval(x, 10)) == [7, 121, 135, 249]    # x*x == 49 (mod 256), timeout set
    calls.clear()
    backend.solver(timeout=1234)                              # outside a run: claripy's own setup
    assert len(calls) == 1
