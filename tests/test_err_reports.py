"""BSD's ``<err.h>`` reports (angr_ram.posix.err_reports): ``errx``/``err`` end the path with
their status, ``warn``/``warnx`` write glibc's line to stderr and return. Under angr, ``err`` raised a
TypeError that ended the user's whole run, and the others were stubs: a path ran on past ``errx``."""

import os
import subprocess

import pytest

from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_scanning import users_arg_run, users_run

ALPHABET = b"59x!?#"


@pytest.mark.parametrize("opt", ("O2", pytest.param("O0", marks=pytest.mark.slow)))
def test_each_report_is_glibcs_line_and_the_exiting_ones_end_the_path(opt):
    """samples/errreport with four symbolic bytes (one wide BVS, angr's defaults): every native
    outcome, none other, no stub, each test replays; and each finished path's stderr is what the
    native program writes to stderr on that path's input (program name, message, errno text)."""
    b = os.fspath(BUILD / f"errreport_{opt}")
    simgr, r = users_run(b, ALPHABET, 4)
    native = outcome_set_over(b, [ALPHABET] * 4)
    assert {code for code, _ in native} == {0, 3, 4, 5, 6}
    assert r.errors == [] and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []
    seen = set()
    for s in simgr.deadended:
        stdin = s.posix.dumps(0)
        run = subprocess.run([b], input=stdin, capture_output=True, check=False)
        assert s.posix.dumps(2) == run.stderr, stdin
        seen.add(run.returncode)
    assert seen == {0, 3, 4, 5, 6}


@pytest.mark.skipif(not os.path.exists("/usr/bin/colrm"), reason="util-linux's colrm is not installed")
def test_debians_colrm_rejects_a_symbolic_column_through_errx():
    """util-linux's colrm with a symbolic column argument (two bytes of ``03a-``): the invalid ones
    end in ``errx`` (exit 1). Under angr's stub the path ran on past ``errx`` into a null read."""
    prog = "/usr/bin/colrm"
    simgr, r, native = users_arg_run(prog, b"03a-", 2, stdin=b"abcdefgh\n")
    assert 1 in {code for code, _ in native}
    assert r.errors == [] and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert [x.status for x in replay(r.tests, prog, jobs=2) if x.status != "ok"] == []
