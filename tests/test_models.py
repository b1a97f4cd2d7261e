"""Every multiple-resolution model and split setting reaches exactly the native outcome set."""

import os
from functools import cache

import pytest

from angr_ram.run.runner import explore

from .conftest import BUILD, assert_tests_replay, shared_run
from .groundtruth import outcome_set

FAST = {"matrix10_O0": 2, "twolookup_O0": 2, "hashtables_O0": 1, "ptrarray_O0": 2}
SETTINGS = [
    ("ite", {}), ("dsmm", {}), ("dsmm", {"reuse_segments": True}), ("flat", {}), ("smm", {}),
    ("fork", {"split": 32, "split_threshold": 16}), ("ite", {"split": 32, "split_threshold": 16}),
    ("dsmm", {"split": 32, "split_threshold": 16}),
]


@cache
def native(name: str, n: int) -> frozenset:
    return frozenset(outcome_set(os.fspath(BUILD / name), n))


@cache
def fork_paths(name: str, n: int) -> int:
    return shared_run(os.fspath(BUILD / name), n).stats["paths"]


# the four longest combinations (23-36 s each) run in make test-slow
SLOW_COMBOS = {("twolookup_O0", "fork", True), ("twolookup_O0", "ite", False), ("twolookup_O0", "dsmm", False),
               ("ptrarray_O0", "ite", False)}
COMBOS = [pytest.param(name, model, opts, id=f"{name}-{model}-{opts}",
                       marks=[pytest.mark.slow] if (name, model, "split" in opts) in SLOW_COMBOS else [])
          for name in FAST for model, opts in SETTINGS]


@pytest.mark.parametrize(("name", "model", "opts"), COMBOS)
def test_model_outcomes_equal_native_ground_truth(name, model, opts):
    n = FAST[name]
    r = explore(os.fspath(BUILD / name), n, model=model, tests=True, **opts)
    assert r.errors == []
    assert r.outcomes == native(name, n)
    assert_tests_replay(os.fspath(BUILD / name), r)
    if model in ("ite", "dsmm", "flat", "smm") and "split" not in opts:
        assert r.stats["paths"] <= fork_paths(name, n)
    if model in ("dsmm", "flat", "smm") and "split" not in opts:
        assert r.stats["segments"] >= 1 and r.stats["max_segment_size"] > 0
    if "split" in opts:
        assert r.stats["splits"] >= 1


def test_dsmm_segments_hold_only_resolved_objects_smm_whole_site_groups():
    """On three hash tables the symbolic key only reaches table 0's nodes: dsmm merges those,
    smm merges every node of the allocation site (all three tables)."""
    b = os.fspath(BUILD / "hashtables_O0")
    d = explore(b, 1, model="dsmm")
    s = explore(b, 1, model="smm")
    f = explore(b, 1, model="flat")
    assert d.outcomes == s.outcomes == f.outcomes == native("hashtables_O0", 1)
    assert d.stats["max_segment_size"] * 2 <= s.stats["max_segment_size"] <= f.stats["max_segment_size"]


@pytest.mark.parametrize("name", ["poolhash_O0", "poolhash_O2"])
def test_one_allocation_site_makes_smm_segments_coarse(name):
    """poolhash allocates every object through one pool function (one allocation site): smm's
    segment takes the request buffer and bucket array with the entries, dsmm only the entries
    the key can reach. At -O2 gcc inlines the pool function, the sites differ again and both
    segments hold the entries only. Every model keeps the native outcomes."""
    b = os.fspath(BUILD / name)
    runs = {m: explore(b, 1, model=m) for m in ("fork", "dsmm", "smm", "ite")}
    for r in runs.values():
        assert r.errors == [] and r.outcomes == native(name, 1)
    d, s = runs["dsmm"].stats, runs["smm"].stats
    assert d["paths"] == s["paths"] <= runs["fork"].stats["paths"]
    if name.endswith("O0"):
        assert 0 < d["max_segment_size"] * 2 <= s["max_segment_size"]
        assert s["max_segment_size"] >= 1024            # the request buffer is in smm's segment
    else:
        assert 0 < d["max_segment_size"] == s["max_segment_size"] < 1024


def test_segment_reuse_gives_the_same_address_across_states():
    """ptrarray forks on a symbolic branch before allocating the matrix; both states merge rows of
    the same shape at the same location, and the second one reuses the first one's address."""
    r = explore(os.fspath(BUILD / "ptrarray_O0"), 2, model="dsmm", reuse_segments=True)
    plain = explore(os.fspath(BUILD / "ptrarray_O0"), 2, model="dsmm")
    assert r.outcomes == plain.outcomes == native("ptrarray_O0", 2)
    assert r.stats["segments"] >= 2 and r.stats["segments_reused"] >= 1
    assert plain.stats["segments_reused"] == 0


@pytest.mark.parametrize(("model", "opts"), [("fork", {}), ("ite", {"split": 256}), ("fork", {"split": 256})])
def test_big_table_with_and_without_splitting(model, opts):
    r = explore(os.fspath(BUILD / "table512_O0"), 2, model=model, **opts)
    assert r.outcomes == native("table512_O0", 2)
    if opts:
        assert r.stats["splits"] >= 1 and r.stats["max_split_object_size"] == 4096


@pytest.mark.parametrize("model", ["fork", "dsmm"])
def test_chained_hash_table(model):
    r = explore(os.fspath(BUILD / "chainhash_O0"), 1, model=model)
    assert r.outcomes == native("chainhash_O0", 1)


@pytest.mark.parametrize("model", ["ite", "dsmm", "smm"])
def test_error_paths_survive_every_model(model):
    r = explore(os.fspath(BUILD / "oob_O0"), 1, model=model)
    assert {k for k, _, _ in r.errors} == {"out-of-bounds"}
    assert r.outcomes == {(0, b""), (1, b"")}


def test_context_resolution_answers_a_repeated_location_with_one_query():
    """ptrarray forks before allocating its rows; the second state reaching the merging access
    finds the rows by their recorded allocation contexts, merges them and proves with one query
    that the pointer stays in that segment, instead of scanning."""
    b = os.fspath(BUILD / "ptrarray_O0")
    on = explore(b, 2, model="dsmm")
    off = explore(b, 2, model="dsmm", context_resolution=False)
    assert on.outcomes == off.outcomes == native("ptrarray_O0", 2)
    assert on.stats["context_hits"] >= 1 and on.stats["context_misses"] == 0 and off.stats["context_hits"] == 0
    assert on.stats["resolution_queries"] < off.stats["resolution_queries"]
    assert on.stats["paths"] == off.stats["paths"]
