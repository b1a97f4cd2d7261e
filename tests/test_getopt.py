"""Options parsed as glibc parses them (angr_ram/procedures/getopt.py): ``samples/getopts.c`` over
command lines that exercise short, grouped, long, abbreviated, ambiguous, flag-setting and unknown
options, missing and optional arguments, ``--`` and the permutation of non-options, each against
the native program; Debian's base64 and tr with options, replayed natively."""

import itertools
import os
import subprocess

import pytest

from angr_ram.run.inputs import Template
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore

from .conftest import BUILD, assert_tests_replay

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
def test_command_lines_parse_as_natively(opt):
    b = os.fspath(BUILD / f"getopts_{opt}")
    lines = COMMAND_LINES if opt == "O0" else COMMAND_LINES[::3]
    for argv in lines:
        r = explore(b, 1, args=argv)
        assert r.outcomes == native_outcomes(b, argv, [bytes([k]) for k in range(4)]), argv
        assert r.errors == [] and not r.stubs, argv


def test_a_symbolic_argument_that_may_be_an_option_is_a_named_stub():
    """``--arg 2``: the argument may start with '-', so the parse cannot be followed: the path says
    it went through the getopt_long stub; a concrete command line after it names no stub."""
    b = os.fspath(BUILD / "getopts_O0")
    r = explore(b, 1, args=[2], timeout=20)      # the stub may return an option on every call: bounded
    assert "getopt_long" in r.stubs
    assert not explore(b, 1, args=["-a"]).stubs


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
