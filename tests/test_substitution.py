"""Substitution of address constraints: folding, guards and cost on shared sub-expressions."""

import time

import claripy

from angr_ram.plugins.substitution import Substitution


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
