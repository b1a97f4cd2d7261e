"""Options parsed as glibc parses them (angr_ram/posix/getopt.py): ``samples/getopts.c`` over
command lines that exercise short, grouped, long, abbreviated, ambiguous, flag-setting and unknown
options, missing and optional arguments, ``--`` and the permutation of non-options, each against
the native program; Debian's base64 and tr with options, replayed natively."""

import itertools
import os
import subprocess

import claripy
import pytest

from angr_ram.run.inputs import Template
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore

from .conftest import BUILD, assert_tests_replay, drive_as_a_script
from .groundtruth import outcome_set_over

COMMAND_LINES = [
    ["-a", "-b"], ["-ab", "-n", "3", "x", "y"], ["x", "-n3", "y", "--verbose=2"], ["--count", "4", "--quiet", "z"],
    ["--cou=2", "-v2"], ["-z"], ["-n"], ["--coun=1"], ["--co"], ["--", "-a"], ["--help"],
    ["-a", "--verbose", "x", "--", "-b"], ["--quiet=3"], ["-vb"], ["--count"], ["--countr"],
    ["--verb", "-b", "p", "q", "-a"], ["-", "-a"], ["-a", "-"], ["--h"],
]


def native_outcomes(binary: str, argv: list[str], inputs) -> set:
    out = set()
    for data in inputs:
        p = subprocess.run([binary, *argv], input=data, capture_output=True, timeout=30, check=False)
        out.add((p.returncode, p.stdout))
    return out


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_command_lines_parse_as_natively(opt):
    b = os.fspath(BUILD / f"getopts_{opt}")
    lines = COMMAND_LINES if opt == "O0" else COMMAND_LINES[::3]
    for argv in lines:
        r = explore(b, 1, args=argv)
        assert r.outcomes == native_outcomes(b, argv, [bytes([k]) for k in range(4)]), argv
        assert r.errors == [] and not r.stubs, argv


@pytest.mark.slow
def test_a_symbolic_argument_parses_by_cases():
    """``--arg 2``: the parse forks on what the argument's bytes decide (a dash, which option
    letter, whether the word ends) and follows glibc on each case: no stub, every test replays,
    and each option letter and ``--`` gives its native outcome (before: the getopt_long stub on every path)."""
    b = os.fspath(BUILD / "getopts_O0")
    r = explore(b, 1, args=[2], tests=True, timeout=300)
    assert r.stopped is None and r.errors == [] and not r.stubs
    assert r.tests and all(x.status == "ok" for x in replay(r.tests, b))  # a path echoing the word: some tests
    # each option letter and "--" is a path of its own; the unknown letters share one path whose
    # outcomes (one per letter) are listed in part: one of them is enough
    for w in [b"-a", b"-b", b"-n", b"-v", b"-h", b"--", b"-z"]:
        native = native_outcomes(b, [w.decode()], [b""])
        assert native <= r.outcomes or (w == b"-z" and any(b"unknown " in o for _, o in r.outcomes)), w


@pytest.mark.parametrize(("tool", "argv", "echoes"), [("base64", ("-d",), False), ("base64", ("-w", "2"), True),
                                                      ("tr", ("-d", "0-4"), True)])
def test_debian_tools_with_options(tool, argv, echoes):
    """Debian's own binaries with options on the command line and a two-byte stdin template: the
    native outcome set over the template's domain, tests that replay (before: the option parse was
    a stub, and base64 -d lost every path to a zero-length write)."""
    binary = f"/usr/bin/{tool}"
    if not os.path.exists(binary):
        pytest.skip(f"{binary} is not installed")
    lo, hi = ord("/"), ord("9")
    r = explore(binary, Template(b"??", lo, hi), args=list(argv), tests=True, timeout=120)
    domain = [bytes(p) for p in itertools.product(range(lo, hi + 1), repeat=2)]
    assert r.errors == [] and r.stopped is None and not r.stubs
    native = native_outcomes(binary, list(argv), domain)
    if echoes:          # a path echoing its input lists some outcomes and gets one test per exit code
        assert r.outcomes and r.outcomes <= native
        assert r.tests and all(x.status == "ok" for x in replay(r.tests, binary))
    else:
        assert r.outcomes == native
        assert_tests_replay(binary, r)


def test_an_unrecognized_long_option_of_symbolic_length():
    """Debian's dirname with one symbolic argument of 4 bytes: ``--x``, ``--xy`` are unrecognized
    long options whose message (``unrecognized option '--xy'``) needs the word's end; the parse forks
    on where it ends. Every path finishes without a stub and every test replays (before: the
    getopt_long stub on 1,024 paths, 908 of 1,156 tests mismatched, and the run hit its limit)."""
    binary = "/usr/bin/dirname"
    if not os.path.exists(binary):
        pytest.skip(f"{binary} is not installed")
    r = explore(binary, 0, args=[4], tests=True, timeout=120)
    assert r.stopped is None and r.errors == [] and not r.stubs
    assert {c for c, _ in r.outcomes} == {0, 1}
    runs = replay(r.tests, binary)
    assert runs and all(x.status == "ok" for x in runs)


def _over(t: Template):
    return [range(t.lo, t.hi + 1) if b == ord("?") else [b] for b in t.data]


@pytest.mark.parametrize(("opt", "line"), [("O0", b"-? -?s\n"), ("O2", b"-? -?s\n"), ("O2", b"--? -?\n")])
@pytest.mark.slow
def test_options_from_input_in_a_heap_argv(opt, line):
    """``samples/optline.c`` splits a line of stdin into a heap argv (as make decodes MAKEFLAGS) and
    parses it: the argument pointers are heap pointers (symbolic bases) and the option letters and
    long-option names are input bytes. The parse forks on the letters and names that decide it: the
    native outcome set over the template's domain, no stub (before: the getopt_long stub on 309 paths,
    298 false null-dereference errors, no outcome in 120 s)."""
    b = os.fspath(BUILD / f"optline_{opt}")
    t = Template(line)
    r = explore(b, t, tests=True)
    assert r.errors == [] and r.stopped is None and not r.stubs
    assert r.outcomes == outcome_set_over(b, _over(t))
    assert_tests_replay(b, r)


@pytest.mark.slow
def test_options_from_input_driven_by_a_script_with_one_wide_variable():
    """A user's script: entry_state, stdin of concrete dashes around one 16-bit ``claripy.BVS``
    constrained to letters, angr's default options: the same outcomes as natively."""
    b = os.fspath(BUILD / "optline_O2")
    letters = claripy.BVS("letters", 16)
    content = claripy.Concat(claripy.BVV(b"--"), letters[15:8], claripy.BVV(b" -"), letters[7:0], claripy.BVV(b"\n"))
    r = drive_as_a_script(b, content, letters, ord("A"), ord("z"))
    assert not r.stubs and r.errors == []
    assert r.outcomes == outcome_set_over(b, _over(Template(b"--? -?\n")))
    assert_tests_replay(b, r)


LONG_ONLY_LINES = [["-alpha"], ["-a"], ["-al"], ["-b", "x"], ["-beta=3"], ["-bx"], ["-z"], ["--alp"], ["-ab", "q"],
                   ["-alphax"], ["-", "x"]]


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_getopt_long_only_on_concrete_and_symbolic_arguments(opt):
    """``getopt_long_only`` (``samples/longonly.c``): long names after one dash, prefixes, short
    options where no long name matches, unknown ones, as natively; a symbolic 3-byte argument
    parses by cases (the short letters count as first bytes too): complete, no stub, every test
    replays."""
    b = os.fspath(BUILD / f"longonly_{opt}")
    for argv in LONG_ONLY_LINES:
        assert explore(b, 0, args=argv).outcomes == native_outcomes(b, argv, [b""]), argv
    r = explore(b, 0, args=[3], tests=True, timeout=300)
    assert r.stopped is None and not r.stubs and r.errors == []
    assert r.tests and all(x.status == "ok" for x in replay(r.tests, b))
    for argv in (["-a"], ["-al"], ["-z"], ["-b"]):
        assert native_outcomes(b, argv, [b""]) <= r.outcomes, argv
