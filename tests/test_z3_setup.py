"""claripy's z3 solvers are created without re-reading z3's parameter descriptions each time."""

import claripy
import z3

from angr_ram.plugins.z3_setup import install_fast_solver_setup


def test_parameter_descriptions_are_read_at_most_once_and_timeouts_still_apply(monkeypatch):
    install_fast_solver_setup()
    calls = []
    original = z3.Solver.param_descrs
    monkeypatch.setattr(z3.Solver, "param_descrs", lambda self: calls.append(1) or original(self))
    backend = claripy.backends.z3
    for _ in range(20):
        backend.solver(timeout=1234)
    assert len(calls) <= 1
    x = claripy.BVS("x", 8)
    s = claripy.Solver(timeout=1234)
    s.add(x * x == 49)
    assert sorted(s.eval(x, 10)) == [7, 121, 135, 249]    # x*x == 49 (mod 256), timeout set
