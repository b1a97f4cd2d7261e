"""claripy's z3 solvers are created without re-reading z3's parameter descriptions each time."""

import claripy
import pytest
import z3

import angr_ram
from angr_ram.core.scope import RunScope
from angr_ram.solver import z3_setup


def test_parameter_descriptions_are_read_at_most_once_and_timeouts_still_apply(monkeypatch):
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
    from bench.solver import _jenkins, _jenkins_int

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

    p, q = 68719476767, 68719477741
    y, w = claripy.BVS("y", 80), claripy.BVS("w", 80)
    with RunScope().active():
        s = claripy.Solver(timeout=300)
        s.add([y * w == p * q, claripy.ULT(y, 2**40), claripy.ULT(w, 2**40), claripy.UGT(y, 1), claripy.UGT(w, 1)])
        with pytest.raises(claripy.errors.ClaripySolverInterruptError):
            s.satisfiable()
        backend = claripy.backends.z3        # a solver that keeps an incremental one: its time-out is
        z = backend.solver(timeout=300)      # the query's, not a second one for the tactic after it
        z.add(*[backend.convert(c) for c in s.constraints])
        z.slow = True
        assert z.check() == z3.unknown and z.reason_unknown() in ("timeout", "canceled")
        assert z.general is z.incremental is not None and not z.stay_tactic


def test_simplifying_an_expression_too_deep_for_claripy_keeps_it():
    """angr simplifies register writes with z3; converting a very deep result back to claripy
    recurses past Python's limit. Inside a run the expression is kept as it is."""
    import angr

    x = claripy.BVS("x", 32)
    e = x
    for i in range(3000):
        e = claripy.If(x == i, e + 1, e ^ 3)
    state = angr.SimState(arch="AMD64")
    with RunScope().active():
        assert state.solver.simplify(e) is e


@pytest.mark.slow
def test_extrema_start_from_a_model_and_stay_inside_the_given_bounds():
    """min/max equal claripy's own answers on random interval, alignment and scaled-index
    constraints; a single value costs at most 3 checks and a value in a 4 KiB window at most 2 + 2
    log2(4096), where claripy's bisection takes 65 per extremum of a 64-bit address."""
    import random

    backend = claripy.backends.z3
    x, y = claripy.BVS("x", 64), claripy.BVS("y", 8)
    rnd = random.Random(7)
    for trial in range(40):
        a, b = rnd.randrange(2**64), rnd.randrange(2**16)
        e = x if trial % 2 else claripy.ZeroExt(56, y) * rnd.randrange(1, 9) + a
        cs = [claripy.And(claripy.UGE(x, a), claripy.ULE(x, a + b))]
        if trial % 3 == 0:
            cs.append(x & 7 == 3)
        extra = [claripy.And(claripy.UGE(e, a), claripy.ULE(e, a + 2 ** rnd.randrange(20)))] if trial % 4 == 0 else []
        stock = claripy.Solver()
        stock.add(cs)
        if not stock.satisfiable(extra_constraints=extra):
            continue
        want = stock.min(e, extra_constraints=extra), stock.max(e, extra_constraints=extra)
        with RunScope().active():
            s = claripy.Solver()
            s.add(cs)
            assert (s.min(e, extra_constraints=extra), s.max(e, extra_constraints=extra)) == want, trial
    base = 0x7FFF_0000_1000
    with RunScope().active():
        s = claripy.Solver()
        s.add(x == base + 40)
        before = backend.solve_count
        assert s.min(x, extra_constraints=[claripy.And(claripy.UGE(x, base), claripy.ULE(x, base + 4095))]) == base + 40
        assert backend.solve_count - before <= 3
        s = claripy.Solver()
        s.add(claripy.ULE(y, 200))
        p = base + claripy.ZeroExt(56, y) * 16
        window = [claripy.And(claripy.UGE(p, base), claripy.ULE(p, base + 4095))]
        before = backend.solve_count
        assert s.max(p, extra_constraints=window) == base + 3200
        assert backend.solve_count - before <= 2 + 2 * 12


def test_a_solver_with_slow_tactic_checks_keeps_an_incremental_one():
    """A formula the tactic re-blasts slowly (64-bit products) makes the solver, and its clones,
    also keep z3's incremental solver, which then answers; push/pop and enumeration stay in step
    and the answers are the stock ones."""
    backend = claripy.backends.z3
    v = [claripy.BVS(f"v{i}", 64) for i in range(4)]
    h = v[0]
    for w in v[1:]:
        h = (h * 0x9E3779B97F4A7C15 + w) * (w | 1)
    cs = [claripy.ULE(w, 0xFFFF) for w in v] + [h & 0xF == 3]
    stock = claripy.Solver()
    stock.add(cs)
    want = sorted(stock.eval(v[0] & 3, 4))
    with RunScope().active():
        s = backend.solver(timeout=60000)
        s.add(*[backend.convert(c) for c in cs])
        s.slow = True                      # as after a slow tactic check
        c = backend.clone_solver(s)
        assert c.slow
        fs = claripy.Solver(timeout=60000)
        fs.add(cs)
        assert fs.satisfiable()
        assert sorted(fs.eval(v[0] & 3, 4)) == want                # push, enumerate, pop
        assert c.check() == z3.sat and c.general is c.incremental is not None
        c.push()
        c.add(backend.convert(v[1] == 0x1234))
        assert c.check() in (z3.sat, z3.unsat)
        c.pop()
        assert c.incremental.num_scopes() == c.num_scopes() == 0


def test_tactic_checks_answer_from_a_clone_and_keep_only_the_answer():
    """A tactic check runs on a throw-away clone: the solver keeps the model (a model of every
    original constraint, variables that simplification eliminated included), the unsat core of
    failed assumptions, and the reason for unknown; the time-out still applies to the clone."""
    backend = claripy.backends.z3
    x, y, z = (z3.BitVec(n, 16) for n in "xyz")
    with RunScope().active():
        s = backend.solver(timeout=5000)
        s.add(x == y + 7, z3.ULT(y, 100), x * 3 + z == 1000)   # y, z eliminated or unconstrained
        assert s.check() == z3.sat
        m = s.model()
        assert all(z3.is_true(m.eval(c, model_completion=True)) for c in s.assertions())
        assert s.check(x == 3) == z3.unsat
        cores = backend.solver(timeout=5000)
        cores.set(unsat_core=True)
        p, q = z3.Bools("p q")
        cores.add(z3.Implies(p, x == 1), z3.Implies(q, x == 2))
        assert cores.check(p, q) == z3.unsat
        assert {str(a) for a in cores.unsat_core()} == {"p", "q"}
        assert cores.check(p) == z3.sat and cores.model().eval(x).as_long() == 1
        w, v = z3.BitVecs("w v", 80)
        hard = backend.solver(timeout=300)                     # factoring: the time-out interrupts
        hard.add(w * v == 68719476767 * 68719477741, z3.ULT(w, 2**40), z3.ULT(v, 2**40), z3.UGT(w, 1),
                 z3.UGT(v, 1))
        assert hard.check() == z3.unknown and hard.reason_unknown() in ("timeout", "canceled")
        assert s.num_scopes() == 0 and len(s.assertions()) == 3


def test_a_busy_machine_does_not_make_a_check_slow(monkeypatch):
    """Whether a tactic check was slow (its solver then keeps an incremental one, and so do its
    clones) is decided by the CPU time the check took, not the wall time: with the wall clock
    running 1 s per reading (a loaded machine), a small check leaves the solver fast; checks
    that really work (64-bit products, re-blasted) still mark it slow."""
    import time

    from angr_ram.solver import z3_setup as zs
    backend = claripy.backends.z3
    ticks = iter(range(10**6))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(ticks)))
    x = claripy.BVS("x", 8)
    with RunScope().active():
        s = backend.solver(timeout=60000)
        s.add(backend.convert(x * 3 == 21))
        assert s.check() == z3.sat and not s.slow
    monkeypatch.undo()
    v = [claripy.BVS(f"w{i}", 64) for i in range(4)]
    h = v[0]
    for w in v[1:]:
        h = (h * 0x9E3779B97F4A7C15 + w) * (w | 1)
    with RunScope().active():
        s = backend.solver(timeout=60000)
        s.add(backend.convert(h == 0x1234567887654321))
        for k in range(zs.SLOW_CHECKS_NEEDED):
            t0 = time.thread_time()
            s.check()
            took = time.thread_time() - t0
            assert took > zs.SLOW_CHECK_SECONDS and s.slow_streak == k + 1
        assert s.slow


def test_a_z3_object_whose_constructor_was_interrupted_is_collected_quietly():
    """A ``ParamsRef`` whose constructor hit the recursion limit (deep inside a merged state's
    expression) has no ``params``: z3's ``__del__`` raises AttributeError from the garbage
    collector, an unraisable exception (pytest fails the test). Once a technique exists, Python's
    hook drops exactly those and hands every other unraisable exception to the hook it found;
    z3's ``__del__`` itself stays z3's, and a complete object still releases its reference."""
    import gc
    import sys

    class _Other:
        def __del__(self):
            raise AttributeError("not z3's")

    def half_built(cls):
        x = object.__new__(cls)          # what the interrupted constructor leaves: no reference
        x.ctx = z3.main_ctx()
        return x

    assert z3.ParamsRef.__del__.__module__ == "z3.z3"
    with pytest.raises(AttributeError):
        z3.ParamsRef.__del__(half_built(z3.ParamsRef))
    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = seen.append      # a script's or pytest's hook, there before the technique
    try:
        angr_ram.RelocatableMemory()
        angr_ram.RelocatableMemory()     # installed once, not wrapped twice
        for cls in (z3.ParamsRef, z3.Solver, z3.ModelRef, z3.Goal, z3.AstVector, z3.Statistics):
            x = half_built(cls)
            del x
        full = z3.ParamsRef()
        full.set("timeout", 5)
        del full
        other = _Other()
        del other
        gc.collect()
    finally:
        sys.unraisablehook = old
    assert [str(u.exc_value) for u in seen] == ["not z3's"]


def test_an_evaluation_stopped_by_a_time_out_leaves_no_exclusions_in_the_solver(monkeypatch):
    """claripy's ``eval`` of several solutions excludes each value found inside a solver scope; a
    check that gives up (time-out, interrupt) used to leave that scope, so the path's solver (and
    every clone of it) no longer had those values: a branch whose only models were excluded was
    "unsat", a lost path. The third check gives up here; the solver is left as before."""
    from claripy.backends import backend_z3
    x = claripy.BVS("x", 8)
    original = backend_z3.z3_solver_sat
    calls = []

    def gives_up_third(solver, extra, occasion):
        calls.append(occasion)
        if len(calls) == 3:
            raise claripy.ClaripySolverInterruptError("timeout")
        return original(solver, extra, occasion)

    with RunScope().active():
        s = claripy.Solver(timeout=5000)
        s.add(claripy.ULT(x, 3))
        assert s.satisfiable()
        monkeypatch.setattr(backend_z3, "z3_solver_sat", gives_up_third)
        with pytest.raises(claripy.ClaripyError):
            s.eval(x, 5)
        monkeypatch.setattr(backend_z3, "z3_solver_sat", original)
        assert len(calls) == 3
        z = s._get_solver()
        assert z.num_scopes() == 0 and len(z.assertions()) == 1
        s.add(x != 2)                     # x in {0, 1}: the two values the failed evaluation had found
        assert s._get_solver().check() == z3.sat and s.satisfiable()
        assert sorted(s.eval(x, 5)) == [0, 1]


def test_one_slow_check_keeps_no_incremental_solver_and_their_number_is_bounded(monkeypatch):
    """A solver keeps z3's incremental solver after SLOW_CHECKS_NEEDED consecutive slow tactic
    checks (its own and its originals'), not after one (one check over the threshold, which the
    process's history could decide, made a 16-byte matrix script keep 480 of them: 3-4.5 GB instead
    of 0.45 GB), and at most MAX_INCREMENTAL are alive at once."""
    backend = claripy.backends.z3
    x = z3.BitVec("x", 16)
    monkeypatch.setattr(z3_setup, "SLOW_CHECK_SECONDS", -1.0)       # every tactic check is "slow"
    with RunScope().active():
        s = backend.solver(timeout=5000)
        s.add(z3.ULT(x, 100))
        assert s.check() == z3.sat and not s.slow and s.slow_streak == 1
        c = backend.clone_solver(s)                                # the streak goes on in a clone
        assert c.check() == z3.sat and c.slow and c.incremental is None
        assert c.check() == z3.sat and c.incremental is not None and c.general is c.incremental
        monkeypatch.setattr(z3_setup, "SLOW_CHECK_SECONDS", 10.0)       # a fast check ends a streak
        f = backend.solver(timeout=5000)
        f.add(z3.ULT(x, 100))
        f.slow_streak = 1
        assert f.check() == z3.sat and f.slow_streak == 0 and not f.slow
        monkeypatch.setattr(z3_setup, "MAX_INCREMENTAL", len(z3_setup._KEPT))   # no room for another
        d = backend.clone_solver(c)
        d.incremental = None
        assert d.slow and d.check() == z3.sat and d.incremental is None


def test_a_runs_budget_bounds_the_bit_blasting_solvers_check():
    """A step's budget (``budget_ms``) or the run's deadline reaches the bit-blasting solver,
    which checks on a clone given its own limits: a 64-bit hash preimage (seconds unbounded)
    stops at about the budget, then the solver's own limits are back."""
    import time

    from angr_ram.solver import z3_check

    s = z3_setup.BitBlastingSolver()
    x = z3.BitVec("x", 64)
    h = x
    for _ in range(6):
        h = (h * 0x100000001B3) ^ (h >> 13)
    s.add(h == 0x123456789ABCDEF1)

    class Scope:
        budget_ms, deadline = 50, None
    t0 = time.perf_counter()
    r = z3_check._checked(Scope(), z3.Solver.check, s, ())
    assert r == z3.unknown and time.perf_counter() - t0 < 1.0
    assert getattr(s, "ram_limits", None) is None


def test_an_expression_too_deep_to_convert_back_from_z3_is_kept_by_the_backends_simplify():
    """claripy's frontends simplify their constraints through ``BackendZ3.simplify`` (an ``eval``
    of printf's argument on a loop merged with ``ite``: wcprint -O2 over 8 bytes ended the CLI run
    with a traceback): a RecursionError, raw or wrapped by ctypes, keeps the expression; another
    ctypes error is not hidden."""
    import ctypes
    x = claripy.BVS("x", 8) == 1

    def deep(self, e):
        raise ctypes.ArgumentError("argument 3: RecursionError: maximum recursion depth exceeded")

    def recursion(self, e):
        raise RecursionError

    def other(self, e):
        raise ctypes.ArgumentError("argument 1: TypeError: wrong type")
    assert z3_setup.simplify_in_time(deep, None, x) is x
    assert z3_setup.simplify_in_time(recursion, None, x) is x
    with pytest.raises(ctypes.ArgumentError):
        z3_setup.simplify_in_time(other, None, x)


@pytest.mark.slow
def test_a_loop_merged_with_ite_over_eight_bytes_finishes_with_the_forked_outcomes():
    from angr_ram.run.runner import explore

    from .conftest import BUILD
    b = str(BUILD / "wcprint_O2")
    merged, forked = explore(b, 8, merge="ite", merge_points="auto"), explore(b, 8)
    assert merged.outcomes == forked.outcomes and merged.errors == []
