"""Query-cache table: z3 calls, cache hits, time and cache size per sample and cache mode."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from angr_ram.run.runner import explore
from angr_ram.solver.patches import counting

from . import sample_path, with_claripy_fixes
from .speed import SAMPLES

CACHE_SAMPLES = ("ptrpaths", "hashpaths", "allochist0", "allochist1", "allochist2", "allochist3", "ptrarray", "hashtables",
                 "twolookup", "matrix40", "branches", "checksum")
CACHE_MODES = (None, "syntactic", "aa", "aa+disk")


@with_claripy_fixes
def cache_table(names=None, timeout: float = 300.0, repeat: int = 1, samples_dir: Path | None = None) -> int:
    """Per sample and cache mode: z3 calls, cache hits, time, cache size; ``aa+disk`` is a second
    run of the aa cache over the on-disk store written by a first run (fresh directory)."""
    names = names or list(CACHE_SAMPLES)
    hdr = f"{'sample':12} {'cache':10} {'time s':>8} {'paths':>6} {'asked':>6} {'to solver':>9} {'z3':>6} " \
          f"{'z3 expl':>7} {'hits syn':>8} {'hits aa':>8} {'hits disk':>9} {'size':>6}"
    print(hdr)
    print("-" * len(hdr))
    for name in names:
        binary, n, _ = SAMPLES[name]
        path = sample_path(binary, samples_dir)
        best: dict = {}
        for _ in range(max(repeat, 1)):
            for mode in CACHE_MODES:
                opts = {"cache": mode}
                with tempfile.TemporaryDirectory() as d:
                    if mode == "aa+disk":
                        opts = {"cache": "aa", "persist": d}
                        explore(path, n, timeout=timeout, **opts)
                    with counting() as zc:
                        t = time.perf_counter()
                        r = explore(path, n, timeout=timeout, **opts)
                        secs = time.perf_counter() - t
                if mode not in best or secs < best[mode][0]:
                    best[mode] = (secs, r, zc.count)
        for mode in CACHE_MODES:
            secs, r, z3c = best[mode]
            s = r.stats
            print(f"{name:12} {str(mode):10} {secs:8.2f} {s['paths']:6d} {s['cache_queries'] or s['solver_queries']:6d} "
                  f"{s['solver_queries']:9d} {z3c:6d} {s.get('z3_checks_exploring', 0):7d} {s['cache_hits_syntactic']:8d} {s['cache_hits_aa']:8d} "
                  f"{s['cache_hits_disk']:9d} {s['cache_size']:6d}", flush=True)
        z = {m: best[m][2] for m in CACHE_MODES}
        ze = {m: best[m][1].stats.get("z3_checks_exploring", 0) for m in CACHE_MODES}
        print(f"{name:12} {'summary':10} z3 syn/aa {z['syntactic'] / max(z['aa'], 1):.2f}x "
              f"(exploring {ze['syntactic'] / max(ze['aa'], 1):.2f}x), "
              f"time aa/syn {best['aa'][0] / best['syntactic'][0]:.2f}x, "
              f"second run with disk: {100 * (1 - z['aa+disk'] / max(z['aa'], 1)):.0f}% fewer z3 calls than aa")
    return 0
