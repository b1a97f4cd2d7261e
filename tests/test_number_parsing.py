"""The strtol family (angr_ram/posix/number_parsing.py) against the C library itself: concrete
strings, symbolic strings under many assignments, and programs explored end to end."""

import ctypes
import os
import random

import angr
import claripy
import pytest

import angr_ram
from angr_ram.posix.number_parsing import parse_number
from angr_ram.run.inputs import Template
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore, summarize

from .conftest import BUILD
from .groundtruth import outcome_set, outcome_set_over

LIBC = ctypes.CDLL("libc.so.6", use_errno=True)
for _f, _t in (("strtol", ctypes.c_long), ("strtoul", ctypes.c_ulong)):
    getattr(LIBC, _f).restype = _t
    getattr(LIBC, _f).argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]

ALPHABET = b" \t\n\v\f\r+-0123456789xXbBaAfFgGzZ~\x00"
ADDR = 0x700000


def native(s: bytes, base: int, unsigned: bool) -> tuple[int, int, bool]:
    """(value modulo 2**64, end offset, errno == ERANGE) of glibc's strtol/strtoul."""
    buf = ctypes.create_string_buffer(s)
    end = ctypes.c_char_p()
    ctypes.set_errno(0)
    v = (LIBC.strtoul if unsigned else LIBC.strtol)(buf, ctypes.byref(end), base)
    return v % 2**64, ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buf), ctypes.get_errno() == 34


@pytest.fixture(scope="module")
def blank():
    proj = angr.Project(os.fspath(BUILD / "numparse_O0"), auto_load_libs=False)
    return proj.factory.blank_state(add_options={angr.options.ZERO_FILL_UNCONSTRAINED_MEMORY})


def parsed(state, base, unsigned):
    r = parse_number(state, claripy.BVV(ADDR, 64), 64, base)
    assert r is not None
    value, erange = r.as_unsigned() if unsigned else r.as_signed()
    return value, r.end, erange


def test_concrete_strings_parse_as_the_c_library_parses_them(blank):
    """White space, signs, prefixes, base 0's octal and hexadecimal, digits at and above the base,
    saturation at both ends of long and unsigned long: value, end and ERANGE as glibc's."""
    rng = random.Random(7)
    strings = [b"", b" ", b"  -0x1fz", b"0x", b"0xg", b"-0", b"+", b"-", b"08", b"0b1", b"077", b"0778", b"zz",
               b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808", b"-9223372036854775809",
               b"18446744073709551615", b"18446744073709551616", b"-1", b"99999999999999999999999",
               b"\v\f\r 12", b"0X7fffffffffffffff", b"-0x8000000000000001", b"  +0"]
    strings += [bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, 9))) for _ in range(120)]
    wrong = []
    for s in strings:
        st = blank.copy()
        st.memory.store(ADDR, s + b"\0")
        for base in (0, 2, 8, 10, 16, 36):
            for unsigned in (False, True):
                value, end, erange = parsed(st, base, unsigned)
                got = (st.solver.eval(value), st.solver.eval(end), st.solver.is_true(erange))
                want = native(s.split(b"\0")[0], base, unsigned)
                if got != want:
                    wrong.append((s, base, unsigned, got, want))
    assert wrong == []


@pytest.mark.parametrize("base", [0, 10, 16])
def test_one_symbolic_string_evaluates_as_the_c_library_under_every_assignment_tried(blank, base):
    """Six symbolic bytes then a NUL: no fork, no constraint, and each of 120 assignments gives
    glibc's value, end and ERANGE."""
    st = blank.copy()
    x = claripy.BVS("x", 48)
    st.memory.store(ADDR, x)
    st.memory.store(ADDR + 6, b"\0")
    before = len(st.solver.constraints)
    value, end, erange = parsed(st, base, unsigned=False)
    assert len(st.solver.constraints) == before
    rng = random.Random(base)
    wrong = []
    for _ in range(120):
        s = bytes(rng.choice(ALPHABET) for _ in range(6))
        fix = [x == claripy.BVV(s, 48)]
        got = (st.solver.eval(value, extra_constraints=fix), st.solver.eval(end, extra_constraints=fix),
               st.solver.is_true(erange, extra_constraints=fix))
        if got != native(s.split(b"\0")[0], base, False):
            wrong.append((s, got))
    assert wrong == []


def test_c23_forms_read_a_binary_prefix(blank):
    """``__isoc23_strtol`` (glibc 2.38's C23 forms) reads ``0b101`` in base 0 and 2; the C11 form stops
    after the 0."""
    st = blank.copy()
    st.memory.store(ADDR, b"0b101\0")
    for base, c23, want in ((0, True, (5, 5)), (2, True, (5, 5)), (0, False, (0, 1)), (16, True, (0xB101, 5))):
        r = parse_number(st, claripy.BVV(ADDR, 64), 64, base, c23=c23)
        assert (st.solver.eval(r.as_signed()[0]), st.solver.eval(r.end)) == want


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_a_program_parsing_two_stdin_bytes_reaches_every_native_outcome_and_its_tests_replay(opt):
    """``samples/numparse.c`` (strtol base 0 with end pointer and ERANGE, strtoul base 16, atoi) over
    every 2-byte stdin: the outcome set is the native one and every test replays."""
    b = os.fspath(BUILD / f"numparse_{opt}")
    r = explore(b, 2, tests=True)
    assert r.errors == [] and r.unknown == 0
    assert r.outcomes == outcome_set(b, 2)
    bad = [(x.test.stdin, x.status) for x in replay(r.tests, b, jobs=2) if x.status != "ok"]
    assert bad == []


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_a_long_number_saturates_as_natively(opt):
    """A template with 18 concrete characters and two symbolic digits: ``LONG_MIN`` with ERANGE
    past it, the other values printed as natively (angr's strtol reads 11 bytes and finds no path)."""
    b = os.fspath(BUILD / f"numparse_{opt}")
    r = explore(b, Template(b"-92233720368547758??", lo=ord("0"), hi=ord("9")), tests=True)
    prefix = [bytes([c]) for c in b"-92233720368547758"]
    assert r.outcomes == outcome_set_over(b, prefix + [b"0123456789"] * 2)
    assert (2, b"too small\n") in r.outcomes
    assert all(x.status == "ok" for x in replay(r.tests, b, jobs=2))


@pytest.mark.slow
def test_a_script_with_one_wide_stdin_variable_and_angr_defaults_finds_the_same_outcomes():
    """Driven as a user's script drives angr (entry_state, one ``claripy.BVS``, angr's options),
    the outcomes over 2 bytes are those of ``explore``."""
    b = os.fspath(BUILD / "numparse_O2")
    proj = angr.Project(b, auto_load_libs=False)
    content = claripy.BVS("stdin", 16)
    st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=content, size=2, has_end=True))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    r = summarize(simgr, tech, tests=True)
    assert r.outcomes == outcome_set(b, 2)
    assert all(x.status == "ok" for x in replay(r.tests, b, jobs=2))


@pytest.mark.slow
@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_three_stdin_bytes_reach_every_native_outcome(opt):
    """Three symbolic bytes (white space before a sign, "0x" with and without a hex digit, octal):
    the native outcome set over a class of each kind of byte."""
    b = os.fspath(BUILD / f"numparse_{opt}")
    r = explore(b, 3, tests=True)
    assert r.errors == [] and r.unknown == 0
    assert r.outcomes == outcome_set_over(b, [b" \t\n\v+-0123456789xXabcdefABCDEFgG\0~"] * 3)
    assert all(x.status == "ok" for x in replay(r.tests, b, jobs=2))
