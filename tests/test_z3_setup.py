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


def test_solvers_in_a_run_bit_blast_and_stay_exact_outside_bit_vectors():
    """Inside a run claripy's solvers are the qfbv tactic (clones too, with their time-out); floats
    still get exact answers (the tactic declines them and z3's general solver answers)."""
    install_all()
    backend = claripy.backends.z3
    with RunScope().active():
        s = backend.solver(timeout=4321)
        assert s.ram_tactic and s.ram_limits == (4321, None)
        c = backend.clone_solver(s)
        assert c.ram_tactic and c.ram_limits == (4321, None)
        f = claripy.FPS("f", claripy.FSORT_FLOAT)
        fs = claripy.Solver(timeout=5000)
        fs.add(claripy.fpGT(f, claripy.FPV(1.5, claripy.FSORT_FLOAT)))
        assert fs.satisfiable()
        assert not fs.satisfiable(extra_constraints=[claripy.fpLT(f, claripy.FPV(1.0, claripy.FSORT_FLOAT))])
        assert fs.eval(f, 1)[0] > 1.5
        bv = claripy.BVS("bits", 32)
        fs.add(f.raw_to_bv() == bv)
        assert not fs.satisfiable(extra_constraints=[bv == 0])          # +0.0 is not > 1.5
        assert isinstance(fs._tls.solver, z3_setup.BitBlastingSolver)
        assert fs._tls.solver.general is not None          # the tactic declined floats: z3's general solver
    assert not getattr(backend.solver(), "ram_tactic", False)             # outside a run: claripy's own


def test_a_hash_preimage_as_a_branch_condition_is_decided_within_a_short_time_out():
    """The uthash shape: a branch compares Jenkins' hash of four input bytes with a constant. z3's
    general solver answers an extra constraint incrementally (over 10 s here); the bit-blasting
    solver decides it, and the model is a real preimage."""
    from angr_ram.bench.solver import _jenkins, _jenkins_int

    install_all()
    bs = [claripy.BVS(f"k{i}", 8) for i in range(4)]
    want = _jenkins_int(b"k3y!")
    with RunScope().active():
        s = claripy.Solver(timeout=5000)
        s.add(bs[0] != 0)
        assert s.satisfiable()
        h = _jenkins(bs) == want
        assert s.satisfiable(extra_constraints=[h])
        key = bytes(s.eval(b, 1, extra_constraints=[h])[0] for b in bs)
    assert _jenkins_int(key) == want and key[0] != 0


def test_a_hard_query_still_times_out():
    """Factoring a product of two 37-bit primes: the time-out still interrupts the tactic solver."""
    import pytest

    install_all()
    p, q = 68719476767, 68719477741
    y, w = claripy.BVS("y", 80), claripy.BVS("w", 80)
    with RunScope().active():
        s = claripy.Solver(timeout=300)
        s.add([y * w == p * q, claripy.ULT(y, 2**40), claripy.ULT(w, 2**40), claripy.UGT(y, 1), claripy.UGT(w, 1)])
        with pytest.raises(claripy.errors.ClaripySolverInterruptError):
            s.satisfiable()


def test_simplifying_an_expression_too_deep_for_claripy_keeps_it():
    """angr simplifies register writes with z3; converting a very deep result back to claripy
    recurses past Python's limit. Inside a run the expression is kept as it is."""
    import angr

    install_all()
    x = claripy.BVS("x", 32)
    e = x
    for i in range(3000):
        e = claripy.If(x == i, e + 1, e ^ 3)
    state = angr.SimState(arch="AMD64")
    with RunScope().active():
        assert state.solver.simplify(e) is e
