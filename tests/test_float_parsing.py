"""``strtod``/``strtof``/``atof`` (angr_ram.posix.float_parsing): one path per text the call
can read, each read by glibc. angr's stubs gave an unconstrained result: paths no input reaches."""

import itertools
import os
import subprocess

import angr
import claripy
import pytest

import angr_ram
from angr_ram.posix import float_parsing
from angr_ram.posix.float_parsing import MAX_TEXTS, continuations, read_number, texts, viable
from angr_ram.procedures.byte_scan import Bytes
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay
from angr_ram.run.runner import summarize

from .conftest import BUILD
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
@pytest.mark.slow
def test_a_users_script_reads_numbers_as_glibc_does(opt, alphabet):
    """samples/floatread (strtod with its end and ERANGE, strtof, atof, inf, nan) over three bytes
    of a line: every native outcome, none other, every test replays."""
    b = os.fspath(BUILD / f"floatread_{opt}")
    simgr, r = users_run(b, alphabet, 3)
    native = outcome_set_over(b, [alphabet] * 3)
    assert not r.errors and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []


@pytest.mark.slow
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


@pytest.mark.parametrize("prog,alphabet,n", [("numcompare_O2", b"1.e5-", 3),
                                              pytest.param("numcompare_O0", b"1.e5-", 3, marks=pytest.mark.slow),
                                              pytest.param("numcompare_O2", b"1.5-", 4, marks=pytest.mark.slow)])
def test_a_number_that_is_only_compared_takes_a_path_per_outcome(monkeypatch, prog, alphabet, n):
    """samples/numcompare reads a number and only compares it. The texts strtod can read differ
    in value, *endptr and errno, but they fork nothing: every native outcome, one path each, none
    other, each test replaying; the comparisons of the merged value are answered by evaluation."""
    b = os.fspath(BUILD / prog)
    forks = []
    walk = float_parsing.texts

    def counted(*a, **k):
        found = walk(*a, **k)
        forks.append(len(found))
        return found

    monkeypatch.setattr(float_parsing, "texts", counted)
    simgr, r = users_run(b, alphabet, n)
    native = outcome_set_over(b, [alphabet] * n)
    readings = {read_number(bytes(t))[:2] for t in itertools.product(alphabet, repeat=n)}
    assert not r.errors and set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert r.stats["paths"] == len(native) < len(readings)
    assert max(forks) > 1 and r.stats["enumerated_queries"] > 0
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []


MAWK_PROGRAM = '{ x = $1 + 0; if (x > 2.5) print "big"; else if (x == 1.5) print "mid"; else print "small" }'


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/usr/bin/mawk"), reason="Debian's mawk is not installed")
def test_debians_mawk_compares_a_symbolic_field_in_a_path_per_outcome():
    """Debian's mawk (its own lexer and interpreter, strtod for a field's number) run on two
    symbolic digits from stdin with angr's defaults and one wide BVS: both native outcomes and
    each test replays. Each text forked before: 300 paths of the interpreter were still running
    after 240 s."""
    alphabet = b"0123456789"
    proj = angr.Project("/usr/bin/mawk", auto_load_libs=False)
    data = claripy.BVS("stdin", 16)
    st = proj.factory.entry_state(args=["mawk", MAWK_PROGRAM],
                                  stdin=angr.SimFileStream("stdin", content=data, size=2, has_end=True))
    for byte in data.chop(8):
        st.solver.add(claripy.Or(*[byte == c for c in alphabet]))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    r = summarize(simgr, tech, tests=True)
    native = {(p.returncode, p.stdout) for t in itertools.product(alphabet, repeat=2)
              for p in [subprocess.run(["/usr/bin/mawk", MAWK_PROGRAM], input=bytes(t), capture_output=True, check=False)]}
    assert native == {(0, b"big\n"), (0, b"small\n")}
    assert not r.errors and set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert [x.status for x in replay(r.tests, "/usr/bin/mawk", jobs=2) if x.status != "ok"] == []


def test_a_text_of_many_symbolic_bytes_forks_byte_by_byte(monkeypatch):
    """More symbolic bytes before the text's end than WALK_SYMBOLIC_BYTES (lowered to 2 here: four
    bytes): the call forks on the first symbolic byte and reads again (a 10-byte argument of Debian's
    seq: before, a walk to 1024 texts per call, 2,490 z3 checks and 0 paths in 60 s, then an error
    path; now 23 paths, all replaying); every native outcome, none other, every test replaying."""
    monkeypatch.setattr(float_parsing, "WALK_SYMBOLIC_BYTES", 2)
    forks = []
    lead = float_parsing.undecided_lead

    def counted(st, s):
        n, cases = lead(st, s)
        forks.append(n > float_parsing.WALK_SYMBOLIC_BYTES)
        return n, cases
    monkeypatch.setattr(float_parsing, "undecided_lead", counted)
    b = os.fspath(BUILD / "floatread_O2")
    alphabet = b"1.e"
    simgr, r = users_run(b, alphabet, 4)
    assert any(forks)
    got = set().union(*(path_outcomes(s) for s in simgr.deadended))
    assert got == outcome_set_over(b, [alphabet] * 4)
    assert not r.errors and r.stubs == {}
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []
