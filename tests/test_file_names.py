"""Names a program looks up (angr_ram.posix.file_status): ``readlink``, and a name chosen by a
conditional move or made of symbolic bytes, for ``stat``/``access``/``readlink``. angr's
``readlink`` was a stub, and a name that was not one concrete string got angr's model."""

import os

import pytest

from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_scanning import users_arg_run, users_run


@pytest.mark.parametrize("opt", ("O2", pytest.param("O0", marks=pytest.mark.slow)))
def test_readlink_of_a_directory_a_missing_file_and_the_programs_own_file(opt):
    """samples/links: the name is selected by an input byte (a conditional move at -O2), the
    size by another; ``/proc/self/exe`` is the program's path, truncated to the size. Every native
    outcome, none other, no stub, each test replays."""
    b = os.fspath(BUILD / f"links_{opt}")
    simgr, r = users_run(b, b"abcs", 2)
    native = outcome_set_over(b, [b"abcs"] * 2)
    assert {code for code, _ in native} == {2, 3, 4}
    assert r.errors == [] and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []


@pytest.mark.skipif(not os.path.exists("/usr/bin/readlink"), reason="coreutils' readlink is not installed")
def test_debians_readlink_of_a_symbolic_name():
    """coreutils' readlink with a one-byte symbolic name (``.``, ``/`` or ``x``): the name is
    each of the names the run knows, or none of them; one path per class, no stub. Before: 52
    paths, 38 false errors, 65 of 90 tests mismatched."""
    prog, alphabet = "/usr/bin/readlink", b"./x"
    simgr, r, native = users_arg_run(prog, alphabet, 1)
    assert r.errors == [] and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert r.stats["paths"] <= len(alphabet)
    assert [x.status for x in replay(r.tests, prog, jobs=2) if x.status != "ok"] == []
