"""State-merging table: the memspn samples under no merging, ite, pat and pat without incremental
merging."""

from __future__ import annotations

import time
from pathlib import Path

from ..runner import explore
from . import sample_path
from .speed import Z3Counter

MERGE_SAMPLES = ([(f"memspn{m}_O0", m + 1) for m in (4, 8, 16, 32)] + [(f"memspnab{m}_O0", m + 1) for m in (4, 8, 16)]
                 + [(f"memspn2x{m}_O0", m + 1) for m in (4, 8, 16)] + [("memspn2x8_O2", 9), ("memspnab8_O2", 9)])
MERGE_MAX_STATES = 4096     # "ab" without merging has 2^m states: stop it before memory runs out
MERGE_MODES = (("none", None, None), ("ite", "ite", None), ("pat", "pat", None), ("pat-noinc", "pat", False))


def merge_table(timeout: float = 300.0, repeat: int = 1, samples_dir: Path | None = None) -> int:
    """Per memspn sample and merging mode (none, ite, pat with and without incremental merging):
    time, paths, z3 calls, quantified queries and how they were solved, incremental merges, and
    the largest merged path constraint (AST nodes). A run stops at ``timeout`` seconds or at
    :data:`MERGE_MAX_STATES` active states (both printed as TIMEOUT)."""
    hdr = f"{'sample':14} {'mode':9} {'time s':>8} {'paths':>6} {'z3':>6} {'q-queries':>9} " \
          f"{'strip':>6} {'dup':>5} {'repair':>6} {'forall':>6} {'incr':>5} {'merged nodes':>12}"
    print(hdr)
    print("-" * len(hdr))
    for binary, n in MERGE_SAMPLES:
        path = sample_path(binary, samples_dir)
        best: dict = {}
        for _ in range(max(repeat, 1)):
            for label, mode, inc in MERGE_MODES:
                if label in best and best[label][1].timed_out:
                    continue
                with Z3Counter() as zc:
                    t = time.perf_counter()
                    r = explore(path, n, merge=mode, merge_points=["memspn"], timeout=timeout,
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
