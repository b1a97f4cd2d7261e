"""scanf's family (angr_ram.posix.scanning, scanf_formats): glibc's directives over symbolic
input, driven as a user's script drives angr (own entry_state, one wide BVS as stdin, angr's default
options, RelocatableMemory attached), each input byte drawn from a small alphabet; the outcome set
equals the native program's over that alphabet, and every test replays."""

import itertools
import os
import subprocess

import angr
import claripy
import pytest

import angr_ram
from angr_ram.posix.scanf_formats import Directive, parse_format
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay
from angr_ram.run.runner import summarize

from .conftest import BUILD
from .groundtruth import outcome_set_over

ALPHABET = b" -07x%"


def users_run(binary: str, alphabet: bytes, n: int, merge_points=None):
    """A user's script: stdin one ``8 * n``-bit BVS whose bytes are in ``alphabet``; with
    ``merge_points``, merging with quantifiers (``pat``) at those functions too."""
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("stdin", 8 * n)
    st = proj.factory.entry_state(stdin=angr.SimFileStream("stdin", content=data, size=n, has_end=True))
    for byte in data.chop(8):
        st.solver.add(claripy.Or(*[byte == c for c in alphabet]))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    if merge_points is not None:
        simgr.use_technique(angr_ram.QuantifiedMerging(mode="pat", merge_points=merge_points))
    simgr.run()
    return simgr, summarize(simgr, tech, tests=True)


def users_arg_run(binary: str, alphabet: bytes, n: int, stdin: bytes = b""):
    """A user's script: ``argv[1]`` one ``8 * n``-bit BVS whose bytes are in ``alphabet``, ``stdin``
    concrete; with the native outcome set over the argument's domain."""
    proj = angr.Project(binary, auto_load_libs=False)
    arg = claripy.BVS("arg", 8 * n)
    st = proj.factory.entry_state(args=[binary, arg],
                                  stdin=angr.SimFileStream("stdin", content=stdin, size=len(stdin), has_end=True))
    for byte in arg.chop(8):
        st.solver.add(claripy.Or(*[byte == c for c in alphabet]))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    native = {(p.returncode, p.stdout) for p in (
        subprocess.run([binary, bytes(v)], input=stdin, capture_output=True, check=False, env={"LC_ALL": "C"})
        for v in itertools.product(alphabet, repeat=n))}
    return simgr, summarize(simgr, tech, tests=True), native


def _same_as_native(binary: str, alphabet: bytes, n: int):
    """Every path's outcomes, listed however long that takes, are the native outcome set; the
    summary lists some of them (a path's listing is bounded in CPU time, which a loaded machine
    running other tests can still stretch) and nothing else."""
    simgr, r = users_run(binary, alphabet, n)
    native = outcome_set_over(binary, [alphabet] * n)
    assert r.errors == [] and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert r.outcomes <= native and {code for code, _ in r.outcomes} == {code for code, _ in native}
    # one test per outcome, but one per exit code for a path with more than 16 outcomes
    assert {(t.exit, t.stdout) for t in r.tests if t.kind == "exit"} <= native
    runs = replay(r.tests, binary, jobs=2)
    assert [x.status for x in runs if x.status != "ok"] == []
    return r, native


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.slow
def test_sscanf_directives_match_glibc(opt):
    """scanfforms: ``%d-%2x%n`` (a literal that must match, a width, %n), `` %c%[0-7x]``, ``%*d%i``
    through vsscanf (EOF when the input ends before the first assignment, base 0), ``%2s%%%n``,
    ``%i%n`` (glibc consumes the ``x`` of a lone ``0x``).
    angr's sscanf: no path (``%n`` unsupported)."""
    r, native = _same_as_native(os.fspath(BUILD / f"scanfforms_{opt}"), ALPHABET, 3)
    assert len(native) == 138 and r.stats["paths"] >= len({code for code, _ in native})


@pytest.mark.slow
def test_scanf_moves_the_stream_position():
    """scanfstream: ``scanf("%d %2s")``, then ``getchar()`` reads the byte after what scanf consumed,
    then ``scanf("%x")`` at the input's end is EOF. angr's scanf: a TypeError out of the run."""
    _same_as_native(os.fspath(BUILD / "scanfstream_O2"), ALPHABET, 3)


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.slow
def test_reading_numbers_until_the_input_ends(opt):
    """scanfloop: ``while (fscanf(stdin, "%d", &x) == 1)`` sums the numbers of 4 bytes, then
    ``scanf("%3[^0-9]")`` reads what is left. angr's procedures: 14 paths, 14/14 tests mismatched."""
    _same_as_native(os.fspath(BUILD / f"scanfloop_{opt}"), b" 1-a+", 4)


def test_a_negated_scan_set_takes_a_streams_nul():
    """scanfloop over input with NUL bytes: ``%3[^0-9]`` on a stream takes a NUL as any byte that is
    not a digit (glibc; only ``sscanf``'s string ends there). The set left 0 out: scanf returned 0
    where glibc returns 1, a wrong outcome on 4 of 16 inputs."""
    _, native = _same_as_native(os.fspath(BUILD / "scanfloop_O2"), b"a\\\x00", 2)
    assert (0, b"0 0 1 []\n") in native


def test_suppressed_assignment_skips_a_byte():
    """scanfskip: ``sscanf(buf, "%*c%d", &x)``: the first byte skipped (also a space: ``%c`` skips
    no white space), the number after it (white space skipped). angr's parser read ``%*c`` as text:
    5 of 6 tests mismatched natively over this alphabet."""
    _same_as_native(os.fspath(BUILD / "scanfskip_O2"), b" -5+a", 3)


def test_formats_parse_as_glibc_reads_them():
    conv = [d for d in parse_format(b"%*3hhd %ld%[^]a-c]%5c%%x%n", False) if d.kind == "conversion"]
    assert [(d.conv, d.suppress, d.width, d.size) for d in conv] == [
        (b"d", True, 3, 1), (b"d", False, None, 8), (b"[", False, None, 4), (b"c", False, 5, 4),
        (b"n", False, None, 4)]
    assert conv[2].accept == frozenset(range(256)) - set(b"]abc")
    assert parse_format(b"%[a-]", False)[0].accept == frozenset(b"a-")
    assert [d.kind for d in parse_format(b"a  %%\n", False)] == ["literal", "space", "literal", "space"]
    assert parse_format(b"%d", False) == [Directive("conversion", conv=b"d")]
    for unknown in (b"%hf", b"%llf", b"%ls", b"%ms", b"%1$d", b"%0d", b"%[abc", b"%b"):
        assert parse_format(unknown, False) is None, unknown
    assert parse_format(b"%b", True)[0].conv == b"b"


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.slow
def test_formats_in_exactly_sized_heap_buffers(opt):
    """heapformat: sscanf's and printf's formats copied into ``malloc(strlen + 1)`` buffers. The
    format was read 16 bytes at a time past its object's end: an out-of-bounds error on every path
    and no outcome; read to its NUL within the object, every native outcome."""
    r, native = _same_as_native(os.fspath(BUILD / f"heapformat_{opt}"), b"x1a7-", 3)
    assert len(native) == 36


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.slow
def test_sscanf_reads_a_stack_line_past_angrs_string_limit(opt):
    """scanlong: ``sscanf(line, "%d")`` where the number follows 140 spaces of a stack buffer. The
    string was read to angr's ``max_str_len`` (128) and its end taken there: one path, printing
    ``-1 0`` (EOF) for every input."""
    r, native = _same_as_native(os.fspath(BUILD / f"scanlong_{opt}"), b"1-7a", 3)
    assert len(native) == 21
