"""Values that reach a branch through the operating system, in the style of the logic-bomb
benchmark's covert-propagation and parallel categories (samples/covert.c, written from their public
descriptions): a file the program writes and reads back, a pipe to itself, a signal handler run by
``raise``/``kill``, a thread's return value through ``pthread_join``. angr had stubs for ``pipe``,
``raise`` and ``kill`` and ended the path when a started thread returned; angr-ram crashed on a file
read back after a write (a SimFile position held as a Python int)."""

import os

import claripy
import pytest

from angr_ram.posix.pipes import open_pipe
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_drives import _merging_alone
from .test_scanning import users_run

ALPHABET = b"fpsktzx\x00"      # byte 0: the channel (f p s k t, z: none); byte 1: the payload
KILLED = (128 + 12, b"")       # kill(getpid(), SIGUSR2) once SA_RESETHAND put the default back


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.slow
def test_every_channel_carries_the_value_as_natively(opt):
    """A user's script with RelocatableMemory over two bytes: every native outcome, the process
    killed by SIGUSR2 (a handler installed with SA_RESETHAND runs once, the second kill takes the
    default action) as one fatal-signal error path whose test replays as confirmed, no stub."""
    b = os.fspath(BUILD / f"covert_{opt}")
    simgr, r = users_run(b, ALPHABET, 2)
    native = outcome_set_over(b, [ALPHABET] * 2)
    assert KILLED in native and len(native) == 32
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native - {KILLED}
    assert [(e[0], e[1]) for e in r.errors] == [("fatal-signal", "killed by signal 12 (SIGUSR2)")]
    assert r.stubs == {}
    runs = replay(r.tests, b, jobs=1)          # one at a time: the file channel's name is per process
    assert {x.status for x in runs} == {"ok", "confirmed"}
    assert [x.test.stdin for x in runs if x.status == "confirmed"] == [b"kx"]


@pytest.mark.slow
def test_merging_alone_takes_every_channel_too():
    """QuantifiedMerging alone (no RelocatableMemory): the same models, the kill ends the path with
    status 128 + 12 as the native process does; every native outcome, none other."""
    got, native, _ = _merging_alone(os.fspath(BUILD / "covert_O2"), ALPHABET, 2)
    assert got == native


def test_a_pipe_is_two_descriptors_over_one_ordered_file(ram_state):
    """open_pipe: the two lowest free descriptors; what the write end wrote, the read end reads in
    order and then the end (0 bytes)."""
    st = ram_state.copy()
    r, w = open_pipe(st)
    assert (r, w) == (3, 4)
    st.posix.get_fd(w).write_data(claripy.BVV(b"ab"))
    st.posix.get_fd(w).write_data(claripy.BVV(b"c"))
    data, n = st.posix.get_fd(r).read_data(8)
    assert st.solver.eval(n) == 3 and st.solver.eval(data[data.size() - 1:data.size() - 24], cast_to=bytes) == b"abc"
    assert st.solver.eval(st.posix.get_fd(r).read_data(8)[1]) == 0
    assert open_pipe(st) == (5, 6)


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
def test_a_thread_that_starts_a_thread_gets_its_own_id(opt):
    """samples/threadnest: main starts an outer thread that starts and joins an inner one. Each id
    is its own (the inner one took its creator's id, so main saw the two ids equal and joined the
    inner thread's value) and every native outcome is found, each test replaying."""
    b = os.fspath(BUILD / f"threadnest_{opt}")
    simgr, r = users_run(b, b"abz", 2)
    native = outcome_set_over(b, [b"abz"] * 2)
    assert len(native) == 4
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert not r.errors and r.stubs == {}
    assert {x.status for x in replay(r.tests, b, jobs=1)} == {"ok"}


def test_pthread_self_names_the_running_thread():
    """samples/threadself: pthread_self in a started thread (and in one it started) was the main
    thread's id: every outcome wrong."""
    b = os.fspath(BUILD / "threadself_O2")
    simgr, r = users_run(b, b"kx", 1)
    native = outcome_set_over(b, [b"kx"] * 1)
    assert native == {(1, b"1 1 0 0 3\n"), (0, b"1 1 0 0 2\n")}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert {x.status for x in replay(r.tests, b, jobs=1)} == {"ok"}
