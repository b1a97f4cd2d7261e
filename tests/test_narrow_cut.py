"""Narrow cuts (issue: the same speed however angr-ram is driven): wide inputs folded into a narrow
index are solved by evaluating the slice over the joint image of its cut, exactly as z3 answers.

Images are checked against brute force over every input assignment, answers against z3 on random
let-bound chains whose index is folded from one wide ``claripy.BVS`` and from separate bytes, and
the mechanism end to end through a user's script (one wide BVS, angr's default options)."""

import itertools
import os
import random

import angr
import claripy
import numpy as np
import pytest

import angr_ram
from angr_ram.memory.object_store import select
from angr_ram.run.runner import summarize
from angr_ram.solver import columns
from angr_ram.solver import enumeration as en
from angr_ram.solver import evaluator as evl
from angr_ram.solver import joint_image as ji
from angr_ram.solver import narrow_cut as nc
from angr_ram.solver.bit_extraction import canonical

from .conftest import BUILD


def _brute(expr, variables) -> set:
    """Values of ``expr`` over every assignment of ``variables``: the plain enumerator, row by row
    over all of them (no products, no demanded bits)."""
    ev = evl.Evaluator(variables, {})
    return {int(v) for v in np.unique(np.broadcast_to(ev.ev(expr), (ev.size,)))}


def _fold_ops(rng, parts):
    acc = parts[0]
    for p in parts[1:]:
        acc = rng.choice([acc ^ p, acc + p, acc | p, acc * p])
    return acc


@pytest.mark.parametrize("seed", range(6))
def test_images_equal_brute_force(seed):
    """Masked folds of independent 4-bit inputs (xor, add, or, mul, shifts, extracts, concats):
    the image is every value brute force finds, no more, no fewer."""
    rng = random.Random(seed)
    xs = [claripy.BVS(f"x{k}", 4) for k in range(5)]
    parts = [claripy.ZeroExt(12, x) << rng.randrange(3) for x in xs]
    e = _fold_ops(rng, parts) & claripy.BVV(rng.choice([0x3F, 0xFF, 0x7F0, 0x1E]), 16)
    e = rng.choice([e, claripy.Concat(claripy.Extract(3, 0, e), claripy.Extract(11, 8, e)), claripy.LShR(e, 2)])
    with evl.deep_recursion():
        got = {int(v) for v in ji.image(e)}
        assert got == _brute(e, xs)


def test_wide_variable_bytes_are_independent():
    """The bytes of one wide BVS count as separate inputs: a xor of two of its bytes has 8 used
    bits per byte, and its image is computed by product, not by 2^32 assignments."""
    s = claripy.BVS("stdin", 32)
    e = claripy.Extract(7, 0, s) ^ claripy.Extract(23, 16, s)
    assert nc.used_bits(e) == {s.args[0]: 0x00FF00FF}
    assert nc.used_bits(claripy.ZeroExt(24, e) & 0x7) == {s.args[0]: 0x00070007}
    assert len(ji.image(claripy.ZeroExt(24, e) & 0x7)) == 8


def _chain(rng, idx, hops, table_len=64):
    table = [rng.randrange(table_len) for _ in range(table_len)]
    cons, v = [], idx
    for k in range(hops):
        sel = select(claripy.ZeroExt(8, v), list(range(table_len)), lambda i: claripy.BVV(table[i], 8),
                     claripy.BVV(0, 8))
        let = claripy.BVS(f"ram_let_{k}", 8, explicit_name=True)
        cons.append(let == sel)
        v = (let + claripy.BVV(k, 8)) & claripy.BVV(table_len - 1, 8)
    return cons, v


@pytest.mark.parametrize("wide", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_answers_over_a_cut_equal_z3(seed, wide):
    """A 4-bit index folded from 32 input bits, three let-bound hops: satisfiability, value sets
    and extrema over the cut equal z3's; a constraint on one input byte restricts the image (the
    byte's bits are enumerated together with the index's: 20 bits)."""
    rng = random.Random(seed)
    if wide:
        s = claripy.BVS("stdin", 32)
        b = [claripy.Extract(8 * k + 7, 8 * k, s) for k in range(4)]
    else:
        b = [claripy.BVS(f"in{k}", 8) for k in range(4)]
    idx = (b[0] ^ b[2] ^ (b[1] + b[3])) & claripy.BVV(15, 8)
    cons, v = _chain(rng, idx, 3)
    cons.append(claripy.ULT(b[rng.randrange(4)], rng.randrange(30, 250)))
    goal = v == rng.randrange(64)
    z = claripy.Solver()
    z.add(cons)
    with evl.deep_recursion():
        assert en.answer(cons, "satisfiable", (), {}) == z.satisfiable()
        got = en.answer(cons, "satisfiable", (), {"extra_constraints": [goal]})
        assert got == z.satisfiable(extra_constraints=[goal])
        vals = en.answer(cons, "eval", (v, 100), {})
        assert vals is not en.UNHANDLED
        assert set(vals) == set(z.eval(v, 100))
        assert en.answer(cons, "max", (v,), {}) == z.max(v)
        assert en.answer(cons, "min", (v,), {}) == z.min(v)


def test_a_cut_too_wide_to_enumerate_is_left_to_z3():
    """Operands that share 32 input bits (x * x + x), or a constraint on a byte whose bits join the
    24 bits of a 6-bit index: no exact image within the enumeration bound, so UNHANDLED (z3
    answers), never a guess."""
    s = claripy.BVS("w", 32)
    cons, v = _chain(random.Random(1), claripy.ZeroExt(2, claripy.Extract(31, 26, s * s + s)), 2)
    with evl.deep_recursion():
        assert en.answer(cons, "eval", (v, 10), {}) is en.UNHANDLED
    # the low bits of x * x + x depend on the low bits of x alone: six bits enumerated, exact
    cons, v = _chain(random.Random(1), claripy.ZeroExt(2, claripy.Extract(5, 0, s * s + s)), 2)
    z = claripy.Solver()
    z.add(cons)
    with evl.deep_recursion():
        assert set(en.answer(cons, "eval", (v, 100), {})) == set(z.eval(v, 100))
    b = [claripy.BVS(f"in{k}", 8) for k in range(4)]
    cons, v = _chain(random.Random(2), (b[0] ^ b[2] ^ (b[1] + b[3])) & claripy.BVV(63, 8), 2)
    with evl.deep_recursion():
        assert en.answer(cons, "eval", (v, 100), {}) is not en.UNHANDLED
    # the byte's 8 bits and the index's 24 share in0: through ports (in0, in2's and in1 + in3's
    # low six bits: 2^20 rows) the answer is exact
    cons = [*cons, claripy.ULT(b[0], 100)]
    z = claripy.Solver()
    z.add(cons)
    with evl.deep_recursion():
        assert set(en.answer(cons, "eval", (v, 100), {})) == set(z.eval(v, 100))
    # a port search that ends in one variable shared whole leaves the slice to z3
    w = claripy.BVS("w2", 32)
    cons, v = _chain(random.Random(3), claripy.Extract(7, 0, w * w + (w >> 7)) & claripy.BVV(63, 8), 2)
    with evl.deep_recursion():
        assert en.answer(cons, "eval", (v, 100), {}) is en.UNHANDLED


def _random_term(rng, pool):
    x, y = rng.choice(pool), rng.choice(pool)
    if y.length != x.length:
        y = claripy.ZeroExt(x.length - y.length, y) if y.length < x.length else claripy.Extract(x.length - 1, 0, y)
    pick = rng.randrange(8)
    if pick == 0:
        e = x ^ y
    elif pick == 1:
        e = x | y
    elif pick == 2:
        e = x + y
    elif pick == 3:
        e = x << rng.randrange(1, 4)
    elif pick == 4:
        e = claripy.LShR(x, rng.randrange(1, 4))
    elif pick == 5:
        e = claripy.Concat(x, y) if x.length + y.length <= 16 else claripy.Extract(11, 0, claripy.Concat(x, y))
    elif pick == 6:
        e = claripy.If(claripy.ULT(x, rng.randrange(256)), x, y)
    else:
        e = x & y
    return claripy.ZeroExt(16 - e.length, e) if e.length < 16 else e


@pytest.mark.parametrize("seed", range(8))
def test_rows_through_ports_equal_brute_force(seed):
    """Nodes that share input bits (bytes and nibbles of one wide BVS and a 4-bit variable, mixed by
    xor, add, shifts, concatenations, selections and low masks, with a constraint on a byte):
    where the port search finds disjoint ports, the rows computed over the product of their images
    are exactly the rows of brute force over the 20 input bits."""
    rng = random.Random(seed)
    used = 0
    for _ in range(40):
        w, a = claripy.BVS("w", 16), claripy.BVS("a", 4)
        pool = [claripy.Extract(7, 0, w), claripy.Extract(15, 8, w), claripy.Extract(3, 0, w),
                claripy.Extract(11, 4, w), claripy.ZeroExt(4, a)]
        for _ in range(rng.randrange(2, 6)):
            pool.append(_random_term(rng, pool))
        nodes = []
        for _ in range(rng.randrange(1, 4)):
            e = claripy.ZeroExt(16, rng.choice(pool[5:]))
            if rng.random() < 0.6:
                e = e & claripy.BVV((1 << rng.randrange(1, 12)) - 1, 32)
            if rng.random() < 0.3:
                e = e ^ (claripy.ZeroExt(24, rng.choice(pool[:2])) << 8)
            nodes.append(e)
        filters = [claripy.ULT(rng.choice(pool[:4]), rng.randrange(1, 200))] if rng.random() < 0.4 else []
        if rng.random() < 0.4:          # a constraint over the mixed terms (perhaps a function of ports)
            t = rng.choice(pool[5:])
            filters.append(claripy.ULT(t & ((1 << rng.randrange(1, t.length + 1)) - 1), rng.randrange(1, 64)))
        ports = ji._ports([canonical(x) for x in nodes])
        if ports is not None:           # pairwise disjoint, and every input bit of the nodes reaches one
            pb = [nc.used_bits(p) for p in ports]
            assert not any(ji._overlap(x, y) for x, y in itertools.combinations(pb, 2)), ports
            have = ji._merged(ports)
            canon = ji._merged([canonical(x) for x in nodes])
            assert all(m & ~have.get(n, 0) == 0 for n, m in canon.items()), ports
        with evl.deep_recursion():
            ev = evl.Evaluator([w, a], {})
            mask = np.ones(ev.size, dtype=bool)
            for c in filters:
                mask &= np.broadcast_to(ev.bool(c), mask.shape)
            want = columns.unique_rows([np.broadcast_to(np.asarray(ev.ev(x), dtype=np.uint64), mask.shape)[mask]
                                   for x in nodes])
            try:
                got = ji._through_ports(nodes, filters, 20)
            except nc.NoCut:
                continue
        used += 1
        assert got.shape == want.shape and (got == want).all(), (nodes, filters)
    assert used >= 10


def test_an_index_folded_from_eight_bytes_is_enumerated_through_ports():
    """The shape gcc -O2 gives an 11-bit index xor-folded from a 64-bit input: the index as
    ``(0 .. odd bytes' xor .. even bytes' xor) & 0x7ff`` and its top three bits as an extraction of
    the odd bytes elsewhere. The cut nodes share 44 input bits; their ports (the even bytes' xor,
    the odd bytes' low three bits) have 2048 value pairs, so hops over the index are answered
    without z3 and as z3 answers them."""
    s = claripy.BVS("stdin", 64)
    byte = [claripy.Extract(63 - 8 * k, 56 - 8 * k, s) for k in range(8)]
    even = byte[0] ^ byte[2] ^ byte[4] ^ byte[6]
    odd = byte[1] ^ byte[3] ^ byte[5] ^ byte[7]
    idx = claripy.Concat(claripy.BVV(0, 16), odd, even) & 0x7FF
    top = claripy.Extract(2, 0, odd)
    assert ji._width(ji._merged([idx, top])) == 44
    rng = random.Random(5)
    table = [rng.randrange(2048) for _ in range(2048)]
    let = claripy.BVS("ram_let_port", 16, explicit_name=True)
    sel = select(claripy.Extract(10, 0, idx), list(range(2048)), lambda i: claripy.BVV(table[i], 16),
                 claripy.BVV(0, 16))
    cons = [let == sel, claripy.ULT(claripy.ZeroExt(13, top), 6)]
    v = let + claripy.Extract(15, 0, idx)
    with evl.deep_recursion():
        got = en.answer(cons, "eval", (v, 3000), {})
        assert got is not en.UNHANDLED
        # the values by hand: every index whose top three bits are below 6
        assert set(got) == {(table[i] + i) & 0xFFFF for i in range(2048) if i >> 8 < 6}
        # a model (what a test's input is made from): a satisfying row of the cut, then z3 on the
        # input-only problem that pins the cut nodes to it; the input drives the path by hand
        target = got[len(got) // 3]
        (model,) = en.answer([*cons, v == target], "eval", (s, 1), {})
        data = model.to_bytes(8, "big")
        e, o = data[0] ^ data[2] ^ data[4] ^ data[6], data[1] ^ data[3] ^ data[5] ^ data[7]
        i = ((o << 8) | e) & 0x7FF
        assert i >> 8 < 6 and (table[i] + i) & 0xFFFF == target
        missing = next(t for t in range(4096) if t not in got)
        with pytest.raises(claripy.errors.UnsatError):
            en.answer([*cons, v == missing], "eval", (s, 1), {})
        for target in (got[len(got) // 2], missing):
            z = claripy.Solver()
            z.add(cons)
            goal = [v == target]
            assert en.answer(cons, "satisfiable", (), {"extra_constraints": goal}) == z.satisfiable(goal)


def test_printable_bytes_of_a_fold_restrict_their_ports_images():
    """What choosing a readable test input asks: the same 8-byte fold with every byte constrained
    to 'A'..'Z'. Each byte's constraint shares bits with one port only (the even bytes' xor, the
    odd bytes' low bits), so it restricts that port's image; the constraint on the index's top
    bits is a function of a port and is checked on the rows. The values equal those computed by
    hand, and the model is printable and drives the path."""
    s = claripy.BVS("stdin", 64)
    byte = [claripy.Extract(63 - 8 * k, 56 - 8 * k, s) for k in range(8)]
    odd = byte[1] ^ byte[3] ^ byte[5] ^ byte[7]
    idx = claripy.Concat(claripy.BVV(0, 16), odd, byte[0] ^ byte[2] ^ byte[4] ^ byte[6]) & 0x7FF
    rng = random.Random(7)
    table = [rng.randrange(2048) for _ in range(2048)]
    let = claripy.BVS("ram_let_print", 16, explicit_name=True)
    sel = select(claripy.Extract(10, 0, idx), list(range(2048)), lambda i: claripy.BVV(table[i], 16),
                 claripy.BVV(0, 16))
    cons = [let == sel, claripy.ULT(claripy.ZeroExt(13, claripy.Extract(2, 0, odd)), 6)]
    cons += [claripy.And(claripy.UGE(b, 0x41), claripy.ULE(b, 0x5A)) for b in byte]
    v = let + claripy.Extract(15, 0, idx)
    letters = range(0x41, 0x5B)
    two = {a ^ b for a in letters for b in letters}
    four = {a ^ b for a in two for b in two}
    want = {(table[i] + i) & 0xFFFF for o in four for e in four for i in [((o << 8) | e) & 0x7FF] if i >> 8 < 6}
    with evl.deep_recursion():
        got = en.answer(cons, "eval", (v, 5000), {})
        assert got is not en.UNHANDLED and set(got) == want
        target = sorted(want)[len(want) // 2]
        (model,) = en.answer([*cons, v == target], "eval", (s, 1), {})
    data = model.to_bytes(8, "big")
    assert all(0x41 <= c <= 0x5A for c in data)
    e, o = data[0] ^ data[2] ^ data[4] ^ data[6], data[1] ^ data[3] ^ data[5] ^ data[7]
    i = ((o << 8) | e) & 0x7FF
    assert i >> 8 < 6 and (table[i] + i) & 0xFFFF == target


@pytest.mark.parametrize("seed", range(4))
def test_a_chain_over_a_wide_inputs_bytes_is_enumerated_through_its_bytes(seed):
    """What strtod's merged result looks like: an if-then-else chain over many conjunctions of a
    wide input's bytes (more terms than the port search keeps), each byte kept to a few values.
    The ports are the bytes, each byte's constraint restricts its own port's image, and the rows
    are exactly the chain's values over the product of the bytes' values (32 input bits, too many
    to enumerate as bits)."""
    rng = random.Random(seed)
    s = claripy.BVS("stdin", 32)
    byte = [claripy.Extract(31 - 8 * k, 24 - 8 * k, s) for k in range(4)]
    alphabet = [rng.sample(range(0x30, 0x3A), 4) for _ in range(4)]
    filters = [claripy.Or(*[b == c for c in a]) for b, a in zip(byte, alphabet, strict=True)]
    arms = [({k: rng.choice(alphabet[k]) for k in rng.sample(range(4), rng.randrange(1, 5))}, rng.randrange(1 << 40))
            for _ in range(rng.randrange(70, 90))]
    default = rng.randrange(1 << 40)
    chain = claripy.BVV(default, 64)
    for pattern, v in reversed(arms):
        chain = claripy.If(claripy.And(*[byte[k] == c for k, c in pattern.items()]), claripy.BVV(v, 64), chain)

    def value(t):
        return next((v for pattern, v in arms if all(t[k] == c for k, c in pattern.items())), default)

    want = sorted({value(t) for t in itertools.product(*alphabet)})
    count = (len({v for _, v in arms} | {default}) - 1).bit_length()
    with evl.deep_recursion():
        assert nc.find_cut([chain == 0], {}) == {chain.hash(): chain}
        assert nc.effective_bits(chain) == count      # counted by its choices, not its 64 bits
        rows = ji.joint_image([chain], filters)
    assert sorted(int(x) for x in rows[:, 0]) == want


def _script(binary: str, nbytes: int, wide: bool):
    """The way an angr user drives it: their own entry state and angr's default options."""
    proj = angr.Project(binary, auto_load_libs=False)
    content = (claripy.BVS("stdin", 8 * nbytes) if wide
               else claripy.Concat(*[claripy.BVS(f"b{k}", 8) for k in range(nbytes)]))
    st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=content, size=nbytes, has_end=True))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    return summarize(simgr, tech, tests=True)


def _native_hops(binary: str, nbytes: int) -> set:
    """The program's exit codes over inputs that reach every index (the fold is a xor of bytes)."""
    from .groundtruth import outcome_set_over
    return outcome_set_over(binary, [range(256), range(8)] + [[0]] * (nbytes - 2))


@pytest.mark.parametrize("prog,nbytes", [("hopsw4x3_O0", 4), ("hopsw8x8_O2", 8),
                                         pytest.param("hopsw8x3_O2", 8, marks=pytest.mark.slow),
                                         pytest.param("tablehops8_O0", 4, marks=pytest.mark.slow)])
@pytest.mark.parametrize("wide", [True, False])
def test_wide_inputs_through_table_hops_from_a_script(prog, nbytes, wide):
    """Three or eight dependent lookups from a 4- or 8-byte input, driven by a user's script: every
    native outcome, the hops answered over the cut (not by z3), tests that replay natively."""
    from .conftest import assert_tests_replay
    b = os.fspath(BUILD / prog)
    r = _script(b, nbytes, wide)
    assert r.errors == [] and r.unknown == 0
    assert r.outcomes == _native_hops(b, nbytes)
    assert r.stats["enumerated_queries"] > 0
    assert_tests_replay(b, r)
