"""Resolution of symbolic addresses into fixed regions (stack, globals): the values are enumerated
exactly while they are few, so a load reads only those addresses and needs no min/max search, and
a path whose constraints extend those of an earlier resolution of the same address reuses it."""

import claripy

from angr_ram.memory.strategies.resolution import REGION_ENUMERATION, resolve
from angr_ram.procedures.heap import allocate
from angr_ram.solver.patches import counting


def _stack_pointer(state, offsets):
    """``rsp + x`` for a fresh byte ``x`` constrained to ``offsets``; the stack bytes there hold
    ``0x40 + i`` for the i-th offset. Returns (address, x)."""
    sp = state.solver.eval(state.regs.rsp)
    x = claripy.BVS("x", 8)
    state.add_constraints(claripy.Or(*[x == o for o in offsets]))
    for i, o in enumerate(offsets):
        state.memory.store(sp + o, claripy.BVV(0x40 + i, 8))
    return sp + x.zero_extend(56), x


def _resolve(state, addr):
    return resolve(state, state.ram.substitute(addr), 1, addr)


def test_a_few_stack_values_are_enumerated_exactly_and_read_without_a_min_max_search(ram_state):
    st = ram_state
    addr, _ = _stack_pointer(st, [0, 5, 9])
    stats = st.ram.stats
    hits = _resolve(st, addr)
    assert [h.kind for h in hits] == ["region"]
    sp = st.solver.eval(st.regs.rsp)
    assert sorted(hits[0].values) == [sp, sp + 5, sp + 9]
    assert stats.resolution_queries == 3            # one model per value, then the unsat check
    with counting() as zc:
        v = st.memory.load(addr, 1)
    assert sorted(st.solver.eval_upto(v, 10)) == [0x40, 0x41, 0x42]
    # the load's own resolution (2 queries' worth of z3 checks at most: it is reused or redone),
    # but never the ~4 log2(range) checks of a min and a max
    assert zc.count <= 4


def test_more_values_than_the_enumeration_limit_fall_back_to_the_region_range(ram_state):
    st = ram_state
    offsets = list(range(0, 2 * REGION_ENUMERATION, 2))
    addr, _ = _stack_pointer(st, offsets)
    hits = _resolve(st, addr)
    assert [h.kind for h in hits] == ["region"] and hits[0].values is None
    v = st.memory.load(addr, 1)
    assert sorted(st.solver.eval_upto(v, 50)) == [0x40 + i for i in range(len(offsets))]


def test_a_path_that_extends_the_constraints_reuses_the_resolution_and_a_sibling_does_not(ram_state):
    sibling = ram_state.copy()                 # shares the run-wide record, not the constraints
    parent = ram_state
    addr, x = _stack_pointer(parent, [0, 5, 9])
    _resolve(parent, addr)
    stats = parent.ram.stats
    child = parent.copy()
    child.add_constraints(x != 5)
    before = stats.resolution_queries
    with counting() as zc:
        hits = _resolve(child, addr)
    assert stats.resolutions_reused == 1 and zc.count == 0 and stats.resolution_queries == before
    sp = child.solver.eval(child.regs.rsp)
    assert sorted(hits[0].values) == [sp, sp + 5, sp + 9]     # a superset: the load is still exact
    assert sorted(child.solver.eval_upto(child.memory.load(addr, 1), 10)) == [0x40, 0x42]
    # a state whose constraints do not extend the parent's resolves again, and finds its own values
    reused = stats.resolutions_reused
    sibling.add_constraints(claripy.ULE(x, 2))
    hits = _resolve(sibling, addr)
    assert stats.resolutions_reused == reused
    assert sorted(hits[0].values) == [sp, sp + 1, sp + 2]


def test_a_pointer_into_the_stack_or_a_heap_object_keeps_both_targets(ram_state):
    st = ram_state
    obj = allocate(st, 16, False)
    sp = st.solver.eval(st.regs.rsp)
    c = claripy.BVS("c", 1)
    addr = claripy.If(c == 1, obj.start + 4, claripy.BVV(sp + 8, 64))
    hits = _resolve(st, addr)
    assert sorted(h.kind for h in hits) == ["object", "region"]
    region = next(h for h in hits if h.kind == "region")
    assert region.values == [sp + 8]
