"""Heap overflows (angr_ram.memory.heap_overflows): reported in both modes; under ``continue`` (a
script's default) the path goes on over glibc's chunk layout and the overflow reaches the next
chunk as natively; under ``stop`` (the CLI's and explore()'s) the path ends at the error."""

import os
import subprocess

import angr
import claripy
import pytest

import angr_ram
from angr_ram.core.errors import MemoryFault
from angr_ram.memory.address_space import RED_ZONE
from angr_ram.memory.chunk_layout import chunk_span
from angr_ram.procedures.heap import allocate
from angr_ram.run.runner import explore, load_project, make_state

from .conftest import BUILD


def _script(binary, stdin_len=None, **options):
    """A user's script: its own entry state (stdin one BVS), the technique attached, run()."""
    proj = angr.Project(os.fspath(binary), auto_load_libs=False)
    kw = {}
    data = None
    if stdin_len:
        data = claripy.BVS("data", stdin_len * 8)
        kw["stdin"] = angr.SimFileStream(name="stdin", content=data, size=stdin_len, has_end=True)
    simgr = proj.factory.simulation_manager(proj.factory.entry_state(**kw))
    simgr.use_technique(angr_ram.RelocatableMemory(**options))
    simgr.run()
    return simgr, data


def _native(binary, stdin: bytes) -> tuple[int, bytes]:
    r = subprocess.run([os.fspath(binary)], input=stdin, capture_output=True, timeout=10)
    return r.returncode, r.stdout


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_a_scripts_overflow_reaches_the_next_chunk_with_its_report_beside_it(opt):
    """48 bytes read into a 24-byte record: the path goes on, the next record holds input bytes
    32.., both outcomes are found and replay natively, and the overflow is one error path."""
    binary = BUILD / f"heapspill_{opt}"
    simgr, data = _script(binary, 48)
    got = {}
    for s in simgr.deadended:
        stdin = s.solver.eval(data, cast_to=bytes)
        got[s.posix.dumps(1)] = stdin
        assert _native(binary, stdin)[1] == s.posix.dumps(1)
    assert set(got) == {b"fine\n", b"corrupted\n"}
    assert got[b"corrupted\n"][32:36] == b"evil"
    errors = simgr.stashes["memory_errors"]
    assert [e.ram.error.kind for e in errors] == ["out-of-bounds"]
    assert "runs past heap object #1 (size 24" in errors[0].ram.error.message


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_a_loop_past_an_object_forks_once_and_writes_the_neighbour_as_natively(opt):
    binary = BUILD / f"heaploop_{opt}"
    simgr, _ = _script(binary)
    assert [s.posix.dumps(1) for s in simgr.deadended] == [_native(binary, b"")[1]] == [b"zzzzzzzz\n"]
    assert len(simgr.stashes["memory_errors"]) == 1
    assert angr_ram.stats(simgr)["forks"] == 1


def test_under_stop_and_from_the_cli_the_overflow_ends_the_path():
    binary = BUILD / "heapspill_O0"
    simgr, _ = _script(binary, 48, heap_overflows="stop")
    assert not simgr.deadended
    assert [e.ram.error.kind for e in simgr.stashes["memory_errors"]] == ["out-of-bounds"]
    res = explore(os.fspath(binary), 48)          # auto is stop under explore() and the CLI
    assert (res.outcomes, [k for k, _, _ in res.errors]) == (set(), ["out-of-bounds"])
    res = explore(os.fspath(binary), 48, heap_overflows="continue")
    assert {o[0] for o in res.outcomes} == {0, 2} and sum(res.endings.values()) == 2
    assert [k for k, _, _ in res.errors] == ["out-of-bounds"]


def _state(mode):
    proj = load_project(os.fspath(BUILD / "heapspill_O0"))
    simgr = proj.factory.simulation_manager(make_state(proj, 0))
    simgr.use_technique(angr_ram.RelocatableMemory(heap_overflows=mode))
    return simgr.active[0]


def test_heap_objects_are_glibcs_chunks_apart_under_continue_and_red_zones_apart_under_stop():
    sizes = (1, 16, 24, 25, 100, 7, 4096)
    for mode in ("continue", "stop"):
        st = _state(mode)
        objs = [allocate(st, n, True) for n in sizes]
        for o, nxt in zip(objs, objs[1:], strict=False):
            if mode == "continue":
                assert nxt.addr - o.addr == chunk_span(o.size)
            else:
                assert nxt.addr >= o.addr + o.size + RED_ZONE
    assert [chunk_span(n) for n in sizes] == [32, 32, 32, 48, 112, 32, 4112]


def test_a_pointer_based_on_one_object_that_lands_in_another_is_an_overflow():
    """Under stop the red zone no longer hides an overflow that reaches the next object: the
    access based on the first object's base faults. Under continue it lands in the neighbour (as
    natively) and the fault is recorded beside the state (outside a step nothing forks)."""
    st = _state("stop")
    a, b = allocate(st, 24, True), allocate(st, 24, True)
    past = b.addr - a.addr
    st.memory.store(b.base, claripy.BVV(0x41, 8))           # b's own pointer: fine
    with pytest.raises(MemoryFault, match="runs past heap object #1"):
        st.memory.store(a.base + past, claripy.BVV(0x42, 8))
    st = _state("continue")
    a, b = allocate(st, 24, True), allocate(st, 24, True)
    assert b.addr - a.addr == 32
    st.memory.store(a.base + 34, claripy.BVV(0x43, 8))
    assert st.solver.eval(st.memory.load(b.base + 2, 1)) == 0x43
    assert st.solver.eval(st.memory.load(a.base + 26, 1)) == 0        # the bytes between: plain memory
    assert [f.kind for f in st.ram.faults_outside_step] == ["out-of-bounds"]     # once per place and object
    with pytest.raises(MemoryFault, match="out-of-bounds"):      # a megabyte off: a wild access still faults
        st.memory.store(a.base + (1 << 20), claripy.BVV(0x44, 8))

