"""Floating point decided by evaluation: numpy's IEEE arithmetic on the bits (solver/float_semantics.py)
agrees with z3 on every value of a byte; what is not exact is left to z3; queries whose floating
point is computed from few input bits are answered without z3; and a user's script on programs
that branch on doubles and floats computed from their input (at -O2: inlined sqrtsd, cvttsd2si,
ucomisd) reaches every native outcome."""

import os

import claripy
import numpy as np
import pytest
import z3

from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay
from angr_ram.solver import enumeration
from angr_ram.solver.evaluator import Evaluator, uses_float
from angr_ram.solver.semantics import Unsupported

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_scanning import users_run

RNE, RTZ, RTP = claripy.fp.RM.RM_NearestTiesEven, claripy.fp.RM.RM_TowardsZero, claripy.fp.RM.RM_TowardsPositiveInf
D, F = claripy.fp.FSORT_DOUBLE, claripy.fp.FSORT_FLOAT
X = claripy.BVS("x", 8)
DX = claripy.fpToFP(RNE, X.sign_extend(24), D)                 # (double)(signed char)x
FX = claripy.fpToFP(RNE, X.zero_extend(24), F)                 # (float)(unsigned char)x


def _exprs():
    third = claripy.fpDiv(RNE, DX, claripy.FPV(3.0, D))
    return {
        "sqrt": claripy.fpToIEEEBV(claripy.fpSqrt(RNE, DX)),       # NaN below 0: same bits as z3 here
        "third": claripy.fpToIEEEBV(third),
        "float of a third": claripy.fpToIEEEBV(claripy.fpToFP(RNE, third, F)),
        "float sum": claripy.fpToIEEEBV(claripy.fpAdd(RNE, FX, claripy.FPV(0.1, F))),
        "float to double": claripy.fpToIEEEBV(claripy.fpToFP(RNE, claripy.fpMul(RNE, FX, FX), D)),
        "truncated": claripy.fpToSBV(RTZ, claripy.fpMul(RNE, third, claripy.FPV(10.0, D)), 32),
        "rounded": claripy.fpToSBV(RNE, claripy.fpMul(RNE, DX, claripy.FPV(0.5, D)), 64),
        "unsigned": claripy.fpToUBV(RTZ, claripy.fpMul(RNE, FX, FX), 32),
        "negated": claripy.fpToIEEEBV(claripy.fpNeg(third)),
        "absolute": claripy.fpToIEEEBV(claripy.fpAbs(claripy.fpSub(RNE, DX, claripy.FPV(0.5, D)))),
        "reinterpreted": claripy.fpToIEEEBV(claripy.fpAdd(RNE, claripy.fpToFP(X.zero_extend(56) << 52, D), DX)),
        "from unsigned": claripy.fpToIEEEBV(claripy.fpToFPUnsigned(RNE, X.zero_extend(56), D)),
        "lt": claripy.If(claripy.fpLT(third, claripy.FPV(-7.5, D)), claripy.BVV(1, 8), claripy.BVV(0, 8)),
        "eq": claripy.If(claripy.fpEQ(claripy.fpMul(RNE, third, claripy.FPV(3.0, D)), DX), claripy.BVV(1, 8), claripy.BVV(0, 8)),
        "geq": claripy.If(claripy.fpGEQ(FX, claripy.FPV(128.0, F)), claripy.BVV(1, 8), claripy.BVV(0, 8)),
        "nan": claripy.If(claripy.fpIsNaN(claripy.fpSqrt(RNE, DX)), claripy.BVV(1, 8), claripy.BVV(0, 8)),
        "inf": claripy.If(claripy.fpIsInf(claripy.fpDiv(RNE, claripy.FPV(1.0, D), DX)), claripy.BVV(1, 8), claripy.BVV(0, 8)),
    }


def _nan(v: int) -> bool:
    return (v >> 52) & 0x7FF == 0x7FF and v & ((1 << 52) - 1) != 0


@pytest.mark.parametrize("name", sorted(_exprs()))
def test_every_value_of_a_byte_gives_what_z3_gives(name):
    """z3 computes each value (its simplifier on the ground term); a NaN's bits are z3's choice
    (its theory leaves them unspecified), so two NaNs are equal."""
    e = _exprs()[name]
    assert uses_float(e)
    got = np.broadcast_to(Evaluator([X], {}).ev(e), (256,))
    x, ze = claripy.backends.z3.convert(X), claripy.backends.z3.convert(e)
    for v in range(256):
        z = z3.simplify(z3.substitute(ze, (x, z3.BitVecVal(v, 8)))).as_long()
        assert z == int(got[v]) or (e.length == 64 and _nan(z) and _nan(int(got[v]))), (name, v)


def test_what_is_not_exact_is_left_to_z3():
    ev = Evaluator([X], {})
    wide = claripy.fpToFP(RNE, (X.zero_extend(56) << 56) | 1, D)          # integers beyond 2**53
    for e in [claripy.fpToIEEEBV(claripy.fpToFP(RTP, (X.zero_extend(56) << 56) | 1, D)),   # inexact, not to-nearest
              claripy.fpToIEEEBV(claripy.fpAdd(RTP, DX, claripy.FPV(0.1, D))),
              claripy.fpToSBV(RTZ, claripy.fpMul(RNE, wide, wide), 32),                    # out of range
              claripy.fpToSBV(RTZ, claripy.fpSqrt(RNE, DX), 32)]:                           # NaN
        with pytest.raises(Unsupported):
            ev.ev(e)
    assert not uses_float(X + 1) and not uses_float(claripy.fpToIEEEBV(claripy.FPV(1.5, D)))


@pytest.mark.slow
def test_a_query_over_floating_point_is_answered_without_z3():
    """The slice has no table lookup, only floating point from one byte: answered by evaluation,
    the same answers as z3 gives."""
    third = claripy.fpDiv(RNE, DX, claripy.FPV(3.0, D))
    constraints = [claripy.fpGT(third, claripy.FPV(20.0, D)), claripy.ULT(X, 100)]
    args = ({"extra_constraints": (claripy.fpLT(third, claripy.FPV(21.0, D)),)})
    got = enumeration.answer(constraints, "eval", (X, 10), args)
    s = claripy.Solver()
    s.add(constraints)
    assert got is not enumeration.UNHANDLED
    assert sorted(got) == sorted(s.eval(X, 10, extra_constraints=args["extra_constraints"])) == [61, 62]
    assert enumeration.answer(constraints, "satisfiable", (), {"extra_constraints": (X == 59,)}) is False


@pytest.mark.parametrize("opt,n", [("O2", 2), ("O2", 4), pytest.param("O0", 4, marks=pytest.mark.slow)])
@pytest.mark.slow
def test_a_users_script_branches_on_doubles_as_natively(opt, n):
    """samples/mathcalls at -O2: gcc inlines sqrt as sqrtsd and the program compares doubles
    computed from its input; z3's floating-point theory gave no result in 900 s. One wide
    variable of ``n`` bytes (the program reads two)."""
    b = os.fspath(BUILD / f"mathcalls_{opt}")
    simgr, r = users_run(b, b"aej1z59", n)
    native = outcome_set_over(b, [b"aej1z59"] * 2)
    assert len(native) > 20 and not r.errors and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    if opt == "O2":            # (at -O0 every libm result is a constant per path: no FP query is left)
        assert r.stats["enumerated_queries"] > 0
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []


@pytest.mark.parametrize("opt", ["O2", pytest.param("O0", marks=pytest.mark.slow)])
@pytest.mark.slow
def test_branches_on_float_and_double_arithmetic_reach_every_native_outcome(opt):
    """samples/floatbranches (written for this: int-to-double and double-to-float conversions, the
    four operations in both precisions, truncation to int, an exact comparison that rounding
    decides) over three input bytes of one wide variable."""
    b = os.fspath(BUILD / f"floatbranches_{opt}")
    simgr, r = users_run(b, b"akW0~", 3)
    native = outcome_set_over(b, [b"akW0~"] * 3)
    assert len(native) > 30 and not r.errors and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []
