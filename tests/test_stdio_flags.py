"""A FILE's end-of-file flag as glibc keeps it, printf of numbers with thousands of values, and
paths whose output echoes their input: Debian's ``base64`` and ``cksum`` read their input to its end
(they used to loop for ever on angr's flag-less FILE), and every test replays natively."""

import ctypes
import os
import shutil
import subprocess

import angr
import claripy
import pytest
from angr.procedures.stubs.format_parser import FormatParser

from angr_ram.procedures.format_specs import match_spec
from angr_ram.procedures.integer_text import base_of, class_constraint, length_classes, symbolic_text
from angr_ram.procedures.libc import signed_conversion
from angr_ram.run.inputs import Template
from angr_ram.run.outcomes import listed_outcomes
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore, prepare

from .conftest import BUILD


def _parser():
    return FormatParser(project=angr.Project(os.fspath(BUILD / "streamsum_O2"), auto_load_libs=False))


def _spec(text: bytes):
    """angr's parsed conversion of ``text`` (``b"%05x"``)."""
    parser = _parser()
    (spec,) = [c for c in parser.extract_components([bytes([ch]) for ch in text]) if not isinstance(c, bytes)]
    return spec


VALUES = [0, 7, 9, 10, 99, 100, 255, 4095, 65536, 12345678, 2**31 - 1, 2**31, 2**32 - 1]
GLIBC = ctypes.CDLL(None)
ANGRS = (b"%u", b"%d", b"%x", b"%X", b"%o", b"%6d", b"%05x", b"%12u")


def _glibc_text(conv: bytes, x: int) -> bytes:
    buf = ctypes.create_string_buffer(64)
    GLIBC.snprintf(buf, 64, conv, ctypes.c_uint32(x))
    return buf.value


@pytest.mark.parametrize("conv", [b"%u", b"%d", b"%x", b"%X", b"%o", b"%6d", b"%05x", b"%12u",
                                  b"%+d", b"% d", b"%#x", b"%#X", b"%#o", b"%+06d", b"%-+7d", b"%.3d",
                                  b"%8.4x", b"%.0u", b"%#.0o", b"%-#8o"])
def test_symbolic_digits_print_each_value_as_glibc_does(conv):
    """On a path constrained to one value, the length class found and the symbolic digits of that
    class evaluate to the text glibc's own ``snprintf`` prints, flags, widths and precisions
    included (0 is a class of its own where its text differs: ``%#x``, ``%.0u``)."""
    # angr's own parse where it knows the conversion, else C99's (format_specs)
    spec = _spec(conv) if conv in ANGRS else match_spec(_parser(), conv[1:])
    signed = signed_conversion(spec)
    assert signed == (conv[-1:] == b"d")
    v = claripy.BVS("v", 32)
    for x in VALUES:
        state = angr.SimState(arch="AMD64")
        state.solver.add(v == x)
        ((negative, ndigits), c), = length_classes(state, v, signed, base_of(spec))
        state.solver.add(c)
        text = symbolic_text(spec, v, negative, ndigits, zero=x == 0)
        assert state.solver.eval(text, cast_to=bytes) == _glibc_text(conv, x), (conv, x)


def test_length_classes_are_the_feasible_ones_and_a_fork_finds_its_own():
    """A value in [5, 1500] has texts of 1 to 4 digits (four classes, each a satisfiable
    constraint); on a path that already holds one class's constraint (a fork re-running its step)
    that class is the only one, found without a query."""
    v = claripy.BVS("v", 32)
    state = angr.SimState(arch="AMD64")
    state.solver.add(claripy.UGE(v, 5), claripy.ULE(v, 1500))
    classes = length_classes(state, v, False, 10)
    assert [k for k, _ in classes] == [(False, 1), (False, 2), (False, 3), (False, 4)]
    state.solver.add(class_constraint(v, False, 10, False, 3))
    assert [k for k, _ in length_classes(state, v, False, 10)] == [(False, 3)]


def _native_lines(binary: str) -> set[bytes]:
    return {subprocess.run([binary], input=bytes([x]), capture_output=True).stdout for x in range(256)}


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_reading_to_the_end_of_file_then_printing_wide_numbers(opt):
    """streamsum: getc_unlocked, then fread until feof_unlocked (the FILE's flag), then feof, then a
    32-bit hash with %u (256 values on one byte: once per length of its text) and its top byte
    with %x. The paths that rule gives, every pair of text lengths the native program prints, no
    stub, no error, every outcome a native one, every test replays."""
    b = os.fspath(BUILD / f"streamsum_{opt}")
    r = explore(b, 1, tests=True, timeout=240)
    native = _native_lines(b)
    lengths = {tuple(len(w) for w in line.split()[1:]) for line in native}
    assert r.stopped is None and not r.errors and r.stubs == {}
    # the rule: %u of the hash (more than 16 values) forks once per length; within a length, %x of
    # the top byte forks once per value when it has at most 16, else once per length
    by_class: dict = {}
    for line in native:
        _, h, top = line.split()
        by_class.setdefault(len(h), set()).add(top)
    paths = sum(len(tops) if len(tops) <= 16 else len({len(t) for t in tops}) for tops in by_class.values())
    assert r.stats["paths"] == paths and r.endings == {"exit 1": paths}
    assert {out for _, out in r.outcomes} <= native
    runs = replay(r.tests, b)
    assert runs and all(run.status == "ok" for run in runs)
    assert {tuple(len(w) for w in t.stdout.split()[1:]) for t in r.tests} == lengths


@pytest.mark.slow
def test_listing_a_path_that_echoes_its_input_is_bounded_and_says_so():
    """streamsum's paths print a hash of the input byte: listed with a time bound of 0 s, a path
    of many outcomes lists the first 16 and says it is incomplete; without a bound it lists all."""
    simgr, _ = prepare(os.fspath(BUILD / "streamsum_O2"), 1)
    simgr.run()
    widest = max(simgr.deadended, key=lambda s: len(listed_outcomes(s, seconds=float("inf"))[0]))
    everything, complete = listed_outcomes(widest, seconds=float("inf"))
    assert complete and len(everything) > 17
    some, complete = listed_outcomes(widest, seconds=0)
    assert not complete and 17 <= len(some) < len(everything) and some <= everything


@pytest.mark.skipif(shutil.which("base64") is None, reason="no base64 on this machine")
def test_debians_base64_reads_its_input_to_the_end():
    """``base64`` reads with ``fread_unlocked`` until ``in->_flags & 0x30`` (glibc's macros): it
    looped for ever on angr's FILE. On 4 symbolic bytes: one path, exit 0, output echoing the
    input (listed in part, one test per exit code plus the first outcomes), no stub, every test
    replays natively."""
    b64 = shutil.which("base64")
    r = explore(b64, 4, tests=True, timeout=240)
    assert r.stopped is None and r.endings == {"exit 0": 1} and r.stubs == {} and not r.errors
    assert r.outcomes_partial == 1 and len(r.outcomes) >= 17
    assert all(code == 0 and len(out) == 9 and out.endswith(b"==\n") for code, out in r.outcomes)
    runs = replay(r.tests, b64)
    assert runs and all(run.status == "ok" for run in runs)


@pytest.mark.slow     # make test-slow: 45 s
@pytest.mark.skipif(shutil.which("m4") is None, reason="no m4 on this machine")
def test_debians_m4_on_the_papers_template_reaches_every_native_outcome():
    """m4 (the seeds' symbol-table subject) on ``define(`a',1)`` then one symbolic line, '?' in
    A..z: its start-up probes the stack (``/proc/self/maps``: now absent, then ``mincore``:
    modelled), it peeks at its input with ``getc``/``ungetc`` (angr's ``ungetc`` lost the byte) and
    an unterminated quote ends in ``error_at_line``. The 58 native outcomes, no stub, every test
    replays."""
    m4 = shutil.which("m4")
    template = Template(b"define(`a',1)\n?\n")
    r = explore(m4, template, tests=True, timeout=300)
    native = set()
    for c in range(ord("A"), ord("z") + 1):
        p = subprocess.run([m4], input=b"define(`a',1)\n" + bytes([c]) + b"\n", capture_output=True)
        native.add((p.returncode, p.stdout))
    assert r.stopped is None and r.stubs == {} and not r.errors
    assert r.outcomes == native and len(native) == 58
    runs = replay(r.tests, m4)
    assert runs and all(run.status == "ok" for run in runs)


@pytest.mark.slow     # make test-slow: 2 min
@pytest.mark.skipif(shutil.which("cksum") is None, reason="no cksum on this machine")
def test_debians_cksum_prints_the_crc_of_a_symbolic_input():
    """cksum prints a CRC with ``%u``: 2^32 values (a ``symbolic-format-argument`` error path
    before), now one path per length of the text, whose digits are expressions of the CRC. On 4
    symbolic bytes: every path exits 0, prints ``<crc> 4``, and every test replays natively."""
    ck = shutil.which("cksum")
    r = explore(ck, 4, tests=True, timeout=400)
    assert r.stopped is None and r.stubs == {} and not r.errors
    assert r.endings == {"exit 0": r.stats["paths"]} and 2 <= r.stats["paths"] <= 10
    assert all(out.endswith(b" 4\n") and out.split()[0].isdigit() for _, out in r.outcomes)
    runs = replay(r.tests, ck)
    assert runs and all(run.status == "ok" for run in runs)
    assert len({len(t.stdout) for t in r.tests}) == r.stats["paths"]


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_a_tokenizer_that_peeks_with_ungetc(opt):
    """peek: runs of digits and of letters end at the first other byte, pushed back with ungetc and
    read again by getchar (angr's ungetc moved a position stdin does not read from: the byte was
    lost). On 3 symbolic bytes the outcomes are the native ones over a digit, a letter and a space
    per byte (the program looks at nothing else), and every test replays."""
    from .conftest import assert_tests_replay
    from .groundtruth import outcome_set_over

    b = os.fspath(BUILD / f"peek_{opt}")
    r = explore(b, 3, tests=True, timeout=240)
    assert r.stopped is None and not r.errors and r.stubs == {}
    assert r.outcomes == outcome_set_over(b, [b"a1 "] * 3)
    assert_tests_replay(b, r)


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.slow
def test_getline_and_getdelim_grow_the_callers_buffer(opt):
    """getlines: getdelim(';') then getline into a 2-byte malloc'd buffer over four bytes of
    {a, ;, newline, NUL}: lengths (a NUL inside a line counts), the grown capacity, the end of input
    (-1 and feof), every native outcome, every test replayed. angr has no getline or getdelim
    (stubs: an unconstrained count and buffer)."""
    from .test_scanning import _same_as_native

    r, native = _same_as_native(os.fspath(BUILD / f"getlines_{opt}"), b"a;\n\x00", 4)
    assert len(native) == 186 and r.stubs == {}
    assert any(b"record 4 [aaa;] semi=1 cap=5" in out for _, out in native)


@pytest.mark.parametrize("argv", (["tee"], ["dd", "status=none"]))
def test_debian_copiers_write_and_time_as_glibc_does(argv):
    """Debian's tee checks fwrite(buf, n, 1, stdout) == 1 (angr's fwrite returned the byte count:
    exit 1 on every input, its test mismatched); dd reads CLOCK_MONOTONIC at start-up (angr's
    clock_gettime took CLOCK_REALTIME only: an error, 0 paths). Complete, no stub, tests replay."""
    exe = shutil.which(argv[0])
    if exe is None:
        pytest.skip(f"no {argv[0]} on this machine")
    r = explore(exe, 2, args=argv[1:], tests=True, timeout=300)
    assert r.stopped is None and r.stubs == {} and not r.errors and r.stats["paths"] >= 1
    assert {code for code, _ in r.outcomes} == {0}
    runs = [x for x in replay(r.tests, exe) if x.status != "ok"]
    assert runs == []
