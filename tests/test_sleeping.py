"""Sleeps that complete (angr_ram.posix.sleeping). angr's ``nanosleep`` stub made a loop that
sleeps again on ``EINTR`` fork a path per iteration forever (samples/naps and coreutils' ``sleep``
gave no result)."""

import os
import shutil

import angr
import claripy
import pytest

import angr_ram
from angr_ram.posix.sleeping import EINVAL
from angr_ram.procedures.libc import set_errno
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay
from angr_ram.run.runner import summarize

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set_over
from .test_scanning import users_run


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
def test_a_sleep_loop_ends_and_a_bad_request_is_einval(opt):
    """samples/naps over two bytes: every native outcome (slept, EINVAL from nanosleep in errno and
    from clock_nanosleep as its result), none other, every test replaying."""
    b = os.fspath(BUILD / f"naps_{opt}")
    simgr, r = users_run(b, b"1xn", 2)
    native = outcome_set_over(b, [b"1xn"] * 2)
    assert len(native) == 4 and not r.errors and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []


@pytest.mark.slow
def test_coreutils_sleep_with_a_symbolic_argument():
    """Debian's ``sleep`` (gnulib: ``strtod_l`` in the C locale, then ``xnanosleep``) with one
    three-byte ``claripy.BVS`` argument over ``0.es``: both native exit codes, tests that replay,
    no stub but ``newlocale``."""
    prog = shutil.which("sleep")
    if prog is None:
        pytest.skip("no sleep")
    proj = angr.Project(prog, auto_load_libs=False)
    arg = claripy.BVS("arg", 24)
    st = proj.factory.entry_state(args=["sleep", arg])
    for byte in arg.chop(8):
        st.solver.add(claripy.Or(*[byte == c for c in b"0.es"]))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    r = summarize(simgr, tech, tests=True)
    assert not r.errors and set(r.stubs) <= {"newlocale"}
    assert {code for code, _ in r.outcomes} == {0, 1}
    # strtod's texts of one value and end ("000", "0.0", "0e0") are one path; a unit suffix is another
    assert {t.args[0].endswith(b"s") for t in r.tests if t.exit == 0} == {True, False}
    assert_tests_replay(prog, r)


def test_errno_is_set_where_the_condition_holds(ram_state):
    """``set_errno``: the code where a symbolic condition holds (the old value elsewhere), the code
    for a condition that holds, nothing for one that cannot, nothing before errno has a location."""
    st = ram_state.copy()
    st.libc.errno_location = 0x500000
    st.libc.errno = 7
    x = claripy.BVS("x", 32)
    set_errno(st, EINVAL, x == 1)
    assert set(st.solver.eval_upto(st.libc.errno, 3)) == {7, EINVAL}
    assert st.solver.eval(st.libc.errno, extra_constraints=[x == 1]) == EINVAL
    set_errno(st, 9, claripy.false())
    assert set(st.solver.eval_upto(st.libc.errno, 3)) == {7, EINVAL}
    set_errno(st, 9)
    assert st.solver.eval_upto(st.libc.errno, 2) == [9]
    st.libc.errno_location = None
    set_errno(st, 5, x == 2)                # no location yet: no store, no error
