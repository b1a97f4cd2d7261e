"""What a process asks libc about itself and its files, modelled as a replay's fresh process
answers (angr_ram/posix/signals.py, descriptors.py, process.py, file_status.py), and
``fgets``/``strdup`` that keep a path satisfiable (stdio_flags.py, strings.py). Each was a
source of lost or false paths in Debian's GNU make: angr's ``sigaction`` wrote a symbolic
"inherited" action and ``fcntl`` returned any value (hundreds of forks), a stubbed ``getcwd``
pointer and angr's ``strdup`` copy in angr's own heap were freed as invalid, angr's ``fgets`` made
every path reading a template file unsatisfiable, and angr's ``strdup`` length symbol another."""

import itertools
import os
import signal
import subprocess

import angr
import pytest

from angr_ram import RelocatableMemory
from angr_ram.procedures.heap import RamHeap
from angr_ram.run.inputs import Template
from angr_ram.run.replay import NATIVE_ENV, exec_resets_ignored_signals, fresh_signals, replay
from angr_ram.run.runner import explore, prepare

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set_over


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_signals_descriptors_cwd_and_file_status_answer_as_a_fresh_process(opt):
    """procstate: every native outcome over its 256 inputs, no stub, no error, tests replay.
    (Before these models: 0 paths, 16 error paths, ``signal`` a stub.)"""
    b = os.fspath(BUILD / f"procstate_{opt}")
    r = explore(b, 1, tests=True)
    # run as a replay runs it (pipes for stdin and stdout; the fork-server harness gives other descriptors)
    want = {(p.returncode, p.stdout) for p in (subprocess.run([b], input=bytes([x]), capture_output=True,
                                                               env={**os.environ, **NATIVE_ENV},
                                                               preexec_fn=fresh_signals()) for x in range(256))}
    assert len(want) == 8 and r.outcomes == want
    assert r.stubs == {} and not r.errors and r.stopped is None
    assert_tests_replay(b, r)


def test_a_child_started_while_this_process_ignores_sigint_starts_with_it_at_default():
    """Under ``nohup ... &`` SIGINT is ignored and a child inherits that. Replay starts each native
    run with every signal at its default disposition without a ``preexec_fn`` (which makes Python fork
    the whole explored process, 0.13 s a run from 3 GB): while replaying, an ignored signal is
    caught by a handler that does nothing (exec resets it), and ignored again afterwards."""
    b = os.fspath(BUILD / "procstate_O0")
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        plain = subprocess.run([b], input=b"\0", capture_output=True).stdout
        with exec_resets_ignored_signals():
            assert fresh_signals() is None          # nothing left for a preexec_fn to do
            fresh = subprocess.run([b], input=b"\0", capture_output=True).stdout
        assert plain.startswith(b"ID") and fresh.startswith(b"DD")
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def _native_over_file(binary: str, t: Template, tmp_path) -> set:
    out = set()
    holes = t.holes
    for vals in itertools.product(range(t.lo, t.hi + 1), repeat=len(holes)):
        data = bytearray(t.data)
        for k, v in zip(holes, vals, strict=True):
            data[k] = v
        (tmp_path / "A").write_bytes(bytes(data))
        p = subprocess.run([binary], cwd=tmp_path, capture_output=True, env={**os.environ, **NATIVE_ENV}, timeout=10)
        out.add((p.returncode, p.stdout))
    return out


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.parametrize("text,lo,hi", [(b"a?\n?Q\n??", ord("P"), ord("R")),     # newlines fixed
                                        (b"??????", 10, 11)])                     # any byte a newline
def test_fgets_reads_a_file_template_line_by_line(opt, text, lo, hi, tmp_path):
    """linecount (fgets into a 4-byte buffer): the native outcome set over the template's domain,
    tests replay. A byte that may be a newline forks; a template with fixed newlines does not
    (angr's fgets: no path at all, every one unsatisfiable)."""
    b = os.fspath(BUILD / f"linecount_{opt}")
    t = Template(text, lo, hi)
    r = explore(b, files=[("A", t)], tests=True)
    want = _native_over_file(b, t, tmp_path)
    assert r.outcomes == want and len(want) >= 3
    assert r.stubs == {} and not r.errors and r.stopped is None
    assert_tests_replay(b, r)


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_strdup_and_strndup_copies_of_input_are_freed_without_error(opt):
    """dupfree: ``strdup`` of 3 input bytes, ``strndup`` of the copy, both freed. Every outcome of
    the input classes (NUL, 'a', another byte), no error, tests replay (before: angr's copies lived
    in angr's brk heap and each ``free`` was an invalid-free error path; no path finished)."""
    b = os.fspath(BUILD / f"dupfree_{opt}")
    r = explore(b, 3, tests=True)
    assert r.outcomes == outcome_set_over(b, [b"\0ab"] * 3) and len(r.outcomes) == 7
    assert r.stubs == {} and not r.errors and r.stopped is None
    assert_tests_replay(b, r)


def test_a_users_state_with_angrs_heap_gets_angr_ram_objects_from_strdup():
    """A script's own entry_state whose brk heap was already touched: the technique keeps the
    plugin but makes its allocations angr-ram objects, so a ``strdup`` copy can be freed."""
    b = os.fspath(BUILD / "procstate_O0")
    simgr, _ = prepare(b, 1)
    state = simgr.active[0]
    assert isinstance(state.heap, RamHeap)
    proj = angr.Project(b, auto_load_libs=False)
    s = proj.factory.entry_state()
    s.heap.allocate(16)                  # the user's script touched angr's heap
    simgr2 = proj.factory.simulation_manager(s)
    simgr2.use_technique(RelocatableMemory())
    simgr2.run()
    assert len(simgr2.deadended) >= 4 and not simgr2.errored
    assert all(type(d.heap) is RamHeap for d in simgr2.deadended)
    assert not simgr2.stashes.get("memory_errors")


def test_close_on_exec_follows_the_open_behind_each_descriptor():
    """FD_CLOEXEC: O_CLOEXEC of a file opened after a first fcntl counts; F_SETFD's value holds for
    the open it was set on, not for another file opened later on the same number."""
    from angr.storage.file import Flags

    from angr_ram.posix.descriptors import O_CLOEXEC, _cloexec, _set_cloexec
    state = angr.Project(os.fspath(BUILD / "procstate_O0"), auto_load_libs=False).factory.blank_state()
    assert not _cloexec(state, 0) and not _cloexec(state, 1)
    _set_cloexec(state, 1, True)
    assert _cloexec(state, 1) and not _cloexec(state, 0)
    fd = state.solver.eval(state.posix.open(b"/tmp/one", Flags.O_RDONLY | O_CLOEXEC))
    assert _cloexec(state, fd)
    _set_cloexec(state, fd, False)
    assert not _cloexec(state, fd)
    state.posix.close(fd)
    again = state.solver.eval(state.posix.open(b"/tmp/two", Flags.O_RDONLY | O_CLOEXEC))
    assert again == fd and _cloexec(state, again)


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
def test_standard_streams_are_pipes_as_in_a_replay(opt):
    """stdpipes: fstat(0) is a FIFO of size 0, ioctl FIONREAD counts the bytes left, TIOCGWINSZ on
    stdout is ENOTTY, a closed descriptor EBADF: every native outcome (stdin and stdout pipes, as a
    replay runs it). angr's fstat gave any mode (a regular stdin's lseek path) and ioctl was a stub."""
    from .test_scanning import _same_as_native

    _, native = _same_as_native(os.fspath(BUILD / f"stdpipes_{opt}"), b"ab", 3)
    assert {out.split(b"\n")[0] for _, out in native} == {b"fifo=1 size=0"}


@pytest.mark.slow     # make test-slow: about a minute
@pytest.mark.parametrize("argv", (["cat", "-A"], ["wc"], ["tail", "-c", "2"]))
def test_debian_filters_see_their_standard_streams_as_pipes(argv):
    """Debian's cat -A (ioctl FIONREAD on stdin: angr's stub ended half the paths with an error,
    65/129 tests mismatched), wc and tail -c (fstat of stdin: angr's any-mode status sent them down
    regular-file paths, wc timed out with no path, tail had a path no replay reaches)."""
    import shutil

    exe = shutil.which(argv[0])
    if exe is None:
        pytest.skip(f"no {argv[0]} on this machine")
    r = explore(exe, 2, args=argv[1:], tests=True, timeout=400)
    assert r.stopped is None and r.stubs == {} and not r.errors and r.stats["paths"] >= 1
    runs = [x for x in replay(r.tests, exe) if x.status != "ok"]
    assert runs == []


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.slow
def test_temporary_files_are_new_empty_files(opt):
    """tempfiles: mkstemp of a template without six X fails with EINVAL; otherwise it names and
    opens a new empty regular file, which the input is spooled to and read back from in reverse;
    mkstemps keeps the suffix; tmpfile gives a FILE * to write and rewind. angr has no model of
    either: the descriptor was unconstrained and no result came in 300 s."""
    from .test_scanning import _same_as_native

    _, native = _same_as_native(os.fspath(BUILD / f"tempfiles_{opt}"), b"a\n\x00", 3)
    assert len(native) == 27 and all(b"placeholder replaced 1\n" in out for _, out in native)


@pytest.mark.slow
def test_debian_tac_spools_its_pipe_to_a_temporary_file(tmp_path):
    """Debian's tac copies a pipe into a mkstemp file before reading it backwards: every native
    outcome over four bytes of {a, newline, b, NUL}, every test replayed (angr: mkstemp and fcntl
    stubs, no result in 300 s)."""
    import shutil

    from .test_scanning import _same_as_native

    exe = shutil.which("tac")
    if exe is None:
        pytest.skip("no tac on this machine")
    shutil.copy(exe, tmp_path / "tac")
    shutil.copy(BUILD / "forkserver.so", tmp_path / "forkserver.so")
    _, native = _same_as_native(os.fspath(tmp_path / "tac"), b"a\nb\x00", 4)
    assert len(native) == 145


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
def test_the_machine_a_program_sizes_its_buffers_from(opt):
    """machine: getrlimit, sysinfo, sysconf's page counts and sched_getaffinity/CPU_COUNT answer as
    a Linux machine does (angr's stubs: 78 paths, 36 outcomes where the native program has 4, 72/78
    tests mismatched); the chunk size computed from them splits the input as natively."""
    from .test_scanning import _same_as_native

    _, native = _same_as_native(os.fspath(BUILD / f"machine_{opt}"), b"a\n\x00", 3)
    assert len(native) == 4


@pytest.mark.parametrize("argv", (["nproc"], pytest.param(["sort"], marks=pytest.mark.slow)))
def test_debian_programs_that_ask_the_machine(argv):
    """Debian's nproc (sched_getaffinity: 13 paths, 20/21 tests mismatched) and sort (its buffer
    sized from sysinfo and getrlimit: no path in 112 s) on two stdin bytes: complete, no stub, every
    test replays on this machine."""
    import shutil

    exe = shutil.which(argv[0])
    if exe is None:
        pytest.skip(f"no {argv[0]} on this machine")
    r = explore(exe, 2, args=argv[1:], tests=True, timeout=300)
    assert r.stopped is None and r.stubs == {} and not r.errors and 1 <= r.stats["paths"] <= 8
    runs = [x for x in replay(r.tests, exe) if x.status != "ok"]
    assert runs == []


def test_cpu_count_of_a_concrete_and_of_a_symbolic_set():
    """__sched_cpucount counts the bits of a concrete set at once, and of a symbolic set as a sum the
    solver can take any count in 0..8*size from."""
    import claripy

    from angr_ram.posix.environment import RamSchedCpucount

    state = angr.Project(os.fspath(BUILD / "procstate_O0"), auto_load_libs=False).factory.blank_state()
    state.memory.store(0x5000, bytes([0b1011, 0, 0x80, 0xff]))
    count = RamSchedCpucount().execute(state, arguments=(claripy.BVV(4, 64), claripy.BVV(0x5000, 64))).ret_expr
    assert not count.symbolic and state.solver.eval(count) == 3 + 1 + 8
    byte = claripy.BVS("set", 8)
    state.memory.store(0x6000, claripy.Concat(byte, claripy.BVV(1, 8)))
    count = RamSchedCpucount().execute(state, arguments=(claripy.BVV(2, 64), claripy.BVV(0x6000, 64))).ret_expr
    assert count.symbolic and sorted(state.solver.eval_upto(count, 20)) == list(range(1, 10))
    assert state.solver.eval(byte, extra_constraints=[count == 9]) == 0xff


@pytest.mark.slow    # make test-slow: about 60 s
def test_sort_over_four_symbolic_bytes_leaves_no_path_undecided():
    """Debian's sort over four symbolic stdin bytes (issue 83, item 5: 9 of 24 paths ended
    "undecided" when z3 gave up enumerating the sorted output): every path finishes with an
    outcome from its model (path_models), none is set aside, and every test replays."""
    import shutil

    exe = shutil.which("sort")
    if exe is None:
        pytest.skip("no sort on this machine")
    r = explore(exe, 4, tests=True, timeout=300)
    assert r.stopped is None and r.stubs == {} and not r.errors
    assert r.unknown == 0 and r.unfinished == 0 and r.stats["paths"] >= 20
    assert all(t.kind == "exit" and t.stdout is not None for t in r.tests)
    assert [x for x in replay(r.tests, exe) if x.status != "ok"] == []
