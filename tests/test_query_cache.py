"""The run-wide query cache: address-renamed queries hit, others do not; answers never change."""

import os

import claripy
import pytest

from angr_ram.plugins.query_cache import QueryCache, components, slice_constraints
from angr_ram.plugins.substitution import Substitution
from angr_ram.runner import explore
from angr_ram.stats import RunStats

from .conftest import BUILD


def bases(*sizes):
    out, szs = [], {}
    for s in sizes:
        b = claripy.BVS("ram_base_t", 64)
        out.append(b)
        szs[next(iter(b.variables))] = s
    return out, szs


def sat_counter():
    calls = []

    def solve_with(result):
        def solve():
            calls.append(result)
            return result
        return solve
    return calls, solve_with


def query(b1, b2, i):
    """array[i] points to one of two objects: i < 2 /\\ (i == 0 ? b1 : b2) + 4 == b2 + 4."""
    return [claripy.ULT(i, 2)], (claripy.If(i == 0, b1, b2) + 4 == b2 + 4,)


def test_address_renamed_queries_hit_the_aa_cache_only():
    i = claripy.BVS("i", 64)
    (a1, a2), s1 = bases(16, 32)
    (c1, c2), s2 = bases(16, 32)
    sizes = {**s1, **s2}
    sub = Substitution({**{n: 0x1000 for n in s1}, **{n: 0x9000 for n in s2}})
    for mode, expect_hit in (("syntactic", False), ("aa", True)):
        st = RunStats()
        cache = QueryCache(mode, stats=st)
        calls, solve = sat_counter()
        cs, goals = query(a1, a2, i)
        assert cache.satisfiable(cs, goals, sub, sizes, solve(True)) is True
        cs2, goals2 = query(c1, c2, i)
        cache.satisfiable(cs2, goals2, sub, sizes, solve(True))
        assert len(calls) == (1 if expect_hit else 2)
        assert st.cache_hits_aa == (1 if expect_hit else 0)


def test_no_hit_when_object_sizes_differ_or_bijection_fails():
    i = claripy.BVS("i", 64)
    (a1, a2), s1 = bases(16, 32)
    (c1, c2), s2 = bases(16, 64)          # second object has another size
    (d1,), s3 = bases(16)                 # one object used for both roles: no bijection
    sizes = {**s1, **s2, **s3}
    sub = Substitution({})
    cache = QueryCache("aa")
    calls, solve = sat_counter()
    cache.satisfiable(*query(a1, a2, i), sub, sizes, solve(True))
    cache.satisfiable(*query(c1, c2, i), sub, sizes, solve(True))
    cache.satisfiable(*query(d1, d1, i), sub, sizes, solve(True))
    assert len(calls) == 3


def test_slicing_and_components_ignore_base_addresses():
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    (b,), _ = bases(8)
    cs = [x > 3, y < 2, b + x.zero_extend(56) != b]
    names = frozenset(b.variables)
    assert slice_constraints(cs, (x == 5,), names) == [cs[0], cs[2]]
    assert sorted(len(g) for g in components(cs, names)) == [1, 2]


@pytest.mark.parametrize("name", ["ptrarray_O0", "hashtables_O0", "twolookup_O0"])
def test_cache_modes_change_no_outcome_and_validation_finds_no_mismatch(name):
    n = 1 if name.startswith("hash") else 2
    b = os.fspath(BUILD / name)
    base = explore(b, n)
    for mode in ("syntactic", "aa"):
        r = explore(b, n, cache=mode, validate=True)   # validate: every hit re-solved, raises on mismatch
        assert r.outcomes == base.outcomes and r.stats["paths"] == base.stats["paths"]
        assert r.stats["cache_queries"] > 0 and r.stats["cache_size"] > 0


def test_aa_cache_hits_across_differently_allocated_paths():
    """ptrarray allocates extra objects on one side of a branch: the matrix queries of the two
    sides differ only in base addresses, which only the aa cache sees through."""
    b = os.fspath(BUILD / "ptrarray_O0")
    syn = explore(b, 2, cache="syntactic")
    aa = explore(b, 2, cache="aa")
    assert aa.outcomes == syn.outcomes
    assert aa.stats["cache_hits_aa"] > 0 and syn.stats["cache_hits_aa"] == 0
    assert aa.stats["solver_queries"] < syn.stats["solver_queries"]
