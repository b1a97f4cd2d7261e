"""Benchmark table: stock angr vs angr-ram with concrete and symbolic bases on the samples.

Per sample and configuration it prints wall time, finished paths, error paths, forks, queries
through angr-ram's solver layer and z3 ``check`` calls (counted for every configuration, stock
angr included). The overhead column is symbolic-bases time over concrete-bases time, measured
side by side in the same process.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import z3

from .patches import with_claripy_fixes
from .runner import explore

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "samples" / "build"

# name -> (binary, stdin bytes, has symbolic pointers)
SAMPLES = {
    "branches": ("branches_O0", 2, False),
    "checksum": ("checksum_O0", 2, False),
    "matrix3": ("matrix3_O0", 2, True),
    "matrix10": ("matrix10_O0", 2, True),
    "matrix40": ("matrix40_O0", 2, True),
    "twolookup": ("twolookup_O0", 2, True),
    "hashtables": ("hashtables_O0", 1, True),
    "ptrarray": ("ptrarray_O0", 2, True),
    "ptrpaths": ("ptrpaths_O0", 2, True),
    "hashpaths": ("hashpaths_O0", 2, True),
    "oob": ("oob_O0", 1, True),
    "uaf": ("uaf_O0", 1, False),
    "allocsize": ("allocsize_O0", 1, False),
}

CONFIGS = (("stock", "stock", True), ("ram-concrete", "ram", False), ("ram-symbolic", "ram", True))


class Z3Counter:
    """Counts ``z3.Solver.check`` calls while active."""

    def __init__(self):
        self.count = 0
        self._orig = None

    def __enter__(self):
        self._orig = z3.Solver.check
        counter, orig = self, self._orig

        def check(solver, *a):
            counter.count += 1
            return orig(solver, *a)

        z3.Solver.check = check
        return self

    def __exit__(self, *exc):
        z3.Solver.check = self._orig


def run_one(binary: str, n: int, engine: str, symbolic_bases: bool, timeout: float) -> dict:
    """One exploration with z3 calls counted."""
    with Z3Counter() as zc:
        t = time.perf_counter()
        r = explore(binary, n, engine=engine, symbolic_bases=symbolic_bases, timeout=timeout)
        secs = time.perf_counter() - t
    return {"seconds": secs, "paths": r.stats.get("paths", 0), "errors": len(r.errors),
            "forks": r.stats.get("forks", 0), "queries": r.stats.get("solver_queries", 0),
            "z3_checks": zc.count, "outcomes": len(r.outcomes), "timed_out": r.timed_out}


def run_sample(path: str, n: int, timeout: float, repeat: int) -> dict:
    """Every configuration on one sample, interleaved round-robin ``repeat`` times; minimum time kept."""
    res: dict = {}
    for _ in range(max(repeat, 1)):
        for label, engine, sym in CONFIGS:
            r = run_one(path, n, engine, sym, timeout)
            if label not in res or r["seconds"] < res[label]["seconds"]:
                res[label] = r
    return res


@with_claripy_fixes
def main(names=None, timeout: float = 300.0, as_json: bool = False, repeat: int = 1) -> int:
    """Run the table for ``names`` (default: every sample) and print it."""
    names = names or list(SAMPLES)
    unknown = [n for n in names if n not in SAMPLES]
    if unknown:
        print(f"unknown samples: {', '.join(unknown)}; choose from {', '.join(SAMPLES)}")
        return 2
    rows = []
    hdr = f"{'sample':12} {'config':13} {'time s':>8} {'paths':>6} {'errs':>5} {'outc':>5} {'forks':>6} " \
          f"{'queries':>8} {'z3':>7}"
    if not as_json:
        print(hdr)
        print("-" * len(hdr))
    for name in names:
        binary, n, _ = SAMPLES[name]
        path = str(SAMPLES_DIR / binary)
        res = run_sample(path, n, timeout, repeat)
        for label, _, _ in CONFIGS:
            r = res[label]
            rows.append({"sample": name, "config": label, **r})
            if not as_json:
                print(f"{name:12} {label:13} {r['seconds']:8.2f} {r['paths']:6d} {r['errors']:5d} {r['outcomes']:5d} "
                      f"{r['forks']:6d} {r['queries']:8d} {r['z3_checks']:7d}" + ("  TIMEOUT" if r["timed_out"] else ""),
                      flush=True)
        ratio = res["ram-symbolic"]["seconds"] / max(res["ram-concrete"]["seconds"], 1e-9)
        rows.append({"sample": name, "config": "overhead", "symbolic_over_concrete": ratio})
        if not as_json:
            print(f"{name:12} {'sym/concrete':13} {ratio:8.2f}x")
    if as_json:
        print(json.dumps(rows, indent=2))
    return 0


CACHE_SAMPLES = ("ptrpaths", "hashpaths", "ptrarray", "hashtables", "twolookup", "matrix40", "branches", "checksum")
CACHE_MODES = (None, "syntactic", "aa", "aa+disk")


@with_claripy_fixes
def cache_table(names=None, timeout: float = 300.0, repeat: int = 1) -> int:
    """Per sample and cache mode: z3 calls, cache hits, time, cache size; ``aa+disk`` is a second
    run of the aa cache over the on-disk store written by a first run (fresh directory)."""
    import tempfile

    names = names or list(CACHE_SAMPLES)
    hdr = f"{'sample':12} {'cache':10} {'time s':>8} {'paths':>6} {'asked':>6} {'to solver':>9} {'z3':>6} " \
          f"{'hits syn':>8} {'hits aa':>8} {'hits disk':>9} {'size':>6}"
    print(hdr)
    print("-" * len(hdr))
    for name in names:
        binary, n, _ = SAMPLES[name]
        best: dict = {}
        for _ in range(max(repeat, 1)):
            for mode in CACHE_MODES:
                opts = {"cache": mode}
                with tempfile.TemporaryDirectory() as d:
                    if mode == "aa+disk":
                        opts = {"cache": "aa", "persist": d}
                        explore(str(SAMPLES_DIR / binary), n, timeout=timeout, **opts)
                    with Z3Counter() as zc:
                        t = time.perf_counter()
                        r = explore(str(SAMPLES_DIR / binary), n, timeout=timeout, **opts)
                        secs = time.perf_counter() - t
                if mode not in best or secs < best[mode][0]:
                    best[mode] = (secs, r, zc.count)
        for mode in CACHE_MODES:
            secs, r, z3c = best[mode]
            s = r.stats
            print(f"{name:12} {str(mode):10} {secs:8.2f} {s['paths']:6d} {s['cache_queries'] or s['solver_queries']:6d} "
                  f"{s['solver_queries']:9d} {z3c:6d} {s['cache_hits_syntactic']:8d} {s['cache_hits_aa']:8d} "
                  f"{s['cache_hits_disk']:9d} {s['cache_size']:6d}", flush=True)
        z = {m: best[m][2] for m in CACHE_MODES}
        print(f"{name:12} {'summary':10} z3 syn/aa {z['syntactic'] / max(z['aa'], 1):.2f}x, "
              f"time aa/syn {best['aa'][0] / best['syntactic'][0]:.2f}x, "
              f"second run with disk: {100 * (1 - z['aa+disk'] / max(z['aa'], 1)):.0f}% fewer z3 calls than aa")
    return 0


MERGE_SAMPLES = ([(f"memspn{m}_O0", m + 1) for m in (4, 8, 16, 32)] + [(f"memspnab{m}_O0", m + 1) for m in (4, 8, 16)]
                 + [(f"memspn2x{m}_O0", m + 1) for m in (4, 8, 16)] + [("memspn2x8_O2", 9), ("memspnab8_O2", 9)])
MERGE_MAX_STATES = 4096     # "ab" without merging has 2^m states: stop it before memory runs out
MERGE_MODES = (("none", None, None), ("ite", "ite", None), ("pat", "pat", None), ("pat-noinc", "pat", False))


def merge_table(timeout: float = 300.0, repeat: int = 1) -> int:
    """Per memspn sample and merging mode (none, ite, pat with and without incremental merging):
    time, paths, z3 calls, quantified queries and how they were solved, incremental merges, and
    the largest merged path constraint (AST nodes). A run stops at ``timeout`` seconds or at
    :data:`MERGE_MAX_STATES` active states (both printed as TIMEOUT)."""
    hdr = f"{'sample':14} {'mode':9} {'time s':>8} {'paths':>6} {'z3':>6} {'q-queries':>9} " \
          f"{'strip':>6} {'dup':>5} {'repair':>6} {'forall':>6} {'incr':>5} {'merged nodes':>12}"
    print(hdr)
    print("-" * len(hdr))
    for binary, n in MERGE_SAMPLES:
        best: dict = {}
        for _ in range(max(repeat, 1)):
            for label, mode, inc in MERGE_MODES:
                if label in best and best[label][1].timed_out:
                    continue
                with Z3Counter() as zc:
                    t = time.perf_counter()
                    r = explore(str(SAMPLES_DIR / binary), n, merge=mode, merge_points=["memspn"], timeout=timeout,
                                merge_incremental=inc, max_states=MERGE_MAX_STATES)
                    secs = time.perf_counter() - t
                if label not in best or secs < best[label][0]:
                    best[label] = (secs, r, zc.count)
        for label, _, _ in MERGE_MODES:
            secs, r, z3c = best[label]
            s = r.stats
            print(f"{binary:14} {label:9} {secs:8.2f} {s['paths']:6d} {z3c:6d} {s.get('merge_solve_queries', 0):9d} "
                  f"{s.get('merge_solve_strip', 0):6d} {s.get('merge_solve_duplicate', 0):5d} "
                  f"{s.get('merge_solve_repair', 0):6d} {s.get('merge_solve_fallback', 0):6d} "
                  f"{s.get('merge_incremental', 0):5d} {s.get('merge_max_constraint_nodes', 0):12d}"
                  + ("  TIMEOUT" if r.timed_out else ""), flush=True)
        ite, pat = best["ite"], best["pat"]
        bound = ">=" if ite[1].timed_out else ""
        print(f"{binary:14} {'ite/pat':9} {bound}{ite[0] / pat[0]:.2f}x" + ("  (pat timed out)" if pat[1].timed_out else ""))
    return 0
