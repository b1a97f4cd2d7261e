"""``setenv``/``unsetenv``/``putenv``/``clearenv`` and the ``getenv`` that sees them
(angr_ram.posix.environment_variables). angr stubbed the four: ``getenv`` of a name the
program had just set returned NULL."""

import pytest

from angr_ram.procedures.stubs import stubs_of
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_scanning import users_run

ALPHABET = b"qckz"   # q: FIRST's value that with SLOT z is the "bomb"; c: clearenv; k: setenv without overwrite


@pytest.mark.parametrize("opt", ["O2", "O0"])
def test_values_passed_through_the_environment_come_back(opt):
    """-O2 computes setenv's overwrite flag and value pointer without branches: a flag that may be
    0 forks the path."""
    b = str(BUILD / f"envvars_{opt}")
    simgr, r = users_run(b, ALPHABET, 3)
    native = outcome_set_over(b, [ALPHABET] * 3)
    assert len(native) == 24 and (1, b"q z 1\n") in native
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert not r.errors and not any(stubs_of(s) for s in simgr.deadended)
    runs = replay(r.tests, b, jobs=2)
    assert runs and all(x.status == "ok" for x in runs)
