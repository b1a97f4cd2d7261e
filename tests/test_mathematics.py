"""``libm`` (angr_ram.posix.mathematics): each value the arguments take, computed by glibc.
angr's stubs left the argument in ``xmm0`` as the result: paths no input takes natively."""

import os
import struct

import claripy
import pytest

from angr_ram.posix import mathematics
from angr_ram.posix.mathematics import (
    EDOM,
    MATH_PROCEDURES,
    MAX_VALUES,
    argument_values,
    host,
    input_pieces,
)
from angr_ram.procedures.stubs import stubs_of
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay

from .conftest import BUILD, ForgottenHint
from .groundtruth import outcome_set_over
from .test_scanning import users_run

ERANGE = 34
RNE = claripy.fp.RM.RM_NearestTiesEven


def test_glibc_computes_the_result_and_errno():
    assert host("sqrt", 64, (0x4022000000000000,)) == (0x4008000000000000, 0)          # sqrt(9.0) = 3.0
    raw, err = host("sqrt", 64, (0xBFF0000000000000,))                                # sqrt(-1.0)
    assert err == EDOM and (raw >> 52) & 0x7FF == 0x7FF and raw & ((1 << 52) - 1)     # NaN
    assert host("pow", 64, (0, 0xBFF0000000000000)) == (0x7FF0000000000000, ERANGE)    # pow(0, -1) = inf
    assert host("sqrt", 32, (0x41100000,)) == (0x40400000, 0)                          # sqrtf(9.0f) = 3.0f


def test_arguments_from_input_bytes_are_enumerated_over_the_bytes(ram_state):
    """A double computed from one byte of a wide input: the solver is asked for that byte's values
    (a bit-vector question), each argument value's constraint is over the input; a value of two
    bytes that give the same argument (x*x) is one value with both."""
    st = ram_state.copy()
    data = claripy.BVS("stdin", 64)
    byte = data[63:56]
    st.solver.add(claripy.Or(*[byte == c for c in b"aeZ"]))
    x = claripy.fpToFP(RNE, byte.zero_extend(24) - ord("a"), claripy.FSORT_DOUBLE)
    sq = claripy.fpMul(RNE, x, x)
    assert [p.op for p in input_pieces(sq.raw_to_bv())] == ["Extract"]
    vals = argument_values(st, sq.raw_to_bv())
    assert len(vals) == 3
    sixteen = vals[0x4030000000000000]                                   # 16.0 = (4)^2, 'e' only
    assert st.solver.eval_upto(byte, 3, extra_constraints=[sixteen]) == [ord("e")]
    assert input_pieces(claripy.FPS("f", claripy.FSORT_DOUBLE).raw_to_bv()) is None
    wide = claripy.fpToFP(RNE, data[31:0], claripy.FSORT_DOUBLE).raw_to_bv()
    assert len(argument_values(st, wide)) == MAX_VALUES + 1              # 2^32 values: more than the bound
    a, b = data[15:8], data[7:0]                  # 65536 input values, two argument values
    rare = claripy.fpToFP(RNE, claripy.If(claripy.And(a == 0x41, b == 0x42), claripy.BVV(1, 32), claripy.BVV(0, 32)),
                          claripy.FSORT_DOUBLE).raw_to_bv()
    assert len(argument_values(st, rare)) == 2


@pytest.mark.slow
def test_a_users_script_gets_libm_results_as_native():
    """samples/mathcalls at -O0 (every function a call: sqrt with EDOM, pow, sin, log, floor, fabs,
    hypot) over two bytes: every native outcome, none other, every test replaying. (-O2, where gcc
    inlines sqrt as sqrtsd and the program compares doubles itself: test_float_semantics.py.)"""
    b = os.fspath(BUILD / "mathcalls_O0")
    simgr, r = users_run(b, b"aej1z59", 2)
    native = outcome_set_over(b, [b"aej1z59"] * 2)
    assert len(native) > 20 and not r.errors and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []


@pytest.mark.slow
def test_a_fork_finds_its_result_without_enumerating_again(monkeypatch):
    """A call with several results forks once per result; each fork re-executes the call and finds
    its result left for it (CallHint): one enumeration per forking call. Forgotten, every fork
    enumerates its own arguments again: exactly one enumeration more per fork, same outcomes."""
    b = os.fspath(BUILD / "mathcalls_O0")
    calls, forks = [0], [0]
    enumerate_values = mathematics.argument_values

    def counted(state, key):
        calls[0] += 1
        return enumerate_values(state, key)

    monkeypatch.setattr(mathematics, "argument_values", counted)
    forking = mathematics.ForkRequest

    class CountedFork(forking):
        def __init__(self, targets, *a, **k):
            forks[0] += len(targets)
            super().__init__(targets, *a, **k)

    monkeypatch.setattr(mathematics, "ForkRequest", CountedFork)
    simgr, _ = users_run(b, b"aej1z59", 2)
    hinted = (calls[0], forks[0], set().union(*(path_outcomes(s) for s in simgr.deadended)))

    calls[0] = forks[0] = 0
    monkeypatch.setattr(mathematics, "RESULT_HINT", ForgottenHint("angr_ram.math_result"))
    simgr, _ = users_run(b, b"aej1z59", 2)
    assert hinted[2] == set().union(*(path_outcomes(s) for s in simgr.deadended))
    assert hinted[1] == forks[0] > 0
    assert calls[0] == hinted[0] + hinted[1]


def test_functions_with_integer_arguments_or_pointer_results_are_glibcs():
    """frexp, modf, ldexp, sincos, lgamma, ilogb, lround and remquo (angr: stubs, whose arbitrary
    results made a user's run of this program never finish)."""
    b = str(BUILD / "mathparts_O2")
    simgr, r = users_run(b, b"0259", 3)
    native = outcome_set_over(b, [b"0259"] * 3)
    assert len(native) == 61
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert not r.errors and not any(stubs_of(s) for s in simgr.deadended)
    runs = replay(r.tests, b, jobs=2)
    assert runs and all(x.status == "ok" for x in runs)


def test_a_mixed_functions_result_and_stores_come_from_glibc():
    frexp = MATH_PROCEDURES["frexp"]
    assert frexp.KINDS == ("f", "i", "f")
    raw = struct.unpack("<Q", struct.pack("<d", 12.0))[0]
    value, err, stored = frexp()._result(raw)
    assert struct.unpack("<d", struct.pack("<Q", value))[0] == 0.75 and stored == (4,) and err == 0
    ldexpf = MATH_PROCEDURES["ldexpf"]()
    value, _, _ = ldexpf._result((struct.unpack("<I", struct.pack("<f", 1.5))[0] << 32) | (0xFFFFFFFF & -1))
    assert struct.unpack("<f", struct.pack("<I", value))[0] == 0.75
