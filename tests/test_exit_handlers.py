"""Exit handlers (angr_ram.procedures.exit_handlers): exit() and the return from main run the
functions atexit, __cxa_atexit and on_exit registered, newest first, once per registration;
_exit runs none and a handler may end the process. Driven as a user's script drives angr (one wide
BVS as stdin): the outcome set is the native program's and every test replays. Before, angr's
stubs registered nothing and its exit ran nothing: 1 of 21 outcomes, 27 of 36 tests mismatched."""

import os
import shutil

import claripy
import pytest

from angr_ram.posix.child_processes import process_key
from angr_ram.procedures.exit_handlers import exit_handlers
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_scanning import users_run


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_exit_runs_the_registered_handlers_newest_first(opt):
    b = os.fspath(BUILD / f"exithandlers_{opt}")
    alphabet = b"abqox_rk"
    simgr, r = users_run(b, alphabet, 3)
    native = outcome_set_over(b, [alphabet] * 3)
    assert len(native) == 22
    assert r.errors == [] and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    for s in simgr.deadended:       # exit and return ran every handler; _exit (4, 7 from a handler) and quick_exit (6) none of them
        codes = {code for code, _ in path_outcomes(s)}
        assert codes <= {4, 6, 7} or exit_handlers(s) == (), codes
    runs = replay(r.tests, b, jobs=2)
    assert [x.status for x in runs if x.status != "ok"] == []


@pytest.mark.skipif(shutil.which("factor") is None, reason="no factor on this machine")
def test_debians_factor_prints_from_its_exit_handler():
    """coreutils' factor buffers its lines and writes them from ``atexit(lbuf_flush)``: with angr's
    stub every path printed nothing."""
    factor = shutil.which("factor")
    r = explore(factor, args=["12"], tests=True)
    assert r.outcomes == {(0, b"12: 2 2 3\n")} and r.stubs == {}


def test_states_with_different_handlers_are_not_merged():
    """Merging with quantifiers at the function that registers the handlers: the states leaving it
    registered different handlers, and one merged state would run one path's handlers on all."""
    b = os.fspath(BUILD / "exithandlers_O2")
    alphabet = b"abqox_rk"
    simgr, _ = users_run(b, alphabet, 3, merge_points=["register_handlers"])
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == outcome_set_over(b, [alphabet] * 3)
    a = simgr.deadended[0].copy()
    key = process_key(a)
    a.globals["angr_ram_exit_handlers"] = ((claripy.BVV(1, 64), claripy.BVV(0, 64), False),)
    assert process_key(a) != key
