"""``rename``, ``mkdir``, ``rmdir``, ``remove``, ``chmod`` (angr_ram.posix.file_changes): the
run's file system changes as the native one does. angr stubbed them: a renamed file kept its old
name and a directory a program made did not exist for ``stat``."""

import angr
import pytest

from angr_ram.posix.file_changes import _made
from angr_ram.posix.file_status import lookup
from angr_ram.procedures.stubs import stubs_of
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_scanning import users_run


@pytest.mark.parametrize("opt", ["O2", "O0"])
def test_a_renamed_file_is_read_under_its_new_name(opt):
    """-O2 picks the new name with a conditional move: the name's bytes have two values, one path each."""
    b = str(BUILD / f"renames_{opt}")
    simgr, r = users_run(b, b"mzq", 2)
    native = outcome_set_over(b, [b"mzq"] * 2)
    assert (1, b"0 1 0 1 1 z 1 1 1\n") in native and len(native) == 4
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert not r.errors and not any(stubs_of(s) for s in simgr.deadended)
    runs = replay(r.tests, b, jobs=2)
    assert runs and all(x.status == "ok" for x in runs)


def test_made_directories_are_seen_relative_to_the_working_directory():
    st = angr.SimState(arch="AMD64")
    st.globals["angr_ram_made_dirs"] = frozenset({st.fs.cwd.rstrip(b"/") + b"/d"})
    assert lookup(st, b"d") == ("dir", None) and lookup(st, b"./d/../d") == ("dir", None)
    assert lookup(st, b"e") is None and _made(st)
