"""``fork`` and ``wait`` (angr_ram.posix.child_processes): the child runs to its exit, then the
parent goes on with what the child left in the kernel (pipes, files, descriptor offsets, its exit
status). angr's ``fork`` forked the path into a "parent" and a "child" in one address space and
``waitpid`` was a stub: a value sent from child to parent never arrived."""

import angr
import claripy
import pytest
from angr.errors import SimMergeError
from angr.storage.file import SimPackets

from angr_ram.merging.technique import _merge
from angr_ram.posix.child_processes import IN_CHILD, process_key
from angr_ram.posix.shared_memory import FIRST_ID, sync_segments
from angr_ram.posix.shell_commands import echo
from angr_ram.procedures.stubs import stubs_of
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_scanning import users_arg_run, users_run

ALPHABET = b"7a!:"     # the child's class (digit, letter, other), the grandchild's value, the parent's byte


def _outcomes(simgr) -> set:
    return set().union(*(path_outcomes(s) for s in simgr.deadended))


def _reaches_every_native_outcome(program: str, alphabet: bytes, n: int, bomb: tuple, count: int) -> None:
    """A user's script over ``n`` stdin bytes of ``alphabet`` finds the ``count`` native outcomes
    (``bomb`` among them), with no error, no stub and every test replaying."""
    b = str(BUILD / program)
    simgr, r = users_run(b, alphabet, n)
    native = outcome_set_over(b, [alphabet] * n)
    assert bomb in native and len(native) == count
    assert _outcomes(simgr) == native
    assert not r.errors and not any(stubs_of(s) for s in simgr.deadended)
    runs = replay(r.tests, b, jobs=2)
    assert runs and all(x.status == "ok" for x in runs)


@pytest.mark.parametrize("opt", ["O2", "O0"])
def test_a_childs_exit_status_pipe_and_read_offset_reach_its_parent(opt):
    # the program's "bomb" needs all three processes' work
    _reaches_every_native_outcome(f"children_{opt}", ALPHABET, 3, (3, b"class 1 value 1 more 1\n"), 7)


def test_a_file_the_child_wrote_is_read_by_its_parent():
    b = str(BUILD / "childfile_O2")
    simgr, r, native = users_arg_run(b, b"0379", 2)
    assert {o[0] for o in native} == {0, 1}
    assert _outcomes(simgr) == native
    assert not r.errors
    assert all(x.status == "ok" for x in replay(r.tests, b, jobs=2))


def test_merged_runs_keep_the_child_processes_work():
    """Merging with quantifiers at the child's function, and if-then-else merging at main, whose
    states' stdin packets differ in width (angr's merge of those failed inside claripy)."""
    b = str(BUILD / "children_O0")
    simgr, _ = users_run(b, ALPHABET, 3, merge_points=["classify"])
    assert _outcomes(simgr) == outcome_set_over(b, [ALPHABET] * 3)
    r = explore(b, 3, merge="ite", merge_points=["main"], tests=True)
    assert r.stats["paths"] >= 7 and not r.errors
    assert all(x.status == "ok" for x in replay(r.tests, b, jobs=2))


def _stream_state(widths):
    st = angr.SimState(arch="AMD64")
    st.posix.stdin = SimPackets("stdin", content=[(claripy.BVS("p", w), w // 8) for w in widths])
    return st


def test_states_of_different_processes_or_packet_widths_are_not_merged():
    a, b = _stream_state([8, 8]), _stream_state([8, 16])
    with pytest.raises(SimMergeError):
        _merge([a, b], [claripy.BoolS("c"), claripy.BoolS("d")], None)
    child = a.copy()
    child.globals["angr_ram_parents"] = ((a, 1338),)
    assert process_key(child) != process_key(a)
    assert process_key(child.copy()) == process_key(child)        # the same parent: mergeable


@pytest.mark.parametrize("opt", ["O2", "O0"])
def test_shared_memory_carries_the_childs_result_to_its_parent(opt):
    """A segment attached before fork and one created by key in the child (angr: stubs, 59 false
    error paths and every test mismatched)."""
    _reaches_every_native_outcome(f"sharedseg_{opt}", b"x7a", 2, (1, b"X seven\n"), 6)


def test_a_segment_keeps_its_contents_across_mappings():
    st = angr.SimState(arch="AMD64")
    st.globals["angr_ram_shm"] = ((FIRST_ID, 0, 4, None, False),)
    st.globals["angr_ram_shm_at"] = ((claripy.BVV(0x10000, 64), FIRST_ID),)
    st.memory.store(0x10000, claripy.BVV(b"abcd"))
    parent = angr.SimState(arch="AMD64")
    parent.globals["angr_ram_shm_at"] = ((claripy.BVV(0x20000, 64), FIRST_ID),)
    sync_segments(st, parent)
    assert parent.solver.eval(parent.memory.load(0x20000, 4), cast_to=bytes) == b"abcd"


@pytest.mark.parametrize("opt", ["O2", "O0"])
def test_values_passed_through_the_shells_echo_come_back(opt):
    """popen("echo N") read with fgets, system("echo -n XY > file") read with fscanf."""
    _reaches_every_native_outcome(f"shellecho_{opt}", b"71a", 2, (1, b"1 0 0 17\n"), 8)


def test_commands_the_model_does_not_run_are_named_as_stubs():
    st = angr.SimState(arch="AMD64")
    for text, expected in ((b"echo  a   b\n", (b"a b\n", None, False)), (b"echo -n x >> out", (b"x", b"out", True)),
                           (b"echo", (b"\n", None, False))):
        st.memory.store(0x1000, claripy.BVV(text + b"\0"))
        data, target, append = echo(st, claripy.BVV(0x1000, 64))
        assert (st.solver.eval(data, cast_to=bytes), target, append) == expected
    for text in (b"ls -l", b"echo $HOME", b"echo a; rm x", b"echo 'q'", b"echo a\necho b"):
        st.memory.store(0x1000, claripy.BVV(text + b"\0"))
        assert echo(st, claripy.BVV(0x1000, 64)) is None, text
    x = claripy.BVS("x", 8)
    st.memory.store(0x1000, claripy.Concat(claripy.BVV(b"echo "), x, claripy.BVV(0, 8)))
    assert echo(st, claripy.BVV(0x1000, 64)) is None            # x may be a space, a quote, ...
    st.add_constraints(x >= ord("0"), x <= ord("9"))
    assert echo(st, claripy.BVV(0x1000, 64))[0] is not None


@pytest.mark.parametrize("opt", ["O2", "O0"])
def test_a_crashed_childs_parent_goes_on_and_sees_the_signal(opt):
    """The child's NULL write and abort are error paths (in a child process: natively unobservable
    from outside, so their tests are unchecked); the parent goes on, WIFSIGNALED with SIGSEGV or
    SIGABRT. Before, the parent's paths were lost with the child's."""
    b = str(BUILD / f"childcrash_{opt}")
    simgr, r = users_run(b, b"naex", 1)
    native = outcome_set_over(b, [b"naex"] * 1)
    assert native == {(0, b"signal 11\n"), (0, b"signal 6\n"), (0, b"exit 3\n"), (0, b"exit 0\n")}
    assert _outcomes(simgr) == native
    assert sorted(k for k, _, _ in r.errors) == ["abort", "null-dereference"]
    assert all(m.endswith(IN_CHILD) for _, m, _ in r.errors)
    runs = replay(r.tests, b, jobs=2)
    assert sorted(x.status for x in runs) == ["ok"] * 4 + ["unchecked"] * 2
