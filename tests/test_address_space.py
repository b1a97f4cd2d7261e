"""Address space: disjoint objects, substitution-only solver view, relocation and copy-on-write."""

import claripy
import pytest

from angr_ram.memory.chunk_layout import SIZE_FIELD


def alloc(state, n, zero=True):
    from angr_ram.procedures.heap import allocate
    return allocate(state, n, zero)


def test_objects_are_disjoint_with_a_chunk_header_between(ram_state):
    """(A script's technique lays objects out as glibc's chunks; under heap_overflows="stop" they
    are red zones apart: tests/test_heap_overflows.py.)"""
    objs = [alloc(ram_state, n) for n in (1, 16, 100, 7, 4096)]
    spans = sorted((o.addr, o.addr + o.size) for o in objs)
    for (_, e1), (s2, _) in zip(spans, spans[1:], strict=False):
        assert s2 >= e1 + SIZE_FIELD


def test_program_sees_symbols_solver_sees_hidden_addresses(ram_state):
    o = alloc(ram_state, 32)
    p = o.base
    assert p.symbolic and p.op == "BVS"
    assert ram_state.solver.eval(p) == o.addr
    assert ram_state.solver.eval(p + 8) == o.addr + 8
    assert ram_state.solver.is_false(p == 0)
    q = alloc(ram_state, 32).base
    assert ram_state.solver.is_false(p == q)
    assert ram_state.solver.is_true(p != q)
    x = claripy.BVS("x", 64)
    ram_state.add_constraints(claripy.ULT(x, 4), p + x * 8 == q - 32 + x * 8 + 32 - (q - p))
    assert ram_state.solver.satisfiable()
    assert ram_state.solver.max(p + x * 8) == o.addr + 24


def test_relocation_rewrites_no_constraint_and_keeps_answers(ram_state):
    o = alloc(ram_state, 16)
    x = claripy.BVS("x", 64)
    c = claripy.ULT(o.base + x, o.base + 4)
    ram_state.add_constraints(c)
    before = list(ram_state.solver.constraints)
    assert any(o.base.variables <= k.variables for k in before)  # stored unsubstituted
    sat_before = ram_state.solver.satisfiable(extra_constraints=[x == 3])
    new = ram_state.ram.relocate(o.id)
    assert ram_state.solver.constraints == before  # nothing rewritten
    assert ram_state.solver.eval(o.base) == new
    assert ram_state.solver.satisfiable(extra_constraints=[x == 3]) == sat_before
    assert not ram_state.solver.satisfiable(extra_constraints=[x == 5])


def test_relocation_to_overlapping_address_is_refused(ram_state):
    a, b = alloc(ram_state, 64), alloc(ram_state, 64)
    with pytest.raises(ValueError):
        ram_state.ram.relocate(b.id, a.addr + 8)


def test_relocate_into_segment_keeps_contents_and_pointers(ram_state):
    a, b = alloc(ram_state, 16), alloc(ram_state, 16)
    ram_state.memory.store(a.base + 4, claripy.BVV(0x11223344, 32), endness="Iend_LE")
    ram_state.memory.store(b.base, claripy.BVV(0x55, 8))
    seg = alloc(ram_state, 32)
    ram_state.ram.relocate_into(a.id, seg.id, 0)
    ram_state.ram.relocate_into(b.id, seg.id, 16)
    assert ram_state.solver.eval(b.base) == seg.addr + 16
    v = ram_state.memory.load(a.base + 4, 4, endness="Iend_LE")
    assert ram_state.solver.eval(v) == 0x11223344
    assert ram_state.solver.eval(ram_state.memory.load(b.base, 1)) == 0x55
    i = claripy.BVS("i", 64)
    ram_state.add_constraints(claripy.ULT(i, 2))
    p = claripy.If(i == 0, a.base + 4, b.base)  # one pointer into two objects, now one segment
    vals = set(ram_state.solver.eval_upto(ram_state.memory.load(p, 1), 4))
    assert vals == {0x44, 0x55}


def test_copies_share_objects_until_written(ram_state):
    o = alloc(ram_state, 8)
    child = ram_state.copy()
    assert child.ram.objects[o.id] is ram_state.ram.objects[o.id]
    child.memory.store(o.base, claripy.BVV(7, 8))
    assert child.ram.objects[o.id] is not ram_state.ram.objects[o.id]
    assert child.solver.eval(child.memory.load(o.base, 1)) == 7
    assert ram_state.solver.eval(ram_state.memory.load(o.base, 1)) == 0


def test_angr_brk_heap_maps_only_a_small_region():
    """angr's own heap would map 2048 pages that every state copy walks; angr-ram maps 16, and
    __libc_start_main's allocations (ctype tables) still work."""
    import os

    from angr_ram.memory.fixed_regions import BRK_HEAP_MAPPED
    from angr_ram.run.runner import load_project, make_state
    from angr_ram.run.technique import RelocatableMemory

    from .conftest import BUILD

    proj = load_project(os.fspath(BUILD / "ptrarray_O0"))
    simgr = proj.factory.simulation_manager(make_state(proj, 2))
    simgr.use_technique(RelocatableMemory())
    for _ in range(4):
        simgr.step()
    state = simgr.active[0]
    assert state.heap.heap_size == BRK_HEAP_MAPPED
    assert state.heap.heap_location > state.heap.heap_base        # angr allocated its tables
    assert len(state.memory._pages) < 200


@pytest.mark.parametrize("size", [1, 4])
def test_a_store_through_a_symbolic_index_into_the_stack_is_one_span_with_each_candidates_bytes(ram_state, size):
    """``buf[i] = v`` with ``i`` one of 0..39 (a string search's result): the bytes of every
    candidate are ``If(i == k, v, old)``, one store of the span (not forty conditional stores):
    each value of ``i`` reads back ``v`` at ``buf + i*size`` and the old bytes everywhere else,
    little-endian as the program stores it."""
    import claripy

    from angr_ram.memory import fixed_regions
    st = ram_state
    buf = st.regs.rsp - 0x200
    base = st.solver.eval(buf)
    old = bytes(range(0x40, 0x40 + 40 * size))
    st.memory.store(base, old)
    i = claripy.BVS("i", 64)
    st.solver.add(claripy.ULT(i, 40))
    calls = []
    orig = fixed_regions.FixedRegionMixin._span_store
    fixed_regions.FixedRegionMixin._span_store = staticmethod(lambda *a: (calls.append(1), orig(*a))[1])
    try:
        st.memory.store(buf + i * size, claripy.BVV(0xA1B2C3D4 & ((1 << 8 * size) - 1), 8 * size), endness="Iend_LE")
    finally:
        fixed_regions.FixedRegionMixin._span_store = staticmethod(orig)
    assert calls == [1]
    want_v = (0xA1B2C3D4 & ((1 << 8 * size) - 1)).to_bytes(size, "little")
    whole = st.memory.load(base, 40 * size)
    for k in (0, 1, 17, 39):
        got = st.solver.eval(whole, cast_to=bytes, extra_constraints=[i == k])
        assert got == old[:k * size] + want_v + old[(k + 1) * size:]
