"""Small-domain enumeration answers exactly what z3 answers, on random let-bound table chains."""

import random

import claripy
import numpy as np
import pytest

from angr_ram.memory.object_store import select
from angr_ram.solver import columns
from angr_ram.solver import enumeration as en
from angr_ram.solver import evaluator as evl

OPS = ("add", "sub", "xor", "and", "or", "mul", "shl", "lshr", "sdiv", "srem", "rotl")


def rand_expr(rng, leaves, depth):
    if depth == 0 or rng.random() < 0.3:
        leaf = rng.choice(leaves)
        return leaf if rng.random() < 0.8 else claripy.BVV(rng.randrange(256), 8)
    a, b = rand_expr(rng, leaves, depth - 1), rand_expr(rng, leaves, depth - 1)
    op = rng.choice(OPS)
    return {"add": a + b, "sub": a - b, "xor": a ^ b, "and": a & b, "or": a | b, "mul": a * b,
            "shl": a << (b & 7), "lshr": claripy.LShR(a, b & 7), "sdiv": a.SDiv(b | 1), "srem": a.SMod(b | 1),
            "rotl": claripy.RotateLeft(a, b)}[op]


def chain(rng, x, y, hops, table_len):
    """Let-bound lookups into a random constant table, each indexed by the previous value."""
    table = [rng.randrange(256) for _ in range(table_len)]
    cons, v = [], x
    for k in range(hops):
        idx = claripy.ZeroExt(8, (v ^ y) if k % 2 else v)
        sel = select(idx, list(range(table_len)), lambda i: claripy.BVV(table[i], 8), claripy.BVV(0, 8))
        let = claripy.BVS("ram_let", 8)
        cons.append(let == sel)
        v = let
    return cons, v


@pytest.mark.parametrize("seed", range(5))
def test_answers_equal_z3(seed):
    rng = random.Random(seed)
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    cons, v = chain(rng, x, y, rng.randint(1, 3), rng.choice((16, 200, 256)))
    e = rand_expr(rng, [v, x, y], 3)
    goal = claripy.ULT(e, rng.randrange(1, 256))
    cons = [*cons, goal]
    s = claripy.Solver()
    s.add(cons)
    assert en.answer(cons, "satisfiable", (), {}) == s.satisfiable()
    if not s.satisfiable():
        return
    want = set(s.eval(e, 300))
    got = set(en.answer(cons, "eval", (e, 300), {}))
    assert got == want
    assert en.answer(cons, "max", (e,), {}) == s.max(e)
    assert en.answer(cons, "min", (e,), {}) == s.min(e)
    assert en.answer(cons, "max", (e,), {"signed": True}) == s.max(e, signed=True)
    extra = [e == sorted(want)[0]]
    assert en.answer(cons, "satisfiable", (), {"extra_constraints": extra}) is True
    assert en.answer(cons, "is_true", (claripy.ULE(e, s.max(e)),), {}) is True
    # exact under the constraints (claripy's own is_false may answer False when unsure)
    assert en.answer(cons, "is_false", (e == 255,), {}) == (not s.satisfiable(extra_constraints=[e == 255]))
    rows = en.answer(cons, "batch_eval", ([e, x], 70000), {})
    assert {r[0] for r in rows} == want
    for a, b in rows[:5]:
        assert s.satisfiable(extra_constraints=[e == a, x == b])


def test_wide_inputs_and_plain_queries_are_left_to_z3():
    x = claripy.BVS("x", 32)
    let = claripy.BVS("ram_let", 8)
    cons = [let == select(x, list(range(64)), lambda i: claripy.BVV(i * 3 & 255, 8), claripy.BVV(0, 8))]
    assert en.answer(cons, "satisfiable", (), {}) is en.UNHANDLED      # 32 free bits
    y = claripy.BVS("y", 8)
    assert en.answer([claripy.ULT(y, 3)], "satisfiable", (), {}) is en.UNHANDLED  # no let-binding


def test_wide_values_are_evaluated_in_64_bit_slices():
    x = claripy.BVS("x", 8)
    let = claripy.BVS("ram_let", 8)
    cons = [let == select(claripy.ZeroExt(8, x), list(range(256)), lambda i: claripy.BVV(255 - i, 8),
                          claripy.BVV(0, 8)), claripy.ULT(x, 3)]
    wide = claripy.Concat(let, claripy.BVV(0x1122334455667788, 64), x, let)
    got = sorted(en.answer(cons, "eval", (wide, 10), {}))
    want = sorted(((255 - k) << 80) | (0x1122334455667788 << 16) | (k << 8) | (255 - k) for k in range(3))
    assert got == want


def test_node_values_are_stored_compactly():
    """The value cache keeps a constant array as one scalar and a 64-bit array of small values in
    the narrowest width, reads them back as 64-bit values, and counts the compact bytes."""
    c = columns._ValueCache(1 << 20)
    small = np.arange(65536, dtype=np.uint64) & np.uint64(0xFF)
    c.put("bytes", small)
    got = c.get("bytes")
    assert got.dtype == np.uint64 and np.array_equal(got, small)
    assert c.used == 65536                       # one byte per value, not eight
    c.put("const", np.full(65536, 7, dtype=np.uint64))
    assert c.get("const") == 7 and np.ndim(c.get("const")) == 0 and c.used == 65536 + 8
    wide = np.arange(65536, dtype=np.uint64) << np.uint64(40)
    c.put("wide", wide)
    assert np.array_equal(c.get("wide"), wide) and c.used == 65536 + 8 + 8 * 65536
    for k in range(40):                          # eviction keeps the budget in compact bytes
        c.put(k, np.arange(65536, dtype=np.uint64) + np.uint64(k))
    assert c.used <= c.budget and c.get("bytes") is None


@pytest.mark.parametrize("seed", range(3))
def test_an_evaluator_over_rows_of_its_own_computes_the_same_values_and_leaves_the_shared_cache(seed):
    """Rows evaluated once (a model's neighbours) keep their node values to themselves: the values
    equal those of an evaluator sharing the run's cache, and that cache gains no entry."""
    from angr_ram.core.scope import RunScope

    rng = random.Random(seed)
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    e = (rand_expr(rng, [x, y], 5) ^ (x * y)) + 1
    cols = {x.args[0]: np.arange(256, dtype=np.uint64), y.args[0]: np.full(256, rng.randrange(256), dtype=np.uint64)}
    with RunScope().active():
        shared = evl.Evaluator.over(cols, 256, {})
        want = np.broadcast_to(shared.ev(e), (256,)).copy()
        cache = evl.memo("enumeration.values", columns._new_value_cache)
        before = len(cache.items)
        own = evl.Evaluator.over(cols, 256, {}, shared=False)
        got = np.broadcast_to(own.ev(e), (256,))
        assert np.array_equal(got, want) and len(cache.items) == before > 0
        assert own.values is not cache and len(own.values) > 0


def test_an_evaluator_without_free_variables_evaluates_constant_expressions():
    """An expression over let-bound symbols alone gives an evaluator with no free variable (an
    empty layout); its nodes are cached like any other's (this raised an IndexError once)."""
    from angr_ram.core.scope import RunScope

    let = claripy.BVS("ram_let_1_0_8", 8, explicit_name=True)
    e = (let + 3) * 2
    with RunScope().active():
        ev = evl.Evaluator([], {let.args[0]: claripy.BVV(5, 8)})
        assert ev.layout == () and int(np.asarray(ev.ev(e)).ravel()[0]) == 16
        own = evl.Evaluator.over({}, 1, {let.args[0]: claripy.BVV(7, 8)}, shared=False)
        assert int(np.asarray(own.ev(e)).ravel()[0]) == 20


@pytest.mark.parametrize("seed", range(5))
def test_answers_do_not_depend_on_the_value_budget(seed, monkeypatch):
    """With a budget of one value, every node is evaluated again: the answers stay the same."""
    rng = random.Random(seed)
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    cons, v = chain(rng, x, y, 3, 256)
    e = rand_expr(rng, [v, x, y], 4)
    big = sorted(en.answer(cons, "eval", (e, 300), {}))
    monkeypatch.setattr(columns, "VALUE_BYTES", 1)
    assert sorted(en.answer(cons, "eval", (e, 300), {})) == big


def _deep(x, let, depth):
    e = let
    for i in range(depth):
        e = claripy.If(x == i % 251, e + 1, e ^ 3)
    return e


def test_deep_expressions_are_evaluated_or_left_to_z3_never_a_recursion_error():
    """If-then-else merging nests expressions hundreds of levels deep (strtok under ``ite``: 454,
    which ended the path with a RecursionError): the evaluation goes that deep, and an expression
    deeper than :data:`~angr_ram.solver.evaluator.DEEP_RECURSION` allows is left to z3."""
    import sys

    x = claripy.BVS("x", 8)
    let = claripy.BVS("ram_let", 8)
    table = select(claripy.ZeroExt(8, x), list(range(256)), lambda i: claripy.BVV(i * 7 & 255, 8),
                   claripy.BVV(0, 8))
    limit = sys.getrecursionlimit()
    e = _deep(x, let, 520)                       # 1040 levels of ev: past Python's default limit
    cons = [let == table, claripy.ULT(x, 12)]
    s = claripy.Solver()
    s.add(cons)
    assert sorted(en.answer(cons, "eval", (e, 300), {})) == sorted(s.eval(e, 300))
    assert sys.getrecursionlimit() == limit      # restored
    assert en.answer(cons, "eval", (_deep(x, let, 6000), 300), {}) is en.UNHANDLED


def test_constraint_masks_outlive_the_node_values(monkeypatch):
    """A path constraint's truth over the rows is kept per constraint, apart from its nodes' values:
    with room for no node value, a second query over the same constraints evaluates none of their
    nodes again, only its own goal, and answers the same."""
    from angr_ram.core.scope import RunScope

    rng = random.Random(3)
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    cons, v = chain(rng, x, y, 3, 256)
    e = rand_expr(rng, [v, x, y], 4)
    cons = [*cons, claripy.ULT(e, 200)]
    monkeypatch.setattr(columns, "VALUE_BYTES", 1)
    made = []
    init = evl.Evaluator.__init__

    def counting(self, *a, **k):
        init(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(evl.Evaluator, "__init__", counting)
    with RunScope().active():
        first = en.answer(cons, "satisfiable", (), {})
        assert made[-1].nodes > 0
        again = en.answer(cons, "satisfiable", (), {})
        assert made[-1].nodes == 0
        goal = en.answer(cons, "satisfiable", (), {"extra_constraints": [e == 7]})
        assert 0 < made[-1].nodes
    assert first is again is True
    assert goal == claripy.Solver().satisfiable(extra_constraints=[*cons, e == 7])


def test_signed_division_and_rotations_are_evaluated_as_z3_does():
    """``SDiv``/``SMod`` (gcc's ``idiv``: ``in % 1792`` of a 16-bit input at -O2) round towards zero
    and keep the dividend's sign, as z3's ``bvsdiv``/``bvsrem``; rotations (hash functions' ``rol``)
    rotate by the amount modulo the width: 8-bit pairs and 64-bit rotations are compared with z3;
    a query over them is answered without z3; a zero divisor leaves the query to z3."""
    import z3

    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    ev = evl.Evaluator([x, y], {})
    xs, ys = (np.broadcast_to(ev.ev(v), (ev.size,)) for v in (x, y))
    for op, ref in (("SDiv", lambda a, b: a / b), ("SMod", z3.SRem)):
        got = np.broadcast_to(ev.ev(getattr(x, op)(y | 1)), (ev.size,))
        for row in [*range(0, ev.size, 61), 0x8001, 0x80FF, 0x7FFF, 0xFF01]:
            a, b = int(xs[row]), int(ys[row]) | 1
            want = z3.simplify(ref(z3.BitVecVal(a, 8), z3.BitVecVal(b, 8))).as_long()
            assert int(got[row]) == want, (op, a, b)
    wide = claripy.Concat(claripy.BVV(0x0123456789AB, 48), x, x ^ 0x5A)       # 64 bits, rotated
    for op, ref in (("RotateLeft", z3.RotateLeft), ("RotateRight", z3.RotateRight)):
        got = np.broadcast_to(ev.ev(getattr(claripy, op)(wide, claripy.ZeroExt(56, y))), (ev.size,))
        for row in [*range(0, ev.size, 59), 0, 0x40, 0x80, 0xFF]:
            a, b = int(xs[row]), int(ys[row])
            want = z3.simplify(ref(z3.BitVecVal((0x0123456789AB << 16) | (a << 8) | (a ^ 0x5A), 64),
                                   z3.BitVecVal(b, 64))).as_long()
            assert int(got[row]) == want, (op, a, b)
    d = claripy.BVS("ram_let_d", 8)
    cons = [d == x + 1, claripy.SLT(x, 0)]
    values = en.answer(cons, "eval", (x.SMod(7), 20), {})
    assert sorted(v - 256 if v > 127 else v for v in values) == list(range(-6, 1))
    with pytest.raises(evl._Unsupported):
        ev.ev(x.SDiv(y))


@pytest.mark.parametrize("seed", range(4))
def test_inputs_limited_to_a_template_range_are_enumerated_over_that_range_alone(seed):
    """Constraints on one input each (a template's ``'A' <= byte <= 'z'``) make the domain: the
    evaluator has 58 x 58 rows, not 65536, the answers still equal z3's, and those constraints,
    true on every row, are not evaluated again."""
    rng = random.Random(seed)
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    cons, v = chain(rng, x, y, rng.randint(1, 3), rng.choice((16, 200, 256)))
    ranges = [claripy.UGE(x, 0x41), claripy.ULE(x, 0x7A), claripy.UGE(y, 0x41), claripy.ULE(y, 0x7A)]
    e = rand_expr(rng, [v, x, y], 3)
    cons = [*ranges, *cons, claripy.ULT(e, rng.randrange(1, 256))]
    ev, rest = en._prepare(cons, (e,))
    assert ev.size == 58 * 58 and not any(r.hash() in {c.hash() for c in rest} for r in ranges)
    s = claripy.Solver()
    s.add(cons)
    assert en.answer(cons, "satisfiable", (), {}) == s.satisfiable()
    if s.satisfiable():
        assert set(en.answer(cons, "eval", (e, 300), {})) == set(s.eval(e, 300))
        assert set(en.answer(cons, "eval", (x, 300), {})) == set(s.eval(x, 300))
        assert en.answer(cons, "min", (y,), {}) == s.min(y)
    # a range that leaves most rows is not worth a domain of its own: every assignment as before
    wide = [claripy.UGE(x, 0x01), *cons[4:]]
    full = en._prepare(wide, (e,))[0]
    assert full.layout[0] != "rows" and full.size in (256, 65536)


def _wide_forms(x, y):
    """Expressions over values wider than 64 bits that a binary's code makes: a byte read at a
    symbolic offset out of a 16-byte value (a logical shift by the offset times 8, also of zero),
    left shifts past the width, bitwise operations and the low half of a 128-bit product."""
    z = claripy.ZeroExt
    v128 = claripy.Concat(claripy.BVV(0x0123456789ABCDEF, 64), z(40, x * y), x, y)
    v192 = claripy.Concat(x, claripy.BVV(0xFEDCBA9876543210, 64), claripy.BVV(0x55AA, 16), z(96, y ^ 0x3C))
    return [
        claripy.Extract(7, 0, claripy.LShR(claripy.BVV(0, 128), z(120, (x & 15) * 8))),
        claripy.Extract(7, 0, claripy.LShR(v128, z(120, (x & 15) * 8))),
        claripy.Extract(70, 7, claripy.LShR(v128, z(120, y))),
        claripy.Extract(63, 0, claripy.LShR(v192, z(184, x))),
        claripy.Extract(191, 128, claripy.LShR(v192, z(184, y))),
        claripy.Extract(127, 64, v128 << z(120, y)),
        claripy.Extract(20, 5, v192 << z(184, x)),
        claripy.Extract(99, 40, (v128 ^ (v128 << 3)) & ~claripy.LShR(v128, z(120, x))),
        claripy.Extract(63, 0, z(64, z(56, x) + 0xFFFFFFFFFFFFFF00) * z(64, z(56, y) * 0x9E3779B97F4A7C15)),
        claripy.Extract(31, 8, v128 - (v128 << z(120, x & 7)) - claripy.ZeroExt(120, -y)),
    ]


def test_shifts_and_bit_operations_of_values_wider_than_64_bits_are_evaluated_in_windows():
    """A window of at most 64 bits of a shifted (by a symbolic amount, also past the width), masked,
    added or multiplied value wider than 64 bits is what claripy computes for each assignment (expat
    read a byte out of a 16-byte value at a let-bound offset: every query over SipHash buckets went
    to z3 and needed seconds)."""
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    ev = evl.Evaluator([x, y], {})
    xs, ys = (np.broadcast_to(ev.ev(v), (ev.size,)) for v in (x, y))
    forms = _wide_forms(x, y)
    with evl.deep_recursion():
        got = [np.broadcast_to(ev.ev(f), (ev.size,)) for f in forms]
    for row in [*range(0, ev.size, 97), 0, 0xFF, 0xFF00, 0xFFFF, 0x7F80, 0x0F40]:
        a, b = claripy.BVV(int(xs[row]), 8), claripy.BVV(int(ys[row]), 8)
        for k, f in enumerate(_wide_forms(a, b)):
            assert int(got[k][row]) == f.concrete_value, (k, hex(row))
    let = claripy.BVS("ram_let_w", 8)
    cons = [let == x + 1, claripy.ULT(y, 5)]
    assert sorted(en.answer(cons, "eval", (forms[1], 300), {})) == sorted(
        {_wide_forms(claripy.BVV(i, 8), claripy.BVV(j, 8))[1].concrete_value for i in range(256) for j in range(5)})


def _arx_hash(a, b, rounds):
    """A hash of two bytes in the style of SipHash: add-rotate-xor rounds over 64-bit words, each
    word used by several later nodes (a DAG of shared nodes, as a binary's hash of its input)."""
    v0, v1 = claripy.ZeroExt(56, a) ^ 0x736F6D6570736575, claripy.ZeroExt(56, b) ^ 0x646F72616E646F6D
    for _ in range(rounds):
        v0 = v0 + v1
        v1 = claripy.RotateLeft(v1, 13) ^ v0
        v0 = claripy.RotateLeft(v0, 32) + (v1 ^ v0)
    return v0 ^ v1


@pytest.mark.slow
def test_one_wide_input_with_byte_ranges_and_a_hash_of_it_is_enumerated_over_the_ranges():
    """A user's script makes one 16-bit variable and limits each of its bytes to 'A'..'z'; the
    program's path constraints then hash that variable. Only the constraints that compare its bits
    with constants make the domain (58 x 58 rows); the hash constraint, on the same one variable,
    is evaluated over those rows: over all 65536 values of the variable its shared nodes outgrew
    the value cache, and every query of the state spent seconds before it gave up."""
    name = claripy.BVS("name", 16)
    hi, lo = claripy.Extract(15, 8, name), claripy.Extract(7, 0, name)
    ranges = [claripy.UGE(hi, 0x41), claripy.ULE(hi, 0x7A), claripy.UGE(lo, 0x41), claripy.ULE(lo, 0x7A),
              lo != 0x5A]
    h = _arx_hash(hi, lo, 2)
    hashed = claripy.Extract(5, 0, h) != 17
    rng = random.Random(7)
    cons, v = chain(rng, claripy.Extract(7, 0, h), lo, 2, 256)
    cons = [*ranges, hashed, *cons, claripy.ULT(v, 90)]
    ev, rest = en._prepare(cons, (v,))
    assert ev.size == 58 * 57
    assert hashed.hash() in {c.hash() for c in rest}
    assert not {r.hash() for r in ranges} & {c.hash() for c in rest}
    s = claripy.Solver()
    s.add(cons)
    assert en.answer(cons, "satisfiable", (), {}) is s.satisfiable() is True
    assert set(en.answer(cons, "eval", (v, 300), {})) == set(s.eval(v, 300))
    assert en.answer(cons, "min", (name,), {}) == s.min(name)
    assert en.answer(cons, "max", (name,), {}) == s.max(name)


@pytest.mark.parametrize("seed", range(6))
def test_one_model_of_a_component_satisfies_it_or_is_none_when_unsatisfiable(seed):
    """``one_model`` (a test's input past the run's deadline, with no z3): every variable of the
    component, let-bound lookups included, with values that satisfy each constraint under plain
    evaluation; None exactly when z3 finds the component unsatisfiable."""
    from claripy.frontend.mixin.model_cache_mixin import ModelCache

    from angr_ram.solver.model_cache import satisfied_by

    rng = random.Random(seed)
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    cons, v = chain(rng, x, y, rng.randint(1, 3), rng.choice((16, 200, 256)))
    cons = [*cons, claripy.ULT(rand_expr(rng, [v, x, y], 3), rng.randrange(1, 64))]
    s = claripy.Solver()
    s.add(cons)
    m = en.one_model(s)
    if not s.satisfiable():
        assert m is None
        return
    assert m is not None and set(m) == set(s.variables)
    assert satisfied_by(ModelCache(m), cons)
    assert s.satisfiable(extra_constraints=[b == m[b.args[0]] for b in (x, y) if b.args[0] in s.variables])


@pytest.mark.parametrize("seed", range(4))
def test_a_models_remembered_truths_agree_with_evaluation(seed):
    """``satisfied_by`` remembers per model which constraints it satisfies (by structural hash);
    asked again, it answers as a fresh evaluation does, alone and in a conjunction."""
    from claripy.frontend.mixin.model_cache_mixin import ModelCache

    from angr_ram.solver.model_cache import satisfied_by
    from angr_ram.solver.model_eval import fast_eval_ast

    rng = random.Random(seed)
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    m = ModelCache({x.args[0]: rng.randrange(256), y.args[0]: rng.randrange(256)})
    cons = [claripy.ULT(rand_expr(rng, [x, y], 3), rng.randrange(1, 256)) for _ in range(40)]
    fresh = [bool(fast_eval_ast(ModelCache(dict(m.model)), c, True)) for c in cons]
    assert True in fresh and False in fresh
    for _ in range(2):
        assert [satisfied_by(m, [c]) for c in cons] == fresh
        assert satisfied_by(m, cons) == all(fresh)
        assert satisfied_by(m, [c for c, t in zip(cons, fresh, strict=True) if t])


def test_a_combined_model_evaluates_each_constraint_once_and_satisfies_them_all(monkeypatch):
    """``combined_model`` over independent components: each child's cached model is checked against
    the child's constraints, and those are not evaluated again on the union (the tests of join's
    unfinished paths took twice as long); the union satisfies every constraint (z3 agrees)."""
    from angr_ram.solver import model_cache
    from angr_ram.solver.frontends import composite

    vs = [claripy.BVS(f"v{i}", 8) for i in range(3)]
    cons = [claripy.UGT(vs[0], 7), claripy.ULT(vs[0] * 3, 90), vs[1] != 0, (vs[1] ^ 0x55) > 9,
            claripy.UGE(vs[2] + vs[2], 40)]
    s = composite()
    s.add(cons)
    assert s.satisfiable() and len(s._solver_list) == 3
    calls = []
    evaluate = model_cache.fast_eval_ast
    monkeypatch.setattr(model_cache, "fast_eval_ast", lambda m, c, u: calls.append(c.hash()) or evaluate(m, c, u))
    values = model_cache.combined_model(s, s.constraints)
    assert values is not None and set(values) <= {v.args[0] for v in vs}
    assert sorted(calls) == sorted({c.hash() for c in s.constraints})
    assert s.satisfiable(extra_constraints=[v == values.get(v.args[0], 0) for v in vs])


def test_the_windows_of_a_wide_input_that_constraints_read_and_their_groups():
    """``read_windows``: the bit ranges of a wide variable read through ``Extract`` (overlapping ones
    merged, adjacent bytes kept apart), None when it is read whole; ``window_groups`` puts
    constraints that read separate windows into separate groups, one reading two windows joins
    them. ``one_model`` of six per-byte let-bound lookups of a 64-bit input, beyond one joint
    evaluation (48 free bits), is found group by group and satisfies every constraint."""
    from claripy.frontend.mixin.model_cache_mixin import ModelCache

    from angr_ram.solver.model_cache import satisfied_by
    from angr_ram.solver.variable_windows import read_windows, window_groups

    w = claripy.BVS("w", 64)
    name = w.args[0]
    a, b, c = w[63:56] == 1, w[55:48] > 3, claripy.ULT(w[51:40], 700)
    assert read_windows([a, b], name, 64) == [(63, 56), (55, 48)]
    assert read_windows([a, b, c], name, 64) == [(63, 56), (55, 40)]
    assert read_windows([a, w > 5], name, 64) is None and read_windows([claripy.BVS("z", 8) == 1], name, 64) == []
    groups = window_groups([a, b, c], {name: w})
    assert sorted(sorted(u) for _, u in groups) == [[(name, 55, 40)], [(name, 63, 56)]]

    rng = random.Random(7)
    cons = []
    for k in range(6):
        table = [rng.randrange(256) for _ in range(256)]
        cons += chain_on(w[63 - 8 * k:56 - 8 * k], table, f"b{k}")
    s = claripy.Solver()
    s.add(cons)
    m = en.one_model(s)
    assert m is not None and set(m) == set(s.variables)
    assert satisfied_by(ModelCache(m), cons) and s.satisfiable(extra_constraints=[w == m[name]])


def chain_on(byte, table, tag):
    """A let-bound lookup of ``byte`` in ``table`` (as the memory layer binds one), and a test of it."""
    let = claripy.BVS(f"ram_let_{tag}", 8)
    sel = claripy.BVV(table[0], 8)
    for i in range(1, 256):
        sel = claripy.If(byte == i, claripy.BVV(table[i], 8), sel)
    return [let == sel, let != table[0]]


def test_an_evaluators_own_values_are_bounded_in_bytes_and_answers_stay_the_same(monkeypatch):
    """An evaluator over rows of its own (a cut's port product, up to 2^22 rows) kept every node's
    values: 32 MB a node, and Debian's join grew 900 MB in one step. They are dropped oldest first
    beyond a byte budget; with a budget of a few nodes, a query over a let-bound chain answers as
    with no bound."""
    from angr_ram.solver import columns

    own = columns._OwnValues(budget=3 * 800)
    for k in range(10):
        own.put(k, np.zeros(100, dtype=np.uint64))
    assert own.used <= 3 * 800 and own.get(0) is None and own.get(9) is not None and len(own) == 3

    rng = random.Random(3)
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    cons, v = chain(rng, x, y, 3, 256)
    lets, _ = evl.split_lets(cons)
    tests = [claripy.ULT(v, k) for k in (16, 64, 200)] + [v == y, (v ^ x) > 9]
    ev = evl.Evaluator([x, y], lets)
    before = [int(np.count_nonzero(np.broadcast_to(ev.bool(c), (ev.size,)))) for c in tests]
    small = evl.Evaluator.over({x.args[0]: ev.vars[x.args[0]], y.args[0]: ev.vars[y.args[0]]}, ev.size, lets,
                               shared=False)
    small.values = columns._OwnValues(budget=2 * ev.size * 8)
    after = [int(np.count_nonzero(np.broadcast_to(small.bool(c), (small.size,)))) for c in tests]
    assert after == before and small.values.used <= 2 * ev.size * 8
