"""Substitution of address constraints: folding, guards and cost on shared sub-expressions."""

import time

import claripy

from angr_ram.solver.substitution import Substitution


def test_base_plus_offset_folds_to_constant():
    a = claripy.BVS("ram_base_1", 64)
    s = Substitution({next(iter(a.variables)): 0x1000})
    r = s(a + 8)
    assert r.op == "BVV" and r.concrete_value == 0x1008


def test_untouched_expressions_are_returned_as_is():
    x = claripy.BVS("x", 64)
    a = claripy.BVS("ram_base_2", 64)
    s = Substitution({next(iter(a.variables)): 0x2000})
    e = x * 3 + 1
    assert s(e) is e
    mixed = s(claripy.If(x == 0, a, a + 16) + x)
    assert not (mixed.variables & a.variables) and mixed.variables == x.variables


def test_shared_dag_is_linear_not_exponential():
    a = claripy.BVS("ram_base_3", 64)
    k = claripy.BVS("k", 64)
    e = a
    for _ in range(60):  # 2^60 paths through the DAG
        e = (e * 3) ^ (e + k)
    s = Substitution({next(iter(a.variables)): 0x3000})
    t = time.perf_counter()
    r = s(e)
    assert time.perf_counter() - t < 5
    assert not (r.variables & a.variables)


def test_fast_model_eval_matches_claripy_and_is_linear():
    from claripy.frontend.mixin.model_cache_mixin import ModelCache

    from angr_ram.solver.model_eval import fast_eval_ast

    x, k = claripy.BVS("x", 32), claripy.BVS("k", 32)
    e = x
    for _ in range(12):
        e = claripy.If(e == k, e + 1, e * 3)
    m = ModelCache({next(iter(x.variables)): 5, next(iter(k.variables)): 16})
    original = ModelCache.eval_ast
    try:
        expected = original(m, e)
    finally:
        ModelCache.eval_ast = original
    assert fast_eval_ast(ModelCache(dict(m.model)), e) == expected
    deep = x
    for _ in range(60):
        deep = (deep * 3) ^ (deep + k)
    t = time.perf_counter()
    fast_eval_ast(ModelCache(dict(m.model)), deep)
    assert time.perf_counter() - t < 2
