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

from angr_ram.run.runner import explore
from angr_ram.solver.patches import counting

from . import fastest, sample_path, with_claripy_fixes

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
    "allochist0": ("allochist0_O0", 2, True),
    "allochist1": ("allochist1_O0", 2, True),
    "allochist2": ("allochist2_O0", 2, True),
    "allochist3": ("allochist3_O0", 2, True),
    "oob": ("oob_O0", 1, True),
    "uaf": ("uaf_O0", 1, False),
    "allocsize": ("allocsize_O0", 1, False),
}

CONFIGS = (("stock", "stock", True), ("ram-concrete", "ram", False), ("ram-symbolic", "ram", True))


def run_one(binary: str, n: int, engine: str, symbolic_bases: bool, timeout: float) -> dict:
    """One exploration with z3 calls counted."""
    with counting() as zc:
        t = time.perf_counter()
        r = explore(binary, n, engine=engine, symbolic_bases=symbolic_bases, timeout=timeout)
        secs = time.perf_counter() - t
    return {"seconds": secs, "paths": r.stats.get("paths", 0), "errors": len(r.errors),
            "forks": r.stats.get("forks", 0), "queries": r.stats.get("solver_queries", 0),
            "z3_checks": zc.count, "outcomes": len(r.outcomes), "timed_out": r.timed_out}


def run_sample(path: str, n: int, timeout: float, repeat: int) -> dict:
    """Every configuration on one sample, interleaved round-robin ``repeat`` times; minimum time kept."""
    return fastest(CONFIGS, lambda _label, engine, sym: run_one(path, n, engine, sym, timeout), repeat)


@with_claripy_fixes
def main(names=None, timeout: float = 300.0, as_json: bool = False, repeat: int = 1,
         samples_dir: Path | None = None) -> int:
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
        path = sample_path(binary, samples_dir)
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
