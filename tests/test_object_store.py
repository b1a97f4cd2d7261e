"""The object store against a byte-array reference model, and its sparseness guarantees."""

import random

import claripy
import pytest

from angr_ram.memory.object_store import ObjectStore, known_alignment


def count_ifs(e) -> int:
    """Number of distinct If nodes in an AST."""
    seen, stack, n = set(), [e], 0
    while stack:
        x = stack.pop()
        if not isinstance(x, claripy.ast.Base) or x.hash() in seen:
            continue
        seen.add(x.hash())
        n += x.op == "If"
        stack.extend(x.args)
    return n


def value_under(e, assignment: dict) -> int:
    s = claripy.Solver()
    for var, val in assignment.items():
        s.add(var == val)
    vals = s.eval(e, 2)
    assert len(vals) == 1, "expression not determined by the assignment"
    return vals[0]


@pytest.mark.parametrize("seed", range(6))
def test_random_writes_and_reads_match_reference(seed):
    rng = random.Random(seed)
    size = 48
    store = ObjectStore(size)  # zero-filled, like calloc
    ref = bytearray(size)
    assignment = {}
    for step in range(10):
        n = rng.choice([1, 2, 4, 8])
        off = rng.randrange(0, size - n + 1)
        if rng.random() < 0.4:  # write at a symbolic offset whose value we fix in the assignment
            if rng.random() < 0.5:
                off -= off % n
            var = claripy.BVS(f"o{step}", 64)
            assignment[var] = off
            sym_off = var
        else:
            sym_off = off
        val = rng.randrange(0, 1 << (8 * n))
        store.write(sym_off, claripy.BVV(val, 8 * n), n)
        ref[off:off + n] = val.to_bytes(n, "big")
        # read back at a concrete and at a symbolic offset
        for _ in range(2):
            rn = rng.choice([1, 2, 4, 8])
            ro = rng.randrange(0, size - rn + 1)
            expect = int.from_bytes(ref[ro:ro + rn], "big")
            assert value_under(store.read(ro, rn), assignment) == expect
            rv = claripy.BVS("r", 64)
            got = value_under(store.read(rv, rn), {**assignment, rv: ro})
            assert got == expect


def test_concrete_reads_build_no_ite():
    s = ObjectStore(64)
    s.write(0, claripy.BVV(0x1122334455667788, 64), 8)
    s.write(8, claripy.BVS("x", 32), 4)
    v = s.read(0, 8)
    assert v.op == "BVV" and v.concrete_value == 0x1122334455667788
    assert s.read(8, 4).op == "BVS"  # the stored value itself, no Extract/Concat
    assert count_ifs(s.read(2, 8)) == 0


def test_symbolic_read_of_mostly_zero_object_is_sparse():
    s = ObjectStore(6400)  # 40 x 40 ints, calloc'd
    s.write(0, claripy.BVV(120, 32), 4)
    j = claripy.BVS("j", 64)
    v = s.read(j * 4, 4)
    assert count_ifs(v) == 1  # only the stored cell, never 1600 default cells
    sol = claripy.Solver()
    sol.add(claripy.ULT(j, 1600))
    assert set(sol.eval(v, 3)) == {0, 120}


def test_symbolic_write_then_concrete_read_sees_it():
    s = ObjectStore(16)
    i = claripy.BVS("i", 64)
    s.write(4, claripy.BVV(7, 8), 1)
    s.write(i, claripy.BVV(9, 8), 1)
    v = s.read(4, 1)
    assert value_under(v, {i: 4}) == 9
    assert value_under(v, {i: 5}) == 7
    s.write(4, claripy.BVV(1, 8), 1)  # newer concrete write wins without an ITE
    assert s.read(4, 1).op == "BVV"


def test_embed_and_resize_keep_contents():
    a = ObjectStore(16)
    a.write(0, claripy.BVV(0xAABB, 16), 2)
    seg = ObjectStore(64)
    seg.embed(a, 16)
    assert seg.read(16, 2).concrete_value == 0xAABB
    assert seg.read(18, 2).concrete_value == 0
    assert seg.read(8, 8).concrete_value == 0 and seg.read(40, 8).concrete_value == 0  # padding keeps a default
    r = a.resized(4)
    assert r.size == 4 and r.read(0, 2).concrete_value == 0xAABB


def test_uninitialized_bytes_are_consistent():
    u = claripy.BVS("u", 8 * 8)
    s = ObjectStore(8, u)
    assert s.read(0, 4) is s.read(0, 4)
    assert s.read(0, 4).variables == u.variables


def test_known_alignment():
    x = claripy.BVS("x", 64)
    assert known_alignment(x * 8) == 8
    assert known_alignment((x << 2) + 16) == 4
    assert known_alignment(x + 1) == 1
    assert known_alignment(claripy.If(x == 0, claripy.BVV(32, 64), claripy.BVV(48, 64)) + x * 4) == 4


def test_reversed_symbolic_read_selects_whole_words():
    """A little-endian symbolic-offset load of stored pointers is an if-then-else over the pointers
    themselves (no per-byte selection), equal to reversing the memory-order read."""
    store = ObjectStore(64)
    bases = [claripy.BVS(f"p{i}", 64) for i in range(8)]
    for i, p in enumerate(bases):
        store.write(i * 8, (p + 16 * i).reversed, 8, 8)     # how a little-endian store keeps it
    k = claripy.BVS("k", 64)
    off = (k & 7) << 3
    fast = store.read(off, 8, 8, reverse=True)
    assert count_ifs(fast) <= 8
    leaves = {a.op for a in fast.children_asts()}
    assert "Extract" not in leaves and "Reverse" not in leaves
    s = claripy.Solver()
    s.add(fast != store.read(off, 8, 8).reversed)
    assert not s.satisfiable()
    # the byte path (unaligned offset) reverses too
    s = claripy.Solver()
    uoff = (k & 15) + 1
    s.add(store.read(uoff, 4, 1, reverse=True) != store.read(uoff, 4, 1).reversed)
    assert not s.satisfiable()


def test_symbolic_read_after_symbolic_writes_grows_with_keys_plus_writes():
    """A hash table (4 KiB, every byte written) with entries stored at hashed offsets, then a
    lookup at a hashed offset: the writes apply once at the read offset over one selection of the
    stored bytes, so the read's size is about (stored bytes + writes) per byte read, not their
    product (libxml2's dictionary: minutes for one read)."""
    size = 4096
    store = ObjectStore(size)
    for o in range(0, size, 8):
        store.write(o, claripy.BVV(o * 0x100000001, 64), 8)     # both halves hold o
    keys = [claripy.BVS(f"h{i}", 64) for i in range(6)]
    vals = [claripy.BVS(f"v{i}", 64 if i % 2 else 32) for i in range(6)]
    for i, (k, val) in enumerate(zip(keys, vals, strict=True)):
        store.write(k * 32 % size, val, 8 if i % 2 else 4)
    store.write(64, claripy.BVV(0xABCD, 32), 4)          # a concrete write after them
    q = claripy.BVS("q", 64)
    v = store.read(q * 32 % size, 4)
    assert count_ifs(v) <= 5 * size           # the product would be over 4 * size * len(keys)
    pins = {**{k: 10 + i for i, k in enumerate(keys)},
            **{x: (0x1111111111111111 if i % 2 else 0x11111111) * (i + 1) for i, x in enumerate(vals)}}
    # slot 13: written by keys[2] (4 bytes) then keys[3] (8 bytes): the newest covering write wins
    assert value_under(v, {**pins, keys[2]: 13, keys[3]: 13, q: 13}) == 0x44444444
    assert value_under(v, {**pins, keys[3]: 12, keys[2]: 13, q: 13}) == 0x33333333
    assert value_under(v, {**pins, q: 20}) == 20 * 32         # no entry there: the stored word
    # slot 2: keys[0]'s entry, then the concrete write at offset 64 (newer) wins
    assert value_under(v, {**pins, keys[0]: 2, q: 2}) == 0xABCD
    assert value_under(v, {**pins, keys[0]: 2, q: 2, keys[1]: 2}) == 0xABCD   # still the newest
