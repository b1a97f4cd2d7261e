"""One process, several runs: simulation managers stepped in turn keep their own outcomes, counters,
caches and clause tables, and importing or running angr-ram leaves stock angr unchanged."""

import json
import os
import subprocess
import sys

import claripy
import pytest
from angr.storage.memory_mixins.symbolic_merger_mixin import SymbolicMergerMixin
from claripy.frontend.mixin.model_cache_mixin import ModelCache

from angr_ram import AngrRamError
from angr_ram.core import patches
from angr_ram.merging import quantified
from angr_ram.run.runner import explore, prepare, summarize

from .conftest import BUILD, shared_run
from .groundtruth import outcome_set, outcome_set_over
from .test_loop_samples import LETTERS, SIZES

# time, and z3 calls: whether claripy's model cache answers a query without z3 depends on the models
# z3 returned before, and z3's choice depends on the terms its context has seen (the process's
# history); angr-ram's own solver-layer queries are compared exactly. The seeding counters depend on
# the same history: a query claripy's model cache answers never reaches seeding, and a kept model
# answers a check (seeded_siblings) only if it happens to satisfy it (CI once saw 7 against 8)
TIMING = ("solver_seconds", "z3_checks", "z3_checks_exploring", "seeded_answers", "seeded_siblings",
          "seeded_misses")
# for the same reason, how a quantified query was answered (strip, duplicate, repair): by the total
ANSWERED = ("merge_solve_strip", "merge_solve_duplicate", "merge_solve_repair", "merge_solve_fallback",
            "merge_solve_unsat")

# (label, binary, stdin bytes, options): every pair of settings the issue names
RUNS = [
    ("pat-validate", "memspn4_O0", 5, {"merge": "pat", "merge_points": ["memspn"], "merge_validate": True,
                                       "merge_patterns": "always"}),
    ("pat-again", "memspn4_O0", 5, {"merge": "pat", "merge_points": ["memspn"], "merge_patterns": "always"}),
    ("ite", "memspnab4_O0", 5, {"merge": "ite", "merge_points": ["memspn"]}),
    ("aa", "ptrarray_O0", 2, {"cache": "aa"}),
    ("no-cache", "ptrarray_O0", 2, {}),
    ("dsmm", "hashtables_O0", 1, {"model": "dsmm"}),
    ("fork", "hashtables_O0", 1, {"model": "fork"}),
]


def native(binary: str, n: int) -> set:
    b = os.fspath(BUILD / binary)
    if binary.startswith("memspn"):
        return outcome_set_over(b, [SIZES] + [LETTERS] * 4)
    return outcome_set(b, n)


def comparable(stats: dict) -> dict:
    """The counters that must not depend on what else ran in the process."""
    out = {k: v for k, v in stats.items() if k not in TIMING and k not in ANSWERED}
    if "merge_solve_queries" in stats:
        out["answered"] = sum(stats[k] for k in ANSWERED)
    return out


@pytest.mark.slow   # 34 s: make test-slow
def test_interleaved_simulation_managers_keep_their_own_outcomes_and_stats():
    alone = {label: shared_run(os.fspath(BUILD / b), n, **o) for label, b, n, o in RUNS}   # each on its own
    runs = {label: prepare(os.fspath(BUILD / b), n, **o) for label, b, n, o in RUNS}
    steps = 0
    while any(sg.active for sg, _ in runs.values()):
        for sg, _ in runs.values():        # one step of each run in turn
            if sg.active:
                sg.step()
                steps += 1
    assert steps > 3 * len(RUNS)
    results = {label: summarize(sg, tech) for label, (sg, tech) in runs.items()}
    for label, b, n, _ in RUNS:
        r = results[label]
        assert r.errors == [], label
        assert r.outcomes == alone[label].outcomes == native(b, n), label
        assert comparable(r.stats) == comparable(alone[label].stats), label    # every counter, cache and table size
    # the settings really differ, and each run's counters are its own
    assert results["pat-validate"].stats["merge_merges_pat"] >= 1 and results["ite"].stats["merge_merges_pat"] == 0
    assert results["pat-validate"].stats["merge_clauses"] == results["pat-again"].stats["merge_clauses"] >= 1
    assert results["ite"].stats["merge_clauses"] == 0
    assert results["aa"].stats["cache_hits_aa"] > 0 and results["aa"].stats["cache_size"] > 0
    assert results["no-cache"].stats["cache_queries"] == 0 and results["no-cache"].stats["cache_size"] == 0
    assert results["dsmm"].stats["segments"] >= 1 and results["fork"].stats["segments"] == 0
    assert results["fork"].stats["forks"] >= 1
    tables = {sg._techniques[-1].table.number for label, (sg, _) in runs.items() if label.startswith("pat")}
    assert len(tables) == 2                 # the same program twice: two clause tables


def test_a_state_of_another_merging_run_is_refused_not_solved():
    a, b = quantified.ClauseTable(), quantified.ClauseTable()
    k = claripy.BVS("qm_k", 64)
    from angr_ram.merging.synthesis import synthesize
    phi3 = synthesize([k == 1, k == 2], [1, 2])
    cl = a.register(k=k, ks=(1, 2), phi1=claripy.true(), phi2=None, phi3=phi3)
    assert a.clauses_of([cl.placeholder]) == [cl]
    with pytest.raises(AngrRamError, match="another run"):
        quantified.solve(b, [cl.placeholder])
    assert cl.placeholder.args[0].startswith(f"qm_forall_{a.number}_")


STOCK_RUN = """
import json, sys
sys.path.insert(0, {root!r})
{prelude}
from angr_ram.run.runner import explore
r = explore({binary!r}, 2, engine="stock")
print(json.dumps({{"outcomes": sorted([c, o.hex()] for c, o in r.outcomes), "paths": r.stats["paths"],
                  "endings": r.endings}}))
"""


def _stock_in_fresh_process(prelude: str) -> dict:
    root = os.fspath(BUILD.parent.parent)
    code = STOCK_RUN.format(root=root, prelude=prelude, binary=os.fspath(BUILD / "ptrpaths_O0"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow   # make test-slow: three fresh processes, 37 s
def test_stock_angr_is_unchanged_by_importing_and_running_angr_ram():
    """The same stock-angr exploration in a fresh process, after ``import angr_ram``, and after runs
    with every technique gives the same paths, outcomes and endings; after the runs every patched
    function is claripy's, angr's and z3's own again (z3's reference-object destructors excepted:
    objects made in a run are destroyed after it)."""
    fresh = _stock_in_fresh_process("")
    after_runs = _stock_in_fresh_process(
        "import angr_ram\nfrom angr_ram.run.runner import explore as _e\n"
        f"_e({os.fspath(BUILD / 'memspn4_O0')!r}, 5, merge='pat', merge_points=['memspn'])\n"
        f"_e({os.fspath(BUILD / 'matrix3_O0')!r}, 2, model='dsmm', cache='aa')\n"
        "from angr_ram.core import patches\n"
        "assert {'z3-check', 'z3-backend', 'format-values', 'merge-memory-diff', 'merge-uninit', 'merge-linear',"
        " 'profile'} <= set(patches.SETS)\n"
        "assert all(getattr(p.owner, p.name) is p.original for s in patches.SETS.values() if s.lifetime == 'held'"
        " for p in s.patches if p.original is not None)\n"
        "assert not any(getattr(p.owner, p.name) is p.wrapper for p in patches.all_patches() if p.set.lifetime == 'held')\n"
        "assert patches.SETS['profile'].patches[0].original is None\n"   # an unprofiled run never puts it in place
        "assert all(s.installed == (s.lifetime == 'process') for s in patches.SETS.values())")
    assert fresh == after_runs
    assert fresh["paths"] > 1


def _held_patches():
    return [p for s in patches.SETS.values() if s.lifetime == "held" for p in s.patches]


def test_import_installs_nothing_and_patches_are_inert_outside_runs():
    code = ("import z3, angr\nfrom claripy.frontend.mixin.model_cache_mixin import ModelCache\n"
            "before = (z3.Solver.check, ModelCache.eval_ast)\nimport angr_ram\n"
            "from angr_ram.core import patches\n"
            "assert (z3.Solver.check, ModelCache.eval_ast) == before\n"
            "assert not any(p.installed for p in patches.all_patches()) and len(patches.all_patches()) >= 5\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=os.fspath(BUILD.parent.parent))
    assert out.stdout.strip() == "ok", out.stderr
    patches.install_all()
    calls = []
    p = next(p for p in patches.all_patches() if p.owner is SymbolicMergerMixin)
    original = p.replacement
    p.replacement = lambda *a, **k: calls.append(1) or original(*a, **k)
    try:
        mc = ModelCache({"x": 3})
        assert mc.eval_ast(claripy.BVS("x", 8, explicit_name=True) + 1) == 4   # claripy's own path
        r = explore(os.fspath(BUILD / "memspn4_O0"), 5, engine="stock", merge="ite", merge_points=["memspn"])
        assert calls == []                  # the linear merge acts only inside pattern merges
        assert r.stats["merge_merges_ite"] >= 1
        assert all(p.installed for p in patches.all_patches())     # held by install_all through the run
    finally:
        p.replacement = original
        patches.uninstall_all()
    assert not any(p.installed for p in _held_patches())
