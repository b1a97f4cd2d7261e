"""``strtold`` and ``printf``'s ``%L`` conversions (angr_ram.posix.float_parsing.Strtold,
libc.long_double_arg): angr had a stub for ``strtold`` (``*endptr`` left unset: GNU printf's
``%a`` dereferenced NULL) and no ``long double`` arguments (angr's calling convention reads one
from a vector register; the ABI passes it on the stack). A text whose ``long double`` is not a
``double`` (VEX holds x87 registers as doubles) is an error path, never a wrong value."""

import itertools
import os
import subprocess

import pytest

from angr_ram.posix.float_parsing import double_holds_long
from angr_ram.run.cli import main
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore

from .conftest import BUILD
from .groundtruth import outcome_set_over, run_inputs
from .test_scanning import users_run

PRINTF = "/usr/bin/printf" if os.path.exists("/usr/bin/printf") else None


def test_texts_whose_long_double_is_a_double():
    assert double_holds_long(b"1.5") and double_holds_long(b"-5e5") and double_holds_long(b"0x1p-3")
    assert double_holds_long(b"inf") and double_holds_long(b"nan")
    assert not double_holds_long(b"0.1") and not double_holds_long(b"1e400") and not double_holds_long(b"1e-4000")


@pytest.mark.parametrize(("opt", "alphabet"), (("O0", b"5.-e"), ("O2", b"5.-e"), ("O2", b"1.-")))
def test_strtold_reads_as_glibc_does_and_a_text_beyond_a_double_is_an_error_path(opt, alphabet):
    """Over three bytes of a line: every input whose text is a double exactly gives its native
    outcome, nothing else is found; the others (``.55``, ``.1``, ``-.1``) end as named error paths."""
    b = os.fspath(BUILD / f"longread_{opt}")
    simgr, r = users_run(b, alphabet, 3)
    got = set().union(*(path_outcomes(s) for s in simgr.deadended))
    inputs = [bytes(t) for t in itertools.product(alphabet, repeat=3)]
    exact = [t for t in inputs if double_holds_long(t)]
    assert 0 < len(exact) < len(inputs)
    assert set(run_inputs(b, exact)) <= got <= outcome_set_over(b, [alphabet] * 3)
    assert r.errors and {k for k, _, _ in r.errors} == {"symbolic-format-argument"} and r.stubs == {}
    assert all("not a double" in m for _, m, _ in r.errors)
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.test.kind == "exit" and x.status != "ok"] == []


@pytest.mark.skipif(PRINTF is None, reason="needs /usr/bin/printf")
@pytest.mark.parametrize("args", (["%a"], ["%a", "1.5"], ["%.3Lf|%Le", "2.25", "-7"], ["%g%g", "0x1p-3"]))
def test_gnu_printf_float_conversions_print_as_natively(args, tmp_path):
    native = subprocess.run(["/usr/bin/printf", *args], capture_output=True, check=False, env={"LC_ALL": "C"})
    argv = ["run", "/usr/bin/printf", *(x for a in args for x in ("--arg-str", a)), "--emit-tests", os.fspath(tmp_path)]
    assert main(argv) == 0
    results = replay(os.fspath(tmp_path), "/usr/bin/printf")
    assert [(x.exit, x.stdout) for x in results if x.test.kind == "exit"] == [(native.returncode, native.stdout)]
    assert {x.status for x in results} == {"ok"}


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_printf_reads_long_doubles_from_the_stack_between_other_arguments(opt):
    """samples/ldprint: three long doubles among ints and a string, some in registers, some past
    them on the stack (angr's calling convention would read a long double from a vector register)."""
    b = os.fspath(BUILD / f"ldprint_{opt}")
    native = subprocess.run([b], capture_output=True, check=True).stdout
    r = explore(b, 0, tests=True)
    assert r.outcomes == {(0, native)} and not r.errors and r.stubs == {}
