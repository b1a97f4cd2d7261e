"""Standard (if-then-else) merging at function exits: same outcomes as no merging and as the
native binary, far fewer paths; clear errors for bad merge points."""

import os

import pytest

from angr_ram import AngrRamError, QuantifiedMerging
from angr_ram.run.runner import explore

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set_over
from .test_loop_samples import LETTERS, SIZES

CASES = [("memspn4_O0", ["memspn"]), ("memspnab4_O0", ["memspn"]), ("memspn2x4_O0", ["memspn"]),
         ("memspn2x4_O2", ["memspn"]), ("strloops_O0", ["my_strspn", "my_strchr"]),
         ("strloops_O2", ["my_strspn", "my_strchr"])]


def native(name):
    b = os.fspath(BUILD / name)
    return outcome_set_over(b, [LETTERS] * 4 if name.startswith("strloops") else [SIZES] + [LETTERS] * 4)


@pytest.mark.parametrize(("name", "points"), CASES, ids=[c[0] for c in CASES])
def test_ite_merging_keeps_outcomes_and_merges_paths(name, points):
    b = os.fspath(BUILD / name)
    n = 4 if name.startswith("strloops") else 5
    plain = explore(b, n)
    merged = explore(b, n, merge="ite", merge_points=points, tests=True)
    assert merged.errors == []
    assert merged.outcomes == plain.outcomes == native(name)
    assert_tests_replay(b, merged)
    assert merged.stats["merge_merges_ite"] >= 1
    assert merged.stats["paths"] < plain.stats["paths"]


def test_memspn_merges_all_returning_paths_into_one():
    """memspn over "a" with M = 16: 33 returning paths become one state (plus the n > M exit)."""
    b = os.fspath(BUILD / "memspn16_O0")
    r = explore(b, 17, merge="ite", merge_points=["memspn"])
    assert r.stats["paths"] == 2 and r.stats["merge_leaves"] == 33
    assert {c for c, _ in r.outcomes} == set(range(17)) | {255}


def test_stock_angr_states_merge_too():
    b = os.fspath(BUILD / "memspn4_O0")
    r = explore(b, 5, engine="stock", merge="ite", merge_points=["memspn"])
    assert r.outcomes == native("memspn4_O0") and r.stats["paths"] == 2


def test_bad_merge_points_and_modes_are_reported():
    b = os.fspath(BUILD / "memspn4_O0")
    with pytest.raises(AngrRamError, match="no function"):
        explore(b, 5, merge="ite", merge_points=["no_such_function"])
    with pytest.raises(AngrRamError, match="unknown merging mode"):
        QuantifiedMerging("nonsense", ["memspn"])
    with pytest.raises(AngrRamError, match="at least one merge point"):
        explore(b, 5, merge="ite", merge_points=[])


@pytest.mark.parametrize("name", ["memspn4_O0", "memspn2x4_O0", "memspnab4_O0"])
def test_pattern_merging_keeps_outcomes_and_validates(name):
    """pat mode with validation: Theorem 3.7 is checked for every merge (each leaf's path condition
    equals the pattern at k = k_j; registers agree) and every answer of the quantified solving
    procedure is compared with z3 on the real ForAll query (a difference raises)."""
    b = os.fspath(BUILD / name)
    r = explore(b, 5, merge="pat", merge_points=["memspn"], merge_validate=True, tests=True)
    assert r.errors == [] and r.outcomes == native(name)
    assert_tests_replay(b, r)
    assert r.stats["merge_merges_pat"] + r.stats["merge_no_pattern"] >= 1


def test_memspn_patterns_are_those_of_the_paper():
    """memspn over "a": two regular partitions, (W, GB, GY) and (W, GB, R) in the paper's Table 1,
    so two merged states; the quantified procedure answers most queries without z3's ForAll. (Table 1
    is the tree without incremental merging, which would first join exits with equal counts.)"""
    r = explore(os.fspath(BUILD / "memspn8_O0"), 9, merge="pat", merge_points=["memspn"], merge_incremental=False)
    assert r.stats["merge_merges_pat"] == 2 and r.stats["merge_patterns"] == 2
    assert r.stats["paths"] == 3
    assert r.stats["merge_solve_fallback"] == 0
    assert r.stats["merge_solve_strip"] + r.stats["merge_solve_duplicate"] + r.stats["merge_solve_repair"] > 0


def test_pattern_merged_constraint_size_is_constant_in_m_and_ite_is_linear():
    sizes = {}
    for m in (4, 16):
        b = os.fspath(BUILD / f"memspn{m}_O0")
        for mode in ("ite", "pat"):
            r = explore(b, m + 1, merge=mode, merge_points=["memspn"], merge_patterns="always")
            assert {c for c, _ in r.outcomes} == set(range(m + 1)) | {255}
            sizes[(mode, m)] = r.stats["merge_max_constraint_nodes"]
    assert sizes[("pat", 4)] == sizes[("pat", 16)]
    assert sizes[("ite", 16)] > 3 * sizes[("ite", 4)] * 0.9 and sizes[("ite", 16)] > sizes[("pat", 16)]


def test_a_pattern_merge_is_kept_only_where_it_is_smaller_than_ite():
    """By default a pattern merge stays only when its merged states have fewer constraint nodes in
    total than the ite merge of the same leaves: memspn's one pattern (constant size) loses to
    ite's few leaves at M = 4 and wins at M = 16, where ite's disjunction has grown; every run
    keeps the native outcomes, and ``"always"`` keeps the pattern at M = 4 too."""
    runs = {}
    for m, policy in ((4, "smaller"), (4, "always"), (16, "smaller")):
        b = os.fspath(BUILD / f"memspn{m}_O0")
        r = runs[(m, policy)] = explore(b, m + 1, merge="pat", merge_points=["memspn"], merge_patterns=policy)
        assert r.errors == [] and {c for c, _ in r.outcomes} == set(range(m + 1)) | {255}
    small, always, big = runs[(4, "smaller")].stats, runs[(4, "always")].stats, runs[(16, "smaller")].stats
    assert small["merge_merges_pat"] == 0 and small["merge_no_pattern_larger-than-ite"] == 1
    assert always["merge_merges_pat"] >= 1 and "merge_no_pattern_larger-than-ite" not in always
    assert big["merge_merges_pat"] >= 1 and "merge_no_pattern_larger-than-ite" not in big
    assert small["paths"] < always["paths"]     # one ite-merged state instead of a pattern's and the rest
    with pytest.raises(AngrRamError, match="unknown pattern policy"):
        QuantifiedMerging("pat", ["memspn"], patterns="sometimes")
