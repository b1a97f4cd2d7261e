"""``strtod``/``strtof``/``atof`` (angr_ram.procedures.float_parsing): one path per text the call
can read, each read by glibc. angr's stubs gave an unconstrained result: paths no input reaches."""

import os

import angr
import claripy
import pytest

import angr_ram
from angr_ram.procedures import float_parsing
from angr_ram.procedures.byte_scan import Bytes
from angr_ram.procedures.float_parsing import MAX_TEXTS, continuations, read_number, texts, viable
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay
from angr_ram.run.runner import summarize

from .conftest import BUILD, ForgottenHint
from .groundtruth import outcome_set_over
from .test_drives import _merging_alone
from .test_scanning import users_run


def test_viable_prefixes_are_those_strtod_can_go_on_reading():
    for p in (b"", b" \t-", b"12.", b".5e", b"1e+", b"0x", b"0X.aP-", b"iNfIn", b"nan(x_9", b"+.5"):
        assert viable(p), p
    for p in (b"1-", b"..", b"1e5.", b"infinity!", b"nan()x", b"ee", b"1 ", b"0xg", b"-+1", b".e1"):
        assert not viable(p), p
    assert set(continuations(b"1e")) == set(b"+-0123456789")
    assert set(continuations(b"infinity")) == set()


def test_glibc_reads_the_text():
    assert read_number(b"0.5") == (0x3FE0000000000000, 3, False)
    assert read_number(b"  -0x1p-1z") == (0xBFE0000000000000, 9, False)
    assert read_number(b"1e999")[1:] == (5, True)
    assert read_number(b"1e") == (0x3FF0000000000000, 1, False)
    assert read_number(b"abc")[1] == 0
    assert read_number(b"0.1", 32) == (0x3DCCCCCD, 3, False)


def test_texts_of_a_symbolic_byte_are_each_value_that_reads_differently(ram_state):
    """A digit, a point or anything else then a NUL: one text per digit and point, one for the
    rest (nothing read), each with its constraint."""
    st = ram_state.copy()
    c = claripy.BVS("c", 8)
    st.memory.store(0x500000, claripy.Concat(c, claripy.BVV(0, 8)))
    found = texts(st, Bytes(st, claripy.BVV(0x500000, 64), 2))
    got = sorted(t for t, _ in found)
    assert got == sorted([b"", b"."] + [bytes([d]) for d in b"0123456789"] + [b" ", b"\t", b"\n", b"\v", b"\f", b"\r",
                                                                            b"+", b"-", b"i", b"I", b"n", b"N"])
    nothing = [conds for t, conds in found if t == b""][0]
    assert st.solver.satisfiable(extra_constraints=nothing + [c == ord("z")])
    assert not st.solver.satisfiable(extra_constraints=nothing + [c == ord("7")])
    assert texts(st, Bytes(st, claripy.BVV(0x500000, 64), 2), most=5) is None
    assert MAX_TEXTS >= 1024


def test_the_walk_has_a_solver_call_budget(ram_state, monkeypatch):
    """Three symbolic digits cost two solver calls per symbolic prefix: four calls do not reach the
    third byte, so the walk ends as a named error (outside a step: angr's procedure error)."""
    st = ram_state.copy()
    d = claripy.BVS("d", 24)
    st.memory.store(0x500000, claripy.Concat(d, claripy.BVV(0, 8)))
    for byte in d.chop(8):
        st.solver.add(claripy.And(byte >= ord("0"), byte <= ord("9")))
    assert len(texts(st, Bytes(st, claripy.BVV(0x500000, 64), 4))) == 1000
    monkeypatch.setattr(float_parsing, "MAX_WALK_QUERIES", 4)
    with pytest.raises(angr.errors.SimProcedureError, match="more than 4 solver calls"):
        texts(st, Bytes(st, claripy.BVV(0x500000, 64), 4))


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.parametrize("alphabet", (b"1.e-5", b"0x.p1-", pytest.param(b"inaf(-", marks=pytest.mark.slow)))
def test_a_users_script_reads_numbers_as_glibc_does(opt, alphabet):
    """samples/floatread (strtod with its end and ERANGE, strtof, atof, inf, nan) over three bytes
    of a line: every native outcome, none other, every test replays."""
    b = os.fspath(BUILD / f"floatread_{opt}")
    simgr, r = users_run(b, alphabet, 3)
    native = outcome_set_over(b, [alphabet] * 3)
    assert not r.errors and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []


def test_merging_alone_reads_numbers_too():
    got, native, _ = _merging_alone(os.fspath(BUILD / "floatread_O2"), b"1.e-", 3)
    assert got == native


def test_out_of_range_texts_set_erange_as_glibc_does():
    """Six bytes drawn per position (``1e±[39][09][9x]``): overflow to infinity and underflow to
    zero, and a subnormal result, set ERANGE; every native outcome, none other, each test replaying."""
    b = os.fspath(BUILD / "floatread_O2")
    alphabets = [b"1", b"e", b"+-", b"39", b"09", b"9x"]
    proj = angr.Project(b, auto_load_libs=False)
    data = claripy.BVS("stdin", 8 * len(alphabets))
    st = proj.factory.entry_state(stdin=angr.SimFileStream("stdin", content=data, size=len(alphabets), has_end=True))
    for byte, allowed in zip(data.chop(8), alphabets, strict=True):
        st.solver.add(claripy.Or(*[byte == c for c in allowed]))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    r = summarize(simgr, tech, tests=True)
    native = outcome_set_over(b, alphabets)
    assert {o for o in native if o[1].startswith((b"overflow", b"underflow", b"tiny"))} == {
        (5, b"overflow\n+inf\n"), (0, b"underflow\n6 0\n"), (0, b"tiny\nfloat differs\n6 1.0000000000000019e-309\n")}
    assert not r.errors and set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []


def test_a_fork_reads_its_text_without_walking_again(monkeypatch):
    """The call forks once per text and each fork re-executes it: the fork finds its text left by
    the call (CallHint), so one walk serves every fork, and the fork asks nothing of the solver
    before reading it (not even where the pointer points). Without the hint each fork walks its
    text again: exactly one walk more per fork, and the same outcomes."""
    b = os.fspath(BUILD / "floatread_O2")
    walks, forks, pointers = [0], [0], [0]
    walk, cases = float_parsing.texts, float_parsing.pointer_cases

    def counted(*a, **k):
        walks[0] += 1
        found = walk(*a, **k)
        forks[0] += len(found) if found is not None and len(found) > 1 else 0
        return found

    def counted_cases(*a, **k):
        pointers[0] += 1
        return cases(*a, **k)

    monkeypatch.setattr(float_parsing, "texts", counted)
    monkeypatch.setattr(float_parsing, "pointer_cases", counted_cases)
    simgr, _ = users_run(b, b"1.e-5", 2)
    hinted = (walks[0], forks[0], set().union(*(path_outcomes(s) for s in simgr.deadended)))
    assert pointers[0] == walks[0]

    walks[0] = forks[0] = 0
    monkeypatch.setattr(float_parsing, "TEXT_HINT", ForgottenHint("angr_ram.strtod_text"))
    simgr, _ = users_run(b, b"1.e-5", 2)
    assert hinted[2] == set().union(*(path_outcomes(s) for s in simgr.deadended)) == outcome_set_over(b, [b"1.e-5"] * 2)
    assert hinted[1] == forks[0] > 0
    assert walks[0] == hinted[0] + hinted[1]
