"""``freopen`` and ``ftruncate`` (angr_ram.posix.file_changes) and C locale objects
(angr_ram.posix.locale_objects): angr stubbed them all. A file named
by a symbolic argument is read as stdin when it is the run's file, and a name that is none fails
with "cannot open" as natively (Debian's ``uniq FILE`` under KLEE's inputs: 9 tests predicted that
a missing file was read, all mismatching); a temporary file cut to two bytes reads back two (GNU
``tac``'s copies piled up: 9 mismatches)."""

import itertools
import os
import subprocess
import tempfile

import pytest

from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_scanning import users_run


def _native(binary: str, names, data: bytes) -> set:
    """(exit, stdout) over argv[1] in ``names`` (None: no argument), the file ``in`` holding ``data``
    and stdin the same bytes."""
    out = set()
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "in"), "wb") as f:
            f.write(data)
        for name in names:
            argv = [binary] + ([] if name is None else [name])
            p = subprocess.run(argv, input=data, capture_output=True, cwd=d, check=False)
            out.add((p.returncode, p.stdout))
    return out


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_freopen_of_a_symbolic_name_and_ftruncate_of_a_temporary_file(opt):
    b = os.fspath(BUILD / f"reopen_{opt}")
    r = explore(b, 3, args=[2], files=[("in", 3)], tests=True)
    assert r.stubs == {}
    # a directory (".", "/", "..", "./") is named as not modelled, never predicted as a missing file
    assert r.errors and all("freopen of a directory" in m for _, m, _ in r.errors)
    outcomes = {(code, out) for code, out in r.outcomes}
    assert (2, b"cannot open\n") in outcomes
    assert (0, b"read 3, kept 2 starting with x\n") in outcomes and (0, b"read 3, kept 2\n") in outcomes
    assert all(not out.startswith(b"read 3, kept 3") for _, out in outcomes)
    names = [None, "in", "ab", "i", "-"] + ["".join(t) for t in itertools.product("in", repeat=2)]
    native = _native(b, names, b"xyz") | _native(b, names, b"abc")
    assert {o for o in outcomes if o[0] != 0} <= {o for o in native if o[0] != 0}
    results = replay(r.tests, b, jobs=2)
    assert [x.status for x in results if x.status not in ("ok", "unchecked")] == []
    assert sum(x.status == "ok" for x in results) >= 3


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_a_c_locale_object_around_strtod(opt):
    """samples/cstrtod does what gnulib's c_strtod does: newlocale("C"), uselocale around strtod,
    back to the global locale (angr's stubs: uselocale answered 0 and the program aborted, as
    Debian's seq did under KLEE's inputs). Every native outcome, none other, no abort, no stub."""
    b = os.fspath(BUILD / f"cstrtod_{opt}")
    simgr, r = users_run(b, b"1.5", 3)
    got = {o for s in simgr.deadended for o in path_outcomes(s)}
    assert got == outcome_set_over(b, [b"1.5"] * 3)
    assert not r.errors and r.stubs == {}
