"""The run-wide query cache: address-renamed queries hit, others do not; answers never change."""

import os

import claripy
import pytest
from claripy.errors import UnsatError

from angr_ram.core.stats import RunStats
from angr_ram.run.runner import explore
from angr_ram.solver import persistent_cache
from angr_ram.solver.patches import counting
from angr_ram.solver.persistent_cache import Canonicalizer
from angr_ram.solver.query_cache import QueryCache, address_specific, components, slice_constraints
from angr_ram.solver.substituting import SubstitutingFrontend
from angr_ram.solver.substitution import Substitution

from .conftest import BUILD, shared_run
from .groundtruth import outcome_set


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


def frontend(cache, subst, sizes, constraints, embedded=frozenset()):
    fe = SubstitutingFrontend(stats=cache.stats)
    fe.bind(subst, cache, sizes, embedded)
    fe.add(constraints)
    return fe


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


def test_constraints_the_placement_makes_true_are_no_components(monkeypatch):
    """A parser's loop over a heap buffer leaves hundreds of constraints on one base alone in the
    path (``b + 8*k != 0``): under the placement they are true, and a goal-less satisfiability
    question is asked of the input's component only (it was asked of every one of them, each
    keyed and looked up on every query: 35 s of a 2-byte libxml2 run)."""
    x = claripy.BVS("x", 8)
    (b,), sizes = bases(4096)
    placed = [b + 8 * k != 0 for k in range(300)]
    sub = Substitution({n: 0x5000_0000 for n in sizes})
    st = RunStats()
    cache = QueryCache("aa", stats=st)
    keyed = []
    original = QueryCache._prepare

    def prepare(self, kind, constraints, *rest, **kw):
        keyed.append(len(constraints))
        return original(self, kind, constraints, *rest, **kw)
    monkeypatch.setattr(QueryCache, "_prepare", prepare)
    calls, solve = sat_counter()
    assert cache.satisfiable([*placed, x > 3], (), sub, sizes, solve(True)) is True
    assert keyed == [1] and len(calls) == 1
    assert cache.satisfiable([*placed, x > 3], (), sub, sizes, solve(True)) is True
    assert len(calls) == 1 and st.cache_hits_syntactic == 1
    # one the placement makes false is still a question (and the answer is the solver's)
    assert cache.satisfiable([*placed, b == 0, x > 3], (), sub, sizes, solve(False)) is False
    assert len(calls) == 2 and keyed[-2:] == [1, 1]
    # and a constraint on an unplaced base is kept too
    (c,), more = bases(16)
    assert cache.satisfiable([*placed, c != 0, x > 3], (), sub, {**sizes, **more}, solve(True)) is True
    assert len(calls) == 3


@pytest.mark.parametrize("name", ["ptrarray_O0", "hashtables_O0", pytest.param("twolookup_O0", marks=pytest.mark.slow)])
def test_cache_modes_change_no_outcome_and_validation_finds_no_mismatch(name):
    n = 1 if name.startswith("hash") else 2
    b = os.fspath(BUILD / name)
    base = shared_run(b, n)
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


def test_model_query_is_translated_to_the_new_placement_and_checked():
    """eval of a pointer: the second query (renamed bases, other hidden addresses) is answered from
    the first one's model, evaluated under the new address constraints."""
    i = claripy.BVS("i", 64)
    (a1, a2), s1 = bases(16, 32)
    (c1, c2), s2 = bases(16, 32)
    sizes = {**s1, **s2}
    sub = Substitution({**dict(zip(s1, (0x1000, 0x2000), strict=True)), **dict(zip(s2, (0x9000, 0xa000), strict=True))})
    st = RunStats()
    cache = QueryCache("aa", stats=st)
    v1 = frontend(cache, sub, sizes, [claripy.ULT(i, 2)]).eval(claripy.If(i == 0, a1, a2) + 4, 1)
    assert st.solver_queries == 1 and v1[0] in (0x1004, 0x2004)
    v2 = frontend(cache, sub, sizes, [claripy.ULT(i, 2)]).eval(claripy.If(i == 0, c1, c2) + 4, 1)
    assert st.cache_hits_aa == 1 and st.solver_queries == 1          # no new solver call
    assert v2[0] == v1[0] + 0x8000                                   # the same i, the new placement


def test_a_translated_model_that_fails_the_new_query_is_rejected():
    """A query that is not address-agnostic (it compares a base with a number) has the same key
    under another placement, but its model does not carry over: the check rejects it."""
    i = claripy.BVS("i", 64)
    (a,), s1 = bases(16)
    (c,), s2 = bases(16)
    sizes = {**s1, **s2}
    sub = Substitution({next(iter(s1)): 0x1000, next(iter(s2)): 0x9000})
    st = RunStats()
    cache = QueryCache("aa", stats=st)
    frontend(cache, sub, sizes, [claripy.ULT(a + i, 0x5000), claripy.ULT(i, 0x100)]).eval(i, 1)
    with pytest.raises(UnsatError):     # i < 0x100 leaves no i with 0x9000 + i < 0x5000
        frontend(cache, sub, sizes, [claripy.ULT(c + i, 0x5000), claripy.ULT(i, 0x100)]).eval(i, 1)
    assert st.cache_models_rejected == 1 and st.cache_hits_aa == 0 and st.solver_queries == 2


def test_tagged_and_embedded_queries_are_not_served_by_the_aa_cache():
    i = claripy.BVS("i", 64)
    (a1, a2), s1 = bases(16, 32)
    (c1, c2), s2 = bases(16, 32)
    sizes = {**s1, **s2}
    sub = Substitution({})
    for how in ("tagged", "embedded"):
        st = RunStats()
        cache = QueryCache("aa", stats=st)
        calls, solve = sat_counter()
        embedded = frozenset(s2) if how == "embedded" else frozenset()
        cache.satisfiable(*query(a1, a2, i), sub, sizes, solve(True))
        if how == "tagged":
            with address_specific():
                cache.satisfiable(*query(c1, c2, i), sub, sizes, solve(True))
        else:
            cache.satisfiable(*query(c1, c2, i), sub, sizes, solve(True), embedded)
        assert len(calls) == 2 and st.cache_hits_aa == 0 and st.cache_tagged == 1


def test_canonical_keys_ignore_operand_order_names_and_keep_sizes():
    """claripy orders commutative operands by hash (hence by variable name): the key does not."""
    canon = Canonicalizer()
    i, j = claripy.BVS("i", 64), claripy.BVS("j", 64)
    (a, b), s1 = bases(16, 16)
    (c, d), s2 = bases(16, 16)
    (e, f), s3 = bases(16, 24)
    sizes = {**s1, **s2, **s3}
    k1 = canon.key("sat", [claripy.Or(i == a, i == b + 8)], (), (), sizes)[0]
    k2 = canon.key("sat", [claripy.Or(j == d + 8, j == c)], (), (), sizes)[0]
    k3 = canon.key("sat", [claripy.Or(i == e, i == f + 8)], (), (), sizes)[0]
    k4 = canon.key("sat", [claripy.Or(i == a, i == a + 8)], (), (), sizes)[0]
    assert k1 == k2 and k1 != k3 and k1 != k4


def test_solution_sets_of_address_free_expressions_are_cached():
    x = claripy.BVS("x", 8)
    (a,), sizes = bases(16)
    st = RunStats()
    cache = QueryCache("aa", stats=st)
    sub = Substitution({next(iter(sizes)): 0x1000})
    cs = [claripy.ULT(x, 3), a + x.zero_extend(56) != a + 7]
    first = frontend(cache, sub, sizes, cs).eval(x, 10)
    again = frontend(cache, sub, sizes, cs).eval(x, 10)
    assert sorted(first) == sorted(again) == [0, 1, 2]
    assert st.solver_queries == 1 and st.cache_hits_syntactic == 1


def test_persistent_store_answers_a_new_cache_and_is_emptied_on_version_change(tmp_path, monkeypatch):
    i = claripy.BVS("i", 64)
    (a1, a2), s1 = bases(16, 32)
    sizes = dict(s1)
    sub = Substitution(dict(zip(s1, (0x1000, 0x2000), strict=True)))
    for round_, expect_disk in ((0, 0), (1, 2), (2, 0)):
        if round_ == 2:
            persistent_cache.version_tag.cache_clear()
            monkeypatch.setattr(persistent_cache, "version_tag", lambda: "another version")
        st = RunStats()
        cache = QueryCache("aa", stats=st, persist=tmp_path)
        calls, solve = sat_counter()
        cache.satisfiable(*query(a1, a2, i), sub, sizes, solve(True))
        fresh = claripy.BVS("fresh", 64)                      # another name: keys rename variables
        v = frontend(cache, sub, sizes, [claripy.ULT(fresh, 2)]).eval(claripy.If(fresh == 0, a1, a2), 1)
        assert v[0] in (0x1000, 0x2000)
        cache.close()
        assert st.cache_hits_disk == expect_disk
        assert (tmp_path / "queries.lmdb").exists()


def z3_calls(binary, n, **opts):
    with counting() as zc:
        r = explore(binary, n, **opts)
    return r, zc.count


@pytest.mark.slow   # make test-slow: a z3-call ratio (bench --cache prints it for every sample), 41 s
@pytest.mark.parametrize("name", ["ptrpaths_O0"])
def test_aa_sends_at_least_half_fewer_queries_to_z3_across_allocation_histories(name):
    """Paths that allocate scratch objects before the data structure ask the same lookup queries
    over other base addresses: the aa cache answers them, the syntactic one cannot. (hashpaths has
    the same allocation histories over a hash table; its numbers are in ``angr-ram bench --cache``.)"""
    b = os.fspath(BUILD / name)
    none = shared_run(b, 2)             # the fork baseline other tests run too
    syn = explore(b, 2, cache="syntactic")
    aa = explore(b, 2, cache="aa")
    z_none, z_syn, z_aa = (r.stats["z3_checks"] for r in (none, syn, aa))
    assert none.outcomes == syn.outcomes == aa.outcomes == frozenset(outcome_set(b, 2))
    assert none.stats["paths"] == syn.stats["paths"] == aa.stats["paths"]
    assert aa.stats["cache_hits_aa"] > 0 and aa.stats["cache_models_rejected"] == 0
    assert 2 * z_aa <= z_syn <= z_none


@pytest.mark.slow
def test_validation_mode_confirms_every_aa_hit():
    b = os.fspath(BUILD / "ptrpaths_O2")
    r = explore(b, 2, cache="aa", validate=True)          # raises CacheMismatch on any difference
    assert r.outcomes == frozenset(outcome_set(b, 2))
    assert r.stats["cache_hits_aa"] > 0 and r.stats["cache_unconfirmed"] == 0


@pytest.mark.parametrize(("mode", "name"), [("aa", "ptrpaths_O0"), ("syntactic", "ptrpaths_O0")])
@pytest.mark.slow
def test_second_run_with_persistent_cache_sends_90_percent_fewer_queries_to_z3(tmp_path, mode, name):
    b = os.fspath(BUILD / name)
    first, z_first = z3_calls(b, 2, cache=mode, persist=os.fspath(tmp_path))
    second, z_second = z3_calls(b, 2, cache=mode, persist=os.fspath(tmp_path))
    assert first.outcomes == second.outcomes and first.stats["paths"] == second.stats["paths"]
    assert second.stats["cache_hits_disk"] > 0 and second.stats["cache_disk_size"] >= first.stats["cache_disk_size"]
    assert z_second * 10 <= z_first


def test_debug_mode_names_the_first_node_where_two_misses_differ():
    """keep_misses() remembers the queries that went to the solver; first_difference says why two
    of them were not renamings of each other (here: an object size, then a constant offset)."""
    i = claripy.BVS("i", 64)
    (a1, a2), s1 = bases(16, 32)
    (c1, c2), s2 = bases(16, 64)
    (e1, e2), s3 = bases(16, 32)
    sizes = {**s1, **s2, **s3}
    cache = QueryCache("aa")
    cache.keep_misses(10)
    calls, solve = sat_counter()
    cache.satisfiable(*query(a1, a2, i), Substitution({}), sizes, solve(True))
    cache.satisfiable(*query(c1, c2, i), Substitution({}), sizes, solve(True))
    cs, (g,) = query(e1, e2, i)
    cache.satisfiable(cs, (claripy.If(i == 0, e1, e2) + 8 == e2 + 4,), Substitution({}), sizes, solve(True))
    assert len(calls) == len(cache.misses) == 3
    first, second, third = cache.misses
    why = cache.first_difference(first, second)
    assert why.startswith("goal 0 at ") and "32-byte object" in why and "64-byte object" in why
    why = cache.first_difference(first, third)
    assert why.startswith("goal 0 at ") and "0x4" in why and "0x8" in why
    assert cache.first_difference(first, first).startswith("every root agrees")
